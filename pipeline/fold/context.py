"""What one step of the fold (an event, or a timer firing) writes: output rows and coordinator records.

Rows are staged on a `Step` and handed over only when the step succeeds, so a request that
is refused halfway leaves no row behind. Row dicts use the column names of `schemas.tables`,
with times as integer milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.events import Event, SnapshotMember
from pipeline.fold.model import Group, Offset, OffsetValues

Row = dict[str, Any]


@dataclass
class Left:
    """The plain commit records the fold left to its caller: applied like any other, but
    their rows not written, since each row is the record's own values stored as
    `offsets.from_request` stores a commit at the record's own time, and the caller can build
    it from the record (the Spark jobs do, in the JVM: `pipeline/spark/fold/left.py`). Only
    records a records-only run takes whose time does not run back are left
    (`runs.QuietRun.take_records`). By index among the fold's input rows: `history`, each
    one, for its offset_history row; `current`, those whose partition's committed_offsets
    row is theirs too (the partition's last left record, its offset still the group's at
    the end); `last`, per partition, the last left record's log position and index."""

    history: list[int] = field(default_factory=list)
    current: list[int] = field(default_factory=list)
    last: dict[tuple[str, int], tuple[int, int, int]] = field(default_factory=dict)
    # The group's type at each left record, as runs: (where in `history` a run starts, the
    # type), a new run only when the type changes (a conversion, a group deleted and made
    # again): most groups have one.
    type_runs: list[tuple[int, str]] = field(default_factory=list)

    def typed(self, group_type: str) -> None:
        """The records left from now on are of a group of `group_type`."""
        if not self.type_runs or self.type_runs[-1][1] != group_type:
            self.type_runs.append((len(self.history), group_type))

    def extend(self, other: Left) -> None:
        self.type_runs += [(at + len(self.history), t) for at, t in other.type_runs]
        self.history += other.history
        self.current += other.current
        self.last.update(other.last)

    def shifted(self, by: int) -> Left:
        """The same records, their indices `by` further on (a group's rows within a batch)."""
        return Left([i + by for i in self.history], [i + by for i in self.current],
                    {tp: (lp, lo, i + by) for tp, (lp, lo, i) in self.last.items()},
                    list(self.type_runs))

    def history_only(self) -> list[int]:
        """`history` less `current`, in order."""
        current = set(self.current)
        return [i for i in self.history if i not in current]

    def types(self) -> dict[int, str]:
        """The group's type at each left record, by its index."""
        found: dict[int, str] = {}
        ends = [at for at, _ in self.type_runs[1:]] + [len(self.history)]
        for (start, group_type), end in zip(self.type_runs, ends, strict=False):
            found.update(dict.fromkeys(self.history[start:end], group_type))
        return found

    def types_of(self, records: list[int]) -> list[str]:
        """The group's type at each of the left `records` (indices), in their order."""
        if len(self.type_runs) == 1:
            return [self.type_runs[0][1]] * len(records)
        found = self.types()
        return [found[i] for i in records]


@dataclass
class Outputs:
    transitions: list[Row] = field(default_factory=list)
    rebalances: list[Row] = field(default_factory=list)
    rebalance_cost: list[Row] = field(default_factory=list)
    offset_history: list[Row] = field(default_factory=list)
    rejected: list[Row] = field(default_factory=list)
    answered: list[Row] = field(default_factory=list)  # applied, yet answered with an error
    # What the coordinator writes to its log: kept only when the fold is asked to (records=True).
    records: list[Event] = field(default_factory=list)
    history: list[Row] = field(default_factory=list)  # the group's shape after each change
    # What the fold left to its caller, when asked to leave (`fold(..., leave=True)`).
    left: Left | None = None

    def extend(self, other: Outputs) -> None:
        self.transitions += other.transitions
        self.rebalances += other.rebalances
        self.rebalance_cost += other.rebalance_cost
        self.offset_history += other.offset_history
        self.rejected += other.rejected
        self.answered += other.answered
        self.records += other.records
        self.history += other.history
        if other.left is not None:
            if self.left is None:
                self.left = Left()
            self.left.extend(other.left)


@dataclass
class Step:
    config: CoordinatorConfig
    now: int
    position: tuple[int, int] | None
    out: Outputs = field(default_factory=Outputs)
    departures: list[tuple[str, str]] = field(default_factory=list)  # (member id, why)
    response: str | None = None  # the error Kafka answers a request it applied with
    keep_records: bool = False  # only the generator reads the coordinator's records

    def answer(self, error: str) -> None:
        """The request changes the group, yet Kafka's response carries `error` (a first-phase
        JoinGroup's MEMBER_ID_REQUIRED, a heartbeat's REBALANCE_IN_PROGRESS): not a refusal,
        so the row goes to error_responses, not rejected_events."""
        self.response = error

    def depart(self, member_id: str, cause: str) -> None:
        """A member this step removes, and why (group_history keeps it with the new shape)."""
        self.departures.append((member_id, cause))

    @property
    def log_partition(self) -> int | None:
        return None if self.position is None else self.position[0]

    @property
    def log_offset(self) -> int | None:
        return None if self.position is None else self.position[1]

    def transition_row(
        self, before: Group, after: Group, cause: str, member_id: str | None, detail: str | None
    ) -> Group:
        """Record a state change; returns `after` with its row counter advanced."""
        self.out.transitions.append({
            "group_id": after.group_id,
            "event_time": self.now,
            "log_partition": self.log_partition,
            "log_offset": self.log_offset,
            "from_state": before.state if before.exists else None,
            "to_state": after.state,
            "generation_id": after.generation_id,
            "cause": cause,
            "member_id": member_id,
            "member_count": len(after.member_ids),
            "detail": detail,
            "seq": after.seq,
            "group_type": after.shown_type,
        })
        return after.evolve(seq=after.seq + 1)

    def offset_row(self, g: Group, tp: tuple[str, int], o: Offset, change: str,
                   producer_id: int | None = None) -> None:
        """`g`: the group the offset is in, as the row is written."""
        self.out.offset_history.append(offset_history_row(
            g.group_id, tp, o.values(), self.now, change, producer_id, g.shown_type))

    def record(self, event_type: str, group_id: str, **values: Any) -> None:
        if not self.keep_records:
            return
        self.out.records.append(
            Event(None, None, self.now, group_id, event_type, **values)
        )

    def snapshot_record(self, g: Group) -> None:
        """The GROUP_METADATA record the coordinator writes for this group now."""
        if not self.keep_records:
            return
        self.record(
            "GROUP_METADATA", g.group_id,
            generation_id=g.generation_id,
            protocol_type=g.protocol_type or "",
            protocol=g.protocol,
            leader_id=g.leader_id,
            current_state_timestamp=g.state_since,
            members=tuple(
                SnapshotMember(
                    m.member_id, m.group_instance_id, m.client_id, m.client_host,
                    m.session_timeout_ms, m.rebalance_timeout_ms,
                    m.topics_for(g.protocol), m.assignment,
                )
                for m in g.members
            ),
        )


def offset_history_row(group_id: str, tp: tuple[str, int], values: OffsetValues,
                       event_time: int, change: str, producer_id: int | None,
                       group_type: str) -> Row:
    """An offset_history row: an offset's values (an `Offset`'s, in its field order) and what
    happened to it at `event_time`, in a group of `group_type`. The quiet path builds its rows
    here too, from the values it keeps instead of an `Offset`, so this is the one place the
    row's columns are listed."""
    value, epoch, metadata, stamp, expire, member_id, generation, lp, lo = values
    return {
        "group_id": group_id, "topic": tp[0], "partition": tp[1], "committed_offset": value,
        "leader_epoch": epoch, "commit_metadata": metadata, "commit_timestamp": stamp,
        "expire_timestamp": expire, "member_id": member_id, "generation_id": generation,
        "log_partition": lp, "log_offset": lo, "event_time": event_time, "change": change,
        "producer_id": producer_id, "group_type": group_type,
    }


def offset_columns(group_id: str, tp: tuple[str, int], o: Offset, group_type: str) -> Row:
    """A committed_offsets row: the group's current offset of partition `tp`; `group_type`:
    the group's, now."""
    return {
        "group_id": group_id,
        "topic": tp[0],
        "partition": tp[1],
        "committed_offset": o.committed_offset,
        "leader_epoch": o.leader_epoch,
        "commit_metadata": o.metadata,
        "commit_timestamp": o.commit_timestamp,
        "expire_timestamp": o.expire_timestamp,
        "member_id": o.member_id,
        "generation_id": o.generation_id,
        "log_partition": o.log_partition,
        "log_offset": o.log_offset,
        "group_type": group_type,
    }
