"""Record factories for KIP-848 consumer groups: a `ConsumerLog` appends records of types 3-8
and 16 (and their tombstones) as Kafka's coordinator writes them, plus the sequences it
writes when a member joins, reconciles or leaves and when the group is deleted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from pipeline.fold import Event
from pipeline.fold.events import TopicMetadata
from tests.fold.records import ModernLog, Partitions, tids

ORDERS_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Kafka prints topic ids as URL-safe base64
PAYMENTS_ID = "AAAAAAAAAAAAAAAAAAAAAg"
TOPICS = {ORDERS_ID: ("orders", 4), PAYMENTS_ID: ("payments", 2)}
STABLE, UNREVOKED, UNRELEASED = 0, 1, 2


@dataclass
class ConsumerLog(ModernLog):
    RECORDS: ClassVar[str] = "CONSUMER_GROUP"
    DELETED_LAST: ClassVar[tuple[str, ...]] = ("PARTITION_METADATA", "METADATA")  # 4, 3
    group: str = "cg"

    # ------------------------------------------------------------- one record each

    def epoch(self, epoch: int) -> Event:
        return self.add("CONSUMER_GROUP_METADATA", group_epoch=epoch, metadata_hash=0)

    def partition_metadata(self, topic_ids: tuple[str, ...] = (ORDERS_ID,)) -> Event:
        return self.add("CONSUMER_GROUP_PARTITION_METADATA", topics_metadata=tuple(
            TopicMetadata(t, TOPICS[t][0], TOPICS[t][1]) for t in topic_ids))

    def member(self, member_id: str, topics: tuple[str, ...] = ("orders",),
               instance: str | None = None, regex: str | None = None) -> Event:
        return self.add("CONSUMER_GROUP_MEMBER_METADATA", member_id=member_id,
                        group_instance_id=instance, client_id=member_id.split("-")[0],
                        client_host="/10.0.0.1", subscribed_topic_names=topics,
                        subscribed_topic_regex=regex, rebalance_timeout_ms=300_000,
                        server_assignor="uniform")

    def target(self, member_id: str, partitions: Partitions) -> Event:
        return self.add("CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER", member_id=member_id,
                        assigned_partitions=tids(partitions))

    def current(self, member_id: str, epoch: int, assigned: Partitions,
                state: int = STABLE, previous: int | None = None,
                pending: Partitions | None = None) -> Event:
        return self.assignment(member_id, epoch, previous, state,
                               assigned_partitions=tids(assigned),
                               partitions_pending_revocation=tids(pending or {}))

    def regex(self, pattern: str, topics: tuple[str, ...]) -> Event:
        return self.add("CONSUMER_GROUP_REGULAR_EXPRESSION", regular_expression=pattern,
                        regex_topics=topics, regex_version=1, regex_timestamp_ms=self.now)

    def record_commit(self, topic: str, partition: int, offset: int) -> Event:
        """An OFFSET_COMMIT record as `__consumer_offsets` holds it: no generation."""
        return self.commit(topic, partition, offset, generation=None)

    # ------------------------------------------------------------- Kafka's write sequences

    def joins(self, member_id: str, epoch: int, targets: dict[str, Partitions]) -> None:
        """A heartbeat from a new member: its metadata, the subscription metadata and the
        bumped group epoch, then the new target assignment (every member's) and its epoch."""
        self.member(member_id)
        self.partition_metadata()
        self.assigns(epoch, targets)

    def stable_with(self, member_id: str = "a-1", partitions: list[int] | None = None) -> None:
        """A one-member group at epoch 1 that owns `partitions` (all four by default)."""
        owned = {ORDERS_ID: partitions if partitions is not None else [0, 1, 2, 3]}
        self.joins(member_id, 1, {member_id: owned})
        self.current(member_id, 1, owned)
