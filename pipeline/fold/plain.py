"""A group's rows as the fold reads them, and plain commits applied in bulk.

A plain commit is an OFFSET_COMMIT record as `__consumer_offsets` holds it: no generation
(not a request), no producer (not transactional), nothing undecodable, on the group's own
partition. It is the bulk of every real log, and it cannot change a group's shape: applied to
an existing group whose log carries no protocol requests (so no timer can fire, contract §2),
it only puts an offset, writes its offset_history row and moves the position. `Batch` reads
such rows as tuples, from `Event`s or straight from `EventColumns`, never building an
`Event`; `apply_commits` applies a run of them to one working copy of the offsets and one new
Group, with exactly the rows and state the general path gives (the golden tables prove it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.context import Outputs
from pipeline.fold.events import Event, EventColumns
from pipeline.fold.model import Group, Offset

# (log_partition, log_offset, event_time, topic, partition, committed_offset, leader_epoch,
#  commit_metadata, commit_timestamp, expire_timestamp, member_id)
PlainCommit = tuple[int, int, int, str, int, int, Any, Any, Any, Any, Any]
_COMMIT_FIELDS = ("log_partition", "log_offset", "event_time", "topic", "partition",
                  "committed_offset", "leader_epoch", "commit_metadata", "commit_timestamp",
                  "expire_timestamp", "member_id")
# Set on a plain commit's row only if it is something else or undecodable.
_MUST_BE_NULL = ("generation_id", "producer_id", "decode_error")
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
        self._rows: list[tuple[Any, ...]] | None = None
        # Rows without a usable position sort first; they are rejected without touching state.
        self.order = sorted(range(self.size), key=keys.__getitem__)

    def _column(self, name: str) -> list[Any]:
        return self.columns.get(name) or [None] * self.size

    def event(self, i: int) -> Event:
        if self.events is not None:
            return self.events[i]
        if self._rows is None:  # transposed once, in C, for the rows that are no plain commit
            self._rows = list(zip(*self.columns.values(), strict=True))
        return Event.from_row(dict(zip(self.columns, self._rows[i], strict=True)))

    def event_times(self) -> list[int | None]:
        if self.events is not None:
            return [e.event_time for e in self.events]
        return self._column("event_time")

    def plain_commits(self, home: int) -> list[PlainCommit | None]:
        """Per row, its values if it is a plain commit on partition `home`, else None."""
        if self.events is not None:
            return [_plain_event(e, home) for e in self.events]
        # Column by column (a list comprehension per column, not a check per cell per row).
        types = self._column("event_type")
        rows = [i for i, t in enumerate(types) if t == "OFFSET_COMMIT"]
        for name in (*_MUST_BE_NULL, *_NESTED):
            column = self.columns.get(name)
            if column:
                rows = [i for i in rows if column[i] is None]
        values = list(zip(*(self._column(n) for n in _COMMIT_FIELDS), strict=True))
        result: list[PlainCommit | None] = [None] * self.size
        for i in rows:
            result[i] = _plain(values[i], home)
        return result


def _order_key(partition: int | None, offset: int | None) -> tuple[int, int, int]:
    if partition is None or offset is None:
        return (0, 0, 0)
    return (1, partition, offset)


def _plain_event(e: Event, home: int) -> PlainCommit | None:
    if (e.event_type != "OFFSET_COMMIT" or e.generation_id is not None
            or e.producer_id is not None or e.decode_error is not None or e.defect is not None):
        return None
    return _plain((e.log_partition, e.log_offset, e.event_time, e.topic, e.partition,
                   e.committed_offset, e.leader_epoch, e.commit_metadata, e.commit_timestamp,
                   e.expire_timestamp, e.member_id), home)


def _plain(row: tuple[Any, ...], home: int) -> PlainCommit | None:
    # What position_defect, _foreign and the OFFSET_COMMIT check would refuse stays general.
    lp, lo, t, topic, partition, value = row[:6]
    if (lp != home or lo is None or lo < 0 or t is None or topic is None or partition is None
            or partition < 0 or value is None):
        return None
    return row


def takes_plain_commits(g: Group) -> bool:
    """Whether a plain commit to `g` only puts an offset: the group exists (else the commit
    creates it) and no timer can fire (its log carries no requests)."""
    return g.exists and not g.journal


def apply_commits(g: Group, commits: list[PlainCommit], cfg: CoordinatorConfig,
                  out: Outputs) -> Group:
    """Apply plain commits, in log order, each past the one before and past `g.position`,
    to a group that `takes_plain_commits`, as `offsets.on_commit` would one by one."""
    history = out.offset_history
    group_id = g.group_id
    clock = g.clock
    # Only the last commit of each partition in the run becomes an Offset; every commit
    # still writes its row. First-seen order, so the offsets dict keeps the order one by one
    # gives (a put on a present key keeps its place).
    latest: dict[tuple[str, int], tuple[Any, ...]] = {}
    for lp, lo, t, topic, partition, value, epoch, metadata, stamp, expire, member in commits:
        now = t if clock is None or t > clock else clock
        clock = now
        metadata = "" if metadata is None else metadata
        stamp = now if stamp is None else stamp
        member = member or None
        latest[(topic, partition)] = (value, epoch, metadata, stamp, expire, member, None, lp, lo)
        history.append({
            "group_id": group_id, "topic": topic, "partition": partition,
            "committed_offset": value, "leader_epoch": epoch, "commit_metadata": metadata,
            "commit_timestamp": stamp, "expire_timestamp": expire, "member_id": member,
            "generation_id": None, "log_partition": lp, "log_offset": lo, "event_time": now,
            "change": "COMMIT", "producer_id": None,
        })
    offsets = dict(g.offsets)
    for tp, values in latest.items():
        offsets[tp] = Offset(*values)
    keep = cfg.recent_positions
    recent = (*g.recent, *((c[0], c[1]) for c in commits[-keep:]))[-keep:]
    last = commits[-1]
    return g.evolve(offsets=offsets, position=(last[0], last[1]), recent=recent, seq=0,
                    clock=clock, last_event_time=last[2])


__all__ = ["Batch", "EventColumns", "PlainCommit", "apply_commits", "takes_plain_commits"]
