"""What Kafka's record-backed group types (consumer, share, streams) share on the replay path:
one type per group id (`persisted`, Kafka's `getOrMaybeCreatePersisted*Group`), installing a
type's part and deriving the state after every record (`settle`), and the group's end
(`delete`). The per-type handlers live in `consumer_groups`, `share_groups` and
`streams_groups`; each derives its own state, as each of Kafka's group classes does in its
`maybeUpdateGroupState`.
"""

from __future__ import annotations

from typing import Any

from pipeline.fold import errors
from pipeline.fold.context import Step
from pipeline.fold.errors import Refused
from pipeline.fold.events import Event
from pipeline.fold.model import CLASSIC, ConsumerGroup, Group, Rebalance, ShareGroup, StreamsGroup
from pipeline.fold.rebalance import ABANDONED, COMPLETED, EMPTIED, create_group, finish_rebalance
from pipeline.fold.states import ASSIGNING, DEAD, NOT_READY, RECONCILING, STABLE, Cause

LEAVE_GROUP_MEMBER_EPOCH = -1
_NO_PART = {"consumer": None, "share": None, "streams": None}
_EMPTY_PARTS: dict[str, type[Any]] = {
    "consumer": ConsumerGroup, "share": ShareGroup, "streams": StreamsGroup}


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


def persisted(g: Group, e: Event, step: Step, create: bool, part: str, label: str,
              replaces_simple: bool) -> Group | None:
    """Kafka's `getOrMaybeCreatePersisted<Type>Group` for the type whose part is `part`: the
    group, created (holding `part`'s empty value, named `label`) for a value record; None
    (ignore) for a tombstone with no such group. A group of another type is what Kafka's
    loader fails on (MALFORMED), except a simple classic group where `replaces_simple`."""
    if getattr(g, part) is not None:
        return g
    replaced = replaces_simple and simple(g)
    if g.exists and not replaced:
        upgrade = ("; an online upgrade writes the classic group's GROUP_TOMBSTONE first"
                   if g.group_type == CLASSIC else "")
        raise Refused(errors.malformed(
            f"{e.event_type} for {g.group_id!r}, {describe(g)}: Kafka's loader fails here"
            + upgrade))
    if not create:
        return None
    detail = label + ("; replaces the simple classic group that held its offsets"
                      if replaced else "")
    fresh = create_group(g, step, Cause.GROUP_CREATED, detail)
    return fresh.evolve(**{part: _EMPTY_PARTS[part]()}, protocol_type=part, generation_id=0)


def settle(g: Group, part: str, value: Any, state: str, e: Event, step: Step,
           rebalances: bool) -> Group:
    """Install `value` as the group's `part` and move to `state` (derived from it); a change
    writes a transition and, where the type has rebalances (`rebalances`), starts one when
    the group epoch passes the assignment epoch (Assigning; not the -1 target epoch of a group
    being deleted) and completes it when the group is next Stable (EMPTIED if it empties;
    a streams group's NotReady holds it open, as Reconciling does)."""
    g = g.evolve(**{part: value}, generation_id=value.group_epoch)
    if state == g.state:
        return g
    after = g.evolve(state=state, state_since=step.now)
    after = step.transition_row(g, after, e.event_type or "", e.member_id, None)
    if not rebalances:
        return after
    if state == ASSIGNING:
        if after.rebalance is None and value.assignment_epoch >= 0:
            cause = e.event_type or ""
            after = after.evolve(rebalance=Rebalance(step.now, cause, step.now))
        return after
    if state not in (RECONCILING, NOT_READY) and after.rebalance is not None:
        after = finish_rebalance(after, step, COMPLETED if state == STABLE else EMPTIED)
    return after


def delete(g: Group, step: Step, cause: str, detail: str | None) -> Group:
    """The group goes Dead and is removed (Kafka's `removeGroup`); its offsets outlive it in an
    Empty simple group, as after a GROUP_TOMBSTONE."""
    if g.rebalance is not None:
        g = finish_rebalance(g, step, ABANDONED)
    after = g.evolve(state=DEAD, state_since=step.now)
    g = step.transition_row(g, after, cause, None, detail)
    g = g.evolve(exists=False, protocol_type=None, protocol=None, leader_id=None, **_NO_PART)
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
    return g.evolve(exists=False, protocol_type=None, generation_id=0,
                    stable_owners=(), stable_members=(), **_NO_PART)


def removed_by_group_tombstone(g: Group, step: Step) -> Group:
    """A GROUP_TOMBSTONE for a consumer, share or streams group: Kafka's `removeGroup`
    removes a group of any type."""
    return delete(g, step, Cause.GROUP_TOMBSTONE, "GROUP_TOMBSTONE removes a group of any type")

