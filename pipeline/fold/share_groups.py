"""KIP-932 share groups: one replay handler per record type (10-15), value and tombstone side
by side, as Kafka's `GroupMetadataManager.replay` applies them, and the state derived after
each record as `ShareGroup.maybeUpdateGroupState` derives it: no members -> Empty, else
Stable. Share groups have no Assigning or Reconciling state (a member whose epoch differs from
the target takes its target partitions at once), so they have no rebalances either: every
state change is a group_transitions row whose cause is the record's event type, and the
rebalances table has no rows for them. generation_id is the group epoch.

The share state partitions (type 15) are kept whole: each value replaces the previous one
(initializing, initialized and deleting topics), its tombstone removes them. Kafka keeps them
in a map beside the group keyed by group id, so they outlive a group removed without their
tombstone; here they go with the group (Kafka's own deletion writes their tombstone first).
Tombstones for things already gone are ignored; the invariants Kafka's loader enforces
(member removed only at epoch -1 and without a target; the target epoch only once no target
is left; the group only once members, targets and assignment epoch are gone) refuse the row
as MALFORMED, as does any record for a group id that holds a group of another type (Kafka has
no exception for share groups: a simple classic group holding offsets is refused too).
Share groups commit no offsets (`offsets.on_commit` refuses them, as
`ShareGroup.validateOffsetCommit` does, with GROUP_ID_NOT_FOUND), and no timer ever expires
or deletes one (`ShareGroup.shouldExpire` is false).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pipeline.fold import errors, modern
from pipeline.fold.context import Step
from pipeline.fold.errors import Refused
from pipeline.fold.events import Event
from pipeline.fold.model import Group, ShareGroup, ShareMember, ShareStatePartitions
from pipeline.fold.modern import LEAVE_GROUP_MEMBER_EPOCH
from pipeline.fold.states import EMPTY, STABLE

Handler = Callable[[Group, Event, Step], Group]


def derive_state(s: ShareGroup) -> str:
    """Kafka's `ShareGroup.maybeUpdateGroupState`."""
    return STABLE if s.members else EMPTY


def _persisted(g: Group, e: Event, step: Step, create: bool) -> Group | None:
    """Kafka's `getOrMaybeCreatePersistedShareGroup`: the share group, created for a value
    record; None (ignore) for a tombstone with no share group to apply to."""
    return modern.persisted(g, e, step, create, "share", "share group (KIP-932)",
                            replaces_simple=False)


def _created(g: Group, e: Event, step: Step) -> tuple[Group, ShareGroup]:
    found = _persisted(g, e, step, create=True)
    assert found is not None and found.share is not None
    return found, found.share


def _settle(g: Group, s: ShareGroup, e: Event, step: Step) -> Group:
    return modern.settle(g, "share", s, derive_state(s), e, step, rebalances=False)


def _with_member(s: ShareGroup, m: ShareMember) -> ShareGroup:
    if s.member(m.member_id) is None:
        return replace(s, members=(*s.members, m))
    return replace(s, members=tuple(m if x.member_id == m.member_id else x for x in s.members))


def _member_or_new(s: ShareGroup, member_id: str, now: int) -> ShareMember:
    return s.member(member_id) or ShareMember(member_id, joined_at=now)


def _tombstoned_member(g: Group, e: Event, step: Step
                       ) -> tuple[Group, ShareGroup, ShareMember] | None:
    """The group, its share part and the member a member tombstone names; None (ignore) when
    there is no share group or the member is already gone."""
    found = _persisted(g, e, step, create=False)
    if found is None or found.share is None:
        return None
    member = found.share.member(e.member_id)
    return None if member is None else (found, found.share, member)


# ----------------------------------------------------------------- type 11: group epoch

def on_group_epoch(g: Group, e: Event, step: Step) -> Group:
    assert e.group_epoch is not None
    found, s = _created(g, e, step)
    return _settle(found, replace(s, group_epoch=e.group_epoch, metadata_hash=e.metadata_hash),
                   e, step)


def on_group_epoch_tombstone(g: Group, e: Event, step: Step) -> Group:
    found = _persisted(g, e, step, create=False)
    if found is None or found.share is None:
        return g
    s = found.share
    if s.members:
        raise Refused(errors.malformed(
            f"{e.event_type} while the group still has {len(s.members)} members"))
    if s.targets:
        raise Refused(errors.malformed(
            f"{e.event_type} while the target assignment still has {len(s.targets)} members"))
    if s.assignment_epoch != -1:
        raise Refused(errors.malformed(
            f"{e.event_type} before the SHARE_GROUP_TARGET_ASSIGNMENT_METADATA tombstone"))
    return modern.delete(found, step, e.event_type or "", None)


# ----------------------------------------------------------------- type 10: member metadata

def on_member_metadata(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None
    found, s = _created(g, e, step)
    member = replace(_member_or_new(s, e.member_id, step.now), rack_id=e.rack_id,
                     client_id=e.client_id or "", client_host=e.client_host or "",
                     subscribed_topic_names=e.subscribed_topic_names or (),
                     last_record=step.now)
    return _settle(found, _with_member(s, member), e, step)


def on_member_metadata_tombstone(g: Group, e: Event, step: Step) -> Group:
    known = _tombstoned_member(g, e, step)
    if known is None:
        return g
    found, s, member = known
    if member.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
        raise Refused(errors.malformed(
            f"{e.event_type} for {e.member_id!r} before its "
            "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT tombstone (member epoch "
            f"{member.member_epoch}, not -1)"))
    if s.target(member.member_id) is not None:
        raise Refused(errors.malformed(
            f"{e.event_type} for {e.member_id!r} before its "
            "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER tombstone"))
    s = replace(s, members=tuple(m for m in s.members if m.member_id != member.member_id))
    return _settle(found, s, e, step)


# ----------------------------------------------------------------- type 12: target assignment epoch

def on_assignment_epoch(g: Group, e: Event, step: Step) -> Group:
    assert e.assignment_epoch is not None
    found, s = _created(g, e, step)
    return _settle(found, replace(s, assignment_epoch=e.assignment_epoch), e, step)


def on_assignment_epoch_tombstone(g: Group, e: Event, step: Step) -> Group:
    found = _persisted(g, e, step, create=False)
    if found is None or found.share is None:
        return g
    if found.share.targets:
        raise Refused(errors.malformed(
            f"{e.event_type} while the target assignment still has "
            f"{len(found.share.targets)} members"))
    return _settle(found, replace(found.share, assignment_epoch=-1), e, step)


# ----------------------------------------------------------------- type 13: a member's target

def on_target_member(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None
    found, s = _created(g, e, step)
    target = e.assigned_partitions or ()
    if s.target(e.member_id) is None:
        targets = (*s.targets, (e.member_id, target))
    else:
        targets = tuple((m, target if m == e.member_id else t) for m, t in s.targets)
    return _settle(found, replace(s, targets=targets), e, step)


def on_target_member_tombstone(g: Group, e: Event, step: Step) -> Group:
    found = _persisted(g, e, step, create=False)
    if found is None or found.share is None:
        return g
    s = found.share
    return _settle(found, replace(s, targets=tuple(
        (m, t) for m, t in s.targets if m != e.member_id)), e, step)


# ----------------------------------------------------------------- type 14: current assignment

def on_current_assignment(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None and e.member_epoch is not None and e.member_state is not None
    found, s = _created(g, e, step)
    member = replace(
        _member_or_new(s, e.member_id, step.now), member_epoch=e.member_epoch,
        previous_member_epoch=(e.previous_member_epoch if e.previous_member_epoch is not None
                               else -1),
        member_state=e.member_state, assigned_partitions=e.assigned_partitions or (),
        last_record=step.now)
    return _settle(found, _with_member(s, member), e, step)


def on_current_assignment_tombstone(g: Group, e: Event, step: Step) -> Group:
    known = _tombstoned_member(g, e, step)
    if known is None:
        return g
    found, s, member = known
    left = replace(member, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                   previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH, assigned_partitions=(),
                   last_record=step.now)
    return _settle(found, _with_member(s, left), e, step)


# ----------------------------------------------------------------- type 15: share state partitions

def on_state_partitions(g: Group, e: Event, step: Step) -> Group:
    found, s = _created(g, e, step)
    partitions = ShareStatePartitions(e.initializing_topics or (), e.initialized_topics or (),
                                      e.deleting_topics or ())
    return _settle(found, replace(s, state_partitions=partitions), e, step)


def on_state_partitions_tombstone(g: Group, e: Event, step: Step) -> Group:
    found = _persisted(g, e, step, create=False)
    if found is None or found.share is None:
        return g
    return _settle(found, replace(found.share, state_partitions=None), e, step)


HANDLERS: dict[str, Handler] = {
    "SHARE_GROUP_MEMBER_METADATA": on_member_metadata,
    "SHARE_GROUP_MEMBER_METADATA_TOMBSTONE": on_member_metadata_tombstone,
    "SHARE_GROUP_METADATA": on_group_epoch,
    "SHARE_GROUP_METADATA_TOMBSTONE": on_group_epoch_tombstone,
    "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA": on_assignment_epoch,
    "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_TOMBSTONE": on_assignment_epoch_tombstone,
    "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER": on_target_member,
    "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_TOMBSTONE": on_target_member_tombstone,
    "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT": on_current_assignment,
    "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_TOMBSTONE": on_current_assignment_tombstone,
    "SHARE_GROUP_STATE_PARTITION_METADATA": on_state_partitions,
    "SHARE_GROUP_STATE_PARTITION_METADATA_TOMBSTONE": on_state_partitions_tombstone,
}
