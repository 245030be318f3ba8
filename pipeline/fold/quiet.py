"""A group's rows as the fold reads them, and runs of quiet rows applied on one working copy.

A quiet row cannot change the group's shape: it renews a member's session or puts an offset
(at once, or pending until its transaction's marker), writes its offset_history rows and
moves the position, nothing else. The kinds:

- a plain commit: an OFFSET_COMMIT record as `__consumer_offsets` holds it (no generation,
  so no request), to a group that exists, transactional (a producer id) or not;
- a transaction marker, to a group whose log carries no requests (where timers run, an
  abort may let older offsets expire sooner, so the general path works the timers out);
- a commit request (a generation) from a known member of a Stable classic group, in its
  generation, with metadata under `offset.metadata.max.bytes`: Kafka's `validateOffsetCommit`
  accepts it and counts it as a heartbeat;
- a heartbeat from such a member in such a group (answered with no error in Stable);
- a commit request with a negative generation to an Empty classic group (the admin client,
  a consumer with manual assignment), which Kafka accepts without a member.

All of them nothing undecodable and nothing nested, on the group's own partition, past the
position before. `Batch` reads them as tuples, from `Event`s or straight from `EventColumns`,
never building an `Event`. A `QuietRun` applies a run of them to one mutable working copy
(offsets, each member's last heartbeat, the positions) and builds one new Group when it
closes: the caller's Group is never changed, and a row the run cannot take exactly (a
refusal, a timer that could fire before it, a row behind) closes the run and takes the
general path, handler by handler. The tables and state are the general path's, row for row
(`tests/fold/test_columns.py` and the golden tables prove it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.context import Outputs, offset_columns
from pipeline.fold.events import Event, EventColumns
from pipeline.fold.model import Group, Member, Offset
from pipeline.fold.offsets import expiration_base, java_length, sweep_time
from pipeline.fold.states import EMPTY, STABLE
from pipeline.fold.timers import next_timer

# (log_partition, log_offset, event_time, event_type, member_id, group_instance_id,
#  generation_id, topic, partition, committed_offset, leader_epoch, commit_metadata,
#  commit_timestamp, expire_timestamp, producer_id, txn_result)
QuietRow = tuple[int, int, int, str, Any, Any, Any, Any, Any, Any, Any, Any, Any, Any, Any, Any]
_FIELDS = ("log_partition", "log_offset", "event_time", "event_type", "member_id",
           "group_instance_id", "generation_id", "topic", "partition", "committed_offset",
           "leader_epoch", "commit_metadata", "commit_timestamp", "expire_timestamp",
           "producer_id", "txn_result")
_TYPES = ("OFFSET_COMMIT", "HEARTBEAT", "TXN_MARKER")
NOT_QUIET, TAKEN, STALE = range(3)  # what `QuietRun.take` made of a row
# Set on a quiet row only if it is undecodable.
_MUST_BE_NULL = ("decode_error",)
_NESTED = ("protocols", "assignments", "members", "topics_metadata", "subscribed_topic_names",
           "classic_protocols", "assigned_partitions", "partitions_pending_revocation",
           "regex_topics")


class Batch:
    """One group's rows, from a list of `Event`s or from `EventColumns`, in log order."""

    def __init__(self, events: Iterable[Event] | Mapping[str, list[Any]]) -> None:
        if isinstance(events, Mapping):
            self.events: list[Event] | None = None
            self.columns: Mapping[str, list[Any]] = events
            self.size = len(next(iter(events.values()), ()))
            parts, offsets = self._column("log_partition"), self._column("log_offset")
            keys = [_order_key(parts[i], offsets[i]) for i in range(self.size)]
        else:
            self.events = list(events)
            self.columns = {}
            self.size = len(self.events)
            keys = [_order_key(e.log_partition, e.log_offset) for e in self.events]
        # Rows without a usable position sort first; they are rejected without touching state.
        self.order = sorted(range(self.size), key=keys.__getitem__)

    def _column(self, name: str) -> list[Any]:
        return self.columns.get(name) or [None] * self.size

    def event(self, i: int) -> Event:
        if self.events is not None:
            return self.events[i]
        # Only this row's non-null cells: most rows of a log never get here (quiet rows).
        return Event.from_row({name: value for name, column in self.columns.items()
                               if (value := column[i]) is not None})

    def event_times(self) -> list[int | None]:
        if self.events is not None:
            return [e.event_time for e in self.events]
        return self._column("event_time")

    def quiet_rows(self, home: int) -> list[QuietRow | None]:
        """Per row, its values if it may be quiet (on partition `home`), else None; whether
        it is depends on the group when its turn comes (`QuietRun.take`)."""
        if self.events is not None:
            return [_quiet_event(e, home) for e in self.events]
        # Column by column (a list comprehension per column, not a check per cell per row).
        types = self._column("event_type")
        rows = [i for i, t in enumerate(types) if t in _TYPES]
        for name in (*_MUST_BE_NULL, *_NESTED):
            column = self.columns.get(name)
            if column:
                rows = [i for i in rows if column[i] is None]
        values = list(zip(*(self._column(n) for n in _FIELDS), strict=True))
        result: list[QuietRow | None] = [None] * self.size
        for i in rows:
            result[i] = _quiet(values[i], home)
        return result


def _order_key(partition: int | None, offset: int | None) -> tuple[int, int, int]:
    if partition is None or offset is None:
        return (0, 0, 0)
    return (1, partition, offset)


def _quiet_event(e: Event, home: int) -> QuietRow | None:
    if e.event_type not in _TYPES or e.decode_error is not None or e.defect is not None:
        return None
    return _quiet(tuple(getattr(e, name) for name in _FIELDS), home)


def _quiet(row: tuple[Any, ...], home: int) -> QuietRow | None:
    # What position_defect, _foreign and row_defect would refuse stays general.
    lp, lo, t, kind, member_id, _, generation, topic, partition, value = row[:10]
    if lp != home or lo is None or lo < 0 or t is None:
        return None
    if kind == "HEARTBEAT":
        return row if member_id is not None and generation is not None else None
    if kind == "TXN_MARKER":
        return row if row[14] is not None and row[15] in ("COMMIT", "ABORT") else None
    if topic is None or partition is None or partition < 0 or value is None:
        return None
    return row


class QuietRun:
    """A run of quiet rows, applied in log order to one working copy of a group's offsets,
    members' heartbeats and positions; `close` builds the one new Group."""

    def __init__(self, g: Group, cfg: CoordinatorConfig) -> None:
        self.group = g
        self.cfg = cfg
        # Requests are quiet only to a Stable classic group whose log carries requests
        # already (the first request of a records-only log turns its timers on: general).
        self.requests = g.journal and g.state == STABLE and g.consumer is None
        # A commit with a negative generation to an Empty classic group (the admin client,
        # a consumer with manual assignment) is accepted as it stands.
        self.simple_commits = g.journal and g.state == EMPTY and g.consumer is None
        self.members = {m.member_id: m for m in g.members} if self.requests else {}
        self.static = {m.group_instance_id: m for m in reversed(g.members)  # the first wins
                       if m.group_instance_id is not None} if self.requests else {}
        # No timer is due before `due`: a row at or before it fires none. Heartbeats only push
        # session deadlines later, and each commit lowers it to its own earliest sweep, so it
        # stays a lower bound of the next timer for the whole run. Worked out at the first
        # row that is otherwise quiet (a run may end at its first row).
        self.due: int | None = None
        self.timed = False
        # From when a new offset's retention counts; the run changes nothing it depends on.
        self.expiry_base = expiration_base(g) if g.journal else None
        self.position = g.position
        self.clock = g.clock
        self.group_id = g.group_id
        self.latest: dict[tuple[str, int], tuple[Any, ...]] = {}  # partition -> Offset values
        self.txns: dict[int, dict[tuple[str, int], Offset]] | None = None  # copied when touched
        self.beats: dict[str, int] = {}  # member id -> last heartbeat
        self.positions: list[tuple[int, int]] = []
        self.last_time: int | None = None

    @staticmethod
    def opens_on(g: Group) -> bool:
        return g.exists  # a commit to no group creates it

    def take_records(self, rows: list[QuietRow | None], order: list[int], start: int,
                     out: Outputs) -> int:
        """`take` for the bulk of a records-only log, in one loop: the plain commit records
        (no generation, no producer) at `order[start:]`, as many as come in a row, to a group
        whose log carries no requests (so no timer can fire). Returns how many it took."""
        if self.group.journal:
            return 0
        position, clock, group_id = self.position, self.clock, self.group_id
        latest, positions, history = self.latest, self.positions, out.offset_history.append
        taken = 0
        for i in order[start:]:
            row = rows[i]
            if row is None or row[3] != "OFFSET_COMMIT" or row[6] is not None or (
                    row[14] is not None):
                break
            (lp, lo, t, _, member_id, _, _, topic, partition, value, epoch, metadata, stamp,
             expire, _, _) = row
            at = (lp, lo)
            if position is not None and at <= position:
                break  # DUPLICATE or OUT_OF_ORDER: the general path says which
            position = at
            positions.append(at)
            if clock is None or t > clock:
                clock = t
            if metadata is None:
                metadata = ""
            if stamp is None:
                stamp = clock
            member_id = member_id or None
            latest[(topic, partition)] = (value, epoch, metadata, stamp, expire, member_id,
                                          None, lp, lo)
            history({
                "group_id": group_id, "topic": topic, "partition": partition,
                "committed_offset": value, "leader_epoch": epoch, "commit_metadata": metadata,
                "commit_timestamp": stamp, "expire_timestamp": expire, "member_id": member_id,
                "generation_id": None, "log_partition": lp, "log_offset": lo,
                "event_time": clock, "change": "COMMIT", "producer_id": None,
            })
            self.last_time = t
            taken += 1
        self.position, self.clock = position, clock
        return taken

    def take(self, row: QuietRow, out: Outputs) -> int:
        """Apply `row` if it is quiet here and now (TAKEN); if not, nothing changes, and
        STALE says a new run, with the bound worked out again, may take it."""
        (lp, lo, t, kind, member_id, instance_id, generation, topic, partition, value,
         epoch, metadata, stamp, expire, producer, result) = row
        if self.position is not None and (lp, lo) <= self.position:
            return NOT_QUIET  # DUPLICATE or OUT_OF_ORDER: the general path says which
        member: Member | None = None
        if kind == "TXN_MARKER":
            if self.group.journal:
                return NOT_QUIET  # an abort may let offsets expire sooner: timers to work out
        elif producer is not None and generation is not None:
            return NOT_QUIET  # a transactional commit request
        elif generation is not None:
            if kind == "OFFSET_COMMIT" and generation < 0 and self.simple_commits:
                pass  # `validateOffsetCommit`: no member to check in an Empty group
            elif not self.requests:
                return NOT_QUIET
            else:
                member = self._member(member_id, instance_id)
                if member is None or generation != self.group.generation_id:
                    return NOT_QUIET  # refused: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ...
            if kind == "OFFSET_COMMIT" and java_length(metadata or "") > (
                    self.cfg.offset_metadata_max_bytes):  # the handler's very check
                return NOT_QUIET  # OFFSET_METADATA_TOO_LARGE
        elif kind == "HEARTBEAT":
            return NOT_QUIET
        if not self.timed:
            timer = next_timer(self.group, self.cfg)
            self.due, self.timed = None if timer is None else timer[0], True
        if self.due is not None and t > self.due:
            # A timer may fire first, or the bound is stale: a run opened now would know.
            return NOT_QUIET if not self.positions else STALE
        clock = self.clock
        now = t if clock is None or t > clock else clock
        self.clock = now
        position = self.position = (lp, lo)
        self.positions.append(position)
        self.last_time = t
        if member is not None:
            self.beats[member.member_id] = now  # a commit request counts as a heartbeat
        if kind == "HEARTBEAT":
            return TAKEN
        if kind == "TXN_MARKER":
            self._marker(producer, result, now, out)
            return TAKEN
        if metadata is None:
            metadata = ""
        if stamp is None:
            stamp = now
        member_id = member_id or None
        if producer is not None:  # pending until its producer's marker
            if self.txns is None:
                self.txns = {pid: dict(p) for pid, p in self.group.pending_txns.items()}
            self.txns.setdefault(producer, {})[(topic, partition)] = Offset(
                value, epoch, metadata, stamp, expire, member_id, generation, lp, lo)
            return TAKEN
        # Only the last commit of a partition in the run becomes an Offset (at `close`).
        self.latest[(topic, partition)] = (value, epoch, metadata, stamp, expire, member_id,
                                           generation, lp, lo)
        out.offset_history.append({
            "group_id": self.group_id, "topic": topic, "partition": partition,
            "committed_offset": value, "leader_epoch": epoch, "commit_metadata": metadata,
            "commit_timestamp": stamp, "expire_timestamp": expire, "member_id": member_id,
            "generation_id": generation, "log_partition": lp, "log_offset": lo,
            "event_time": now, "change": "COMMIT", "producer_id": None,
        })
        if self.expiry_base is not None:  # the new offset's earliest sweep, subscribed or not
            if expire is None:
                expire = self.expiry_base(Offset(value, epoch, metadata, stamp, expire,
                                                 member_id, generation, lp, lo)) + (
                    self.cfg.offsets_retention_ms)
            sweep = sweep_time(expire, self.cfg)
            if self.due is None or sweep < self.due:
                self.due = sweep
        return TAKEN

    def _marker(self, producer: int, result: str, now: int, out: Outputs) -> None:
        """`offsets.on_txn_marker` on the working copy: the producer's pending offsets are
        dropped (ABORT) or put over any older record of their partition (COMMIT)."""
        if self.txns is None:
            if producer not in self.group.pending_txns:
                return
            self.txns = {pid: dict(p) for pid, p in self.group.pending_txns.items()}
        pending = self.txns.pop(producer, None)
        if pending is None:
            return  # nothing of this producer's is pending in this group
        history, group_id = out.offset_history, self.group_id
        extra = {"event_time": now, "change": "TXN_ABORTED", "producer_id": producer}
        if result == "ABORT":
            for tp, o in sorted(pending.items()):
                history.append(offset_columns(group_id, tp, o) | extra)
            return
        extra["change"] = "COMMIT"
        for tp, o in sorted(pending.items()):
            current = self.latest.get(tp)
            at: tuple[int, int] | None
            if current is not None:
                at = (current[7], current[8])
            else:
                old = self.group.offsets.get(tp)
                at = None if old is None else (old.log_partition, old.log_offset)
            if at is None or at < (o.log_partition, o.log_offset):
                self.latest[tp] = (o.committed_offset, o.leader_epoch, o.metadata,
                                   o.commit_timestamp, o.expire_timestamp, o.member_id,
                                   o.generation_id, o.log_partition, o.log_offset)
                history.append(offset_columns(group_id, tp, o) | extra)

    def _member(self, member_id: str | None, instance_id: str | None) -> Member | None:
        """Kafka's `validateMember`, None where it refuses."""
        if instance_id is not None:
            static = self.static.get(instance_id)
            return static if static is not None and static.member_id == member_id else None
        return self.members.get(member_id)  # type: ignore[arg-type]

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
                m.evolve(last_heartbeat=beats[m.member_id]) if m.member_id in beats else m
                for m in g.members)
        keep = self.cfg.recent_positions
        return g.evolve(position=self.position, recent=(*g.recent, *self.positions[-keep:])[-keep:],
                        seq=0, clock=self.clock, last_event_time=self.last_time, **changes)


__all__ = ["NOT_QUIET", "STALE", "TAKEN", "Batch", "EventColumns", "QuietRow", "QuietRun"]
