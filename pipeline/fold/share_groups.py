"""KIP-932 share groups: one replay handler per record type (10-15), value and tombstone side by
side, as Kafka's `GroupMetadataManager.replay` applies them (those the three record-backed
types share, target assignments and the member and group tombstones, come from
`modern.handlers` for this type's `KIND`), and the state derived after each record as
`ShareGroup.maybeUpdateGroupState` derives it: no members -> Empty, else Stable. Share groups
have no Assigning or Reconciling state (a member whose epoch differs from the target takes its
target partitions at once), so they have no rebalances either: every state change is a
group_transitions row whose cause is the record's event type, and the rebalances table has no
rows for them. generation_id is the group epoch.

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

from dataclasses import replace
from functools import partial

from pipeline.fold import modern
from pipeline.fold.context import Step
from pipeline.fold.events import Event
from pipeline.fold.model import Group, ShareGroup, ShareMember, ShareStatePartitions
from pipeline.fold.modern import Handler
from pipeline.fold.states import EMPTY, STABLE


def derive_state(s: ShareGroup) -> str:
    """Kafka's `ShareGroup.maybeUpdateGroupState`."""
    return STABLE if s.members else EMPTY


KIND: modern.Kind[ShareGroup, ShareMember] = modern.Kind(
    part="share", records="SHARE_GROUP", label="share group (KIP-932)", empty=ShareGroup,
    new_member=ShareMember, derive=derive_state, rebalances=False, replaces_simple=False)
# A member's assignment as its CURRENT_MEMBER_ASSIGNMENT tombstone leaves it (at epoch -1).
UNASSIGNED = {"assigned_partitions": ()}


# ----------------------------------------------------------------- type 10: member metadata

def on_member_metadata(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None
    found, s = modern.created(g, e, step, KIND)
    member = replace(modern.member_or_new(KIND, s, e.member_id, step.now), rack_id=e.rack_id,
                     client_id=e.client_id or "", client_host=e.client_host or "",
                     subscribed_topic_names=e.subscribed_topic_names or (),
                     last_record=step.now)
    return modern.settle(found, KIND, modern.with_member(s, member), e, step)


# ----------------------------------------------------------------- type 14: current assignment

def assignment(e: Event) -> dict[str, object]:
    """A member's current partitions, as its CURRENT_MEMBER_ASSIGNMENT record holds them."""
    return {"assigned_partitions": e.assigned_partitions or ()}


# ----------------------------------------------------------------- type 15: share state partitions

def state_partitions(e: Event) -> ShareStatePartitions:
    return ShareStatePartitions(e.initializing_topics or (), e.initialized_topics or (),
                                e.deleting_topics or ())


HANDLERS: dict[str, Handler] = {
    **modern.handlers(KIND, modern.assigned_partitions, assignment, UNASSIGNED,
                       quote_epoch=True, targets_first=True),
    "SHARE_GROUP_MEMBER_METADATA": on_member_metadata,
    "SHARE_GROUP_STATE_PARTITION_METADATA": partial(
        modern.on_group_record, kind=KIND, field="state_partitions", value=state_partitions),
    "SHARE_GROUP_STATE_PARTITION_METADATA_TOMBSTONE": partial(
        modern.on_group_record_tombstone, kind=KIND, field="state_partitions", cleared=None),
}
