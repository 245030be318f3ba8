"""`pipeline.lag.batch.run`, the loop the stream runs each micro-batch, fed the batches the
engine's tests cut (`tests.lag.test_engine`): its states through JSON between batches, its
fallback given all that was sent so far, the union of its rows is the oracle's."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from pipeline.fold import CoordinatorConfig
from pipeline.fold.group_replay import replay_group
from pipeline.lag import LagConfig
from pipeline.lag.batch import TP, Rows, run
from pipeline.lag.engine import assigned_partitions
from tests.fold.records import T0
from tests.fold.streams_records import StreamsLog
from tests.lag.test_engine import (
    CASES,
    Batches,
    History,
    Row,
    assert_same,
    replayed,
    synthetic,
)

KINDS = ("changes", "shapes", "transitions", "rebalances")


@dataclass
class Sent:
    """What the stream had sent up to batch `upto`: the fallback's source."""

    batches: Batches
    upto: int

    def _rows(self, kind: str) -> list[Row]:
        return [r for b in range(self.upto + 1) for r in self.batches.rows[kind][b]]

    def partition(self, tp: TP) -> Rows:
        samples = [s for b in range(self.upto + 1) for s in self.batches.samples[b]
                   if (s["topic"], s["partition"]) == tp]
        return Rows(samples,
                    [c for c in self._rows("changes") if (c["topic"], c["partition"]) == tp],
                    [s for s in self._rows("shapes") if tp in assigned_partitions(s)])

    def group(self, group_id: str) -> Rows:
        return Rows((), (), *([r for r in self._rows(k) if r["group_id"] == group_id]
                              for k in KINDS[1:]))


def replay_batches(batches: Batches, cfg: LagConfig) -> tuple[list[Row], list[Row], int]:
    partitions: dict[TP, str] = {}
    groups: dict[str, str] = {}
    parts: list[Row] = []
    group_rows: list[Row] = []
    rebuilt = 0
    for i, cut in enumerate(batches.cuts):
        batch = Rows(batches.samples[i], *(batches.rows[k][i] for k in KINDS))
        r = run(partitions, groups, batch, Sent(batches, i), cfg, cut)
        partitions.update(r.partitions)
        groups.update(r.groups)
        parts += r.partition_rows
        group_rows += r.group_rows
        rebuilt += len(r.rebuilt)
    return parts, group_rows, rebuilt


@pytest.mark.parametrize(("seed", "kind", "n", "messy"), CASES)
def test_the_batch_loop_gives_the_oracles_rows(seed: int, kind: str, n: int,
                                               messy: float) -> None:
    h, cfg = replayed(seed, kind, messy=messy), LagConfig(intervals=4, expire_group_ms=40_000)
    parts, groups, _ = replay_batches(Batches.cut(h, n, random.Random(seed)), cfg)
    want_parts, want_groups = h.oracle(cfg)
    assert_same(parts, want_parts, "partition_lag")
    assert_same(groups, want_groups, "group_lag")
    # a row says the group's type whenever it says its state
    assert {(r["state"] is None, r["group_type"] is None) for r in parts + groups} <= {
        (True, True), (False, False)}
    assert {r["group_type"] for r in parts if r["state"]} == {"classic"}  # the generator's


def test_the_fallback_runs_and_keeps_the_rows_exact() -> None:
    """Over the synthetic histories (long rewinds: pruned brackets), some batch needs the
    fallback, and the rows stay the oracle's."""
    rebuilt = 0
    for seed in range(12):
        h, cfg = synthetic(seed), LagConfig(intervals=3, expire_group_ms=15_000, allowed_lag=5)
        rng = random.Random(seed)
        batches = Batches.cut(h, rng.randrange(2, 25), rng, early=3)
        parts, groups, n = replay_batches(batches, cfg)
        want_parts, want_groups = h.oracle(cfg)
        assert_same(parts, want_parts, f"partition_lag, seed {seed}")
        assert_same(groups, want_groups, f"group_lag, seed {seed}")
        rebuilt += n
    assert rebuilt


def streams_history() -> History:
    """A streams group of two members (tasks 0-1 of both subtopologies on m-1, 2-3 on m-2),
    one commit of `words`-0, then a sample of every partition its active tasks read."""
    log = StreamsLog()
    log.stable_with("m-1")
    halves = {"m-1": {"0": [0, 1], "1": [0, 1]}, "m-2": {"0": [2, 3], "1": [2, 3]}}
    log.at(10_000).joins("m-2", 2, halves, process="p-2")
    log.current("m-1", 2, halves["m-1"], previous=1)
    log.current("m-2", 2, halves["m-2"], previous=0)
    log.at(20_000).commit("words", 0, 5, generation=None)
    tables = replay_group(log.group, None, log.events, None, CoordinatorConfig()).tables

    def timed(rows: list[Row]) -> list[Row]:
        return [{**r, "t": r["event_time"]} for r in rows]

    at = T0 + 30_000
    samples = [{"topic": topic, "partition": p, "log_end_offset": 9, "log_start_offset": 0,
                "sampled_at": at, "t": at} for topic in ("words", "app-repartition")
               for p in range(4)]
    return History(samples, timed(tables["offset_history"]), timed(tables["group_history"]),
                   timed(tables["group_transitions"]), tables["rebalances"])


def test_a_streams_partition_is_owned_by_the_member_whose_active_task_reads_it() -> None:
    """A streams member's `assignment` is what its active tasks read (the fold), so the lag
    tables name it as the owner, in the oracle and in the stream's loop alike."""
    h, cfg = streams_history(), LagConfig()
    want_parts, want_groups = h.oracle(cfg)
    owners = {(r["topic"], r["partition"]): r["member_id"] for r in want_parts}
    assert owners == {(topic, p): "m-1" if p < 2 else "m-2"
                      for topic in ("words", "app-repartition") for p in range(4)}
    assert {r["offset_status"] for r in want_parts} == {"COMMITTED", "NO_COMMIT"}
    assert {r["group_type"] for r in want_parts + want_groups} == {"streams"}
    parts, groups, _ = replay_batches(Batches.cut(h, 2, random.Random(1)), cfg)
    assert_same(parts, want_parts, "partition_lag")
    assert_same(groups, want_groups, "group_lag")
