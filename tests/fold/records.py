"""Record factories for fold tests: a `Log` of one group that events are appended to, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from pipeline.fold import CoordinatorConfig, Event, FoldResult, Protocol, SnapshotMember, fold
from pipeline.fold.partitioning import partition_for
from tests.grouping import by_group as by_group  # tests/spark imports it from here

T0 = 1_700_000_000_000
RANGE = (("range", ("orders",)),)


@dataclass
class Log:
    group: str = "g"
    partition: int = -1  # -1: the partition Kafka maps the group to, as the fold expects
    now: int = T0
    next_offset: int = 0
    events: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.partition == -1:
            self.partition = partition_for(self.group)

    def at(self, ms: int) -> Log:
        """Move the clock to T0 + ms."""
        self.now = T0 + ms
        return self

    def add(self, event_type: str, **values: Any) -> Event:
        e = Event(self.partition, self.next_offset, self.now, self.group, event_type, **values)
        self.next_offset += 1
        self.events.append(e)
        return e

    def join(self, member: str, *, new: bool = False, instance: str | None = None,
             protocols: tuple[tuple[str, tuple[str, ...]], ...] = RANGE,
             session: int = 10_000, rebalance: int = 30_000, api_version: int | None = None,
             protocol_type: str = "consumer") -> Event:
        return self.add(
            "JOIN", member_id=member, request_member_id="" if new else member,
            group_instance_id=instance, client_id=member.split("-")[0], client_host="/127.0.0.1",
            session_timeout_ms=session, rebalance_timeout_ms=rebalance,
            protocol_type=protocol_type,
            protocols=tuple(Protocol(n, tuple(t)) for n, t in protocols),
            api_version=api_version,
        )

    def sync(self, member: str, generation: int,
             assignments: dict[str, list[tuple[str, int]]] | None = None,
             instance: str | None = None) -> Event:
        given = None if assignments is None else tuple(
            (m, tuple(tps)) for m, tps in assignments.items())
        return self.add("SYNC", member_id=member, generation_id=generation, assignments=given,
                        group_instance_id=instance)

    def heartbeat(self, member: str, generation: int) -> Event:
        return self.add("HEARTBEAT", member_id=member, generation_id=generation)

    def leave(self, member: str = "", instance: str | None = None) -> Event:
        return self.add("LEAVE", member_id=member, group_instance_id=instance)

    def commit(self, topic: str, partition: int, offset: int, *, member: str = "",
               generation: int | None = -1, producer_id: int | None = None,
               metadata: str | None = None, expire: int | None = None) -> Event:
        return self.add("OFFSET_COMMIT", member_id=member, generation_id=generation,
                        topic=topic, partition=partition, committed_offset=offset,
                        producer_id=producer_id, commit_metadata=metadata,
                        expire_timestamp=expire)

    def marker(self, producer_id: int, result: str) -> Event:
        return self.add("TXN_MARKER", producer_id=producer_id, txn_result=result)

    def snapshot(self, generation: int, members: dict[str, list[tuple[str, int]]],
                 leader: str | None = None, protocol: str | None = "range",
                 topics: tuple[str, ...] = ("orders",)) -> Event:
        return self.add(
            "GROUP_METADATA", generation_id=generation, protocol_type="consumer",
            protocol=protocol if members else None,
            leader_id=leader if leader else (next(iter(members)) if members else None),
            members=tuple(
                SnapshotMember(m, None, m, "/127.0.0.1", 10_000, 30_000, topics, tuple(a))
                for m, a in members.items()),
        )

    def replay(self, config: CoordinatorConfig | None = None,
               records: bool = False) -> FoldResult:
        return fold(self.group, self.events, config or CoordinatorConfig(), records=records)

    def stable_group(self, *members: str, partitions: int = 4, session: int = 10_000) -> Log:
        """Members join (two-phase, dynamic); once the initial delay is over the first one,
        the leader, syncs a range assignment of `orders` and the others sync: Stable at 1."""
        for m in members:
            self.join(m, new=True, session=session)
            self.join(m, session=session)
        self.at(self.now - T0 + 9_000)
        plan: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
        for p in range(partitions):
            plan[members[p * len(members) // partitions]].append(("orders", p))
        self.sync(members[0], 1, plan)
        for m in members[1:]:
            self.sync(m, 1)
        return self


Partitions = dict[str, list[int]]  # topic id (or a streams subtopology id) -> partitions


def tids(partitions: Partitions) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Partitions as a KIP-848 or KIP-932 record holds them: (topic id, partitions) pairs."""
    return tuple((t, tuple(ps)) for t, ps in partitions.items())


@dataclass
class ModernLog(Log):
    """A log of one record-backed group (consumer, share or streams): the records and write
    sequences Kafka's coordinator writes alike for the three types, named with the type's
    record prefix `RECORDS`; each type's log adds its own records and its `epoch`, `target`
    and `current`, which take its own values."""

    RECORDS: ClassVar[str]
    DELETED_LAST: ClassVar[tuple[str, ...]]  # the type's own tombstones, last in a deletion

    def epoch(self, epoch: int) -> Event:
        raise NotImplementedError

    def target(self, member_id: str, assigned: Partitions) -> Event:
        raise NotImplementedError

    def target_epoch(self, epoch: int) -> Event:
        return self.add(f"{self.RECORDS}_TARGET_ASSIGNMENT_METADATA", assignment_epoch=epoch)

    def assignment(self, member_id: str, epoch: int, previous: int | None, state: int,
                   **assigned: Any) -> Event:
        """A CURRENT_MEMBER_ASSIGNMENT record; the previous epoch is one less by default."""
        return self.add(f"{self.RECORDS}_CURRENT_MEMBER_ASSIGNMENT", member_id=member_id,
                        member_epoch=epoch,
                        previous_member_epoch=epoch - 1 if previous is None else previous,
                        member_state=state, **assigned)

    def tombstone(self, record: str, member_id: str | None = None) -> Event:
        return self.add(f"{self.RECORDS}_{record}_TOMBSTONE", member_id=member_id)

    def assigns(self, epoch: int, targets: dict[str, Partitions]) -> None:
        """The bumped group epoch, then the new target assignment (every member's) and its
        epoch, as a heartbeat that changes the group writes them."""
        self.epoch(epoch)
        for m, assigned in targets.items():
            self.target(m, assigned)
        self.target_epoch(epoch)

    def leaves(self, member_id: str) -> None:
        """A member leaves: current assignment, target, then metadata tombstones."""
        self.tombstone("CURRENT_MEMBER_ASSIGNMENT", member_id)
        self.tombstone("TARGET_ASSIGNMENT_MEMBER", member_id)
        self.tombstone("MEMBER_METADATA", member_id)

    def deleted(self, members: tuple[str, ...]) -> None:
        """Kafka's `createGroupTombstoneRecords`: every current assignment, every target, the
        target epoch, every member's metadata, then the type's own (`DELETED_LAST`)."""
        for m in members:
            self.tombstone("CURRENT_MEMBER_ASSIGNMENT", m)
        for m in members:
            self.tombstone("TARGET_ASSIGNMENT_MEMBER", m)
        self.tombstone("TARGET_ASSIGNMENT_METADATA")
        for m in members:
            self.tombstone("MEMBER_METADATA", m)
        for record in self.DELETED_LAST:
            self.tombstone(record)


NO_DELAY = CoordinatorConfig(initial_rebalance_delay_ms=0)


def reasons(result: FoldResult) -> list[str]:
    return [r["reason"] for r in result.outputs.rejected]


def states(result: FoldResult) -> list[tuple[str | None, str, str]]:
    return [(t["from_state"], t["to_state"], t["cause"]) for t in result.outputs.transitions]
