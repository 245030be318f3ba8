"""One micro-batch of the incremental lag engine (`pipeline.lag.engine`) over every key it
touches: the caller's loop, as plain functions, so the stream (`pipeline.spark.lag.lagstate`)
and the tests run the same one.

A batch brings its ready samples and its new history rows (offset_history, group_history,
group_transitions, rebalances; times in epoch ms, `t` the row's time). Stage 1 runs per
topic partition that has any of them, stage 2 per group that has candidates or rows. The
states go in and come out as JSON text by key; only the touched keys change.

Where a step cannot answer from its state (`exact` False: a row or sample behind what the
state has evaluated, a committed offset bracketed before the samples kept), the batch asks
`Everything` for all that key was ever sent (up to this batch) and runs the step again
from no state (exact: a step prunes only at its end): a partition's candidates for this
batch's samples and its rebuilt state; a group's rows for this batch's candidates and its
rebuilt state. `Result.rebuilt` names them, for the log."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipeline.lag.config import LagConfig
from pipeline.lag.engine import (
    GroupResult,
    GroupState,
    PartitionResult,
    PartitionState,
    assigned_partitions,
    group_step,
    partition_step,
)

Row = dict[str, Any]
TP = tuple[str, int]
KINDS = ("shapes", "transitions", "rebalances")  # a group's history rows, stage 2's input


@dataclass(frozen=True)
class Rows:
    """A batch's input, or all that a key was ever sent."""

    samples: Sequence[Row] = ()
    changes: Sequence[Row] = ()
    shapes: Sequence[Row] = ()
    transitions: Sequence[Row] = ()
    rebalances: Sequence[Row] = ()

    def __bool__(self) -> bool:
        return any((self.samples, self.changes, self.shapes, self.transitions,
                    self.rebalances))


class Everything(Protocol):
    """All a key was sent up to and including this batch (the fallback's input)."""

    def partition(self, tp: TP) -> Rows:
        """Its samples up to the watermark, the offset changes of every group on it, and
        the group_history rows that assign it."""
        ...

    def group(self, group_id: str) -> Rows:
        """Its group_history, group_transitions and rebalances rows."""
        ...


@dataclass
class Result:
    partition_rows: list[Row]
    group_rows: list[Row]
    partitions: dict[TP, str]  # the touched partitions' new states
    groups: dict[str, str]  # the touched groups' new states
    rebuilt: list[str] = field(default_factory=list)  # keys run again from no state, and why


@dataclass
class PartitionInput:
    samples: list[Row] = field(default_factory=list)
    changes: list[Row] = field(default_factory=list)
    assigned: list[Row] = field(default_factory=list)


def by_partition(rows: Rows) -> dict[TP, PartitionInput]:
    """Stage 1's input per topic partition: samples, offset changes, and an assignment fact
    for each group_history row that assigns it."""
    out: dict[TP, PartitionInput] = defaultdict(PartitionInput)
    for s in rows.samples:
        out[(s["topic"], s["partition"])].samples.append(s)
    for c in rows.changes:
        out[(c["topic"], c["partition"])].changes.append(c)
    for shape in rows.shapes:
        for tp in assigned_partitions(shape):
            out[tp].assigned.append({"group_id": shape["group_id"], "t": shape["t"]})
    return out


def _by_group(rows: Rows) -> dict[str, dict[str, list[Row]]]:
    out: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for kind in KINDS:
        for r in getattr(rows, kind):
            out[r["group_id"]][kind].append(r)
    return out


def step_partition(text: str | None, tp: TP, mine: PartitionInput, cfg: LagConfig,
                   until_ms: int | None, now: set[int] | None = None) -> PartitionResult:
    """Stage 1 for one topic partition, its state as JSON text (None: none); `now`: the
    sample times whose candidates are wanted (None: all), when `mine` holds samples evaluated
    before too (a key run again from no state)."""
    state = None if text is None else PartitionState.from_json(text)
    r = partition_step(state, *tp, mine.samples, mine.changes, mine.assigned, cfg, until_ms)
    if now is not None:
        r.candidates[:] = [c for c in r.candidates if c["t"] in now]
    return r


def step_group(text: str | None, group: str, candidates: Sequence[Row],
               mine: Mapping[str, Sequence[Row]], cfg: LagConfig,
               until_ms: int | None) -> GroupResult:
    """Stage 2 for one group, its state as JSON text (None: none); `mine`: its new
    group_history, group_transitions and rebalances rows by kind (`KINDS`)."""
    state = None if text is None else GroupState.from_json(text)
    shapes, transitions, rebalances = (mine.get(k, ()) for k in KINDS)
    return group_step(state, group, candidates, shapes, transitions, rebalances, cfg, until_ms)


def run(partitions: Mapping[TP, str], groups: Mapping[str, str], batch: Rows,
        everything: Everything, cfg: LagConfig, until_ms: int | None) -> Result:
    """One batch: its lag rows and the touched keys' new states (`partitions`, `groups`:
    the states before, JSON text by key; a key absent has none)."""
    result = Result([], [], {}, {})
    candidates: dict[str, list[Row]] = defaultdict(list)
    for tp, mine in sorted(by_partition(batch).items()):
        r = step_partition(partitions.get(tp), tp, mine, cfg, until_ms)
        if not r.exact:
            result.rebuilt.append(f"partition {tp[0]}-{tp[1]}: {r.reasons[0]}")
            every = by_partition(everything.partition(tp)).get(tp, PartitionInput())
            r = step_partition(None, tp, every, cfg, until_ms, {s["t"] for s in mine.samples})
        result.partitions[tp] = r.state.to_json()
        for c in r.candidates:
            candidates[c["group_id"]].append(c)
    rows = _by_group(batch)
    for group in sorted(set(rows) | set(candidates)):
        g = step_group(groups.get(group), group, candidates[group], rows[group], cfg, until_ms)
        if not g.exact:
            result.rebuilt.append(f"group {group}: {g.reasons[0]}")
            every_g = everything.group(group)
            g = step_group(None, group, candidates[group], {
                k: getattr(every_g, k) for k in KINDS}, cfg, until_ms)
        result.groups[group] = g.state.to_json()
        result.partition_rows += g.partition_rows
        result.group_rows += g.group_rows
    return result
