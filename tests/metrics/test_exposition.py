"""The exporter's text exposition, read back with prometheus_client's own parser: the values
and labels equal the rows they came from; the partition switch off serves no partition
series; the replay's progress adds up batch by batch; the endpoint serves the swapped
snapshot. No Spark, no Prometheus server (tests/metrics/test_prometheus.py has that)."""

from __future__ import annotations

import threading
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from pipeline.metrics import ReplayProgress, RowsCollector, advance, serve
from pipeline.metrics.catalogue import METRICS, PARTITION_METRICS, PROGRESS, Metric
from pipeline.metrics.exporter import merged
from schemas.lag import STATUS_CODES
from tests.imports import foreign_imports
from tests.metrics.rows import AT, GROUP_LAG, GROUP_STATE, PARTITION_LAG, row

ROOT = Path(__file__).resolve().parents[2]
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape_text(collector: RowsCollector) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry).decode()


def samples(text: str) -> Samples:
    """(sample name, labels) -> value, every sample of the exposition (once each: a second
    would be a duplicate series)."""
    out: Samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, f"duplicate series {key}"
            out[key] = s.value
    return out


def of(found: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: v for (n, labels), v in found.items() if n == name}


def L(**labels: object) -> frozenset[tuple[str, str]]:  # noqa: N802 - reads as a label set
    return frozenset((k, str(v)) for k, v in labels.items())


def published(per_partition: bool) -> Samples:
    c = RowsCollector(per_partition)
    c.publish(group_lag=GROUP_LAG, partition_lag=PARTITION_LAG, group_state=GROUP_STATE)
    return samples(scrape_text(c))


def test_group_series_equal_the_group_lag_and_group_state_rows() -> None:
    found = published(per_partition=False)
    lag = {r["group_id"]: r for r in GROUP_LAG}
    state = {r["group_id"]: r for r in GROUP_STATE}
    assert of(found, "kafka_consumergroup_group_max_lag") == {
        L(group=g): r["max_lag"] for g, r in lag.items()}
    assert of(found, "kafka_consumergroup_group_max_lag_seconds") == {
        L(group=g): r["max_lag_ms"] / 1000 for g, r in lag.items()}
    assert of(found, "kafka_consumergroup_group_sum_lag") == {
        L(group=g): r["total_lag"] for g, r in lag.items()}
    assert of(found, "cgr_group_status") == {
        L(group=g, status=r["status"]): STATUS_CODES[r["status"]] for g, r in lag.items()}
    # audit has no lag, so no cause: no series rather than a made-up one
    assert of(found, "cgr_group_lag_cause") == {L(group="orders", cause="NONE"): 1}
    assert of(found, "cgr_group_lag_sampled_timestamp_seconds") == {
        L(group=g): AT.replace(tzinfo=UTC).timestamp() for g in lag}
    assert of(found, "cgr_group_state") == {
        L(group=g, state=r["state"]): 1 for g, r in state.items()}
    assert of(found, "cgr_group_members") == {L(group=g): r["member_count"] for g, r in state.items()}
    assert of(found, "cgr_group_generation") == {
        L(group=g): r["generation_id"] for g, r in state.items()}
    assert of(found, "cgr_group_rebalances_total") == {
        L(group=g): r["rebalance_count"] for g, r in state.items()}


def test_partition_series_equal_the_partition_lag_rows_when_switched_on() -> None:
    found = published(per_partition=True)

    def per_row(column: str, per: int = 1) -> dict[frozenset[tuple[str, str]], float]:
        return {L(group=r["group_id"], topic=r["topic"], partition=r["partition"]):
                r[column] / per for r in PARTITION_LAG}
    assert of(found, "kafka_consumergroup_group_lag") == per_row("lag")
    assert of(found, "kafka_consumergroup_group_lag_seconds") == per_row("lag_ms", 1000)
    assert of(found, "kafka_consumergroup_group_offset") == per_row("committed_offset")
    assert of(found, "cgr_partition_status") == {
        L(group=r["group_id"], topic=r["topic"], partition=r["partition"], status=r["status"]):
            STATUS_CODES[r["status"]] for r in PARTITION_LAG}


def test_the_switch_off_serves_no_partition_series_and_the_same_group_series() -> None:
    off, on = published(per_partition=False), published(per_partition=True)
    assert not [k for k in off if "partition" in dict(k[1])]
    assert not {m.name for m in PARTITION_METRICS} & {name for name, _ in off}
    assert {k: v for k, v in on.items() if "partition" not in dict(k[1])} == off
    c = RowsCollector(per_partition=False)
    c.publish(partition_lag=PARTITION_LAG)
    assert c.snapshot().partition_lag == ()  # not even kept


def test_the_newest_row_of_a_key_wins_and_a_null_gives_no_sample() -> None:
    older = row("group_lag", sampled_at=AT - timedelta(minutes=1), group_id="orders",
                max_lag=1, max_lag_ms=1, total_lag=1, status="OK", cause="REBALANCE")
    unknown = row("group_lag", sampled_at=AT, group_id="new", status="NOTFOUND")
    c = RowsCollector()
    c.publish(group_lag=[GROUP_LAG[0], older, unknown])
    found = samples(scrape_text(c))
    assert of(found, "kafka_consumergroup_group_max_lag") == {
        L(group="orders"): GROUP_LAG[0]["max_lag"]}
    assert of(found, "cgr_group_status") == {
        L(group="orders", status="ERR"): STATUS_CODES["ERR"],
        L(group="new", status="NOTFOUND"): STATUS_CODES["NOTFOUND"]}


def test_a_status_burrow_lacks_is_refused_at_publish_and_the_old_snapshot_stays() -> None:
    c = RowsCollector(per_partition=True)
    c.publish(group_lag=GROUP_LAG)
    with pytest.raises(ValueError, match=r"partition_lag.status: \['BAD'\] are not Burrow's"):
        c.publish(partition_lag=[{**PARTITION_LAG[0], "status": "BAD"}])
    assert c.snapshot().group_lag and c.snapshot().partition_lag == ()


def test_publish_swaps_only_what_it_is_given_and_a_gone_group_is_gone() -> None:
    c = RowsCollector()
    c.publish(group_lag=GROUP_LAG, group_state=GROUP_STATE)
    c.publish(group_lag=GROUP_LAG[:1])
    found = samples(scrape_text(c))
    assert set(of(found, "kafka_consumergroup_group_max_lag")) == {L(group="orders")}
    assert set(of(found, "cgr_group_members")) == {L(group="orders"), L(group="audit")}


def test_merged_keeps_the_newest_row_per_key_of_both_a_tie_to_the_new_and_live_groups_only(
        ) -> None:
    def lag(group: str, minute: int, max_lag: int) -> dict[str, object]:
        return row("group_lag", sampled_at=AT + timedelta(minutes=minute), group_id=group,
                   max_lag=max_lag, status="OK")
    kept = [lag("orders", 1, 10), lag("audit", 1, 20), lag("gone", 1, 30)]
    rows = [lag("orders", 2, 11), lag("audit", 1, 21), lag("orders", 0, 9)]
    out = {r["group_id"]: r["max_lag"] for r in merged(kept, rows, "group_lag",
                                                       {"orders", "audit", "new"})}
    assert out == {"orders": 11, "audit": 21}  # "gone" left: not among the live groups
    parts = [row("partition_lag", sampled_at=AT, group_id="orders", topic="t", partition=p, lag=p)
             for p in (0, 1)]
    newer = [{**parts[1], "sampled_at": AT + timedelta(minutes=1), "lag": 7}]
    assert sorted((r["partition"], r["lag"]) for r in merged(parts, newer, "partition_lag",
                                                             {"orders"})) == [(0, 0), (1, 7)]


def test_publish_with_merge_adds_newer_lag_rows_and_a_group_group_state_lost_leaves() -> None:
    """A stream publishes only what is newer each batch: a group without a new sample keeps
    its series; a group that turned Dead (no longer among group_state's rows) loses its lag
    series too, in both lag tables."""
    c = RowsCollector(per_partition=True)
    c.publish(group_lag=GROUP_LAG, partition_lag=PARTITION_LAG, group_state=GROUP_STATE,
              merge=True)
    later = {**GROUP_LAG[0], "sampled_at": AT + timedelta(minutes=1), "max_lag": 5}
    c.publish(group_lag=[later], partition_lag=[], group_state=GROUP_STATE, merge=True)
    found = samples(scrape_text(c))
    assert of(found, "kafka_consumergroup_group_max_lag") == {
        L(group="orders"): 5, L(group="audit"): GROUP_LAG[1]["max_lag"]}
    assert len(of(found, "kafka_consumergroup_group_lag")) == len(PARTITION_LAG)
    c.publish(group_lag=[], group_state=GROUP_STATE[:1], merge=True)  # audit turned Dead
    found = samples(scrape_text(c))
    assert {dict(labels)["group"] for (name, labels) in found} == {"orders"}
    off = RowsCollector(per_partition=False)
    off.publish(group_lag=GROUP_LAG, partition_lag=PARTITION_LAG, group_state=GROUP_STATE,
                merge=True)
    assert off.snapshot().partition_lag == () and len(off.snapshot().group_lag) == 2


def test_a_refresh_runs_before_each_scrape() -> None:
    scrapes: list[int] = []

    def refresh(collector: RowsCollector) -> None:
        scrapes.append(1)
        collector.publish(group_lag=[{**GROUP_LAG[0], "max_lag": len(scrapes)}])
    c = RowsCollector(refresh=refresh)
    for n in (1, 2):
        assert of(samples(scrape_text(c)), "kafka_consumergroup_group_max_lag") == {
            L(group="orders"): n}


def batch(before: ReplayProgress | None, n: int, watermark: datetime | None,
          newest: datetime | None) -> ReplayProgress:
    return advance(before, batch_id=n, duration_ms=1500 * (n + 1), input_rows=100 * (n + 1),
                   output_rows=40 * (n + 1), rejected_rows=n, groups_failed=n // 2,
                   finished_at=AT + timedelta(seconds=n), watermark=watermark,
                   newest_event=newest)


def test_progress_series_give_the_last_batch_and_the_totals() -> None:
    p = batch(None, 0, None, AT)
    p = batch(p, 1, AT - timedelta(minutes=2), AT + timedelta(seconds=30))
    p = batch(p, 2, AT - timedelta(minutes=1), AT)  # an older newest event does not go back
    c = RowsCollector()
    c.publish(progress=p)
    found = {name: v for (name, labels), v in samples(scrape_text(c)).items() if not labels}
    assert found == {
        "cgr_replay_batch_id": 2,
        "cgr_replay_last_batch_duration_seconds": 4.5,
        "cgr_replay_last_batch_input_rows": 300,
        "cgr_replay_last_batch_output_rows": 120,
        "cgr_replay_last_batch_timestamp_seconds": (AT + timedelta(seconds=2)).replace(
            tzinfo=UTC).timestamp(),
        "cgr_replay_input_rows_total": 600,
        "cgr_replay_output_rows_total": 240,
        "cgr_replay_rejected_rows_total": 3,
        "cgr_replay_groups_failed_total": 1,
        "cgr_replay_watermark_timestamp_seconds": (AT - timedelta(minutes=1)).replace(
            tzinfo=UTC).timestamp(),
        "cgr_replay_newest_event_timestamp_seconds": (AT + timedelta(seconds=30)).replace(
            tzinfo=UTC).timestamp(),
        "cgr_replay_watermark_delay_seconds": 90.0,
    }
    assert {n for n in found} >= {m.name + ("_total" if m.kind == "counter" else "")
                                  for m in METRICS if m.table == PROGRESS}


def test_rows_out_a_writer_did_not_say_give_no_sample_rather_than_a_zero() -> None:
    p = advance(None, batch_id=0, duration_ms=10, input_rows=5, output_rows=None,
                rejected_rows=0, groups_failed=0, finished_at=AT, watermark=None,
                newest_event=None)
    c = RowsCollector()
    c.publish(progress=p)
    names = {name for name, _ in samples(scrape_text(c))}
    assert "cgr_replay_input_rows_total" in names
    assert not {n for n in names if "output" in n}
    p = batch(p, 1, None, None)  # a writer that says from here on: the total counts from it
    assert (p.output_rows, p.output_rows_total) == (80, 80)


def test_no_progress_yet_serves_no_progress_series() -> None:
    assert not [name for name, _ in samples(scrape_text(RowsCollector()))]
    with pytest.raises(ValueError, match="rejected_rows = -1"):
        advance(None, batch_id=0, duration_ms=1, input_rows=1, output_rows=1, rejected_rows=-1,
                groups_failed=0, finished_at=AT, watermark=None, newest_event=None)


def test_a_metric_naming_a_column_the_contract_lacks_fails_at_once() -> None:
    with pytest.raises(ValueError, match="group_lag has no column 'lag_seconds'"):
        Metric("x", "gauge", "x", "group_lag", "lag_seconds")


def test_the_endpoint_on_port_zero_says_its_port_and_serves_the_swapped_snapshot() -> None:
    server = serve(0, per_partition=True)
    try:
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}/metrics"

        def fetch() -> Samples:
            with urllib.request.urlopen(server.url, timeout=10) as r:
                return samples(r.read().decode())
        assert fetch() == {}
        server.collector.publish(group_lag=GROUP_LAG, partition_lag=PARTITION_LAG)
        assert of(fetch(), "kafka_consumergroup_group_lag")[
            L(group="orders", topic="orders", partition=0)] == 1200
    finally:
        server.stop()


def test_the_metrics_package_imports_no_spark() -> None:
    allowed = ("pipeline.metrics", "prometheus_client", "schemas", "pipeline.lag.rules")
    assert foreign_imports(ROOT / "pipeline" / "metrics", allowed) == []


def test_spark_rows_give_what_their_dicts_give() -> None:
    from pyspark.sql import Row  # a plain Python class: no JVM starts

    as_dicts, as_rows = RowsCollector(True), RowsCollector(True)
    as_dicts.publish(group_lag=GROUP_LAG, partition_lag=PARTITION_LAG, group_state=GROUP_STATE)
    as_rows.publish(group_lag=[Row(**r) for r in GROUP_LAG],
                    partition_lag=[Row(**r) for r in PARTITION_LAG],
                    group_state=[Row(**r) for r in GROUP_STATE])
    assert samples(scrape_text(as_rows)) == samples(scrape_text(as_dicts))


def test_a_scrape_during_publishes_sees_one_snapshot_whole() -> None:
    """Two snapshots swapped in turn by another thread: every scrape shows one of them in
    every table, never a mix."""
    def snapshot(n: int) -> dict[str, list[dict[str, object]]]:
        return {"group_lag": [{**r, "max_lag": n} for r in GROUP_LAG],
                "group_state": [{**r, "member_count": n} for r in GROUP_STATE]}
    c = RowsCollector()
    c.publish(**snapshot(0))
    stop = threading.Event()

    def swap() -> None:
        n = 0
        while not stop.is_set():
            n = 1 - n
            c.publish(**snapshot(n))
    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        seen = set()
        for _ in range(300):
            found = samples(scrape_text(c))
            values = {v for (name, _), v in found.items()
                      if name in ("kafka_consumergroup_group_max_lag", "cgr_group_members")}
            assert len(values) == 1, values
            seen |= values
    finally:
        stop.set()
        swapper.join()
    assert seen == {0, 1}  # the swaps did interleave with the scrapes
