"""KIP-1071 streams groups: one replay handler per record type (17, 19-23), value and tombstone
side by side, as Kafka's `GroupMetadataManager.replay` applies them (those the three
record-backed types share, target assignments and the member and group tombstones, come from
`modern.handlers` for this type's `KIND`), and the state derived after each record by Kafka
4.2's `StreamsGroup.maybeUpdateGroupState`, in order: no members -> Empty; no topology, or a
topology whose epoch is not the validated topology epoch of the last STREAMS_GROUP_METADATA
record -> NotReady; group epoch above the target assignment epoch -> Assigning; a member not
STABLE at the assignment epoch -> Reconciling; else Stable. Rebalances are as for consumer
groups (`modern.settle`): one starts when a group epoch bump puts the group in Assigning and
completes when it is next Stable; NotReady holds it open. What its rebalances move are the
members' active tasks, counted in the rebalances table's `active_tasks_moved` and
`active_tasks_total` (its partition columns null). generation_id is the group epoch.

What a Kafka 4.1 log cannot tell: 4.1 wrote no validated topology epoch (the tag came in 4.2;
a record without it reads as -1) and took NotReady from the broker's metadata image (whether
the topology's source and internal topics exist), which is not in the log. Under 4.2's rule a
4.1 group with members therefore reads NotReady until a 4.2 coordinator writes a metadata
record with the epoch, as a 4.2 broker loading that log would show it; the Assigning,
Reconciling or Stable a 4.1 broker showed cannot be told from the records.

Tombstones for things already gone are ignored; the invariants Kafka's loader enforces
(member removed only at epoch -1 and without a target; the target epoch only once no target
is left; the group only once no member is left and the assignment epoch is -1) refuse the
row as MALFORMED, as does a record for a group id holding a group of another type, except a
simple classic group holding offsets, which a streams record replaces (Kafka 4.2.1+,
KAFKA-20254; an empty classic group converted by a streams heartbeat is one, once its
GROUP_TOMBSTONE is replayed). Committed offsets are ordinary OFFSET_COMMIT rows; a commit
request is checked as `StreamsGroup.validateOffsetCommit` does (`validate_commit`).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from pipeline.fold import errors, modern
from pipeline.fold.context import Step
from pipeline.fold.errors import Refused
from pipeline.fold.events import Event
from pipeline.fold.model import Group, StreamsGroup, StreamsMember, StreamsTasks, StreamsTopology
from pipeline.fold.modern import Handler
from pipeline.fold.states import EMPTY, NOT_READY


def derive_state(s: StreamsGroup) -> str:
    """Kafka 4.2's `StreamsGroup.maybeUpdateGroupState`."""
    if not s.members:
        return EMPTY
    if s.topology is None or s.topology.epoch != s.validated_topology_epoch:
        return NOT_READY
    return modern.assignment_state(s)


KIND: modern.Kind[StreamsGroup, StreamsMember] = modern.Kind(
    part="streams", records="STREAMS_GROUP", label="streams group (KIP-1071)",
    empty=StreamsGroup, new_member=StreamsMember, derive=derive_state, rebalances=True,
    replaces_simple=True)
# A member's assignment as its CURRENT_MEMBER_ASSIGNMENT tombstone leaves it (at epoch -1).
UNASSIGNED = {"assigned": StreamsTasks(), "pending_revocation": StreamsTasks()}


def _tasks(e: Event, pending: bool = False) -> StreamsTasks:
    suffix = "_pending_revocation" if pending else ""
    return StreamsTasks(getattr(e, f"active_tasks{suffix}") or (),
                        getattr(e, f"standby_tasks{suffix}") or (),
                        getattr(e, f"warmup_tasks{suffix}") or ())


# ----------------------------------------------------------------- type 17: group epoch

def epoch_fields(e: Event) -> dict[str, object]:
    """What a streams group's epoch record holds besides the epoch and metadata hash."""
    validated = e.validated_topology_epoch
    return {"validated_topology_epoch": -1 if validated is None else validated,
            "assignment_configs": e.assignment_configs or ()}


# ----------------------------------------------------------------- type 19: member metadata

def on_member_metadata(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None
    found, s = modern.created(g, e, step, KIND)
    member = replace(
        modern.member_or_new(KIND, s, e.member_id, step.now), group_instance_id=e.group_instance_id,
        rack_id=e.rack_id, client_id=e.client_id or "", client_host=e.client_host or "",
        rebalance_timeout_ms=(e.rebalance_timeout_ms if e.rebalance_timeout_ms is not None
                              else -1),
        topology_epoch=e.topology_epoch if e.topology_epoch is not None else -1,
        process_id=e.process_id or "", user_endpoint=e.user_endpoint,
        client_tags=e.client_tags or (), last_record=step.now)
    return modern.settle(found, KIND, modern.with_member(s, member), e, step)


# ----------------------------------------------------------------- type 22: current assignment

def assignment(e: Event) -> dict[str, object]:
    """A member's current tasks and those it still has to give up."""
    return {"assigned": _tasks(e), "pending_revocation": _tasks(e, True)}


# ----------------------------------------------------------------- type 23: topology

def topology(e: Event) -> StreamsTopology:
    assert e.topology_epoch is not None
    return StreamsTopology(e.topology_epoch, e.subtopologies or ())


# ----------------------------------------------------------------- commit requests

def validate_commit(g: Group, e: Event, transactional: bool) -> None:
    """Kafka's `StreamsGroup.validateOffsetCommit`: a commit request's generation_id column
    carries the member epoch."""
    s = g.streams
    assert s is not None and e.generation_id is not None
    epoch = e.generation_id
    if epoch < 0 and not s.members:
        return  # the admin client, or a client without group management, to an empty group
    if transactional and epoch == -1 and not e.member_id and e.group_instance_id is None:
        return  # TxnOffsetCommit need not name a member
    member = s.member(e.member_id)
    if member is None:
        raise Refused(errors.UNKNOWN_MEMBER_ID)
    if not transactional and e.api_version is not None and e.api_version < 9:
        raise Refused(errors.UNSUPPORTED_VERSION)
    if epoch != member.member_epoch:
        raise Refused(errors.STALE_MEMBER_EPOCH)


HANDLERS: dict[str, Handler] = {
    **modern.handlers(KIND, _tasks, assignment, UNASSIGNED, quote_epoch=True,
                       targets_first=False, epoch_fields=epoch_fields),
    "STREAMS_GROUP_MEMBER_METADATA": on_member_metadata,
    "STREAMS_GROUP_TOPOLOGY": partial(modern.on_group_record, kind=KIND, field="topology",
                                      value=topology),
    "STREAMS_GROUP_TOPOLOGY_TOMBSTONE": partial(
        modern.on_group_record_tombstone, kind=KIND, field="topology", cleared=None),
}
