"""Offset commits (plain and transactional), transaction markers, offset tombstones and expiry.

A commit row with a generation is a request and is checked as Kafka's
`ClassicGroup.validateOffsetCommit` does (`validated_commit`); a commit row without one is a
record read from `__consumer_offsets`, already accepted by the coordinator that wrote it, and
is applied as it stands. A request to a KIP-848 consumer group or a streams group is checked
by member epoch instead (`consumer_groups`, `streams_groups`); a share group takes none.
Expiry follows KIP-211, as `OffsetMetadataManager.cleanupExpiredOffsets` does, on the
event-time clock; a consumer or streams group's offsets expire, from their commit, only for
topics it does not subscribe to (a streams group subscribes to none while Empty).
The quiet path (`runs.QuietRun`) applies most commits and markers without these handlers,
through the same rules: `validated_commit`, `metadata_too_large`, `from_request`, `settle`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace

from pipeline.fold import errors, streams_groups
from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.consumer_groups import validate_commit
from pipeline.fold.context import Step
from pipeline.fold.errors import Refused
from pipeline.fold.events import Event, TopicPartition
from pipeline.fold.membership import Lookup, validated_member
from pipeline.fold.model import Group, Member, Offset, OffsetValues
from pipeline.fold.rebalance import create_group, transition
from pipeline.fold.states import COMPLETING_REBALANCE, DEAD, EMPTY, STABLE, Cause

LogPosition = tuple[int, int]  # (log_partition, log_offset): where a record was written


def on_commit(g: Group, e: Event, step: Step) -> Group:
    assert e.topic is not None and e.partition is not None and e.committed_offset is not None
    transactional = e.producer_id is not None
    if g.share is not None:
        # `ShareGroup.validateOffsetCommit` throws GroupIdNotFoundException ("is not a consumer
        # group"), so Kafka never writes a share group's commit. Kafka's loader would store a
        # commit record all the same, where no request can read it (validateOffsetFetch throws
        # too); the fold refuses the record as the request is refused, to show it.
        raise Refused(errors.GROUP_ID_NOT_FOUND)
    if e.generation_id is not None and g.consumer is not None:
        validate_commit(g, e, transactional)
        _check_metadata_size(e, step.config)
    elif e.generation_id is not None and g.streams is not None:
        streams_groups.validate_commit(g, e, transactional)
        _check_metadata_size(e, step.config)
    elif e.generation_id is not None:
        g = _accept_request(g, e, step, transactional)
    elif not g.exists:
        g = create_group(g, step)
    offset = Offset(*from_request(
        e.committed_offset, e.leader_epoch, e.commit_metadata, e.commit_timestamp,
        e.expire_timestamp, e.member_id, e.generation_id,
        step.log_partition if step.log_partition is not None else -1,
        step.log_offset if step.log_offset is not None else -1, step.now))
    tp = (e.topic, e.partition)
    step.record("OFFSET_COMMIT", g.group_id, topic=e.topic, partition=e.partition,
                committed_offset=offset.committed_offset, leader_epoch=offset.leader_epoch,
                commit_metadata=offset.metadata, commit_timestamp=offset.commit_timestamp,
                expire_timestamp=offset.expire_timestamp, producer_id=e.producer_id)
    if transactional:
        assert e.producer_id is not None
        pending = dict(g.pending_txns.get(e.producer_id, {}))
        pending[tp] = offset
        return g.evolve(pending_txns={**g.pending_txns, e.producer_id: pending})
    step.offset_row(g, tp, offset, "COMMIT")
    return g.evolve(offsets={**g.offsets, tp: offset})


def _accept_request(g: Group, e: Event, step: Step, transactional: bool) -> Group:
    assert e.generation_id is not None
    if not g.exists:
        if e.generation_id >= 0 and not transactional:
            old_api = e.api_version is not None and e.api_version < 9
            raise Refused(errors.ILLEGAL_GENERATION if old_api else errors.GROUP_ID_NOT_FOUND)
        g = create_group(g, step)
    else:
        member = validated_commit(g, e.member_id, e.group_instance_id, e.generation_id,
                                  transactional, g.member, g.static_member)
        if isinstance(member, str):
            raise Refused(member)
        if member is not None:  # the old coordinator counts a commit as a heartbeat
            g = g.with_member(member.heard(step.now))
    _check_metadata_size(e, step.config)
    return g


def validated_commit(g: Group, member_id: str | None, instance_id: str | None,
                     generation: int, transactional: bool, by_id: Lookup,
                     by_instance: Lookup) -> Member | str | None:
    """Kafka's `ClassicGroup.validateOffsetCommit` for a commit request to a classic group
    that exists: the member it comes from, None for a commit taken without one, or the error.

    A negative generation to an Empty group is the admin client or a standalone consumer with
    manual assignment: no member to check. Otherwise a member id, an instance id or a
    generation names a member, who must be in the group's generation; a commit naming none
    is refused from a live group unless it is transactional. No commit but a transactional
    one is taken while the group waits for its leader's SyncGroup (REBALANCE_IN_PROGRESS).
    """
    if generation < 0 and g.state == EMPTY:
        return None
    member: Member | str | None = None
    if generation >= 0 or member_id or instance_id is not None:
        member = validated_member(member_id, instance_id, by_id, by_instance)
        if isinstance(member, str):
            return member
        if generation != g.generation_id:
            return errors.ILLEGAL_GENERATION
    elif not transactional:
        return errors.UNKNOWN_MEMBER_ID
    if not transactional and g.state == COMPLETING_REBALANCE:
        return errors.REBALANCE_IN_PROGRESS
    return member


def _check_metadata_size(e: Event, cfg: CoordinatorConfig) -> None:
    if metadata_too_large(e.commit_metadata, cfg):
        raise Refused(errors.OFFSET_METADATA_TOO_LARGE)


def metadata_too_large(metadata: str | None, cfg: CoordinatorConfig) -> bool:
    """`OffsetMetadataManager.isMetadataInvalid`: Java's `String.length()` against
    `offset.metadata.max.bytes`, so UTF-16 code units, not UTF-8 bytes, despite the name."""
    if metadata is None:
        return False
    limit = cfg.offset_metadata_max_bytes
    # n characters are n to 2n UTF-16 units: encode only when the length alone cannot tell.
    return len(metadata) > limit or (2 * len(metadata) > limit and java_length(metadata) > limit)


def from_request(committed_offset: int, leader_epoch: int | None, metadata: str | None,
                 commit_timestamp: int | None, expire_timestamp: int | None,
                 member_id: str | None, generation_id: int | None, log_partition: int,
                 log_offset: int, now: int) -> OffsetValues:
    """What a commit stores, in `Offset`'s field order, from the row's values: as Kafka's
    `OffsetAndMetadata.fromRequest` fills in a request, no metadata is "" and no commit
    timestamp is the coordinator's clock, `now`; an empty member id is none."""
    return (committed_offset, leader_epoch, "" if metadata is None else metadata,
            now if commit_timestamp is None else commit_timestamp, expire_timestamp,
            member_id or None, generation_id, log_partition, log_offset)


def java_length(s: str) -> int:
    """Java's `String.length()`: UTF-16 code units (a character outside the BMP counts 2)."""
    return len(s.encode("utf-16-le")) // 2


def on_txn_marker(g: Group, e: Event, step: Step) -> Group:
    assert e.producer_id is not None
    step.record("TXN_MARKER", g.group_id, producer_id=e.producer_id, txn_result=e.txn_result)
    pending = g.pending_txns.get(e.producer_id)
    if pending is None:
        return g  # nothing of this producer's is pending in this group
    txns = {pid: p for pid, p in g.pending_txns.items() if pid != e.producer_id}
    offsets = g.offsets
    put: dict[TopicPartition, Offset] = {}
    for tp, o, change in settle(pending, e.txn_result, lambda tp: _position(offsets.get(tp))):
        if change == "COMMIT":
            put[tp] = o
        step.offset_row(g, tp, o, change, e.producer_id)
    if e.txn_result == "ABORT":
        return g.evolve(pending_txns=txns)
    return g.evolve(pending_txns=txns, offsets={**offsets, **put})


def settle(pending: Mapping[TopicPartition, Offset], result: str | None,
           position_of: Callable[[TopicPartition], LogPosition | None],
           ) -> Iterator[tuple[TopicPartition, Offset, str]]:
    """What a transaction marker does with its producer's pending offsets, partition by
    partition in order, as `OffsetMetadataManager.replayEndTransactionMarker`: ABORT discards
    each (TXN_ABORTED); COMMIT puts each (COMMIT) only over an older record of its partition
    (`position_of`: where the partition's current offset was written, None if it has none),
    so a record the log wrote after the transaction's commit stays."""
    for tp, o in sorted(pending.items()):
        if result == "ABORT":
            yield tp, o, "TXN_ABORTED"
        else:
            current = position_of(tp)
            if current is None or current < (o.log_partition, o.log_offset):
                yield tp, o, "COMMIT"


def _position(o: Offset | None) -> LogPosition | None:
    return None if o is None else (o.log_partition, o.log_offset)


def on_offset_tombstone(g: Group, e: Event, step: Step) -> Group:
    assert e.topic is not None and e.partition is not None
    tp = (e.topic, e.partition)
    txns = {pid: {k: v for k, v in p.items() if k != tp} for pid, p in g.pending_txns.items()}
    g = g.evolve(pending_txns={pid: p for pid, p in txns.items() if p})
    current = g.offsets.get(tp)
    if current is None:
        return g  # lenient: already gone
    step.offset_row(g, tp, _at(current, step), "TOMBSTONE")
    return g.evolve(offsets={k: v for k, v in g.offsets.items() if k != tp})


def _at(o: Offset, step: Step) -> Offset:
    """The offset as a history row of a deletion: placed at the position that deleted it."""
    return replace(o, log_partition=step.log_partition if step.log_partition is not None else -1,
                   log_offset=step.log_offset if step.log_offset is not None else -1)


def sweep_time(t: int, cfg: CoordinatorConfig) -> int:
    """The first expiration sweep at or after `t`: sweeps run every check interval."""
    interval = cfg.offsets_retention_check_interval_ms
    return -(-t // interval) * interval


def expiry_deadline(g: Group, cfg: CoordinatorConfig, before: int | None = None) -> int | None:
    """When the next expiration sweep will remove something (an offset, or the group itself).

    With `before`, a time after which the answer does not matter (the caller only fires
    timers due before it), offsets are left out when none could be swept before it: the
    subscription, the costly part, is then never worked out (after every event, mostly)."""
    best = min((t for _, t in _thresholds(g, cfg, before)), default=None)
    if best is not None:
        best = sweep_time(best, cfg)
    if (g.exists and g.state == EMPTY and not g.offsets and not g.pending_txns
            and g.share is None):  # `ShareGroup.shouldExpire` is false
        death = sweep_time(g.state_since or 0, cfg)
        best = death if best is None else min(best, death)
    return best


def _thresholds(g: Group, cfg: CoordinatorConfig,
                before: int | None = None) -> Iterator[tuple[TopicPartition, int]]:
    """(offset, the time from which it may expire) for every offset that may, per KIP-211.

    As `OffsetMetadataManager.cleanupExpiredOffsets`: the group's expiration condition
    (none while rebalancing) and `isSubscribedToTopic` decide which offsets are eligible at
    all; only then does an explicit expire timestamp (old-style, value v1) replace the base
    plus retention (`OffsetExpirationConditionImpl.isOffsetExpired`).
    """
    if not g.offsets:
        return
    base = expiration_base(g)
    if base is None:
        return
    if before is not None and sweep_time(min(
            expires_at(o, base, cfg) for o in g.offsets.values()), cfg) >= before:
        return  # the earliest any offset could go, subscribed or not, is not before `before`
    subscribed = g.subscribed_topics or frozenset()
    pending = {tp for p in g.pending_txns.values() for tp in p}
    for tp, o in g.offsets.items():
        if tp in pending or tp[0] in subscribed:
            continue
        yield tp, expires_at(o, base, cfg)


def expires_at(o: Offset, base: Callable[[Offset], int], cfg: CoordinatorConfig) -> int:
    """When `o` may expire, per KIP-211: its explicit expire timestamp (old-style, value v1),
    else the group's expiration base plus the retention (`isOffsetExpired`)."""
    if o.expire_timestamp is not None:
        return o.expire_timestamp
    return base(o) + cfg.offsets_retention_ms


def expiration_base(g: Group) -> Callable[[Offset], int] | None:
    """The group's `offsetExpirationCondition`: from when an offset's retention counts, or
    None when nothing may expire (a rebalance under way, a non-consumer protocol while active).
    """
    if g.share is not None:
        return None  # `ShareGroup.offsetExpirationCondition`: none (it holds no offsets)
    if g.consumer is not None or g.streams is not None:
        return _committed_at  # `ConsumerGroup`, `StreamsGroup`: always, from the commit
    if not g.exists or g.protocol_type is None:
        return _committed_at  # a simple group
    if g.state == EMPTY:
        since = g.state_since
        return _committed_at if since is None else (lambda _: since)
    # `subscribed_topics is not None` for a classic consumer-protocol group, without building it.
    if g.protocol_type == "consumer" and g.state == STABLE and g.members and (
            g.protocol is not None):
        return _committed_at
    return None


def _committed_at(o: Offset) -> int:
    return o.commit_timestamp


def expire(g: Group, step: Step) -> Group:
    """One expiration sweep at `step.now`; an Empty group left with nothing dies."""
    cfg = step.config
    due: Mapping[TopicPartition, Offset] = {
        tp: g.offsets[tp] for tp, t in _thresholds(g, cfg) if sweep_time(t, cfg) <= step.now
    }
    for tp, o in sorted(due.items()):
        step.offset_row(g, tp, _at(o, step), "EXPIRED")
        step.record("OFFSET_TOMBSTONE", g.group_id, topic=tp[0], partition=tp[1])
    g = g.evolve(offsets={tp: o for tp, o in g.offsets.items() if tp not in due})
    if (g.exists and g.state == EMPTY and not g.offsets and not g.pending_txns
            and g.share is None):
        parts: dict[str, None] = {}
        if g.modern is not None:
            # An empty group's tombstones (`createGroupTombstoneRecords`); Kafka has no
            # transition table for these types, so the move to Dead is not checked.
            for record in _EMPTY_GROUP_TOMBSTONES[g.group_type]:
                step.record(record, g.group_id)
            after = g.evolve(state=DEAD, state_since=step.now)
            g = step.transition_row(g, after, Cause.OFFSETS_EXPIRED, None, None)
            parts = {"consumer": None, "streams": None, "protocol_type": None}
        else:
            g = transition(g, step, DEAD, Cause.OFFSETS_EXPIRED)
            step.record("GROUP_TOMBSTONE", g.group_id)
        g = g.removed(**parts)
    return g


_EMPTY_GROUP_TOMBSTONES = {
    "consumer": ("CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TOMBSTONE",
                 "CONSUMER_GROUP_PARTITION_METADATA_TOMBSTONE",
                 "CONSUMER_GROUP_METADATA_TOMBSTONE"),
    "streams": ("STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_TOMBSTONE",
                "STREAMS_GROUP_METADATA_TOMBSTONE", "STREAMS_GROUP_TOPOLOGY_TOMBSTONE"),
}
