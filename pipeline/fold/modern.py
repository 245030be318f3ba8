"""What Kafka's record-backed group types (consumer, share, streams) share on the replay path,
each type described once by a `Kind`: one type per group id (`persisted`, Kafka's
`getOrMaybeCreatePersisted*Group`), installing a type's part and deriving the state after
every record (`settle`), the handlers of the records the three write alike (`handlers`: target
assignments and their epoch, and the member and group tombstones, with the invariants Kafka's
loader enforces on them stated once, their refusals naming the type's records), and the
group's end (`delete`). Each type's own records are handled in `consumer_groups`,
`share_groups` and `streams_groups`, and each derives its own state, as each of Kafka's group
classes does in its `maybeUpdateGroupState` (the consumer and streams rules end alike:
`assignment_state`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, replace
from functools import partial
from typing import Any, ClassVar, Generic, NoReturn, Protocol, TypeVar

from pipeline.fold import errors
from pipeline.fold.context import Step
from pipeline.fold.errors import Refused
from pipeline.fold.events import Event
from pipeline.fold.model import (
    CLASSIC,
    ConsumerGroup,
    ConsumerMember,
    Group,
    Rebalance,
    ShareMember,
    StreamsGroup,
    StreamsMember,
)
from pipeline.fold.rebalance import ABANDONED, COMPLETED, EMPTIED, create_group, finish_rebalance
from pipeline.fold.states import ASSIGNING, DEAD, NOT_READY, RECONCILING, STABLE, Cause

Handler = Callable[[Group, Event, Step], Group]
LEAVE_GROUP_MEMBER_EPOCH = -1
_NO_PART = {"consumer": None, "share": None, "streams": None}
ModernMember = ConsumerMember | ShareMember | StreamsMember


class _Part(Protocol):
    """What the shared rules read of a type's part (`ConsumerGroup`, `ShareGroup`,
    `StreamsGroup`); a dataclass, so that `replace` may rebuild it."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def group_epoch(self) -> int: ...

    @property
    def assignment_epoch(self) -> int: ...

    @property
    def members(self) -> tuple[ModernMember, ...]: ...

    @property
    def targets(self) -> tuple[tuple[str, object], ...]: ...

    def member(self, member_id: str | None) -> Any: ...

    def target(self, member_id: str) -> object: ...


P = TypeVar("P", bound=_Part)
M = TypeVar("M", bound=ModernMember)


@dataclass(frozen=True, slots=True)
class Kind(Generic[P, M]):
    """One record-backed group type as the shared replay code needs it: `part`, the `Group`
    field holding the type's part (and the group's protocol type); `records`, the prefix of
    its record names, as refusals quote them ("CONSUMER_GROUP"); `label`, the GROUP_CREATED
    transition's detail; `empty` and `new_member`, the part and member a first record creates;
    `derive`, its `maybeUpdateGroupState`; `rebalances`, whether its epochs make rebalances;
    `replaces_simple`, whether its records replace a simple classic group."""

    part: str
    records: str
    label: str
    empty: Callable[[], P]
    new_member: Callable[..., M]
    derive: Callable[[P], str]
    rebalances: bool
    replaces_simple: bool


def simple(g: Group) -> bool:
    """Kafka's `ClassicGroup.isSimpleGroup`: a classic group that only holds offsets (created
    by a commit, or left by a GROUP_TOMBSTONE: no protocol type, no members)."""
    return (g.exists and g.group_type == CLASSIC and g.protocol_type is None and not g.members
            and not g.pending_members)


def describe(g: Group) -> str:
    if g.group_type == CLASSIC:
        return (f"a classic group ({g.state}, protocol type {g.protocol_type!r}, "
                f"{len(g.members)} members)")
    return f"a {g.group_type} group ({g.state}, {len(g.member_ids)} members)"


def persisted(g: Group, e: Event, step: Step, create: bool, kind: Kind[Any, Any]
              ) -> Group | None:
    """Kafka's `getOrMaybeCreatePersisted<Type>Group` for `kind`: the group, created (holding
    an empty part, named by the kind's label) for a value record; None (ignore) for a
    tombstone with no such group. A group of another type is what Kafka's loader fails on
    (MALFORMED), except a simple classic group where the kind `replaces_simple`."""
    if getattr(g, kind.part) is not None:
        return g
    replaced = kind.replaces_simple and simple(g)
    if g.exists and not replaced:
        upgrade = ("; an online upgrade writes the classic group's GROUP_TOMBSTONE first"
                   if g.group_type == CLASSIC else "")
        raise Refused(errors.malformed(
            f"{e.event_type} for {g.group_id!r}, {describe(g)}: Kafka's loader fails here"
            + upgrade))
    if not create:
        return None
    detail = kind.label + ("; replaces the simple classic group that held its offsets"
                           if replaced else "")
    return create_group(g, step, Cause.GROUP_CREATED, detail,
                        **{kind.part: kind.empty()}, protocol_type=kind.part)


def created(g: Group, e: Event, step: Step, kind: Kind[P, M]) -> tuple[Group, P]:
    """The group a value record applies to and its part: created if there was none."""
    found = persisted(g, e, step, True, kind)
    assert found is not None
    part: P | None = getattr(found, kind.part)
    assert part is not None
    return found, part


def existing(g: Group, e: Event, step: Step, kind: Kind[P, M]) -> tuple[Group, P] | None:
    """The group a tombstone applies to and its part; None (ignore, leniently, as for every
    tombstone of something already gone) when there is no such group."""
    found = persisted(g, e, step, False, kind)
    if found is None:
        return None
    part: P | None = getattr(found, kind.part)
    return None if part is None else (found, part)


def tombstoned_member(g: Group, e: Event, step: Step, kind: Kind[P, M]
                      ) -> tuple[Group, P, M] | None:
    """The group, its part and the member a member tombstone names; None (ignore) when there
    is no such group or the member is already gone."""
    known = existing(g, e, step, kind)
    if known is None:
        return None
    found, part = known
    member: M | None = part.member(e.member_id)
    return None if member is None else (found, part, member)


def member_or_new(kind: Kind[P, M], part: P, member_id: str, now: int) -> M:
    """The member a record names, or the member Kafka creates for its first record."""
    found: M | None = part.member(member_id)
    return found or kind.new_member(member_id, joined_at=now)


def with_member(part: P, m: M) -> P:
    """`part` with `m` in place of the member of its id, or added last: members keep the
    order of their first record, as Kafka's."""
    if part.member(m.member_id) is None:
        return replace(part, members=(*part.members, m))
    return replace(part, members=tuple(
        m if x.member_id == m.member_id else x for x in part.members))


def with_target(part: P, member_id: str, target: object) -> P:
    """`part` with `target` as the member's target assignment, in place or added last."""
    if part.target(member_id) is None:
        return replace(part, targets=(*part.targets, (member_id, target)))
    return replace(part, targets=tuple(
        (m, target if m == member_id else t) for m, t in part.targets))


def assignment_state(part: ConsumerGroup | StreamsGroup) -> str:
    """The states a consumer and a streams group with members (and, for streams, a ready
    topology) derive alike from their epochs, as both of Kafka's `maybeUpdateGroupState` do:
    group epoch above the target assignment epoch -> Assigning; a member not reconciled to
    the assignment epoch -> Reconciling; else Stable."""
    if part.group_epoch > part.assignment_epoch:
        return ASSIGNING
    if any(not m.reconciled_to(part.assignment_epoch) for m in part.members):
        return RECONCILING
    return STABLE


def settle(g: Group, kind: Kind[P, M], value: P, e: Event, step: Step) -> Group:
    """Install `value` as the group's part and move to the state the kind derives from it; a
    change writes a transition and, where the kind has rebalances, starts one when the group
    epoch passes the assignment epoch (Assigning; not the -1 target epoch of a group being
    deleted) and completes it when the group is next Stable (EMPTIED if it empties; a streams
    group's NotReady holds it open, as Reconciling does)."""
    state = kind.derive(value)
    g = g.evolve(**{kind.part: value}, generation_id=value.group_epoch)
    if state == g.state:
        return g
    after = g.evolve(state=state, state_since=step.now)
    after = step.transition_row(g, after, e.event_type or "", e.member_id, None)
    if not kind.rebalances:
        return after
    if state == ASSIGNING:
        if after.rebalance is None and value.assignment_epoch >= 0:
            cause = e.event_type or ""
            after = after.evolve(rebalance=Rebalance(step.now, cause, step.now))
        return after
    if state not in (RECONCILING, NOT_READY) and after.rebalance is not None:
        after = finish_rebalance(after, step, COMPLETED if state == STABLE else EMPTIED)
    return after


# ----------------------------------------------------------------- records the three write alike

def _malformed(reason: str) -> NoReturn:
    """A tombstone Kafka's loader would fail on: the row is refused, the group unchanged."""
    raise Refused(errors.malformed(reason))


def _targets_left(e: Event, part: _Part) -> str:
    """Why a target epoch or group tombstone is refused while members' targets are left."""
    return f"{e.event_type} while the target assignment still has {len(part.targets)} members"


def on_member_metadata_tombstone(g: Group, e: Event, step: Step, kind: Kind[P, M],
                                 quote_epoch: bool) -> Group:
    """The member goes only once its CURRENT_MEMBER_ASSIGNMENT tombstone has left it at epoch
    -1 and its target's tombstone is replayed. `quote_epoch`: the refusal also names the
    member's epoch (the share and streams reasons; the consumer one does not)."""
    known = tombstoned_member(g, e, step, kind)
    if known is None:
        return g
    found, part, member = known
    if member.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
        epoch = f" (member epoch {member.member_epoch}, not -1)" if quote_epoch else ""
        _malformed(f"{e.event_type} for {e.member_id!r} before its "
                   f"{kind.records}_CURRENT_MEMBER_ASSIGNMENT tombstone{epoch}")
    if part.target(member.member_id) is not None:
        _malformed(f"{e.event_type} for {e.member_id!r} before its "
                   f"{kind.records}_TARGET_ASSIGNMENT_MEMBER tombstone")
    kept = tuple(m for m in part.members if m.member_id != member.member_id)
    return settle(found, kind, replace(part, members=kept), e, step)


def on_current_assignment_tombstone(g: Group, e: Event, step: Step, kind: Kind[P, M],
                                    unassigned: Mapping[str, Any]) -> Group:
    """The member stays, at epoch -1 (its previous epoch too) with nothing assigned (the
    member's fields `unassigned` names, at the values it gives), until its MEMBER_METADATA
    tombstone."""
    known = tombstoned_member(g, e, step, kind)
    if known is None:
        return g
    found, part, member = known
    left = replace(member, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                   previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH, last_record=step.now,
                   **unassigned)
    return settle(found, kind, with_member(part, left), e, step)


def on_group_epoch(g: Group, e: Event, step: Step, kind: Kind[P, M],
                   epoch_fields: Callable[[Event], Mapping[str, Any]]) -> Group:
    """The group's epoch record: its epoch, its metadata hash, and what `epoch_fields` reads
    of the record besides (the type's own)."""
    assert e.group_epoch is not None
    found, part = created(g, e, step, kind)
    part = replace(part, group_epoch=e.group_epoch, metadata_hash=e.metadata_hash,
                   **epoch_fields(e))
    return settle(found, kind, part, e, step)


def on_current_assignment(g: Group, e: Event, step: Step, kind: Kind[P, M],
                          assignment: Callable[[Event], Mapping[str, Any]]) -> Group:
    """A member's current assignment: its epochs and state, and what `assignment` reads of
    the record (the type's assigned and pending partitions or tasks)."""
    assert e.member_id is not None and e.member_epoch is not None and e.member_state is not None
    found, part = created(g, e, step, kind)
    previous = e.previous_member_epoch
    member = replace(member_or_new(kind, part, e.member_id, step.now),
                     member_epoch=e.member_epoch,
                     previous_member_epoch=-1 if previous is None else previous,
                     member_state=e.member_state, last_record=step.now, **assignment(e))
    return settle(found, kind, with_member(part, member), e, step)


def on_group_record(g: Group, e: Event, step: Step, kind: Kind[P, M], field: str,
                    value: Callable[[Event], object]) -> Group:
    """A record that sets one field of the group's part (`field`: what `value` reads of it),
    creating the group if need be."""
    found, part = created(g, e, step, kind)
    return settle(found, kind, replace(part, **{field: value(e)}), e, step)


def on_group_record_tombstone(g: Group, e: Event, step: Step, kind: Kind[P, M], field: str,
                              cleared: object) -> Group:
    """That record's tombstone: the field goes back to `cleared`, in a group that exists."""
    known = existing(g, e, step, kind)
    if known is None:
        return g
    found, part = known
    return settle(found, kind, replace(part, **{field: cleared}), e, step)


def on_target_member(g: Group, e: Event, step: Step, kind: Kind[P, M],
                     target: Callable[[Event], object]) -> Group:
    """A member's target assignment, as `target` reads it from the record."""
    assert e.member_id is not None
    found, part = created(g, e, step, kind)
    return settle(found, kind, with_target(part, e.member_id, target(e)), e, step)


def on_target_member_tombstone(g: Group, e: Event, step: Step, kind: Kind[P, M]) -> Group:
    """The member's target goes, whatever else is left."""
    known = existing(g, e, step, kind)
    if known is None:
        return g
    found, part = known
    targets = tuple((m, t) for m, t in part.targets if m != e.member_id)
    return settle(found, kind, replace(part, targets=targets), e, step)


def on_assignment_epoch(g: Group, e: Event, step: Step, kind: Kind[P, M]) -> Group:
    """The target assignment's epoch: members not at it are not reconciled yet."""
    assert e.assignment_epoch is not None
    found, part = created(g, e, step, kind)
    return settle(found, kind, replace(part, assignment_epoch=e.assignment_epoch), e, step)


def on_assignment_epoch_tombstone(g: Group, e: Event, step: Step, kind: Kind[P, M]) -> Group:
    """The target epoch goes to -1, only once no member's target is left."""
    known = existing(g, e, step, kind)
    if known is None:
        return g
    found, part = known
    if part.targets:
        _malformed(_targets_left(e, part))
    return settle(found, kind, replace(part, assignment_epoch=-1), e, step)


def on_group_epoch_tombstone(g: Group, e: Event, step: Step, kind: Kind[P, M],
                             targets_first: bool) -> Group:
    """The group is deleted only once no member is left, no target either where
    `targets_first` (the consumer and share rules; the streams rule asks for members and
    epoch only), and the target epoch tombstone is replayed."""
    known = existing(g, e, step, kind)
    if known is None:
        return g
    found, part = known
    if part.members:
        _malformed(f"{e.event_type} while the group still has {len(part.members)} members")
    if targets_first and part.targets:
        _malformed(_targets_left(e, part))
    if part.assignment_epoch != -1:
        _malformed(f"{e.event_type} before the {kind.records}_TARGET_ASSIGNMENT_METADATA "
                   "tombstone")
    return delete(found, step, e.event_type or "", None)


def assigned_partitions(e: Event) -> object:
    """A consumer or share member's target, as its TARGET_ASSIGNMENT_MEMBER record holds it."""
    return e.assigned_partitions or ()


def no_fields(e: Event) -> Mapping[str, Any]:
    return {}


def handlers(kind: Kind[P, M], target: Callable[[Event], object],
             assignment: Callable[[Event], Mapping[str, Any]], unassigned: Mapping[str, Any], *,
             quote_epoch: bool, targets_first: bool,
             epoch_fields: Callable[[Event], Mapping[str, Any]] = no_fields
             ) -> dict[str, Handler]:
    """The handlers of the records the three types write alike (the group epoch, a member's
    current and target assignment, the target's epoch, and the member and group tombstones),
    for `kind`'s record names; each type's module adds its own records'. The arguments are
    what tells the types apart here."""
    records = kind.records
    return {
        f"{records}_METADATA": partial(on_group_epoch, kind=kind, epoch_fields=epoch_fields),
        f"{records}_CURRENT_MEMBER_ASSIGNMENT": partial(on_current_assignment, kind=kind,
                                                        assignment=assignment),
        f"{records}_METADATA_TOMBSTONE": partial(
            on_group_epoch_tombstone, kind=kind, targets_first=targets_first),
        f"{records}_MEMBER_METADATA_TOMBSTONE": partial(
            on_member_metadata_tombstone, kind=kind, quote_epoch=quote_epoch),
        f"{records}_TARGET_ASSIGNMENT_METADATA": partial(on_assignment_epoch, kind=kind),
        f"{records}_TARGET_ASSIGNMENT_METADATA_TOMBSTONE": partial(
            on_assignment_epoch_tombstone, kind=kind),
        f"{records}_TARGET_ASSIGNMENT_MEMBER": partial(on_target_member, kind=kind,
                                                       target=target),
        f"{records}_TARGET_ASSIGNMENT_MEMBER_TOMBSTONE": partial(
            on_target_member_tombstone, kind=kind),
        f"{records}_CURRENT_MEMBER_ASSIGNMENT_TOMBSTONE": partial(
            on_current_assignment_tombstone, kind=kind, unassigned=unassigned),
    }


# ----------------------------------------------------------------- the group's end

def delete(g: Group, step: Step, cause: str, detail: str | None) -> Group:
    """The group goes Dead and is removed (Kafka's `removeGroup`); its offsets outlive it in an
    Empty simple group, as after a GROUP_TOMBSTONE."""
    if g.rebalance is not None:
        g = finish_rebalance(g, step, ABANDONED)
    after = g.evolve(state=DEAD, state_since=step.now)
    g = step.transition_row(g, after, cause, None, detail)
    g = g.removed(protocol_type=None, protocol=None, leader_id=None, **_NO_PART)
    if g.offsets or g.pending_txns:
        g = create_group(g, step, Cause.GROUP_CREATED, "offsets outlive the group tombstone")
    return g


def replaced_by_classic(g: Group, step: Step) -> Group:
    """A GROUP_METADATA value for a consumer, share or streams group: Kafka's replay puts the
    classic group in its place (`groups.put`; a migration writes the old group's tombstones
    first, so a live group here means those were compacted away or never written). The group
    ends Dead; the caller then applies the snapshot to the removed group."""
    kind = g.group_type
    if g.rebalance is not None:
        g = finish_rebalance(g, step, ABANDONED)
    after = g.evolve(state=DEAD, state_since=step.now)
    g = step.transition_row(g, after, Cause.GROUP_REPLACED,
                            None, f"GROUP_METADATA replaces the {kind} group with a classic one")
    return g.removed(protocol_type=None, generation_id=0, stable_owners=(), stable_members=(),
                     **_NO_PART)


def removed_by_group_tombstone(g: Group, step: Step) -> Group:
    """A GROUP_TOMBSTONE for a consumer, share or streams group: Kafka's `removeGroup`
    removes a group of any type."""
    return delete(g, step, Cause.GROUP_TOMBSTONE, "GROUP_TOMBSTONE removes a group of any type")

