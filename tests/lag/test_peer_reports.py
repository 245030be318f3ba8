"""The lag figures the peers' users reported wrong, one test each, named for the report: a log
shaped like the report, our answer asserted, and why it is right (docs/lag.md, "Known wrong
answers", lists them beside the peer's rule where ours differs on purpose).

Each log runs through the incremental engine in batches (its state through JSON between them,
as the stream keeps it) and through the oracle; the two must agree row for row before the
answer is checked. The reports: seglo/kafka-lag-exporter #37, #111, #121, #138, #175, #496;
linkedin/Burrow #14, #287, #504, #591, #740; redpanda-data/redpanda #30624; and the shapes the
issue trackers keep meeting: compacted topics, a partition added to a running group."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence
from typing import Any

from pipeline.lag import LagConfig
from tests.lag.test_engine import Batches, Engine, History, assert_same

Row = dict[str, Any]
S = 1000  # ms
CFG = LagConfig()
_position = itertools.count(1)


def sample(t_s: float, end: int, topic: str = "t", partition: int = 0,
           start: int | None = 0) -> Row:
    return {"topic": topic, "partition": partition, "t": int(t_s * S), "log_end_offset": end,
            "log_start_offset": start}


def commit(t_s: float, offset: int | None, topic: str = "t", partition: int = 0,
           group: str = "g", change: str = "COMMIT") -> Row:
    return {"group_id": group, "topic": topic, "partition": partition, "t": int(t_s * S),
            "change": change, "committed_offset": offset, "log_partition": 0,
            "log_offset": next(_position)}


def shape(t_s: float, state: str, owned: Iterable[tuple[str, int]] = (),
          group: str = "g") -> Row:
    return {"group_id": group, "t": int(t_s * S), "log_partition": 0,
            "log_offset": next(_position), "seq": 0, "state": state, "generation_id": 1,
            "group_type": "classic", "state_since": int(t_s * S),
            "members": [{"member_id": "m1", "client_id": "c1", "client_host": "/10.0.0.1",
                         "assignment": [{"topic": t, "partition": p} for t, p in owned]}]
            if state != "Dead" else []}


def every(start_s: int, stop_s: int, step_s: int) -> range:
    return range(start_s, stop_s + 1, step_s)


def evaluate(samples: Sequence[Row], changes: Sequence[Row], shapes: Sequence[Row] = (),
             cfg: LagConfig = CFG, cuts_s: Sequence[float] | None = None
             ) -> tuple[list[Row], list[Row]]:
    """(partition_lag, group_lag) rows, times in ms, oldest first: the oracle's, after the
    engine gave the same in batches (cut at `cuts_s`, default: at random sample times)."""
    h = History(list(samples), list(changes), list(shapes), [], [])
    want_parts, want_groups = h.oracle(cfg)
    rng = random.Random(len(samples))
    batches = Batches.cut(h, 6, rng, early=0)
    if cuts_s is not None:
        batches = _cut_at(h, [int(c * S) for c in cuts_s])
    engine = Engine(cfg)
    parts: list[Row] = []
    groups: list[Row] = []
    for i in range(len(batches.cuts)):
        p, g, _, _ = engine.batch(batches, i)
        parts += p
        groups += g
    assert_same(parts, want_parts, "partition_lag")
    assert_same(groups, want_groups, "group_lag")

    def oldest_first(rows: list[Row]) -> list[Row]:
        return sorted(rows, key=lambda r: (r["t"], r.get("topic") or "", r.get("partition", 0)))

    return oldest_first(want_parts), oldest_first(want_groups)


def _cut_at(h: History, cuts: list[int]) -> Batches:
    """Batches cut at `cuts` (and after the last sample), each row in the batch its time
    falls in."""
    last = max(s["t"] for s in h.samples) + 1
    out = Batches(sorted({*cuts, last}))
    out.samples = [[] for _ in out.cuts]
    for s in h.samples:
        out.samples[out.index(s["t"])].append(s)
    for kind in ("changes", "shapes", "transitions", "rebalances"):
        out.rows[kind] = [[] for _ in out.cuts]
        for r in getattr(h, kind):
            out.rows[kind][out.index(r["t"] if kind != "rebalances" else r["completed_at"])
                           ].append(r)
    return out


def of(rows: Sequence[Row], topic: str = "t", partition: int = 0) -> list[Row]:
    return [r for r in rows if (r["topic"], r["partition"]) == (topic, partition)]


def at(rows: Sequence[Row], t_s: float) -> Row:
    (row,) = [r for r in rows if r["t"] == int(t_s * S)]
    return row


def test_kafka_lag_exporter_37_111_an_idle_topic_of_a_multi_topic_group_is_caught_up() -> None:
    """A group reads a busy topic and an idle one it has read to the end. kafka-lag-exporter
    extrapolated the idle topic's flat table into an ever-growing time lag (#37) or gave NaN
    (#111). Ours: the idle partition is caught up, lag 0 and time lag 0 at every sample from
    its first commit on, and
    the group's worst time lag is the busy topic's, a few seconds."""
    samples = [s for t in every(0, 600, 10)
               for s in (sample(t, 1000 + 100 * t, "busy"), sample(t, 500, "idle"))]
    changes = [commit(0.5, 500, "idle")] + [commit(t + 1, 1000 + 100 * t, "busy")
                                            for t in every(0, 600, 5)]
    parts, groups = evaluate(samples, changes)
    idle = of(parts, "idle")
    assert len(idle) == 60 and {(r["lag"], r["lag_ms"], r["lag_ms_basis"]) for r in idle} == {
        (0, 0, "CAUGHT_UP")}
    assert max(g["max_lag_ms"] for g in groups) <= 10 * S
    assert all(r["lag_ms"] <= 10 * S for r in of(parts, "busy"))


def test_kafka_lag_exporter_121_producers_idle_while_behind_the_time_lag_rises_a_second_a_second(
        ) -> None:
    """Producers stop while the group is 500 records behind and it reads no more: the oldest
    unread record only gets older, so the time lag rises one second per second (#121 asked
    why; that is what it means). Once the group reads to the end, 0 at once."""
    samples = [sample(t, min(1000 + 100 * t, 11_000)) for t in every(0, 300, 10)]
    changes = [commit(95, 10_500), commit(255, 11_000)]
    parts, _ = evaluate(samples, changes)
    behind = [r for r in parts if 100 <= r["t"] / S <= 250]
    assert [r["lag"] for r in behind] == [500] * len(behind)
    assert [b["lag_ms"] - a["lag_ms"] for a, b in zip(behind, behind[1:], strict=False)] == [
        10 * S] * (len(behind) - 1)
    assert at(parts, 260)["lag_ms"] == 0 and at(parts, 260)["catch_up_ms"] == 0


def test_kafka_lag_exporter_175_a_burst_is_interpolated_within_its_samples() -> None:
    """A quiet log, then 100,000 records between two samples; the group is half way through
    them. Extrapolating from the table's oldest point to its newest (kafka-lag-exporter)
    gives a time lag from nowhere; ours is found between the two samples that bracket the
    committed offset: the log end passed 51,000 at 605 s, so at 620 s it is 15 s behind."""
    samples = [sample(t, 1000) for t in every(0, 600, 10)] + [sample(610, 101_000),
                                                              sample(620, 101_000)]
    changes = [commit(5, 1000), commit(615, 51_000)]
    parts, _ = evaluate(samples, changes)
    row = at(parts, 620)
    assert (row["lag"], row["lag_ms"], row["lag_ms_basis"]) == (50_000, 15 * S, "INTERPOLATED")


def test_kafka_lag_exporter_496_reprocessing_from_the_beginning_is_a_lower_bound() -> None:
    """A group reset to offset 0 on a topic whose first sample already had a million records.
    Extrapolating back gave 270,000 s (#496); the log end's passing of offset 0 predates every
    sample, so ours says so: the time since the oldest sample, flagged LOWER_BOUND."""
    samples = [sample(t, 1_000_000 + 10 * t) for t in every(0, 3600, 60)]
    changes = [commit(30, 1_000_300), commit(1800, 0)]
    parts, _ = evaluate(samples, changes)
    row = at(parts, 3600)
    assert (row["lag_ms"], row["lag_ms_basis"]) == (3600 * S, "LOWER_BOUND")
    assert row["lag"] == 1_036_000


def test_kafka_lag_exporter_138_a_commit_ahead_of_the_sample_is_lag_zero_not_negative() -> None:
    """The end offset was read before a commit past it was (the two calls are not atomic):
    Kafka's tool prints a negative lag; kafka-lag-exporter showed negative values (#138).
    Ours: 0 and caught up, the commit being the fresher fact."""
    samples = [sample(t, 1000 + 10 * t) for t in every(0, 100, 10)]
    changes = [commit(t - 0.5, 1000 + 10 * t + 5) for t in every(10, 100, 10)]
    parts, _ = evaluate(samples, changes)
    assert {(r["lag"], r["lag_ms"], r["status"]) for r in parts if r["t"] >= 10 * S} == {
        (0, 0, "OK")}


def test_burrow_740_a_restarted_monitor_shows_no_lag_spike() -> None:
    """Burrow, restarted, reads back the commits it missed and stores each with the lag
    against the end offset of now: a spike that never was (#740). The replay is stopped at
    300 s and started at 900 s with everything since in one batch: each commit's lag is
    against the sample at or before its own time, so the window holds the lags there were
    (about 100 records), no spike."""
    samples = [sample(t, 1000 + 100 * t) for t in every(0, 1200, 30)]
    changes = [commit(t, 1000 + 100 * t - 100) for t in every(1, 1200, 10)]
    parts, _ = evaluate(samples, changes, cuts_s=[300, 900, 1000])
    assert max(r["window_max_lag"] for r in parts if r["window_max_lag"] is not None) <= 3100
    assert {r["status"] for r in parts} == {"OK"}


def test_burrow_287_a_stopped_consumer_s_lag_grows_with_every_sample() -> None:
    """A consumer keeps up, then stops. Burrow's stored lag moved only with commits, so a
    stopped group's lag looked like 0 (#287). Ours is the newest sample's end against the
    committed offset: it grows at every sample, the status becomes STOP, and there is no
    time to catch up (consuming slower than producing)."""
    samples = [sample(t, 1000 + 10 * t) for t in every(0, 900, 30)]
    changes = [commit(t, 1000 + 10 * t) for t in every(1, 300, 10)]
    parts, groups = evaluate(samples, changes)
    after = [r for r in parts if r["t"] > 330 * S]
    assert all(b["lag"] > a["lag"] for a, b in zip(after, after[1:], strict=False))
    assert after[-1]["status"] == "STOP" and after[-1]["rule"] == "STOPPED"
    assert after[-1]["consume_rate"] == 0 and after[-1]["produce_rate"] == 10
    assert after[-1]["catch_up_ms"] is None
    assert groups[-1]["status"] == "ERR" and groups[-1]["catch_up_ms"] is None


def test_burrow_14_504_a_deleted_group_leaves_no_stale_lag() -> None:
    """A group deleted (its offsets tombstoned, the group Dead) lingered in Burrow with its
    last lag (#14, #504). Ours: its last row is at the last sample before the deletion; no
    sample after it gives the group a row."""
    owned = [("t", 0)]
    samples = [sample(t, 1000 + 10 * t) for t in every(0, 600, 30)]
    changes = [commit(t, 1000 + 10 * t - 50) for t in every(1, 300, 10)]
    changes += [commit(310, None, change="TOMBSTONE")]
    shapes = [shape(0.5, "Stable", owned), shape(310, "Dead")]
    parts, groups = evaluate(samples, changes, shapes)
    assert max(r["t"] for r in parts) == max(g["t"] for g in groups) == 300 * S


def test_compacted_topics_offsets_jump_and_lag_counts_offsets_as_kafka_does() -> None:
    """On a compacted topic most offsets below the end hold no record, and a consumer's
    committed offset jumps across the gaps. Lag is counted in offsets, as
    kafka-consumer-groups counts it (it cannot know how many records compaction left): 100
    behind, never negative, and the consume rate is in offsets per second too."""
    samples = [sample(t, 1000 + 100 * (t // 60)) for t in every(0, 600, 30)]
    changes = [commit(t, 1000 + 100 * (t // 60) - 100 if t >= 60 else 1000)
               for t in every(1, 600, 30)]
    parts, _ = evaluate(samples, changes)
    assert all(r["lag"] == r["log_end_offset"] - r["committed_offset"] for r in parts)
    assert at(parts, 570)["lag"] == 100 and min(r["lag"] for r in parts) >= 0
    # the window: the last 10 samples, 300 s to 570 s; committed 1300 then, 1800 now
    assert at(parts, 570)["consume_rate"] == (1800 - 1300) / 270


def test_burrow_591_a_transaction_marker_s_lag_of_one_drains_with_allowed_lag() -> None:
    """An exactly-once producer's commit marker takes the last offset: a consumer that
    commits past the last record it read leaves a lag of 1 that never drains. The lag stays
    1 (the offsets say so, as Kafka's tool does); with lag.burrow.allowed.lag=1, Burrow's own
    setting for it (#591), the partition is OK and its time lag 0 instead of a time lag that
    grows for ever."""
    samples = [sample(t, 1001) for t in every(0, 900, 30)]
    changes = [commit(t, 1000) for t in every(1, 900, 30)]
    strict, _ = evaluate(samples, changes)
    allowed, _ = evaluate(samples, changes, cfg=LagConfig(allowed_lag=1))
    assert {r["lag"] for r in strict} == {r["lag"] for r in allowed} == {1}
    assert at(strict, 900)["lag_ms"] == 900 * S and at(strict, 900)["status"] == "STALL"
    assert {(r["lag_ms"], r["status"], r["catch_up_ms"]) for r in allowed} == {(0, "OK", 0)}


def test_a_partition_added_while_the_group_runs_has_a_row_from_its_assignment() -> None:
    """A topic grows a partition; the group is assigned it at 310 s and first commits it at
    331 s. KMinion leaves a partition without a commit out; ours shows it from the
    assignment (its first sample after, at 330 s), lag unknown (NO_COMMIT, counted in
    partitions_unknown), then its lag."""
    samples = [sample(t, 1000 + 10 * t) for t in every(0, 600, 30)]
    samples += [sample(t, 10 * (t - 300), partition=1) for t in every(300, 600, 30)]
    changes = [commit(t, 1000 + 10 * t) for t in every(1, 600, 10)]
    changes += [commit(t, 10 * (t - 300), partition=1) for t in every(331, 600, 10)]
    shapes = [shape(0.5, "Stable", [("t", 0)]), shape(310, "Stable", [("t", 0), ("t", 1)])]
    parts, groups = evaluate(samples, changes, shapes)
    new = of(parts, "t", 1)
    assert new[0]["t"] == 330 * S
    assert (new[0]["offset_status"], new[0]["lag"], new[0]["member_id"]) == (
        "NO_COMMIT", None, "m1")
    assert (new[1]["offset_status"], new[1]["lag"]) == ("COMMITTED", 600 - 510)  # at 360 s
    assert {g["partitions"] for g in groups if g["t"] < 330 * S} == {1}
    assert {(g["partitions"], g["partitions_unknown"]) for g in groups if g["t"] == 330 * S} == {
        (2, 1)}
    assert {g["partitions"] for g in groups if g["t"] > 330 * S} == {2}


def test_redpanda_30624_records_lost_to_retention_are_counted_apart_not_as_phantom_lag() -> None:
    """The log start passed a stopped group's committed offset: those records are gone.
    klag-exporter reports offset lag 0 then; Kafka's tool reports end - committed, records
    that no longer exist among them (redpanda #30624's phantom lag). Ours keeps Kafka's lag
    and says apart how many were lost and since when, the status LOST (ERR for the group);
    and before it happened, when: the log start gained 10 records/s on an offset 400 ahead."""
    samples = [sample(t, 1000 + 10 * t, start=10 * t) for t in every(0, 120, 10)]
    changes = [commit(5, 600)]
    parts, groups = evaluate(samples, changes)
    assert at(parts, 20)["loss_eta_ms"] == 40 * S and at(parts, 50)["loss_eta_ms"] == 10 * S
    assert at(parts, 60)["lost_records"] == 0
    row = at(parts, 100)
    assert (row["lag"], row["lost_records"], row["lost_since"]) == (1400, 400, 70 * S)
    assert (row["status"], row["rule"], row["loss_eta_ms"]) == ("LOST", "RECORDS_LOST", 0)
    g = at(groups, 100)
    assert (g["status"], g["worst_status"], g["lost_records"]) == ("ERR", "LOST", 400)
