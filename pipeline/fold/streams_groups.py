"""KIP-1071 streams groups: one replay handler per record type (17, 19-23), value and tombstone
side by side, as Kafka's `GroupMetadataManager.replay` applies them, and the state derived
after each record by Kafka 4.2's `StreamsGroup.maybeUpdateGroupState`, in order: no members
-> Empty; no topology, or a topology whose epoch is not the validated topology epoch of the
last STREAMS_GROUP_METADATA record -> NotReady; group epoch above the target assignment epoch
-> Assigning; a member not STABLE at the assignment epoch -> Reconciling; else Stable.
Rebalances are as for consumer groups (`modern.settle`): one starts when a group epoch bump
puts the group in Assigning and completes when it is next Stable; NotReady holds it open.
Its partitions, in the rebalances table, are the members' active tasks. generation_id is the
group epoch.

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

from collections.abc import Callable
from dataclasses import replace

from pipeline.fold import errors, modern
from pipeline.fold.context import Step
from pipeline.fold.errors import Refused
from pipeline.fold.events import Event
from pipeline.fold.model import Group, StreamsGroup, StreamsMember, StreamsTasks, StreamsTopology
from pipeline.fold.modern import LEAVE_GROUP_MEMBER_EPOCH
from pipeline.fold.states import ASSIGNING, EMPTY, NOT_READY, RECONCILING, STABLE

Handler = Callable[[Group, Event, Step], Group]


def derive_state(s: StreamsGroup) -> str:
    """Kafka 4.2's `StreamsGroup.maybeUpdateGroupState`."""
    if not s.members:
        return EMPTY
    if s.topology is None or s.topology.epoch != s.validated_topology_epoch:
        return NOT_READY
    if s.group_epoch > s.assignment_epoch:
        return ASSIGNING
    if any(not m.reconciled_to(s.assignment_epoch) for m in s.members):
        return RECONCILING
    return STABLE


def _persisted(g: Group, e: Event, step: Step, create: bool) -> Group | None:
    """Kafka's `getOrMaybeCreatePersistedStreamsGroup` (4.2.1+): the streams group, created for
    a value record; None (ignore) for a tombstone with no streams group to apply to."""
    return modern.persisted(g, e, step, create, "streams", "streams group (KIP-1071)",
                            replaces_simple=True)


def _created(g: Group, e: Event, step: Step) -> tuple[Group, StreamsGroup]:
    found = _persisted(g, e, step, create=True)
    assert found is not None and found.streams is not None
    return found, found.streams


def _existing(g: Group, e: Event, step: Step) -> tuple[Group, StreamsGroup] | None:
    found = _persisted(g, e, step, create=False)
    if found is None or found.streams is None:
        return None
    return found, found.streams


def _settle(g: Group, s: StreamsGroup, e: Event, step: Step) -> Group:
    return modern.settle(g, "streams", s, derive_state(s), e, step, rebalances=True)


def _with_member(s: StreamsGroup, m: StreamsMember) -> StreamsGroup:
    if s.member(m.member_id) is None:
        return replace(s, members=(*s.members, m))
    return replace(s, members=tuple(m if x.member_id == m.member_id else x for x in s.members))


def _member_or_new(s: StreamsGroup, member_id: str, now: int) -> StreamsMember:
    return s.member(member_id) or StreamsMember(member_id, joined_at=now)


def _tasks(e: Event, pending: bool = False) -> StreamsTasks:
    suffix = "_pending_revocation" if pending else ""
    return StreamsTasks(getattr(e, f"active_tasks{suffix}") or (),
                        getattr(e, f"standby_tasks{suffix}") or (),
                        getattr(e, f"warmup_tasks{suffix}") or ())


# ----------------------------------------------------------------- type 17: group epoch

def on_group_epoch(g: Group, e: Event, step: Step) -> Group:
    assert e.group_epoch is not None
    found, s = _created(g, e, step)
    validated = e.validated_topology_epoch
    s = replace(s, group_epoch=e.group_epoch, metadata_hash=e.metadata_hash,
                validated_topology_epoch=-1 if validated is None else validated,
                assignment_configs=e.assignment_configs or ())
    return _settle(found, s, e, step)


def on_group_epoch_tombstone(g: Group, e: Event, step: Step) -> Group:
    known = _existing(g, e, step)
    if known is None:
        return g
    found, s = known
    if s.members:
        raise Refused(errors.malformed(
            f"{e.event_type} while the group still has {len(s.members)} members"))
    if s.assignment_epoch != -1:
        raise Refused(errors.malformed(
            f"{e.event_type} before the STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA tombstone"))
    return modern.delete(found, step, e.event_type or "", None)


# ----------------------------------------------------------------- type 19: member metadata

def on_member_metadata(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None
    found, s = _created(g, e, step)
    member = replace(
        _member_or_new(s, e.member_id, step.now), group_instance_id=e.group_instance_id,
        rack_id=e.rack_id, client_id=e.client_id or "", client_host=e.client_host or "",
        rebalance_timeout_ms=(e.rebalance_timeout_ms if e.rebalance_timeout_ms is not None
                              else -1),
        topology_epoch=e.topology_epoch if e.topology_epoch is not None else -1,
        process_id=e.process_id or "", user_endpoint=e.user_endpoint,
        client_tags=e.client_tags or (), last_record=step.now)
    return _settle(found, _with_member(s, member), e, step)


def on_member_metadata_tombstone(g: Group, e: Event, step: Step) -> Group:
    known = _existing(g, e, step)
    member = None if known is None else known[1].member(e.member_id)
    if known is None or member is None:
        return g
    found, s = known
    if member.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
        raise Refused(errors.malformed(
            f"{e.event_type} for {e.member_id!r} before its "
            "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT tombstone (member epoch "
            f"{member.member_epoch}, not -1)"))
    if s.target(member.member_id) is not None:
        raise Refused(errors.malformed(
            f"{e.event_type} for {e.member_id!r} before its "
            "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER tombstone"))
    s = replace(s, members=tuple(m for m in s.members if m.member_id != member.member_id))
    return _settle(found, s, e, step)


# ----------------------------------------------------------------- type 20: target assignment epoch

def on_assignment_epoch(g: Group, e: Event, step: Step) -> Group:
    assert e.assignment_epoch is not None
    found, s = _created(g, e, step)
    return _settle(found, replace(s, assignment_epoch=e.assignment_epoch), e, step)


def on_assignment_epoch_tombstone(g: Group, e: Event, step: Step) -> Group:
    known = _existing(g, e, step)
    if known is None:
        return g
    found, s = known
    if s.targets:
        raise Refused(errors.malformed(
            f"{e.event_type} while the target assignment still has {len(s.targets)} members"))
    return _settle(found, replace(s, assignment_epoch=-1), e, step)


# ----------------------------------------------------------------- type 21: a member's target

def on_target_member(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None
    found, s = _created(g, e, step)
    target = _tasks(e)
    if s.target(e.member_id) is None:
        targets = (*s.targets, (e.member_id, target))
    else:
        targets = tuple((m, target if m == e.member_id else t) for m, t in s.targets)
    return _settle(found, replace(s, targets=targets), e, step)


def on_target_member_tombstone(g: Group, e: Event, step: Step) -> Group:
    known = _existing(g, e, step)
    if known is None:
        return g
    found, s = known
    return _settle(found, replace(s, targets=tuple(
        (m, t) for m, t in s.targets if m != e.member_id)), e, step)


# ----------------------------------------------------------------- type 22: current assignment

def on_current_assignment(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None and e.member_epoch is not None and e.member_state is not None
    found, s = _created(g, e, step)
    member = replace(
        _member_or_new(s, e.member_id, step.now), member_epoch=e.member_epoch,
        previous_member_epoch=(e.previous_member_epoch if e.previous_member_epoch is not None
                               else -1),
        member_state=e.member_state, assigned=_tasks(e), pending_revocation=_tasks(e, True),
        last_record=step.now)
    return _settle(found, _with_member(s, member), e, step)


def on_current_assignment_tombstone(g: Group, e: Event, step: Step) -> Group:
    known = _existing(g, e, step)
    member = None if known is None else known[1].member(e.member_id)
    if known is None or member is None:
        return g
    found, s = known
    left = replace(member, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                   previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH, assigned=StreamsTasks(),
                   pending_revocation=StreamsTasks(), last_record=step.now)
    return _settle(found, _with_member(s, left), e, step)


# ----------------------------------------------------------------- type 23: topology

def on_topology(g: Group, e: Event, step: Step) -> Group:
    assert e.topology_epoch is not None
    found, s = _created(g, e, step)
    topology = StreamsTopology(e.topology_epoch, e.subtopologies or ())
    return _settle(found, replace(s, topology=topology), e, step)


def on_topology_tombstone(g: Group, e: Event, step: Step) -> Group:
    known = _existing(g, e, step)
    if known is None:
        return g
    found, s = known
    return _settle(found, replace(s, topology=None), e, step)


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
    "STREAMS_GROUP_METADATA": on_group_epoch,
    "STREAMS_GROUP_METADATA_TOMBSTONE": on_group_epoch_tombstone,
    "STREAMS_GROUP_MEMBER_METADATA": on_member_metadata,
    "STREAMS_GROUP_MEMBER_METADATA_TOMBSTONE": on_member_metadata_tombstone,
    "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA": on_assignment_epoch,
    "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_TOMBSTONE": on_assignment_epoch_tombstone,
    "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER": on_target_member,
    "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_TOMBSTONE": on_target_member_tombstone,
    "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT": on_current_assignment,
    "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_TOMBSTONE": on_current_assignment_tombstone,
    "STREAMS_GROUP_TOPOLOGY": on_topology,
    "STREAMS_GROUP_TOPOLOGY_TOMBSTONE": on_topology_tombstone,
}
