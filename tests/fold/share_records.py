"""Record factories for KIP-932 share groups: a `ShareLog` appends records of types 10-15 (and
their tombstones) as Kafka's coordinator writes them, plus the sequences it writes when a
member joins or leaves and when the group is deleted (`ShareGroup.createGroupTombstoneRecords`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pipeline.fold import Event
from tests.fold.consumer_records import ORDERS_ID, PAYMENTS_ID
from tests.fold.records import ModernLog, Partitions, tids

NAMES = {ORDERS_ID: "orders", PAYMENTS_ID: "payments"}
STABLE = 0


@dataclass
class ShareLog(ModernLog):
    RECORDS: ClassVar[str] = "SHARE_GROUP"
    DELETED_LAST: ClassVar[tuple[str, ...]] = ("STATE_PARTITION_METADATA", "METADATA")  # 15, 11
    group: str = "sg"

    # ------------------------------------------------------------- one record each

    def member(self, member_id: str, topics: tuple[str, ...] = ("orders",),
               rack: str | None = None) -> Event:
        return self.add("SHARE_GROUP_MEMBER_METADATA", member_id=member_id, rack_id=rack,
                        client_id=member_id.split("-")[0], client_host="/10.0.0.1",
                        subscribed_topic_names=topics)

    def epoch(self, epoch: int) -> Event:
        return self.add("SHARE_GROUP_METADATA", group_epoch=epoch, metadata_hash=0,
                        record_layout="kafka-4.1+")

    def target(self, member_id: str, partitions: Partitions) -> Event:
        return self.add("SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER", member_id=member_id,
                        assigned_partitions=tids(partitions))

    def current(self, member_id: str, epoch: int, assigned: Partitions,
                previous: int | None = None, state: int = STABLE) -> Event:
        return self.assignment(member_id, epoch, previous, state,
                               assigned_partitions=tids(assigned))

    def state_partitions(self, initializing: Partitions | None = None,
                         initialized: Partitions | None = None,
                         deleting: tuple[str, ...] = ()) -> Event:
        def topics(p: Partitions | None) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
            return tuple((t, NAMES[t], tuple(ps)) for t, ps in (p or {}).items())
        return self.add("SHARE_GROUP_STATE_PARTITION_METADATA",
                        initializing_topics=topics(initializing),
                        initialized_topics=topics(initialized),
                        deleting_topics=tuple((t, NAMES[t]) for t in deleting),
                        record_layout="kafka-4.1+")

    # ------------------------------------------------------------- Kafka's write sequences

    def joins(self, member_id: str, epoch: int, targets: dict[str, Partitions]) -> None:
        """A heartbeat from a new member: its metadata and the bumped group epoch, then the
        new target assignment (every member's) and its epoch, then its current assignment."""
        self.member(member_id)
        self.assigns(epoch, targets)
        self.current(member_id, epoch, targets[member_id], previous=0)

    def stable_with(self, member_id: str = "a-1") -> None:
        """A one-member group at epoch 1, its orders partitions initialized, sharing all four."""
        self.joins(member_id, 1, {member_id: {ORDERS_ID: [0, 1, 2, 3]}})
        self.state_partitions(initialized={ORDERS_ID: [0, 1, 2, 3]})
