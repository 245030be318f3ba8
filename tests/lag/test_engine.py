"""The incremental lag engine (`pipeline.lag.engine`) against the oracle: fed a replayed log's
history and its samples in batches cut at random times, as the stream delivers them (a
sample once every history row at or before it has come; rows early, late and in any
order), its state through JSON between batches, its rows are the oracle's over everything,
row for row. Its state stays bounded on a steady log, and it says when its pruned state
cannot answer, exactly then."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pytest

from pipeline.fold import CoordinatorConfig
from pipeline.fold.group_replay import replay_group
from pipeline.generator import LogSpec, end_offset_samples, generate, last_event_ms
from pipeline.lag import Commit, LagConfig
from pipeline.lag.batch import TP, Row, Rows, by_partition
from pipeline.lag.engine import (
    FORMAT,
    GroupState,
    PartitionState,
    assigned_partitions,
    group_step,
    partition_step,
)
from tests.grouping import by_group
from tests.lag.oracle import lag_tables

INTERNAL = ("moment", "verdict", "prev_t")


@dataclass(frozen=True)
class History:
    samples: list[Row]
    changes: list[Row]
    shapes: list[Row]
    transitions: list[Row]
    rebalances: list[Row]

    def oracle(self, cfg: LagConfig, until: int | None = None) -> tuple[list[Row], list[Row]]:
        samples = [s for s in self.samples if until is None or s["t"] < until]
        return lag_tables(samples, self.changes, self.shapes, self.transitions,
                          self.rebalances, cfg)


@cache
def replayed(seed: int, kind: str, groups: int = 4, events: int = 1200,
             messy: float = 0.0) -> History:
    """A generated log replayed group by group (`replay_group`, as every backend does), its
    history rows timed `t`, and its producers' samples of the partitions it consumes;
    `messy`: that share of bad rows and of rows delivered late in the log."""
    spec = LogSpec(groups=groups, events=events, seed=seed, log_kind=kind,
                   sample_interval_ms=4_000, bad_rows=messy, out_of_order=messy)
    log = generate(spec)
    end = last_event_ms(log)
    tables: dict[str, list[Row]] = defaultdict(list)
    for group, evs in by_group(log).items():
        for table, rows in replay_group(group, None, evs, end, CoordinatorConfig())[1].items():
            tables[table] += rows

    def timed(rows: list[Row]) -> list[Row]:
        return [{**r, "t": r["event_time"]} for r in rows]

    changes, shapes = timed(tables["offset_history"]), timed(tables["group_history"])
    consumed = {(c["topic"], c["partition"]) for c in changes}
    consumed |= {tp for s in shapes for tp in assigned_partitions(s)}
    samples = [{**s, "t": s["sampled_at"]} for s in end_offset_samples(spec, end)
               if (s["topic"], s["partition"]) in consumed]
    return History(samples, changes, shapes, timed(tables["group_transitions"]),
                   tables["rebalances"])


def _time(kind: str, row: Row) -> int | None:
    return row["completed_at"] if kind == "rebalances" else row["t"]


@dataclass
class Batches:
    """The stream's batches: cuts W_1 < ... < W_n; batch i's samples are those in
    [W_i-1, W_i); each history row comes in a batch at or before the one its time falls in
    (early by up to `early` batches), in a random order within it."""

    cuts: list[int]
    samples: list[list[Row]] = field(default_factory=list)
    rows: dict[str, list[list[Row]]] = field(default_factory=dict)

    @classmethod
    def cut(cls, h: History, n: int, rng: random.Random, early: int = 2) -> Batches:
        times = sorted({s["t"] for s in h.samples})
        cuts = sorted(rng.sample(times[1:], min(n - 1, len(times) - 1))) + [times[-1] + 1]
        out = cls(cuts)
        out.samples = [[] for _ in cuts]
        for s in h.samples:
            out.samples[out.index(s["t"])].append(s)
        for kind in ("changes", "shapes", "transitions", "rebalances"):
            batches: list[list[Row]] = [[] for _ in cuts]
            for r in getattr(h, kind):
                t = _time(kind, r)
                due = len(cuts) - 1 if t is None else out.index(t)
                batches[max(0, due - rng.randint(0, early))].append(r)
            for b in batches:
                rng.shuffle(b)
            out.rows[kind] = batches
        return out

    def index(self, t: int) -> int:
        return next((i for i, w in enumerate(self.cuts) if t < w), len(self.cuts) - 1)


@dataclass
class Engine:
    """The two stages as Spark would run them: each key with input in a batch, its state
    kept as JSON text between batches."""

    cfg: LagConfig
    prune: bool = True
    watermark: bool = True  # pass each batch's watermark (its cut), as the stream has one
    partitions: dict[TP, str] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)

    def until(self, batches: Batches, i: int) -> int | None:
        return batches.cuts[i] if self.watermark else None

    def stage1(self, batches: Batches, i: int) -> tuple[
            dict[TP, list[Row]], dict[TP, list[str]], dict[TP, PartitionState | None]]:
        """Candidates and the reasons it could not answer, by partition; the states before."""
        inputs = by_partition(Rows(samples=batches.samples[i],
                                   changes=batches.rows["changes"][i],
                                   shapes=batches.rows["shapes"][i]))
        out: dict[TP, list[Row]] = {}
        reasons: dict[TP, list[str]] = {}
        before: dict[TP, PartitionState | None] = {}
        for tp in sorted(inputs):
            text = self.partitions.get(tp)
            state = None if text is None else PartitionState.from_json(text)
            before[tp] = None if text is None else PartitionState.from_json(text)
            got = inputs[tp]
            r = partition_step(state, *tp, got.samples, got.changes, got.assigned, self.cfg,
                               self.until(batches, i), prune=self.prune)
            self.partitions[tp] = r.state.to_json()
            assert PartitionState.from_json(self.partitions[tp]) == r.state
            assert r.exact == (not r.reasons)
            if r.reasons:
                reasons[tp] = r.reasons
            out[tp] = r.candidates
        return out, reasons, before

    def rebuild(self, batches: Batches, i: int, tp: TP) -> list[Row]:
        """The caller's fallback for a partition its state could not answer: the step from
        no state over everything the partition was sent up to batch `i` (exact: a step
        prunes only at its end); batch `i`'s rows, and its state kept."""
        def mine(r: Row) -> bool:
            return (r["topic"], r["partition"]) == tp

        upto = range(i + 1)
        samples = [s for b in upto for s in batches.samples[b] if mine(s)]
        changes = [c for b in upto for c in batches.rows["changes"][b] if mine(c)]
        assigned = [{"group_id": s["group_id"], "t": s["t"]} for b in upto
                    for s in batches.rows["shapes"][b] if tp in assigned_partitions(s)]
        r = partition_step(None, *tp, samples, changes, assigned, self.cfg,
                           self.until(batches, i), prune=self.prune)
        assert r.exact
        self.partitions[tp] = r.state.to_json()
        after = batches.cuts[i - 1] if i else None
        return [c for c in r.candidates if after is None or c["t"] >= after]

    def stage2(self, batches: Batches, i: int, by_tp: dict[TP, list[Row]]
               ) -> tuple[list[Row], list[Row]]:
        candidates: dict[str, list[Row]] = defaultdict(list)
        for tp_rows in by_tp.values():
            for c in tp_rows:
                candidates[c["group_id"]].append(c)
        rows: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
        for kind in ("shapes", "transitions", "rebalances"):
            for r in batches.rows[kind][i]:
                rows[r["group_id"]][kind].append(r)
        parts: list[Row] = []
        groups: list[Row] = []
        for group in sorted(set(rows) | set(candidates)):
            text = self.groups.get(group)
            state = None if text is None else GroupState.from_json(text)
            mine = rows[group]
            r = group_step(state, group, candidates.get(group, []), mine["shapes"],
                           mine["transitions"], mine["rebalances"], self.cfg,
                           self.until(batches, i))
            assert r.exact, r.reasons
            self.groups[group] = r.state.to_json()
            assert GroupState.from_json(self.groups[group]) == r.state
            parts += r.partition_rows
            groups += r.group_rows
        return parts, groups

    def batch(self, batches: Batches, i: int) -> tuple[
            list[Row], list[Row], dict[TP, list[str]], dict[TP, PartitionState | None]]:
        """Batch `i` as the caller runs it: stage 1, the fallback for the partitions its state
        could not answer, stage 2. Its partition and group rows, those partitions' reasons,
        and the partition states before."""
        candidates, reasons, before = self.stage1(batches, i)
        for tp in reasons:
            candidates[tp] = self.rebuild(batches, i, tp)
        parts, groups = self.stage2(batches, i, candidates)
        return parts, groups, reasons, before

    def size(self) -> int:
        return sum(map(len, self.partitions.values())) + sum(map(len, self.groups.values()))

    def entries(self) -> int:
        """What the states hold, counted: plateaus, samples, ring commits, rows ahead."""
        n = 0
        for text in self.partitions.values():
            st = PartitionState.from_json(text)
            n += len(st.steps) + len(st.recent) + sum(
                len(p.ring) + len(p.pending) + len(p.assigned_pending) for p in st.pairs.values())
        for text in self.groups.values():
            n += sum(map(len, GroupState.from_json(text).pending.values()))
        return n


def table(rows: Sequence[Row]) -> Counter[tuple[tuple[str, Any], ...]]:
    return Counter(tuple(sorted((k, v) for k, v in r.items() if k not in INTERNAL))
                   for r in rows)


def assert_same(got: Sequence[Row], want: Sequence[Row], what: str) -> None:
    g, w = table(got), table(want)
    extra, missing = list((g - w).elements()), list((w - g).elements())
    assert not extra and not missing, (f"{what}: {len(got)} rows, expected {len(want)}\n"
                                       f"unexpected {extra[:2]}\nmissing {missing[:2]}")


def pruned_away(parts: Sequence[Row], before: dict[TP, PartitionState | None]) -> set[TP]:
    """The partitions where an oracle row's committed offset was interpolated between
    samples older than the pruned state kept (the log end passed it before the oldest kept
    plateau began): what the engine cannot answer."""
    out = set()
    for r in parts:
        st = before.get((r["topic"], r["partition"]))
        if (st is not None and st.pruned and r["lag_ms_basis"] == "INTERPOLATED"
                and r["t"] - r["lag_ms"] < st.steps[0][0]):
            out.add((r["topic"], r["partition"]))
    return out


CASES = [(1, "offsets-topic", 6, 0.0), (2, "journal", 9, 0.0), (5, "offsets-topic", 17, 0.0),
         (7, "journal", 30, 0.0), (11, "offsets-topic", 3, 0.0), (13, "offsets-topic", 12, 0.03),
         (17, "journal", 20, 0.03)]


@pytest.mark.parametrize(("seed", "kind", "n", "messy"), CASES)
def test_batches_at_random_cuts_give_the_oracles_rows(seed: int, kind: str, n: int,
                                                      messy: float) -> None:
    """Unpruned, every batch answers and the union is the oracle's. Pruned, a batch answers
    exactly where no committed offset is bracketed before the kept samples (checked against
    the oracle's own rows, both ways), and the caller's fallback (the partition's step
    from no state over all it was sent, its state kept) keeps the union the oracle's."""
    h, cfg = replayed(seed, kind, messy=messy), LagConfig(intervals=4, expire_group_ms=40_000)
    batches = Batches.cut(h, n, random.Random(seed))
    want_parts, want_groups = h.oracle(cfg)
    by_batch: dict[int, list[Row]] = defaultdict(list)
    for r in want_parts:
        by_batch[batches.index(r["t"])].append(r)
    full, pruned = Engine(cfg, prune=False, watermark=False), Engine(cfg)
    got: dict[str, list[Row]] = {"full": [], "full_groups": [], "pruned": [],
                                 "pruned_groups": []}
    for i in range(len(batches.cuts)):
        exact_candidates, reasons, _ = full.stage1(batches, i)
        assert not reasons
        parts, groups = full.stage2(batches, i, exact_candidates)
        got["full"] += parts
        got["full_groups"] += groups
        candidates, reasons, before = pruned.stage1(batches, i)
        assert set(reasons) == pruned_away(by_batch[i], before), (i, reasons)
        for tp in reasons:  # the caller recomputes those partitions' rows
            candidates[tp] = pruned.rebuild(batches, i, tp)
            assert candidates[tp] == exact_candidates[tp]
        parts, groups = pruned.stage2(batches, i, candidates)
        got["pruned"] += parts
        got["pruned_groups"] += groups
    assert_same(got["full"], want_parts, "partition_lag")
    assert_same(got["full_groups"], want_groups, "group_lag")
    assert_same(got["pruned"], want_parts, "partition_lag, pruned")
    assert_same(got["pruned_groups"], want_groups, "group_lag, pruned")
    assert len(want_parts) > 100 and len(want_groups) > 10
    bases = Counter(r["lag_ms_basis"] for r in want_parts)
    assert bases["INTERPOLATED"]
    assert pruned.size() < full.size()


STATES = ("Empty", "Stable", "PreparingRebalance", "CompletingRebalance", "Dead")
TPS: tuple[TP, ...] = (("a", 0), ("a", 1), ("b", 0))


def synthetic(seed: int, span_ms: int = 120_000) -> History:
    """A small made-up history that has what a replayed log rarely has: offsets deleted and
    expired, aborted commits, long rewinds, groups Dead and Empty, samples whose end goes
    back or comes twice, log starts past committed offsets (records lost), and ties in time
    broken by log position."""
    rng = random.Random(seed)
    samples: list[Row] = []
    ends: dict[TP, list[tuple[int, int]]] = {}
    for tp in TPS:
        t, end, points = rng.randrange(0, 4) * 500, rng.randrange(0, 500), []
        while t < span_ms:
            end += rng.choice((0, 5, 20, 60))
            shown = end - rng.randrange(1, 50) if rng.random() < 0.05 else end
            samples.append({"topic": tp[0], "partition": tp[1], "t": t, "log_end_offset": shown,
                            "log_start_offset": rng.choice(
                                (None, 0, 3, max(0, end - rng.randrange(20, 200))))})
            if rng.random() < 0.05:  # delivered twice, another end
                samples.append({**samples[-1], "log_end_offset": shown + rng.randrange(-5, 5)})
            points.append((t, end))
            t += rng.choice((1000, 1500, 2000, 3000))
        ends[tp] = points
    groups = ("g1", "g2", "g3")
    position = iter(range(10**6))

    def where() -> Row:
        return {"log_partition": rng.randrange(3), "log_offset": next(position)}

    changes, shapes, transitions, rebalances = [], [], [], []
    for group in groups:
        for tp in TPS:
            if rng.random() < 0.2:
                continue
            t = rng.randrange(0, span_ms // 4, 500)
            while t < span_ms:
                end = max((e for s, e in ends[tp] if s <= t), default=0)
                kind = rng.choices(("COMMIT", "TOMBSTONE", "EXPIRED", "TXN_ABORTED"),
                                   (90, 3, 3, 4))[0]
                offset = (None if kind in ("TOMBSTONE", "EXPIRED") else
                          rng.randrange(0, end + 1) if rng.random() < 0.05 else
                          max(0, end - rng.randrange(0, 80)))
                changes.append({"group_id": group, "topic": tp[0], "partition": tp[1], "t": t,
                                "change": kind, "committed_offset": offset, **where()})
                t += rng.choice((500, 1000, 2000, 4000))
        t, seq, generation = rng.randrange(0, span_ms // 3, 500), 0, 0
        state = None
        while t < span_ms:
            new = rng.choice(STATES)
            generation += rng.random() < 0.5
            members = [{"member_id": f"{group}-m{m}", "client_id": f"c{m}",
                        "client_host": f"/10.0.0.{m}",
                        "assignment": [{"topic": tp[0], "partition": tp[1]} for tp in TPS
                                       if rng.random() < 0.5]}
                       for m in range(rng.randrange(0, 3))]
            pos = where()
            seq += 1
            shapes.append({"group_id": group, "t": t, **pos, "seq": seq, "state": new,
                           "generation_id": generation, "state_since": t, "members": members})
            transitions.append({"group_id": group, "t": t, **pos, "seq": seq - 1,
                                "from_state": state, "to_state": new,
                                "cause": rng.choice(("JOIN", "LEAVE", "SNAPSHOT"))})
            if rng.random() < 0.4:
                rebalances.append({"group_id": group, "generation_id": generation,
                                   "started_at": rng.choice((None, t - 700)),
                                   "completed_at": rng.choice((t, t + 500, None)),
                                   "cause": "JOIN", **where()})
            state = new
            t += rng.choice((500, 3000, 9000, 20000))
    return History(samples, changes, shapes, transitions, rebalances)


@pytest.mark.parametrize("seed", range(12))
def test_deleted_expired_dead_and_bad_samples_too(seed: int) -> None:
    h, cfg = synthetic(seed), LagConfig(intervals=3, expire_group_ms=15_000, allowed_lag=5)
    batches = Batches.cut(h, random.Random(seed).randrange(2, 25), random.Random(seed), early=3)
    want_parts, want_groups = h.oracle(cfg)
    by_batch: dict[int, list[Row]] = defaultdict(list)
    for r in want_parts:
        by_batch[batches.index(r["t"])].append(r)
    full, pruned = Engine(cfg, prune=False, watermark=False), Engine(cfg)
    parts: list[Row] = []
    groups: list[Row] = []
    for i in range(len(batches.cuts)):
        exact, none, _ = full.stage1(batches, i)
        assert not none
        full.stage2(batches, i, exact)
        p, g, reasons, before = pruned.batch(batches, i)
        assert set(reasons) == pruned_away(by_batch[i], before), (i, reasons)
        parts += p
        groups += g
    assert_same(parts, want_parts, "partition_lag")
    assert_same(groups, want_groups, "group_lag")


CFG = LagConfig()


def sample(t_s: float, end: int) -> Row:
    return {"topic": "t", "partition": 0, "t": int(t_s * 1000), "log_end_offset": end,
            "log_start_offset": 0}


def commit(t_s: float, offset: int, group: str = "g", position: int = 0) -> Row:
    return {"group_id": group, "topic": "t", "partition": 0, "t": int(t_s * 1000),
            "change": "COMMIT", "committed_offset": offset, "log_partition": 0,
            "log_offset": position or int(t_s * 1000)}


def ten_seconds() -> PartitionState:
    """Samples every second, the log end up 100 each; the group's offset at 950, so only
    the plateaus from 900 on are kept."""
    r = partition_step(None, "t", 0, [sample(i, 100 * (i + 1)) for i in range(10)],
                       [commit(8.5, 950)], [], CFG)
    assert r.exact and r.state.pruned
    assert [s[2] for s in r.state.steps] == [900, 1000]
    assert r.state.first == (0, 100)
    return PartitionState.from_json(r.state.to_json())


@pytest.mark.parametrize(("offset", "end", "exact", "basis"), [
    (450, 1100, False, None),  # the log end passed 450 at 4.5 s: that plateau is gone
    (50, 1100, True, "LOWER_BOUND"),  # below the first sample: the first is kept for this
    (905, 1100, True, "INTERPOLATED"),  # bracketed by kept plateaus
    (899, 1100, False, None),  # just below the oldest kept plateau
    (900, 1100, True, "INTERPOLATED"),  # at it
    (450, 400, True, "CAUGHT_UP"),  # a sample whose end went back: caught up, no bracket
])
def test_the_flag_is_raised_exactly_when_a_bracket_was_pruned(
        offset: int, end: int, exact: bool, basis: str | None) -> None:
    history = [sample(i, 100 * (i + 1)) for i in range(10)] + [sample(11, end)]
    changes = [commit(8.5, 950), commit(10.5, offset)]
    r = partition_step(ten_seconds(), "t", 0, [sample(11, end)], [commit(10.5, offset)], [], CFG)
    assert r.exact == exact, r.reasons
    want = lag_tables(history, changes, [], [], [], CFG)[0][-1]
    assert want["t"] == 11_000
    if exact:
        got = r.candidates[-1]
        assert got["lag_ms_basis"] == basis == want["lag_ms_basis"]
        assert {k: got[k] for k in ("lag", "lag_ms", "status", "rule")} == \
            {k: want[k] for k in ("lag", "lag_ms", "status", "rule")}
    else:
        assert want["lag_ms_basis"] == "INTERPOLATED" and 11_000 - want["lag_ms"] < 9_000
        assert "bracketed before the samples kept" in r.reasons[0]


def test_input_outside_the_streams_contract_is_flagged_not_answered() -> None:
    late_sample = partition_step(ten_seconds(), "t", 0, [sample(9, 5000)], [], [], CFG)
    late_change = partition_step(ten_seconds(), "t", 0, [sample(11, 1100)], [commit(9, 990)],
                                 [], CFG)
    assert not late_sample.exact and not late_sample.candidates
    assert not late_change.exact and "offset change" in late_change.reasons[0]
    g = group_step(None, "g", [], [], [], [], CFG).state
    g.newest_ms = 10_000
    late_shape = group_step(g, "g", [], [{"group_id": "g", "t": 9_000, "log_partition": 0,
                                          "log_offset": 1, "seq": 1, "state": "Stable",
                                          "generation_id": 1, "state_since": 9_000,
                                          "members": []}], [], [], CFG)
    assert not late_shape.exact and "shapes" in late_shape.reasons[0]


def test_changes_ahead_of_the_samples_wait_in_the_state() -> None:
    """A commit after the batch's last sample is not applied to it; the next batch's sample
    after it sees it, with its lag against the sample before it."""
    r = partition_step(ten_seconds(), "t", 0, [sample(10, 1100)], [commit(10.5, 1050)], [], CFG)
    assert r.candidates[-1]["committed_offset"] == 950
    state = PartitionState.from_json(r.state.to_json())
    assert [c["committed_offset"] for c in state.pairs["g"].pending] == [1050]
    nxt = partition_step(state, "t", 0, [sample(11, 1200)], [], [], CFG)
    assert nxt.candidates[-1]["committed_offset"] == 1050
    assert nxt.state.pairs["g"].ring[-1].lag == 1100 - 1050


def steady(seconds: int) -> History:
    """Four partitions written at a steady rate, sampled every 2 s, and a fifth nobody
    samples; three groups, each assigned the four once, commit every second a little
    behind the log end (and to the fifth)."""
    samples = [{"topic": "s", "partition": p, "t": t * 1000, "log_end_offset": 50 * t + p,
                "log_start_offset": 0} for t in range(0, seconds, 2) for p in range(4)]
    changes, shapes = [], []
    for n, group in enumerate(("x", "y", "z")):
        members = [{"member_id": f"{group}-1", "client_id": "c", "client_host": "/h",
                    "assignment": [{"topic": "s", "partition": p} for p in range(4)]}]
        shapes.append({"group_id": group, "t": 500, "log_partition": 0, "log_offset": n,
                       "seq": 1, "state": "Stable", "generation_id": 1, "state_since": 500,
                       "members": members})
        for t in range(1, seconds):
            for p in range(5):
                changes.append({"group_id": group, "topic": "s", "partition": p,
                                "t": t * 1000 + 100 * n, "change": "COMMIT",
                                "committed_offset": max(0, 50 * t - 30 * (n + 1) - (t % 3) * 7),
                                "log_partition": n, "log_offset": t * 4 + p})
    return History(samples, changes, shapes, [], [])


def test_the_state_stays_bounded_on_a_steady_log() -> None:
    """What it holds after 300 batches is what it held after 100 (its bytes too, but for the
    digits of bigger numbers); unpruned, or without the watermark, it grows with them."""
    h = steady(600)
    cuts = list(range(2_000, 600_001, 2_000))
    batches = Batches(cuts)
    batches.samples = [[] for _ in cuts]
    for s in h.samples:
        batches.samples[batches.index(s["t"])].append(s)
    batches.rows = {kind: [[] for _ in cuts] for kind in
                    ("changes", "shapes", "transitions", "rebalances")}
    for kind in ("changes", "shapes"):
        for r in getattr(h, kind):
            batches.rows[kind][batches.index(r["t"])].append(r)
    pruned, full, blind = Engine(CFG), Engine(CFG, prune=False), Engine(CFG, watermark=False)
    sizes, full_sizes, held, blind_held = [], [], [], []
    parts: dict[bool, list[Row]] = {True: [], False: []}
    for i in range(len(cuts)):
        for engine, kept in ((pruned, sizes), (full, full_sizes)):
            candidates, reasons, _ = engine.stage1(batches, i)
            assert not reasons
            p, _ = engine.stage2(batches, i, candidates)
            kept.append(engine.size())
            parts[engine is pruned] += p
            if engine is pruned:
                held.append(engine.entries())
        blind.stage2(batches, i, blind.stage1(batches, i)[0])
        if i in (100, 299):
            blind_held.append(blind.entries())
    assert max(held[200:]) <= max(held[50:100])
    assert max(sizes[200:]) <= 1.1 * max(sizes[50:100])
    assert full_sizes[-1] > 2 * full_sizes[100]
    # without the watermark the unsampled partition keeps every commit it is sent
    assert blind_held[-1] > 2 * blind_held[0]
    assert all(len(PartitionState.from_json(t).steps) <= 3 for t in pruned.partitions.values())
    # the unpruned engine is held to the oracle above; the oracle is slow on 300 batches
    assert_same(parts[True], parts[False], "partition_lag")
    assert len(parts[True]) == (300 - 1) * 4 * 3  # from the second sample on


def test_the_states_are_versioned_json_with_times_as_integers() -> None:
    st = ten_seconds()
    doc = json.loads(st.to_json())
    assert doc["v"] == FORMAT and doc["first"] == [0, 100]
    assert all(isinstance(x, int) for s in doc["steps"] for x in s)
    with pytest.raises(ValueError, match="format"):
        PartitionState.from_json('{"v": 99}')
    g = group_step(None, "g", [], [{"group_id": "g", "t": 5, "log_partition": 0,
                                   "log_offset": 1, "seq": 1, "state": "Stable",
                                   "generation_id": 1, "state_since": 5, "members": []}],
                   [], [], CFG).state
    assert GroupState.from_json(g.to_json()) == g and json.loads(g.to_json())["v"] == FORMAT


def test_the_watermark_folds_the_rows_before_it() -> None:
    """Rows before the batch's watermark cannot wait for a sample before them: they are
    folded in at once (the same rows as waiting gives), and one arriving after is late."""
    r = partition_step(ten_seconds(), "t", 0, [sample(10, 1100)], [commit(10.5, 1050)], [], CFG,
                       until_ms=10_800)
    assert r.state.pairs["g"].pending == [] and r.state.pairs["g"].last is not None
    assert r.state.pairs["g"].ring[-1] == Commit(1050, 10_500, 1100 - 1050)
    nxt = partition_step(r.state, "t", 0, [sample(11, 1200)], [], [], CFG)
    waited = partition_step(ten_seconds(), "t", 0, [sample(10, 1100)], [commit(10.5, 1050)],
                            [], CFG)
    assert nxt.candidates == partition_step(waited.state, "t", 0, [sample(11, 1200)], [], [],
                                            CFG).candidates
    late = partition_step(r.state, "t", 0, [], [commit(10.6, 1060)], [], CFG)
    assert not late.exact and "watermark at 10800" in late.reasons[0]
