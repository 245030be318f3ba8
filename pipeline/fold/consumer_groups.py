"""KIP-848 consumer groups: one replay handler per record type (3-8, 16), value and tombstone
side by side, as Kafka's `GroupMetadataManager.replay` applies them, and the group state
derived after each record as `ConsumerGroup.maybeUpdateGroupState` derives it: no members
-> Empty; group epoch above the target assignment epoch -> Assigning; a member not STABLE at
the assignment epoch -> Reconciling; else Stable. Kafka keeps no transition table for these
states, so none is checked; every change is a group_transitions row whose cause is the
record's event type. Records are applied one at a time, as Kafka replays them, so a member
joining a new group (Kafka writes 5, 4, 3, then 7, 6, then 8) shows Empty -> Stable ->
Assigning -> Reconciling -> Stable. A rebalance (rebalances table) is what KIP-848 makes
one: it starts when a group epoch bump puts the group in Assigning (not the -1 target epoch
of a group being deleted) and completes when the
group is next Stable, every member reconciled to the new target (EMPTIED if it empties
first, ABANDONED if deleted); a member's records alone (a joining member's metadata at epoch
0, a leaving member's tombstones) move the state but start none. generation_id is the
group epoch.
Tombstones for things already gone are ignored; the invariants Kafka's loader enforces
(member removed only after its current-assignment and target tombstones, the group only
once members, targets and assignment epoch are gone) refuse the row as MALFORMED, as does a
KIP-848 record for a classic group that is not a simple offsets holder. These records hold
no heartbeats, so no timer ever expires a member: the requests that kept one alive are not
in the log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pipeline.fold import errors, modern
from pipeline.fold.context import Step
from pipeline.fold.errors import Refused
from pipeline.fold.events import Event, Protocol
from pipeline.fold.model import ConsumerGroup, ConsumerMember, Group, ResolvedRegex
from pipeline.fold.modern import LEAVE_GROUP_MEMBER_EPOCH
from pipeline.fold.states import ASSIGNING, EMPTY, RECONCILING, STABLE

Handler = Callable[[Group, Event, Step], Group]


def derive_state(c: ConsumerGroup) -> str:
    """Kafka's `ConsumerGroup.maybeUpdateGroupState`."""
    if not c.members:
        return EMPTY
    if c.group_epoch > c.assignment_epoch:
        return ASSIGNING
    if any(not m.reconciled_to(c.assignment_epoch) for m in c.members):
        return RECONCILING
    return STABLE


def _persisted(g: Group, e: Event, step: Step, create: bool) -> Group | None:
    """Kafka's `getOrMaybeCreatePersistedConsumerGroup`: the consumer group, created for a
    value record; None (ignore) for a tombstone with no consumer group to apply to."""
    return modern.persisted(g, e, step, create, "consumer", "consumer group (KIP-848)",
                            replaces_simple=True)


def _settle(g: Group, c: ConsumerGroup, e: Event, step: Step) -> Group:
    """Install `c` and derive the state; a change writes a transition and moves the rebalance."""
    return modern.settle(g, "consumer", c, derive_state(c), e, step, rebalances=True)


def delete(g: Group, step: Step, cause: str, detail: str | None) -> Group:
    """The consumer group goes Dead and is removed; its offsets outlive it in an Empty simple
    group, as after a GROUP_TOMBSTONE."""
    return modern.delete(g, step, cause, detail)


def _with_member(c: ConsumerGroup, m: ConsumerMember) -> ConsumerGroup:
    if c.member(m.member_id) is None:
        return replace(c, members=(*c.members, m))
    return replace(c, members=tuple(m if x.member_id == m.member_id else x for x in c.members))


def _member_or_new(c: ConsumerGroup, member_id: str, now: int) -> ConsumerMember:
    return c.member(member_id) or ConsumerMember(member_id, joined_at=now)


# ----------------------------------------------------------------- type 3: group epoch

def on_group_epoch(g: Group, e: Event, step: Step) -> Group:
    assert e.group_epoch is not None
    found = _persisted(g, e, step, create=True)
    assert found is not None and found.consumer is not None
    c = replace(found.consumer, group_epoch=e.group_epoch, metadata_hash=e.metadata_hash)
    return _settle(found, c, e, step)


def on_group_epoch_tombstone(g: Group, e: Event, step: Step) -> Group:
    found = _persisted(g, e, step, create=False)
    if found is None:
        return g
    c = found.consumer
    assert c is not None
    if c.members:
        raise Refused(errors.malformed(
            f"{e.event_type} while the group still has {len(c.members)} members"))
    if c.targets:
        raise Refused(errors.malformed(
            f"{e.event_type} while the target assignment still has {len(c.targets)} members"))
    if c.assignment_epoch != -1:
        raise Refused(errors.malformed(
            f"{e.event_type} before the CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA tombstone"))
    return delete(found, step, e.event_type or "", None)


# ----------------------------------------------------------------- type 4: subscription metadata

def on_partition_metadata(g: Group, e: Event, step: Step) -> Group:
    found = _persisted(g, e, step, create=True)
    assert found is not None and found.consumer is not None
    c = replace(found.consumer, subscription_metadata=e.topics_metadata or ())
    return _settle(found, c, e, step)


def on_partition_metadata_tombstone(g: Group, e: Event, step: Step) -> Group:
    found = _persisted(g, e, step, create=False)
    if found is None or found.consumer is None:
        return g
    return _settle(found, replace(found.consumer, subscription_metadata=()), e, step)


# ----------------------------------------------------------------- type 5: member metadata

def on_member_metadata(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None
    found = _persisted(g, e, step, create=True)
    assert found is not None and found.consumer is not None
    c = found.consumer
    classic = e.protocols is not None or e.classic_protocols is not None or (
        e.session_timeout_ms is not None)
    if e.protocols is not None:
        protocols: tuple[Protocol, ...] | None = e.protocols
    elif e.classic_protocols is not None:
        protocols = tuple(Protocol(name, ()) for name, _ in e.classic_protocols)
    else:
        protocols = () if classic else None
    member = replace(
        _member_or_new(c, e.member_id, step.now),
        group_instance_id=e.group_instance_id, rack_id=e.rack_id,
        client_id=e.client_id or "", client_host=e.client_host or "",
        subscribed_topic_names=e.subscribed_topic_names or (),
        subscribed_topic_regex=e.subscribed_topic_regex,
        rebalance_timeout_ms=e.rebalance_timeout_ms, server_assignor=e.server_assignor,
        classic_protocols=protocols, session_timeout_ms=e.session_timeout_ms,
        last_record=step.now,
    )
    return _settle(found, _with_member(c, member), e, step)


def _tombstoned_member(g: Group, e: Event, step: Step
                       ) -> tuple[Group, ConsumerGroup, ConsumerMember] | None:
    """The group, its consumer part and the member a member tombstone names; None (ignore,
    leniently) when there is no consumer group or the member is already gone."""
    found = _persisted(g, e, step, create=False)
    if found is None or found.consumer is None:
        return None
    member = found.consumer.member(e.member_id)
    return None if member is None else (found, found.consumer, member)


def on_member_metadata_tombstone(g: Group, e: Event, step: Step) -> Group:
    known = _tombstoned_member(g, e, step)
    if known is None:
        return g
    found, c, member = known
    if member.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
        raise Refused(errors.malformed(
            f"{e.event_type} for {e.member_id!r} before its "
            "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT tombstone"))
    if c.target(member.member_id) is not None:
        raise Refused(errors.malformed(
            f"{e.event_type} for {e.member_id!r} before its "
            "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER tombstone"))
    c = replace(c, members=tuple(m for m in c.members if m.member_id != member.member_id))
    return _settle(found, c, e, step)


# ----------------------------------------------------------------- type 6: target assignment epoch

def on_assignment_epoch(g: Group, e: Event, step: Step) -> Group:
    assert e.assignment_epoch is not None
    found = _persisted(g, e, step, create=True)
    assert found is not None and found.consumer is not None
    return _settle(found, replace(found.consumer, assignment_epoch=e.assignment_epoch), e, step)


def on_assignment_epoch_tombstone(g: Group, e: Event, step: Step) -> Group:
    found = _persisted(g, e, step, create=False)
    if found is None or found.consumer is None:
        return g
    if found.consumer.targets:
        raise Refused(errors.malformed(
            f"{e.event_type} while the target assignment still has "
            f"{len(found.consumer.targets)} members"))
    return _settle(found, replace(found.consumer, assignment_epoch=-1), e, step)


# ----------------------------------------------------------------- type 7: a member's target

def on_target_member(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None
    found = _persisted(g, e, step, create=True)
    assert found is not None and found.consumer is not None
    c = found.consumer
    target = e.assigned_partitions or ()
    if c.target(e.member_id) is None:
        targets = (*c.targets, (e.member_id, target))
    else:
        targets = tuple((m, target if m == e.member_id else t) for m, t in c.targets)
    return _settle(found, replace(c, targets=targets), e, step)


def on_target_member_tombstone(g: Group, e: Event, step: Step) -> Group:
    found = _persisted(g, e, step, create=False)
    if found is None or found.consumer is None:
        return g
    c = found.consumer
    targets = tuple((m, t) for m, t in c.targets if m != e.member_id)
    return _settle(found, replace(c, targets=targets), e, step)


# ----------------------------------------------------------------- type 8: current assignment

def on_current_assignment(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None and e.member_epoch is not None and e.member_state is not None
    found = _persisted(g, e, step, create=True)
    assert found is not None and found.consumer is not None
    c = found.consumer
    member = replace(
        _member_or_new(c, e.member_id, step.now),
        member_epoch=e.member_epoch,
        previous_member_epoch=(e.previous_member_epoch if e.previous_member_epoch is not None
                               else -1),
        member_state=e.member_state,
        assigned_partitions=e.assigned_partitions or (),
        partitions_pending_revocation=e.partitions_pending_revocation or (),
        last_record=step.now,
    )
    return _settle(found, _with_member(c, member), e, step)


def on_current_assignment_tombstone(g: Group, e: Event, step: Step) -> Group:
    known = _tombstoned_member(g, e, step)
    if known is None:
        return g
    found, c, member = known
    left = replace(member, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                   previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH, assigned_partitions=(),
                   partitions_pending_revocation=(), last_record=step.now)
    return _settle(found, _with_member(c, left), e, step)


# ----------------------------------------------------------------- type 16: resolved regex

def on_regular_expression(g: Group, e: Event, step: Step) -> Group:
    assert e.regular_expression is not None
    found = _persisted(g, e, step, create=True)
    assert found is not None and found.consumer is not None
    c = found.consumer
    resolved = ResolvedRegex(e.regular_expression, e.regex_topics or (), e.regex_version,
                             e.regex_timestamp_ms)
    others = tuple(r for r in c.regexes if r.regular_expression != e.regular_expression)
    return _settle(found, replace(c, regexes=(*others, resolved)), e, step)


def on_regular_expression_tombstone(g: Group, e: Event, step: Step) -> Group:
    found = _persisted(g, e, step, create=False)
    if found is None or found.consumer is None:
        return g
    c = found.consumer
    regexes = tuple(r for r in c.regexes if r.regular_expression != e.regular_expression)
    return _settle(found, replace(c, regexes=regexes), e, step)


# ----------------------------------------------------------------- commit requests

def validate_commit(g: Group, e: Event, transactional: bool) -> None:
    """Kafka's `ConsumerGroup.validateOffsetCommit`: a commit request's generation_id column
    carries the member epoch (the generation, from a classic-protocol member)."""
    c = g.consumer
    assert c is not None and e.generation_id is not None
    if not (e.generation_id < 0 and not c.members):
        member = c.member(e.member_id)
        if member is None:
            raise Refused(errors.UNKNOWN_MEMBER_ID)
        if (not transactional and not member.uses_classic_protocol
                and e.api_version is not None and e.api_version < 9):
            raise Refused(errors.UNSUPPORTED_VERSION)
        if e.generation_id != member.member_epoch:
            raise Refused(errors.ILLEGAL_GENERATION if member.uses_classic_protocol
                          else errors.STALE_MEMBER_EPOCH)


HANDLERS: dict[str, Handler] = {
    "CONSUMER_GROUP_METADATA": on_group_epoch,
    "CONSUMER_GROUP_METADATA_TOMBSTONE": on_group_epoch_tombstone,
    "CONSUMER_GROUP_PARTITION_METADATA": on_partition_metadata,
    "CONSUMER_GROUP_PARTITION_METADATA_TOMBSTONE": on_partition_metadata_tombstone,
    "CONSUMER_GROUP_MEMBER_METADATA": on_member_metadata,
    "CONSUMER_GROUP_MEMBER_METADATA_TOMBSTONE": on_member_metadata_tombstone,
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA": on_assignment_epoch,
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TOMBSTONE": on_assignment_epoch_tombstone,
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER": on_target_member,
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TOMBSTONE": on_target_member_tombstone,
    "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT": on_current_assignment,
    "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TOMBSTONE": on_current_assignment_tombstone,
    "CONSUMER_GROUP_REGULAR_EXPRESSION": on_regular_expression,
    "CONSUMER_GROUP_REGULAR_EXPRESSION_TOMBSTONE": on_regular_expression_tombstone,
}
