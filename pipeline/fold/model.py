"""The fold's state: a group, its members, committed and pending offsets, as frozen values.

Names follow Kafka's classic group (`ClassicGroup`, `ClassicGroupMember`, `OffsetAndMetadata`)
and, for its other group types, `ConsumerGroup`, `ShareGroup` and `StreamsGroup` with their
members: a Group whose `consumer`, `share` or `streams` part is set is a group of that type
(at most one is set), and that part holds what only such groups have.
Collections are tuples, or dicts that are never mutated once a Group holds them: every
change builds a new Group with `dataclasses.replace`, so a refused request, which raises
before anything is built, leaves the group exactly as it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from pipeline.fold.events import (
    KeyValues,
    Protocol,
    ShareTopics,
    Subtopology,
    Tasks,
    TopicIdPartitions,
    TopicMetadata,
    TopicNames,
    TopicPartition,
    evolved,
)
from pipeline.fold.partitioning import JavaHashOrder, java_string_hash
from pipeline.fold.states import DEAD, EMPTY, MEMBER_STABLE, STREAMS_MEMBER_STABLE

CLASSIC, CONSUMER, SHARE, STREAMS = "classic", "consumer", "share", "streams"  # Kafka's group types
_INT32 = 2**32


def tick(clock: int | None, t: int) -> int:
    """The coordinator's clock after a row at event time `t`: it never runs back (a row
    whose time runs back is applied at the clock)."""
    return t if clock is None or t > clock else clock


def next_generation(generation: int) -> int:
    """Kafka's `generationId++` on a Java int: past 2147483647 it wraps to -2147483648.

    Kafka's coordinator does this (ClassicGroup.initNextGeneration), and then writes the
    wrapped value in its next GroupMetadata record, so the fold follows it rather than
    refusing the rebalance; a generation_id column (int) holds every value it yields."""
    return (generation + 1 + 2**31) % _INT32 - 2**31


@dataclass(frozen=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str | None
    client_host: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[Protocol, ...]
    assignment: tuple[TopicPartition, ...] = ()
    joined_at: int = 0
    last_heartbeat: int = 0
    awaiting_join: bool = False  # waiting in JoinGroup for the join phase to complete
    awaiting_sync: bool = False  # a follower parked in SyncGroup until the leader's assignment
    is_new: bool = False  # joined in this rebalance: subject to the new-member join timeout

    def evolve(self, **changes: Any) -> Member:
        """A copy with `changes` (`evolved`, hence no slots): a heartbeat or commit renews a
        member's last_heartbeat."""
        return evolved(self, _MEMBER_FIELDS, changes)

    def heard(self, now: int) -> Member:
        """The member after a heartbeat at `now`, or what Kafka counts as one (a commit
        request from the member in its generation, a JoinGroup or SyncGroup answered at
        once): its session starts again."""
        return self.evolve(last_heartbeat=now)

    def topics_for(self, protocol: str | None) -> tuple[str, ...]:
        for p in self.protocols:
            if p.name == protocol:
                return p.topics
        return self.protocols[0].topics if self.protocols and protocol is None else ()

    @property
    def protocol_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.protocols)


# An `Offset`'s fields in its order, as a plain tuple: what the quiet path keeps of a commit
# until it builds the one Offset its partition ends the run with (`Offset(*values)`).
OffsetValues = tuple[int, int | None, str | None, int, int | None, str | None, int | None, int,
                     int]


@dataclass(frozen=True, slots=True)
class Offset:
    committed_offset: int
    leader_epoch: int | None
    metadata: str | None
    commit_timestamp: int
    expire_timestamp: int | None
    member_id: str | None
    generation_id: int | None
    log_partition: int
    log_offset: int

    def values(self) -> OffsetValues:
        return (self.committed_offset, self.leader_epoch, self.metadata, self.commit_timestamp,
                self.expire_timestamp, self.member_id, self.generation_id, self.log_partition,
                self.log_offset)


@dataclass(frozen=True, slots=True)
class PendingMember:
    """A member id handed out with MEMBER_ID_REQUIRED (KIP-394), not yet a member."""

    member_id: str
    since: int
    session_timeout_ms: int


@dataclass(frozen=True, slots=True)
class Rebalance:
    """A rebalance under way: from PreparingRebalance until Stable, Empty or abandonment."""

    started_at: int
    cause: str
    join_deadline: int
    initial: bool = False  # started from Empty: group.initial.rebalance.delay.ms applies
    delay_ms: int = 0
    remaining_ms: int = 0
    new_member_added: bool = False


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    """A KIP-848 member as Kafka's `ConsumerGroupMember` holds it: metadata from its
    MEMBER_METADATA record (type 5), epochs, state and partitions from its
    CURRENT_MEMBER_ASSIGNMENT record (type 8). Defaults are Kafka's for a member that either
    record creates (member epoch 0, previous -1, state STABLE)."""

    member_id: str
    group_instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int | None = None
    server_assignor: str | None = None
    classic_protocols: tuple[Protocol, ...] | None = None  # set for a classic-protocol member
    session_timeout_ms: int | None = None  # classic-protocol members only
    member_epoch: int = 0
    previous_member_epoch: int = -1
    member_state: int = MEMBER_STABLE
    assigned_partitions: TopicIdPartitions = ()
    partitions_pending_revocation: TopicIdPartitions = ()
    joined_at: int = 0
    last_record: int = 0  # time of the member's latest record

    def reconciled_to(self, assignment_epoch: int) -> bool:
        """Kafka's `isReconciledTo`: in state STABLE at the target assignment epoch."""
        return self.member_state == MEMBER_STABLE and self.member_epoch == assignment_epoch

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_protocols is not None


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """A CONSUMER_GROUP_REGULAR_EXPRESSION record: the topics a subscribed regex resolved to."""

    regular_expression: str
    topics: tuple[str, ...]
    version: int | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroup:
    """What a KIP-848 group holds beyond every group's fields, as Kafka's `ConsumerGroup`.

    Epochs start at 0, as Kafka's; a TARGET_ASSIGNMENT_METADATA tombstone sets the assignment
    epoch to -1. Members keep the order of their first record.
    """

    group_epoch: int = 0
    assignment_epoch: int = 0
    metadata_hash: int | None = None
    members: tuple[ConsumerMember, ...] = ()
    targets: tuple[tuple[str, TopicIdPartitions], ...] = ()  # target assignment per member id
    subscription_metadata: tuple[TopicMetadata, ...] = ()
    regexes: tuple[ResolvedRegex, ...] = ()

    def member(self, member_id: str | None) -> ConsumerMember | None:
        for m in self.members:
            if m.member_id == member_id:
                return m
        return None

    def target(self, member_id: str) -> TopicIdPartitions | None:
        for owner, partitions in self.targets:
            if owner == member_id:
                return partitions
        return None

    def topic_names(self) -> dict[str, str]:
        """Topic id -> name, as far as the subscription metadata says."""
        return {t.topic_id: t.topic_name for t in self.subscription_metadata}


@dataclass(frozen=True, slots=True)
class ShareMember:
    """A share-group member as Kafka's `ShareGroupMember` holds it: metadata from its
    SHARE_GROUP_MEMBER_METADATA record (type 10), epochs, state and partitions from its
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT record (type 14); defaults are Kafka's Builder's."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = -1
    member_state: int = MEMBER_STABLE
    assigned_partitions: TopicIdPartitions = ()
    joined_at: int = 0
    last_record: int = 0


@dataclass(frozen=True, slots=True)
class ShareStatePartitions:
    """A SHARE_GROUP_STATE_PARTITION_METADATA record (type 15): the share partitions whose
    state the share coordinator is initializing, has initialized, or is deleting."""

    initializing: ShareTopics = ()
    initialized: ShareTopics = ()
    deleting: TopicNames = ()


@dataclass(frozen=True, slots=True)
class ShareGroup:
    """What a share group (KIP-932) holds beyond every group's fields, as Kafka's `ShareGroup`.

    `state_partitions` is None until a type-15 record, and again after its tombstone (Kafka
    keeps it in a map beside the group, keyed by group id)."""

    group_epoch: int = 0
    assignment_epoch: int = 0
    metadata_hash: int | None = None
    members: tuple[ShareMember, ...] = ()
    targets: tuple[tuple[str, TopicIdPartitions], ...] = ()  # target assignment per member id
    state_partitions: ShareStatePartitions | None = None

    def member(self, member_id: str | None) -> ShareMember | None:
        return next((m for m in self.members if m.member_id == member_id), None)

    def target(self, member_id: str) -> TopicIdPartitions | None:
        return next((t for owner, t in self.targets if owner == member_id), None)

    def topic_names(self) -> dict[str, str]:
        """Topic id -> name, as far as the share state partitions say (4.1+ writes no other
        record with names: type 9 went with 4.0)."""
        sp = self.state_partitions
        if sp is None:
            return {}
        return {**{t: n for t, n in sp.deleting}, **{t: n for t, n, _ in sp.initializing},
                **{t: n for t, n, _ in sp.initialized}}


@dataclass(frozen=True, slots=True)
class StreamsTasks:
    """A streams member's active, standby and warm-up tasks (a target, or pending revocation)."""

    active: Tasks = ()
    standby: Tasks = ()
    warmup: Tasks = ()

    def __bool__(self) -> bool:
        return bool(self.active or self.standby or self.warmup)


@dataclass(frozen=True, slots=True)
class StreamsMember:
    """A streams-group member as Kafka's `StreamsGroupMember` holds it: metadata from its
    STREAMS_GROUP_MEMBER_METADATA record (type 19), epochs, state and tasks from its
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT record (type 22); defaults are Kafka's Builder's."""

    member_id: str
    group_instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = -1
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: KeyValues = ()
    member_epoch: int = 0
    previous_member_epoch: int = -1
    member_state: int = STREAMS_MEMBER_STABLE
    assigned: StreamsTasks = StreamsTasks()
    pending_revocation: StreamsTasks = StreamsTasks()
    joined_at: int = 0
    last_record: int = 0

    def reconciled_to(self, assignment_epoch: int) -> bool:
        """Kafka's `StreamsGroupMember.isReconciledTo`."""
        return self.member_state == STREAMS_MEMBER_STABLE and self.member_epoch == assignment_epoch


def read_topics(sub: Subtopology) -> tuple[str, ...]:
    """The topics a subtopology's tasks read: its source and repartition source topics."""
    return (*sub.source_topics, *(t.name for t in sub.repartition_source_topics))


@dataclass(frozen=True, slots=True)
class StreamsTopology:
    """A STREAMS_GROUP_TOPOLOGY record: the topology's epoch and subtopologies."""

    epoch: int
    subtopologies: tuple[Subtopology, ...] = ()

    def source_topics(self) -> frozenset[str]:
        """Kafka's `StreamsTopology.sourceTopicMap` keys: source and repartition source topics."""
        return frozenset(t for s in self.subtopologies for t in read_topics(s))

    def task_partitions(self, tasks: Tasks) -> tuple[tuple[str, int], ...]:
        """The topic partitions `tasks` (active ones) read, as the streams member's consumer
        is assigned them (Kafka's `StreamsMembershipManager.topicPartitionsForActiveTasks`):
        partition p of every source and repartition source topic of the task's
        subtopology, unchecked against the topics' partition counts; a subtopology the
        topology lacks reads nothing."""
        by_id = {s.subtopology_id: s for s in self.subtopologies}
        read: set[tuple[str, int]] = set()
        for task in tasks:
            sub = by_id.get(task.subtopology_id)
            if sub is not None:
                read |= {(topic, p) for topic in read_topics(sub) for p in task.partitions}
        return tuple(sorted(read))


@dataclass(frozen=True, slots=True)
class StreamsGroup:
    """What a streams group (KIP-1071) holds beyond every group's fields, as Kafka's
    `StreamsGroup`. Epochs start at 0, as Kafka's TimelineIntegers do, the validated
    topology epoch included; a STREAMS_GROUP_METADATA record sets it (-1: not validated)."""

    group_epoch: int = 0
    assignment_epoch: int = 0
    metadata_hash: int | None = None
    validated_topology_epoch: int = 0
    assignment_configs: KeyValues = ()
    members: tuple[StreamsMember, ...] = ()
    targets: tuple[tuple[str, StreamsTasks], ...] = ()  # target assignment per member id
    topology: StreamsTopology | None = None

    def member(self, member_id: str | None) -> StreamsMember | None:
        return next((m for m in self.members if m.member_id == member_id), None)

    def target(self, member_id: str) -> StreamsTasks | None:
        return next((t for owner, t in self.targets if owner == member_id), None)


@dataclass(frozen=True)
class Group:
    group_id: str
    exists: bool = False
    state: str = DEAD
    generation_id: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader_id: str | None = None
    members: tuple[Member, ...] = ()  # in the order Kafka's members HashMap had them put
    member_capacity: int = 16  # that HashMap's table size: grows with puts, never shrinks
    pending_members: tuple[PendingMember, ...] = ()
    pending_sync: frozenset[str] = frozenset()
    sync_deadline: int | None = None
    rebalance: Rebalance | None = None
    stable_owners: tuple[tuple[TopicPartition, str], ...] = ()  # assignment at the last Stable
    stable_members: tuple[str, ...] = ()
    state_since: int | None = None
    offsets: Mapping[TopicPartition, Offset] = field(default_factory=dict)
    pending_txns: Mapping[int, Mapping[TopicPartition, Offset]] = field(default_factory=dict)
    clock: int | None = None
    position: tuple[int, int] | None = None
    recent: tuple[tuple[int, int], ...] = ()  # last applied positions, for DUPLICATE
    seq: int = 0  # rows written at the current position so far
    journal: bool = False  # the group's log carries protocol requests, so timers apply
    last_event_time: int | None = None
    rebalance_count: int = 0
    rejected_count: int = 0
    duplicate_count: int = 0
    out_of_order_count: int = 0
    snapshot_mismatch_count: int = 0
    late_count: int = 0  # rows that arrived behind the stream's watermark (applied all the same)
    consumer: ConsumerGroup | None = None  # set: a KIP-848 consumer group
    share: ShareGroup | None = None  # set: a KIP-932 share group
    streams: StreamsGroup | None = None  # set: a KIP-1071 streams group
    # A group Kafka removed (Dead, not existing): the type it was removed as, which its rows
    # still show (`shown_type`); None while the group exists.
    removed_as: str | None = None

    def evolve(self, **changes: Any) -> Group:
        """A copy with `changes` (`evolved`): the fold's hottest call. Group keeps a
        `__dict__` (no slots) for this: one dict copy, not its ~30 fields set one by one."""
        return evolved(self, _GROUP_FIELDS, changes)

    def moved(self, positions: Sequence[tuple[int, int]], clock: int, last_event_time: int,
              keep: int, **changes: Any) -> Group:
        """The group after rows applied at `positions`, in log order: the last is its
        position, the ring of recent positions (what tells a DUPLICATE from an OUT_OF_ORDER
        row) keeps the last `keep`, the clock stands at `clock` (`tick`) and a new position
        restarts the row counter; with `changes`."""
        return self.evolve(position=positions[-1],
                           recent=(*self.recent, *positions[-keep:])[-keep:], seq=0,
                           clock=clock, last_event_time=last_event_time, **changes)

    @property
    def gone(self) -> bool:
        """Dead with nothing left, no offsets and no pending transactional ones: Kafka's
        coordinator has removed the group (a never-seen group, Dead too, is not gone). Its
        next record starts a new group, from nothing."""
        return (self.state == DEAD and self.state_since is not None and not self.offsets
                and not self.pending_txns)

    def member(self, member_id: str | None) -> Member | None:
        return next((m for m in self.members if m.member_id == member_id), None)

    def static_member(self, instance_id: str | None) -> Member | None:
        if instance_id is None:
            return None
        return next((m for m in self.members if m.group_instance_id == instance_id), None)

    def pending(self, member_id: str | None) -> PendingMember | None:
        return next((p for p in self.pending_members if p.member_id == member_id), None)

    def with_member(self, member: Member) -> Group:
        """Replace the member with the same id (a put on a present key keeps its place), or
        put it last, growing the members HashMap's capacity as Java would."""
        members = list(self.members)
        for i, m in enumerate(members):
            if m.member_id == member.member_id:
                members[i] = member
                return self.evolve(members=tuple(members))
        table = self._member_table()
        table.put(member.member_id, java_string_hash(member.member_id))
        return self.evolve(members=(*members, member), member_capacity=table.capacity)

    def with_members(self, members: Iterable[Member]) -> Group:
        """`with_member` for each of `members` in turn, with one HashMap for all of them."""
        by_id = {m.member_id: m for m in self.members}  # member ids are unique
        table = self._member_table()
        for member in members:
            if member.member_id not in by_id:
                table.put(member.member_id, java_string_hash(member.member_id))
            by_id[member.member_id] = member  # a present key keeps its place
        return self.evolve(members=tuple(by_id.values()), member_capacity=table.capacity)

    def hashmap_members(self) -> tuple[Member, ...]:
        """The members as Kafka's `ClassicGroup.members` (a java.util.HashMap keyed by member
        id) iterates them: what `remove` takes the next leader from, what
        `maybeElectNewJoinedLeader` and the protocol vote walk. Not join order."""
        by_id = {m.member_id: m for m in self.members}
        return tuple(by_id[i] for i in self._member_table().order())

    def first_member_id(self, joined_only: bool = False) -> str | None:
        """The first member in HashMap order (awaiting join, with `joined_only`), or None."""
        return next((m.member_id for m in self.hashmap_members()
                     if m.awaiting_join or not joined_only), None)

    def _member_table(self) -> JavaHashOrder[str]:
        return JavaHashOrder.holding((m.member_id for m in self.members), java_string_hash,
                                     self.member_capacity)

    def without_member(self, member_id: str) -> Group:
        return self.evolve(members=tuple(m for m in self.members if m.member_id != member_id),
            pending_sync=self.pending_sync - {member_id},
        )

    @property
    def group_type(self) -> str:
        if self.consumer is not None:
            return CONSUMER
        if self.share is not None:
            return SHARE
        return STREAMS if self.streams is not None else CLASSIC

    def removed(self, **changes: Any) -> Group:
        """The group as Kafka removes it (no longer existing), with `changes`: its rows still
        show the type it had until now (`removed_as`)."""
        return self.evolve(exists=False, removed_as=self.group_type, **changes)

    @property
    def shown_type(self) -> str:
        """The type the tables show: the group's, or, once Kafka has removed it, the type it
        was removed as (a deleted share group's last rows say share, not classic)."""
        return self.group_type if self.exists or self.removed_as is None else self.removed_as

    @property
    def modern(self) -> ConsumerGroup | ShareGroup | StreamsGroup | None:
        """The consumer, share or streams part, whichever is set; None for a classic group."""
        return self.consumer or self.share or self.streams

    @property
    def member_ids(self) -> tuple[str, ...]:
        part = self.modern
        members = part.members if part is not None else self.members
        return tuple(m.member_id for m in members)

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members), default=0)

    @property
    def subscribed_topics(self) -> frozenset[str] | None:
        """Topics the group consumes, or None when unknown (Kafka's `subscribedTopics`)."""
        if self.share is not None:
            return frozenset(t for m in self.share.members for t in m.subscribed_topic_names)
        if self.streams is not None:
            # Kafka's `StreamsGroup.isSubscribedToTopic`: nothing while Empty, so offsets expire.
            topology = self.streams.topology
            if self.state == EMPTY or topology is None:
                return frozenset()
            return topology.source_topics()
        if self.consumer is not None:
            c = self.consumer
            patterns = {m.subscribed_topic_regex for m in c.members}
            return frozenset(t for m in c.members for t in m.subscribed_topic_names) | frozenset(
                t for r in c.regexes if r.regular_expression in patterns for t in r.topics)
        if self.protocol_type != "consumer" or not self.members or self.protocol is None:
            return None
        protocol = self.protocol
        return frozenset().union(*(m.topics_for(protocol) for m in self.members))

    def owners(self) -> dict[TopicPartition, str]:
        """Partition -> owning member; a consumer group's partitions are keyed by topic id, a
        streams group's active tasks by subtopology id (a share group's partitions are shared:
        its members own none alone)."""
        if self.streams is not None:
            return {(t.subtopology_id, p): m.member_id for m in self.streams.members
                    for t in m.assigned.active for p in t.partitions}
        if self.share is not None:
            return {}
        if self.consumer is not None:
            return {(t, p): m.member_id for m in self.consumer.members
                    for t, ps in m.assigned_partitions for p in ps}
        return {tp: m.member_id for m in self.members for tp in m.assignment}


_GROUP_FIELDS = frozenset(f.name for f in fields(Group))
_MEMBER_FIELDS = frozenset(f.name for f in fields(Member))
