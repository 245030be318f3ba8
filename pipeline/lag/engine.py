"""The lag tables computed incrementally, one micro-batch at a time, with compact state per key,
as plain functions: the one statement of which facts the rules (`pipeline.lag.rules`) see,
run per key by the lag step for the stream and the backfill alike
(`pipeline.spark.lag.lagstate`: two grouped maps, or the driver for a small batch), in two
stages that match its two shuffles.

1. `partition_step`, per topic partition: that partition's new (ready) samples, the new
   offset changes of every group on it (offset_history rows), and the groups' new
   assignments of it (`assignments`, exploded from group_history rows). Out: one candidate
   row per (group, sample) with everything of a partition_lag row that the partition
   knows (offsets, lag, time lag, Burrow's verdict), and the next `PartitionState`.
2. `group_step`, per group: its candidates from stage 1 and its new group_history,
   group_transitions and rebalances rows. Out: its partition_lag rows (the candidates
   completed with the group's state, generation and the partition's owner, and those the
   group's moment rules out dropped) and its group_lag rows, and the next `GroupState`.

Rows are dicts: inputs under the history tables' column names with `t` the row's time in
epoch ms (`event_time`; `sampled_at` for a sample; a rebalance is timed by `completed_at`),
as `tests/lag/oracle.py` takes them; outputs under the lag tables' names with `t` for
`sampled_at`. The rules are `pipeline.lag.rules`; this module only decides which facts they
see.

Contract (the stream's readiness rule, `pipeline.spark.lag.lagflow`): a sample is passed in
the batch in which it is ready, and it is ready only when every history row at or before
its time has been passed, in that batch or an earlier one. So every history row a batch
brings is after every sample of earlier batches; it may be before or after this batch's
samples (a row after them waits in the state, `pending`, until a sample reaches it), and
rows may come in any order (a late commit inside the watermark delay). Each partition's
samples in a batch are after its samples of earlier batches. With the batch's watermark
(`until_ms`: samples before it are the ready ones, so every later sample is at or after
it) the rows before it are folded into the state at once and only the rows after it wait;
a row before an earlier batch's watermark is then late too. Input that breaks this (a
sample at or before one already evaluated, a history row at or before an evaluated sample)
cannot be answered from the state: the step says so (`exact` False, `reasons`) and the
caller recomputes from the whole history, as does a step whose pruned state lacks a fact:
a committed offset whose time lag is interpolated between samples older than those kept
(a long rewind, a new group starting far back). The recompute is this same step from no
state over everything the partition was sent (exact: a step prunes only at its end): keep
its candidates for the batch's samples and its state, which keeps that bracket now.

State kept, and why it stays small (per key, not per batch):

- per partition: the running maximum of its end offsets as plateaus (first and last sample
  time of each maximum), from the plateau that brackets the lowest committed offset of any
  group on it (time lag interpolates there, `rules.time_lag`), plus its first sample (the
  lower bound's base); its last `intervals` samples (Burrow's broker window; the last is
  the previous sample); per group its last offset change, Burrow's ring of its last
  `intervals` commits with their lags then (none older than `expire_group_ms` before the
  newest sample), its marks at its last `intervals` samples (time, end, start, committed:
  the window `rules.pace` takes the rates over), the first sample of its current run of
  lost records, and its changes after the newest sample (pending).
- per group: the moment facts (`rules.Moment`): its last group_history row (with the
  owner of each assigned partition), its last transition, last entry into a rebalance,
  into and out of Empty, last completed rebalance; and its rows after its newest sample.

Both serialize to JSON text (`to_json`, `from_json`; times as epoch ms ints), never pickle.
A step updates the state it is given in place and returns it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import orjson

from pipeline.fold.model import SHARE
from pipeline.fold.states import DEAD, EMPTY
from pipeline.lag.config import LagConfig
from pipeline.lag.rules import (
    CAUGHT_UP,
    INTERPOLATED,
    LOWER_BOUND,
    REBALANCING,
    Commit,
    Moment,
    catch_up_ms,
    group_row,
    lag,
    loss_eta_ms,
    lost_records,
    pace,
    partition_status,
    window,
)
from schemas.lag import OFFSET_STATUSES

Row = dict[str, Any]
Key = tuple[tuple[bool, Any], ...]

COMMITTED, NO_COMMIT, DELETED, EXPIRED = OFFSET_STATUSES
# offset_history's `change` -> partition_lag's `offset_status` (TXN_ABORTED moves nothing)
STATUS_OF_CHANGE = {"COMMIT": COMMITTED, "TOMBSTONE": DELETED, "EXPIRED": EXPIRED}
ABORTED = "TXN_ABORTED"
FORMAT = 2  # the version of the JSON states (2: a pair's marks and lost_since)

CHANGE_ORDER = ("log_partition", "log_offset")
CHANGE_COLUMNS = ("t", *CHANGE_ORDER, "change", "committed_offset")  # what a change keeps
GROUP_ORDER = ("log_partition", "log_offset", "seq")
# The columns a candidate row carries beyond partition_lag's, for stage 2
PREV_T = "prev_t"


def order_key(*values: Any) -> Key:
    """Spark's ascending order with nulls first: the tie-break of every "last row at or
    before" the lag step takes (by time, then log position, then seq)."""
    return tuple((v is not None, v if v is not None else 0) for v in values)


def _row_key(row: Mapping[str, Any], order: Sequence[str], time: str = "t") -> Key:
    return order_key(row[time], *(row.get(c) for c in order))


# ---------------------------------------------------------------- stage 1: per topic partition


@dataclass
class Pair:
    """A group's offsets on one partition."""

    last: Row | None = None  # its last offset change at or before the newest sample
    ring: list[Commit] = field(default_factory=list)  # Burrow's: last `intervals` with a lag
    pending: list[Row] = field(default_factory=list)  # changes after the newest sample
    exists: bool = False  # a change or an assignment of it at or before the newest sample
    assigned_pending: list[int] = field(default_factory=list)  # assignment times, ahead
    # (time, end, start, committed) at its last `intervals` samples: the rates' window
    marks: list[list[int | None]] = field(default_factory=list)
    lost_since: int | None = None  # the first sample of its current run of lost records


@dataclass
class PartitionState:
    """What the next samples of one topic partition need (see the module's docstring)."""

    topic: str
    partition: int
    first: tuple[int, int] | None = None  # (time, end offset) of its first sample
    # plateaus of the running maximum end offset, oldest first: [first time, last time, max]
    steps: list[list[int]] = field(default_factory=list)
    pruned: bool = False  # plateaus before steps[0] were dropped
    recent: list[tuple[int, int]] = field(default_factory=list)  # last `intervals` samples
    pairs: dict[str, Pair] = field(default_factory=dict)
    settled_ms: int | None = None  # the watermark rows before which are folded in

    def to_json(self) -> str:
        return orjson.dumps({
            "v": FORMAT, "topic": self.topic, "partition": self.partition,
            "settled_ms": self.settled_ms,
            "first": self.first, "steps": self.steps, "pruned": self.pruned,
            "recent": self.recent,
            "pairs": {g: {"last": p.last, "exists": p.exists, "pending": p.pending,
                          "assigned_pending": p.assigned_pending, "marks": p.marks,
                          "lost_since": p.lost_since,
                          "ring": [[c.offset, c.time_ms, c.lag] for c in p.ring]}
                      for g, p in sorted(self.pairs.items())},
        }, option=orjson.OPT_SORT_KEYS).decode()

    @classmethod
    def from_json(cls, text: str) -> PartitionState:
        d = orjson.loads(text)
        if d.get("v") != FORMAT:
            raise ValueError(f"not a partition lag state of format {FORMAT}: {d.get('v')!r}")
        return cls(
            d["topic"], d["partition"], None if d["first"] is None else tuple(d["first"]),
            d["steps"], d["pruned"], [(t, e) for t, e in d["recent"]],
            {g: Pair(p["last"], [Commit(*c) for c in p["ring"]], p["pending"], p["exists"],
                     p["assigned_pending"], p["marks"], p["lost_since"])
             for g, p in d["pairs"].items()},
            d["settled_ms"])

    @property
    def newest_ms(self) -> int | None:
        return self.recent[-1][0] if self.recent else None


@dataclass
class PartitionResult:
    state: PartitionState
    candidates: list[Row]  # one per (group, sample): partition_lag's partition-known columns
    exact: bool  # False: the state could not answer (see `reasons`); recompute this batch
    reasons: list[str]


def assigned_partitions(shape: Mapping[str, Any]) -> list[tuple[str, int]]:
    """The topic partitions a group_history row assigns to its members: where the caller
    sends the row's `assignments` fact (`{"group_id", "t"}`) for stage 1. A share group's
    members share partitions and commit nothing: its rows are the share lag's
    (`pipeline.spark.share.lag`), never NO_COMMIT."""
    if shape.get("group_type") == SHARE:
        return []
    return sorted({(a["topic"], a["partition"]) for m in shape.get("members") or ()
                   for a in m.get("assignment") or ()})


def _merge_samples(samples: Iterable[Mapping[str, Any]]) -> dict[int, tuple[int, int | None]]:
    """A sample delivered twice (same time) is one: the greater end and start offsets."""
    points: dict[int, tuple[int, int | None]] = {}
    for s in samples:
        end, start = s["log_end_offset"], s.get("log_start_offset")
        old = points.get(s["t"])
        if old is not None:
            end = max(end, old[0])
            start = max((x for x in (start, old[1]) if x is not None), default=None)
        points[s["t"]] = (end, start)
    return points


def partition_step(state: PartitionState | None, topic: str, partition: int,
                   samples: Iterable[Mapping[str, Any]], changes: Iterable[Mapping[str, Any]],
                   assignments: Iterable[Mapping[str, Any]], cfg: LagConfig,
                   until_ms: int | None = None, prune: bool = True) -> PartitionResult:
    """Stage 1 for one topic partition and one batch (see the module's docstring).

    `samples`: its ready samples (`t`, `log_end_offset`, `log_start_offset`); `changes`:
    its new offset_history rows, any group (`group_id`, `t`, `log_partition`, `log_offset`,
    `change`, `committed_offset`); `assignments`: `{"group_id", "t"}` for each new
    group_history row that assigns it (`assigned_partitions`). `until_ms`: the batch's
    watermark, when the caller has one: every sample still to come is at or after it, so
    the rows before it are folded into the state now and only later ones wait (without
    it, a partition never sampled keeps every row it is sent). `prune`: drop what can no
    longer matter (off only to test that pruning changes nothing)."""
    st = state if state is not None else PartitionState(topic, partition)
    reasons: list[str] = []
    newest = st.newest_ms
    for c in changes:
        if c["change"] == ABORTED or c["t"] is None:
            continue
        if _late(c["t"], newest, st.settled_ms):
            reasons.append(f"an offset change at {c['t']} at or before the evaluated sample "
                           f"at {newest} or the watermark at {st.settled_ms}")
        st.pairs.setdefault(c["group_id"], Pair()).pending.append(
            {k: c[k] for k in CHANGE_COLUMNS})
    for a in assignments:
        if _late(a["t"], newest, st.settled_ms):
            reasons.append(f"an assignment at {a['t']} at or before the evaluated sample "
                           f"at {newest} or the watermark at {st.settled_ms}")
        st.pairs.setdefault(a["group_id"], Pair()).assigned_pending.append(a["t"])
    for p in st.pairs.values():
        p.pending.sort(key=lambda r: _row_key(r, CHANGE_ORDER))
        p.assigned_pending.sort()
    points = _merge_samples(samples)
    out: list[Row] = []
    highs = [high for _, _, high in st.steps]  # kept beside steps, which only grow here
    for t in sorted(points):
        if _late(t, newest, st.settled_ms):
            reasons.append(f"a sample at {t} at or before the evaluated sample at {newest} "
                           f"or the watermark at {st.settled_ms}")
            continue
        end, start = points[t]
        prev = st.recent[-1] if st.recent else None
        _apply_changes(st, t - 1, cfg)  # against the sample before
        _add_sample(st, t, end, cfg)
        if len(highs) < len(st.steps):  # a new plateau (never more than one a sample)
            highs.append(st.steps[-1][2])
        _apply_changes(st, t, cfg)  # those at its time: against it
        for group in sorted(st.pairs):
            row = _candidate(st, group, t, end, start, prev, highs, cfg, reasons)
            if row is not None:
                out.append(row)
        newest = t
    if until_ms is not None:
        _apply_changes(st, until_ms - 1, cfg)
        st.settled_ms = max(until_ms, st.settled_ms or until_ms)
    if prune:
        _prune(st, cfg)
    return PartitionResult(st, out, not reasons, reasons)


def _late(t: int, newest: int | None, settled: int | None) -> bool:
    """Whether a row at `t` comes after the step evaluated a sample at or after it, or
    folded in the rows before a watermark past it."""
    return (newest is not None and t <= newest) or (settled is not None and t < settled)


def _apply_changes(st: PartitionState, upto: int, cfg: LagConfig) -> None:
    """Every pending change and assignment at or before `upto`, in log order; a commit's lag
    then is against the newest sample (the caller makes it the one at or before it)."""
    then = st.recent[-1][1] if st.recent else None
    for p in st.pairs.values():
        while p.assigned_pending and p.assigned_pending[0] <= upto:
            p.assigned_pending.pop(0)
            p.exists = True
        due = _due(p.pending, upto, "t")  # sorted by time: the prefix
        if not due:
            continue
        p.exists = True
        # `due` is sorted (time, log position): its last row is the latest unless `p.last` is
        if p.last is None or _row_key(due[-1], CHANGE_ORDER) >= _row_key(p.last, CHANGE_ORDER):
            p.last = due[-1]
        if then is not None:  # a commit no sample precedes is never in a window
            p.ring += [Commit(c["committed_offset"], c["t"], lag(then, c["committed_offset"]))
                       for c in due if c["change"] == "COMMIT"]
        del p.ring[:-cfg.intervals]


def _due(rows: list[Row], upto: int, time: str) -> list[Row]:
    """The leading rows of `rows` (sorted by `time`) at or before `upto`, taken out of it."""
    n = 0
    while n < len(rows) and rows[n][time] <= upto:
        n += 1
    due = rows[:n]
    del rows[:n]
    return due


def _add_sample(st: PartitionState, t: int, end: int, cfg: LagConfig) -> None:
    if st.first is None:
        st.first = (t, end)
    if not st.steps or end > st.steps[-1][2]:
        st.steps.append([t, t, end])
    else:
        st.steps[-1][1] = t
    st.recent.append((t, end))
    del st.recent[:-cfg.intervals]


def _time_lag(st: PartitionState, highs: Sequence[int], committed: int, t: int,
              end: int, allowed: int) -> tuple[int, str]:
    """`rules.time_lag` at the sample at `t` (end offset `end`, already added) over the samples
    the state keeps in place of all of them: each kept plateau of the running maximum by its
    first and last sample, and, when older plateaus were dropped, the first sample (the lower
    bound's base). The plateaus rise strictly (`highs`), so the last sample at or below the
    committed offset is found by bisection, not by a walk over every sample."""
    assert st.first is not None
    if end - committed <= allowed:
        return 0, CAUGHT_UP
    k = bisect_right(highs, committed) - 1  # the last plateau at or below it (never the last)
    if k >= 0:
        (_, ta, ma), (tb, _, mb) = st.steps[k], st.steps[k + 1]
    elif st.pruned and st.first[1] <= committed:
        (ta, ma), (tb, _, mb) = st.first, st.steps[0]
    else:
        return t - st.first[0], LOWER_BOUND
    return t - (ta + (committed - ma) * (tb - ta) // (mb - ma)), INTERPOLATED


def _candidate(st: PartitionState, group: str, t: int, end: int, start: int | None,
               prev: tuple[int, int] | None, highs: Sequence[int], cfg: LagConfig,
               reasons: list[str]) -> Row | None:
    p = st.pairs[group]
    if not p.exists:
        return None
    last = p.last
    status = NO_COMMIT if last is None else STATUS_OF_CHANGE.get(last["change"], last["change"])
    if status not in OFFSET_STATUSES:
        return None
    committed = last["committed_offset"] if last is not None and status == COMMITTED else None
    p.marks.append([t, end, start, committed])
    del p.marks[:-cfg.intervals]
    current = None if committed is None else lag(end, committed)
    lost = lost_records(committed, start)
    p.lost_since = (p.lost_since if p.lost_since is not None else t) if lost else None
    rates = pace(p.marks)
    row: Row = {
        "t": t, "group_id": group, "topic": st.topic, "partition": st.partition,
        "log_end_offset": end, "log_start_offset": start, "committed_offset": committed,
        "offset_status": status, "committed_at": None if last is None else last["t"],
        "lag": current, "lost_records": lost, "lost_since": p.lost_since,
        "loss_eta_ms": loss_eta_ms(committed, start, current, rates, cfg),
        "produce_rate": rates.produce_rate, "consume_rate": rates.consume_rate,
        "retention_rate": rates.retention_rate,
        "catch_up_ms": catch_up_ms(current, rates, cfg),
        "lag_ms": None, "lag_ms_basis": None, "status": None, "rule": None,
        "window_commits": None, "window_span_ms": None, "idle_ms": None,
        "window_min_lag": None, "window_max_lag": None,
        PREV_T: prev[0] if prev is not None else None,
    }
    if committed is None:
        return row
    ms, basis = _time_lag(st, highs, committed, t, end, cfg.allowed_lag)
    if st.pruned and basis == INTERPOLATED and committed < st.steps[0][2]:
        reasons.append(f"group {group!r}: committed offset {committed} at {t} is bracketed "
                       f"before the samples kept (from {st.steps[0][0]})")
    w = window(p.ring, t, cfg)
    v = partition_status(w, [e for _, e in st.recent], row["lag"], t, cfg, lost)
    lags = [c.lag for c in w if c.lag is not None]
    row.update({
        "lag_ms": ms, "lag_ms_basis": basis, "status": v.status, "rule": v.rule,
        "window_commits": len(w), "window_span_ms": w[-1].time_ms - w[0].time_ms if w else None,
        "idle_ms": t - w[-1].time_ms if w else None,
        "window_min_lag": min(lags) if lags else None,
        "window_max_lag": max(lags) if lags else None,
    })
    return row


def _prune(st: PartitionState, cfg: LagConfig) -> None:
    """Drop what no later sample can need: ring commits past `expire_group_ms` before the
    newest sample, and the plateaus older than the one that brackets the lowest committed
    offset (applied or pending) of any group; the last plateau always stays."""
    newest = st.newest_ms
    if newest is None:
        return
    offsets: list[int] = []
    for p in st.pairs.values():
        p.ring = [c for c in p.ring if c.time_ms > newest - cfg.expire_group_ms]
        if p.last is not None and p.last["change"] == "COMMIT":
            offsets.append(p.last["committed_offset"])
        offsets += [c["committed_offset"] for c in p.pending if c["change"] == "COMMIT"]
    highs = [s[2] for s in st.steps]  # strictly rising
    keep = len(st.steps) - 1
    for c in offsets:
        bracket = bisect_right(highs, c) - 1  # the last plateau at or below it
        if bracket >= 0:
            keep = min(keep, bracket)
    if keep > 0:
        del st.steps[:keep]
        st.pruned = True


# ---------------------------------------------------------------- stage 2: per group


@dataclass
class GroupState:
    """A group's moment facts (`rules.Moment`) as of its newest sample, and the rows after it.

    Each fact is the history row that set it, cut to the columns read."""

    group_id: str
    shape: Row | None = None  # last group_history row: state, generation, since, owners
    last: Row | None = None  # last transition
    entered: Row | None = None  # last entry into a rebalance from outside one
    into_empty: Row | None = None
    out_of_empty: Row | None = None
    done: Row | None = None  # last completed rebalance
    newest_ms: int | None = None  # the newest sample evaluated
    pending: dict[str, list[Row]] = field(default_factory=dict)  # kind -> rows after it
    settled_ms: int | None = None  # the watermark rows before which are folded in

    def to_json(self) -> str:
        return orjson.dumps({"v": FORMAT, **{k: getattr(self, k) for k in _GROUP_FIELDS}},
                            option=orjson.OPT_SORT_KEYS).decode()

    @classmethod
    def from_json(cls, text: str) -> GroupState:
        d = orjson.loads(text)
        if d.get("v") != FORMAT:
            raise ValueError(f"not a group lag state of format {FORMAT}: {d.get('v')!r}")
        return cls(**{k: d[k] for k in _GROUP_FIELDS})

    def moment(self) -> Moment:
        s, last, entered, done = self.shape, self.last, self.entered, self.done
        into, out = self.into_empty, self.out_of_empty
        return Moment(
            state=None if s is None else s["state"],
            generation_id=None if s is None else s["generation_id"],
            group_type=None if s is None else s.get("group_type"),  # a state kept before it
            state_since_ms=None if s is None else s["state_since"],
            last_cause=None if last is None else last["cause"],
            rebalance_started=None if entered is None else (entered["t"], entered["cause"]),
            empty_entered_ms=None if into is None else into["t"],
            empty_left_ms=None if out is None else out["t"],
            last_rebalance=None if done is None else (
                done["generation_id"], done["cause"], done["started_at"], done["completed_at"]))

    def owner(self, topic: str, partition: int) -> Row | None:
        """The first member of its last shape assigned the partition (the oracle's pick)."""
        for m in (self.shape or {}).get("members") or ():
            if [topic, partition] in m["assigned"]:
                member: Row = m
                return member
        return None


_GROUP_FIELDS = ("group_id", "shape", "last", "entered", "into_empty", "out_of_empty", "done",
                 "newest_ms", "pending", "settled_ms")
SHAPES, TRANSITIONS, REBALANCES = "shapes", "transitions", "rebalances"
_TIMES = {SHAPES: "t", TRANSITIONS: "t", REBALANCES: "completed_at"}


@dataclass
class GroupResult:
    state: GroupState
    partition_rows: list[Row]
    group_rows: list[Row]
    exact: bool
    reasons: list[str]


def _shape_fact(r: Mapping[str, Any]) -> Row:
    members = [{"member_id": m["member_id"], "client_id": m.get("client_id"),
                "client_host": m.get("client_host"),
                "assigned": [[a["topic"], a["partition"]] for a in m.get("assignment") or ()]}
               for m in r.get("members") or ()]
    return {"t": r["t"], **{c: r.get(c) for c in GROUP_ORDER}, "state": r["state"],
            "generation_id": r["generation_id"], "group_type": r.get("group_type"),
            "state_since": r["state_since"], "members": members}


def _transition_fact(r: Mapping[str, Any]) -> Row:
    return {"t": r["t"], **{c: r.get(c) for c in GROUP_ORDER}, "from_state": r["from_state"],
            "to_state": r["to_state"], "cause": r["cause"]}


def _rebalance_fact(r: Mapping[str, Any]) -> Row:
    return {c: r.get(c) for c in ("generation_id", "cause", "started_at", "completed_at",
                                  *CHANGE_ORDER)}


def _later(old: Row | None, new: Row, order: Sequence[str], time: str = "t") -> Row:
    if old is None or _row_key(new, order, time) >= _row_key(old, order, time):
        return new
    return old


def _apply_group_rows(st: GroupState, t: int) -> None:
    """Every pending row at or before `t` into the moment facts, the last by log order."""
    for kind, rows in st.pending.items():
        due = _due(rows, t, _TIMES[kind])  # sorted by time: the prefix
        for r in due:
            if kind == SHAPES:
                st.shape = _later(st.shape, r, GROUP_ORDER)
            elif kind == REBALANCES:
                st.done = _later(st.done, r, CHANGE_ORDER, "completed_at")
            else:
                st.last = _later(st.last, r, GROUP_ORDER)
                if r["to_state"] in REBALANCING and r["from_state"] not in REBALANCING:
                    st.entered = _later(st.entered, r, GROUP_ORDER)
                if r["to_state"] == EMPTY:
                    st.into_empty = _later(st.into_empty, r, GROUP_ORDER)
                if r["from_state"] == EMPTY:
                    st.out_of_empty = _later(st.out_of_empty, r, GROUP_ORDER)
    st.pending = {k: v for k, v in st.pending.items() if v}


def group_step(state: GroupState | None, group_id: str, candidates: Iterable[Mapping[str, Any]],
               shapes: Iterable[Mapping[str, Any]], transitions: Iterable[Mapping[str, Any]],
               rebalances: Iterable[Mapping[str, Any]], cfg: LagConfig,
               until_ms: int | None = None) -> GroupResult:
    """Stage 2 for one group and one batch (see the module's docstring): `candidates`, its
    rows from `partition_step`; its new group_history, group_transitions and rebalances rows
    (a rebalance without `completed_at` is not one yet and is ignored). `until_ms`: the
    batch's watermark, as for `partition_step`: rows before it are folded in now."""
    st = state if state is not None else GroupState(group_id)
    reasons: list[str] = []
    new = ((SHAPES, (_shape_fact(r) for r in shapes if r["t"] is not None), "t"),
           (TRANSITIONS, (_transition_fact(r) for r in transitions if r["t"] is not None), "t"),
           (REBALANCES, (_rebalance_fact(r) for r in rebalances
                         if r["completed_at"] is not None), "completed_at"))
    for kind, facts, time in new:
        for f in facts:
            if _late(f[time], st.newest_ms, st.settled_ms):
                reasons.append(f"a {kind} row at {f[time]} at or before the evaluated sample "
                               f"at {st.newest_ms} or the watermark at {st.settled_ms}")
            st.pending.setdefault(kind, []).append(f)
    for kind, rows in st.pending.items():
        rows.sort(key=itemgetter(_TIMES[kind]))
    by_t: dict[int, list[Mapping[str, Any]]] = {}
    for c in candidates:
        by_t.setdefault(c["t"], []).append(c)
    parts_out: list[Row] = []
    groups_out: list[Row] = []
    for t in sorted(by_t):
        if (st.newest_ms is not None and t < st.newest_ms) or (
                st.settled_ms is not None and t < st.settled_ms):
            reasons.append(f"a sample at {t} before the group's evaluated sample at "
                           f"{st.newest_ms} or the watermark at {st.settled_ms}")
        _apply_group_rows(st, t)
        st.newest_ms = t if st.newest_ms is None else max(st.newest_ms, t)
        moment = st.moment()
        alive = moment.state is not None and moment.state != DEAD
        parts = []
        for c in sorted(by_t[t], key=lambda r: (r["topic"], r["partition"])):
            owner = st.owner(c["topic"], c["partition"])
            status = c["offset_status"]
            if not (status == COMMITTED or (status in (DELETED, EXPIRED) and alive)
                    or (status == NO_COMMIT and owner is not None)):
                continue
            row = dict(c)
            row.update({"member_id": owner and owner["member_id"],
                        "client_id": owner and owner["client_id"],
                        "client_host": owner and owner["client_host"],
                        "state": moment.state, "generation_id": moment.generation_id,
                        "group_type": moment.group_type})
            parts.append(row)
        if parts:
            groups_out.append(group_row(group_id, t, parts, moment, cfg))
            parts_out += [{k: v for k, v in r.items() if k != PREV_T} for r in parts]
    if until_ms is not None:
        _apply_group_rows(st, until_ms - 1)
        st.settled_ms = max(until_ms, st.settled_ms or until_ms)
    return GroupResult(st, parts_out, groups_out, not reasons, reasons)
