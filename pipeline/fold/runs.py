"""A group's rows as the fold reads them, and runs of quiet rows applied on one working copy.

A quiet row cannot change the group's shape: it renews a member's session or puts an offset
(at once, or pending until its transaction's marker), writes its offset_history rows and
moves the position, nothing else. The kinds:

- a plain commit: an OFFSET_COMMIT record as `__consumer_offsets` holds it (no generation,
  so no request), to a group that exists and is no share group, transactional (a producer
  id) or not;
- a transaction marker, to a group whose log carries no requests (where timers run, an
  abort may let older offsets expire sooner, so the general path works the timers out);
- a commit request (a generation, no producer) that Kafka's `validateOffsetCommit` accepts,
  with metadata under `offset.metadata.max.bytes`: to a Stable classic group from a member
  in its generation (counted as its heartbeat), or to an Empty classic group with a negative
  generation (the admin client, a consumer with manual assignment);
- a heartbeat to a Stable classic group from a member in its generation.

Requests are quiet only to a classic group whose log carries requests already: the first one turns
the group's timers on (`timers.is_request`), which is the general path's business.

All of them nothing undecodable and nothing nested, on the group's own partition, past the
position before. `Batch` reads them as tuples, from `Event`s or straight from `EventColumns`,
never building an `Event`. A `QuietRun` applies a run of them to one mutable working copy
(offsets, each member's last heartbeat, the positions) and builds one new Group when it
closes: the caller's Group is never changed, and a row the run cannot take exactly (a
refusal, a timer that could fire before it, a row behind) closes the run and takes the
general path, handler by handler. The run decides no rule by itself: each is a function the
general path calls too, here with values instead of an `Event` (`validation`'s checks,
`timers.is_request`, `membership.validated_generation`, `offsets.validated_commit`,
`offsets.metadata_too_large`, `offsets.from_request`, `offsets.settle`,
`context.offset_history_row`). The tables and state are the general path's, row for row
(`tests/fold/test_columns.py` and the golden tables prove it).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any, NamedTuple

from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.context import Outputs, offset_history_row
from pipeline.fold.events import NESTED_COLUMNS, Event, EventColumns, TopicPartition
from pipeline.fold.membership import Lookup, validated_generation
from pipeline.fold.model import Group, Member, Offset, OffsetValues, tick
from pipeline.fold.offsets import (
    LogPosition,
    expiration_base,
    expires_at,
    from_request,
    metadata_too_large,
    settle,
    sweep_time,
    validated_commit,
)
from pipeline.fold.states import EMPTY, STABLE
from pipeline.fold.timers import is_request, next_timer
from pipeline.fold.validation import (
    commit_problem,
    marker_problem,
    member_request_problem,
    placement_problem,
)


class QuietRow(NamedTuple):
    """The values of a row that may be quiet: the log's columns of those names. The ones
    typed `Any` are set for the kinds that read them (`_quiet` keeps only rows whose kind's
    check passed: a commit's topic, partition and offset, a marker's producer and result)."""

    log_partition: int
    log_offset: int
    event_time: int
    event_type: str
    member_id: str | None
    group_instance_id: str | None
    generation_id: Any
    topic: Any
    partition: Any
    committed_offset: Any
    leader_epoch: int | None
    commit_metadata: str | None
    commit_timestamp: int | None
    expire_timestamp: int | None
    producer_id: Any
    txn_result: Any


QUIET_COLUMNS = QuietRow._fields  # the columns a quiet row holds, in its order
_TYPES = ("OFFSET_COMMIT", "HEARTBEAT", "TXN_MARKER")
NOT_QUIET, TAKEN, STALE = range(3)  # what `QuietRun.take` made of a row
# A quiet row has these null: a decoder's error, or a nested value `Event.from_row` might not
# read (its defect), is for `row_defect` to name.
_MUST_BE_NULL = ("decode_error", *NESTED_COLUMNS)
_NOBODY: dict[str | None, Member] = {}
_UNSEEN = object()


class Batch:
    """One group's rows, from a list of `Event`s or from `EventColumns`, in log order."""

    def __init__(self, events: Iterable[Event] | Mapping[str, list[Any]]) -> None:
        if isinstance(events, Mapping):
            self.events: list[Event] | None = None
            self.columns: Mapping[str, list[Any]] = events
            self.size = len(next(iter(events.values()), ()))
            positions: Iterable[tuple[int | None, int | None]] = zip(
                self._column("log_partition"), self._column("log_offset"), strict=True)
        else:
            self.events = list(events)
            self.columns = {}
            self.size = len(self.events)
            positions = ((e.log_partition, e.log_offset) for e in self.events)
        # Rows without a usable position sort first; they are rejected without touching state.
        # (A comprehension, not a function per row: this runs for every row of a log.)
        keys = [(0, 0, 0) if p is None or o is None else (1, p, o) for p, o in positions]
        if all(map(operator.lt, keys, islice(keys, 1, None))):
            self.order = list(range(self.size))  # in log order already, as a log mostly is
        else:
            self.order = sorted(range(self.size), key=keys.__getitem__)

    def _column(self, name: str) -> list[Any]:
        return self.columns.get(name) or [None] * self.size

    def event(self, i: int) -> Event:
        if self.events is not None:
            return self.events[i]
        # Only this row's non-null cells: most rows of a log never get here (quiet rows).
        return Event.from_row({name: value for name, column in self.columns.items()
                               if (value := column[i]) is not None})

    def event_type(self, i: int) -> str | None:
        if self.events is not None:
            return self.events[i].event_type
        column = self.columns.get("event_type")
        return None if column is None else column[i]

    def event_times(self) -> list[int | None]:
        if self.events is not None:
            return [e.event_time for e in self.events]
        return self._column("event_time")

    def quiet_rows(self, group_id: str, home: int, partitions: int) -> list[QuietRow | None]:
        """Per row, its values if it may be quiet, else None; whether it is depends on the
        group when its turn comes (`QuietRun.take`). `home`: the group's own partition of
        the `partitions` of `__consumer_offsets`."""
        if self.events is not None:
            events = self.events
            rows = [i for i, e in enumerate(events) if e.event_type in _TYPES
                    and e.decode_error is None and e.defect is None]
            values: list[tuple[Any, ...]] = [()] * self.size
            for i in rows:
                values[i] = tuple(getattr(events[i], name) for name in QUIET_COLUMNS)
            return _quiet(values, rows, group_id, home, partitions)
        # Column by column (a list comprehension per column, not a check per cell per row).
        types = self._column("event_type")
        rows = [i for i, t in enumerate(types) if t in _TYPES]
        for name in _MUST_BE_NULL:
            column = self.columns.get(name)
            # A column all null (most are, in a batch of commits) is counted in C, not walked.
            if column and (not isinstance(column, list) or column.count(None) != len(column)):
                rows = [i for i in rows if column[i] is None]
        values = list(zip(*(self._column(n) for n in QUIET_COLUMNS), strict=True))
        return _quiet(values, rows, group_id, home, partitions)


def _quiet(values: list[tuple[Any, ...]], rows: list[int], group_id: str, home: int,
           partitions: int) -> list[QuietRow | None]:
    """The `rows` of `values` that the general path would not reject before their handler,
    as `fold._apply` (`placement_problem`) and `row_defect` (their kind's check) would not;
    None for every other row. In one loop: this runs for nearly every row of a log."""
    result: list[QuietRow | None] = [None] * len(values)
    make = QuietRow._make
    for i in rows:
        row = make(values[i])
        if placement_problem(group_id, row.log_partition, row.log_offset, row.event_time, home,
                             partitions) is not None:
            continue
        kind = row.event_type
        if kind == "OFFSET_COMMIT":
            problem = commit_problem(row.topic, row.partition, row.committed_offset)
        elif kind == "HEARTBEAT":
            problem = member_request_problem(kind, row.member_id, row.generation_id)
        else:
            problem = marker_problem(row.producer_id, row.txn_result)
        if problem is None:
            result[i] = row
    return result


class QuietRun:
    """A run of quiet rows, applied in log order to one working copy of a group's offsets,
    members' heartbeats and positions; `close` builds the one new Group."""

    def __init__(self, g: Group, cfg: CoordinatorConfig) -> None:
        self.group = g
        self.cfg = cfg
        # Requests are quiet only to a classic group whose log carries requests already (the
        # first request of a records-only log turns its timers on: general), and only while
        # it is Stable or Empty (a rebalance is short; its requests go through the handlers).
        self.requests = g.journal and g.modern is None and g.state in (STABLE, EMPTY)
        # No timer can fire in a group whose log carries no requests: `take_records` applies
        # its plain commit records in one loop.
        self.records_only = not g.journal
        self.by_id: Lookup = _NOBODY.get  # `Group.member` and `static_member`, as dicts
        self.by_instance: Lookup = _NOBODY.get
        if self.requests:
            by_id: dict[str | None, Member] = {m.member_id: m for m in g.members}
            by_instance: dict[str | None, Member] = {  # the first wins, as `static_member`
                m.group_instance_id: m for m in reversed(g.members)
                if m.group_instance_id is not None}
            self.by_id, self.by_instance = by_id.get, by_instance.get
        # No timer is due before `due`: a row at or before it fires none. Heartbeats only push
        # session deadlines later, and each commit lowers it to its own earliest sweep, so it
        # stays a lower bound of the next timer for the whole run. Worked out (`_bound`) at
        # the first row that is otherwise quiet (a run may end at its first row).
        self.due: int | None = None
        self.timed = False
        # From when a new offset's retention counts; the run changes nothing it depends on.
        self.expiry_base = expiration_base(g) if g.journal else None
        self.position = g.position
        self.clock = g.clock
        self.group_id = g.group_id
        self.group_type = g.shown_type  # a run never changes it
        self.latest: dict[TopicPartition, OffsetValues] = {}  # each partition's last commit
        self.txns: dict[int, dict[TopicPartition, Offset]] | None = None  # copied when touched
        self.beats: dict[str, int] = {}  # member id -> last heartbeat
        self.positions: list[tuple[int, int]] = []
        self.last_time: int | None = None

    @staticmethod
    def opens_on(g: Group) -> bool:
        # A commit to no group creates it; one to a share group is refused (`offsets.on_commit`).
        return g.exists and g.share is None

    def take_records(self, rows: list[QuietRow | None], order: list[int], start: int,
                     out: Outputs) -> int:
        """`take` for the bulk of a records-only log, in one loop: the plain commit records
        (no request, no producer) at `order[start:]`, as many as come in a row, to a group
        whose log carries no requests (`records_only`). Returns how many it took.

        With `out.left`, a row taken here whose time does not run back writes no row: its
        offset_history row is the row's own values, stored as `from_request` stores them, at
        its own time, and the caller builds it from the row (`Left` names it)."""
        if not self.records_only:
            return 0
        position, clock, positions = self.position, self.clock, self.positions
        commit, leave = self._commit, out.left is not None
        if out.left is not None:
            out.left.typed(self.group_type)
        before, last_time = len(positions), self.last_time
        # Whether a commit is a request depends on its generation alone: `is_request` is asked
        # again only when the generation changes (a records-only log's are all null).
        seen, request = _UNSEEN, False
        for i in order[start:]:
            row = rows[i]
            if row is None:
                break
            if row.event_type != "OFFSET_COMMIT" or row.producer_id is not None:
                break
            generation = row.generation_id
            if generation is not seen:
                seen, request = generation, is_request(row.event_type, generation)
            if request:
                break  # it turns the group's timers on: the general path's business
            at = (row.log_partition, row.log_offset)
            if position is not None and at <= position:
                break  # DUPLICATE or OUT_OF_ORDER: the general path says which
            position = at
            positions.append(at)
            t = row.event_time
            clock = tick(clock, t)
            # Left to the caller unless its time runs back (then its row is not its own values).
            commit(row, clock, out, i if leave and clock == t else None)
            last_time = t
        self.position, self.clock, self.last_time = position, clock, last_time
        return len(positions) - before

    def take(self, row: QuietRow, out: Outputs) -> int:
        """Apply `row` if it is quiet here and now (TAKEN); if not, nothing changes, and
        STALE says a new run, with the bound worked out again, may take it."""
        at, kind, producer = (row.log_partition, row.log_offset), row.event_type, row.producer_id
        if self.position is not None and at <= self.position:
            return NOT_QUIET  # DUPLICATE or OUT_OF_ORDER: the general path says which
        member: Member | None = None
        if kind == "TXN_MARKER":
            if not self.records_only:
                return NOT_QUIET  # an abort may let offsets expire sooner: timers to work out
        elif is_request(kind, row.generation_id):
            if not self.requests or producer is not None:
                return NOT_QUIET  # see `__init__`; or a transactional commit request
            if kind == "OFFSET_COMMIT":
                checked = validated_commit(self.group, row.member_id, row.group_instance_id,
                                           row.generation_id, False, self.by_id,
                                           self.by_instance)
                if metadata_too_large(row.commit_metadata, self.cfg):
                    return NOT_QUIET  # OFFSET_METADATA_TOO_LARGE, if nothing came before it
            else:
                checked = validated_generation(self.group, row.member_id, row.group_instance_id,
                                               row.generation_id, self.by_id, self.by_instance)
            if isinstance(checked, str):
                return NOT_QUIET  # Kafka refuses it: the general path writes the refusal
            member = checked
        if not self.timed:
            self._bound()
        t = row.event_time
        if self.due is not None and t > self.due:
            return NOT_QUIET if not self.positions else STALE  # see `_bound`
        now = self.clock = tick(self.clock, t)
        self.position = at
        self.positions.append(at)
        self.last_time = t
        if member is not None:
            self.beats[member.member_id] = now  # a commit request counts as a heartbeat
        if kind == "OFFSET_COMMIT":
            self._commit(row, now, out)
        elif kind == "TXN_MARKER":
            self._marker(producer, row.txn_result, now, out)
        return TAKEN

    def _bound(self) -> None:
        """Work out `due` (see `__init__`) at the run's first row that is otherwise quiet. A
        row after `due` is not taken: a timer may fire before it, or the bound is stale
        (STALE: a run opened at that row works it out again)."""
        timer = next_timer(self.group, self.cfg)
        self.due, self.timed = None if timer is None else timer[0], True

    def _commit(self, row: QuietRow, now: int, out: Outputs, left: int | None = None) -> None:
        """Apply the commit `row` at `now`, as `offsets.on_commit` does: what it stores
        (`from_request`) becomes its partition's offset, or waits for its producer's marker;
        its offset_history row is written, or, given `left` (its index), left to the caller
        (`out.left`)."""
        lp, lo, producer = row.log_partition, row.log_offset, row.producer_id
        values = from_request(row.committed_offset, row.leader_epoch, row.commit_metadata,
                              row.commit_timestamp, row.expire_timestamp, row.member_id,
                              row.generation_id, lp, lo, now)
        tp = (row.topic, row.partition)
        if producer is not None:  # pending until its producer's marker
            if self.txns is None:
                self.txns = {pid: dict(p) for pid, p in self.group.pending_txns.items()}
            self.txns.setdefault(producer, {})[tp] = Offset(*values)
            return
        # Only the last commit of a partition in the run becomes an Offset (at `close`).
        self.latest[tp] = values
        if left is not None and out.left is not None:
            out.left.history.append(left)
            out.left.last[tp] = (lp, lo, left)
        else:
            out.offset_history.append(offset_history_row(self.group_id, tp, values, now,
                                                         "COMMIT", None, self.group_type))
        if self.expiry_base is not None:  # the new offset's earliest sweep, subscribed or not
            sweep = sweep_time(expires_at(Offset(*values), self.expiry_base, self.cfg), self.cfg)
            if self.due is None or sweep < self.due:
                self.due = sweep

    def _marker(self, producer: int, result: str, now: int, out: Outputs) -> None:
        """`offsets.on_txn_marker` on the working copy, through the same `settle`."""
        if self.txns is None:
            if producer not in self.group.pending_txns:
                return
            self.txns = {pid: dict(p) for pid, p in self.group.pending_txns.items()}
        pending = self.txns.pop(producer, None)
        if pending is None:
            return  # nothing of this producer's is pending in this group
        history, group_id, group_type = out.offset_history, self.group_id, self.group_type
        for tp, o, change in settle(pending, result, self._written_at):
            values = o.values()
            if change == "COMMIT":
                self.latest[tp] = values
            history.append(offset_history_row(group_id, tp, values, now, change, producer,
                                              group_type))

    def _written_at(self, tp: TopicPartition) -> LogPosition | None:
        """Where the working copy's current offset of `tp` was written, None if it has none."""
        current = self.latest.get(tp)
        if current is not None:
            return (current[7], current[8])
        old = self.group.offsets.get(tp)
        return None if old is None else (old.log_partition, old.log_offset)

    def close(self) -> Group:
        g = self.group
        if not self.positions:
            return g
        changes: dict[str, Any] = {}
        if self.latest:
            offsets = dict(g.offsets)
            for tp, values in self.latest.items():  # first-seen order, as puts one by one
                offsets[tp] = Offset(*values)
            changes["offsets"] = offsets
        if self.txns is not None:
            changes["pending_txns"] = self.txns
        if self.beats:
            beats = self.beats
            changes["members"] = tuple(
                m.heard(beats[m.member_id]) if m.member_id in beats else m
                for m in g.members)
        assert self.clock is not None and self.last_time is not None
        return g.moved(self.positions, self.clock, self.last_time, self.cfg.recent_positions,
                       **changes)


__all__ = ["NOT_QUIET", "QUIET_COLUMNS", "STALE", "TAKEN", "Batch", "EventColumns", "QuietRow",
           "QuietRun"]
