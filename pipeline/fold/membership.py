"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup of classic groups, checked in Kafka's order.

Each handler either raises `Refused` with Kafka's error name before building anything, or
returns the new group, as Kafka's `GroupMetadataManager.classicGroupJoin`, `classicGroupSync`,
`classicGroupHeartbeat` and `classicGroupLeave` do for a classic group.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from pipeline.fold import errors
from pipeline.fold.context import Step
from pipeline.fold.errors import Refused
from pipeline.fold.events import Event
from pipeline.fold.model import Group, Member, PendingMember
from pipeline.fold.rebalance import (
    COMPLETED,
    create_group,
    finish_rebalance,
    maybe_prepare_or_complete,
    prepare_rebalance,
    propagated,
    remove_member,
    select_protocol,
    transition,
    try_complete_join,
)
from pipeline.fold.states import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    Cause,
)

# Finds a member of the group by its member id, or by its group instance id (the first such
# member, as `ClassicGroup.staticMemberId`): the Group's own lookups, or the quiet path's dicts.
Lookup = Callable[[str | None], Member | None]


def validated_member(member_id: str | None, instance_id: str | None, by_id: Lookup,
                     by_instance: Lookup) -> Member | str:
    """Kafka's `ClassicGroup.validateMember`: the member a request comes from, or the error
    Kafka answers (FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID)."""
    if instance_id is not None:
        static = by_instance(instance_id)
        if static is None:
            return errors.UNKNOWN_MEMBER_ID
        if static.member_id != member_id:
            return errors.FENCED_INSTANCE_ID
        return static
    member = by_id(member_id)
    return errors.UNKNOWN_MEMBER_ID if member is None else member


def validated_generation(g: Group, member_id: str | None, instance_id: str | None,
                         generation: int | None, by_id: Lookup,
                         by_instance: Lookup) -> Member | str:
    """A SyncGroup's or Heartbeat's member (`validated_member`), in the group's generation
    (ILLEGAL_GENERATION), as Kafka's `validateSyncGroup` and `validateClassicGroupHeartbeat`
    begin; the member, or the error."""
    member = validated_member(member_id, instance_id, by_id, by_instance)
    if isinstance(member, str) or generation == g.generation_id:
        return member
    return errors.ILLEGAL_GENERATION


def validate_member(g: Group, member_id: str | None, instance_id: str | None) -> Member:
    """`validated_member` in the group as it stands; raises `Refused` where Kafka refuses."""
    member = validated_member(member_id, instance_id, g.member, g.static_member)
    if isinstance(member, str):
        raise Refused(member)
    return member


def on_join(g: Group, e: Event, step: Step) -> Group:
    cfg = step.config
    assert e.session_timeout_ms is not None and e.member_id is not None
    if not cfg.min_session_timeout_ms <= e.session_timeout_ms <= cfg.max_session_timeout_ms:
        raise Refused(errors.INVALID_SESSION_TIMEOUT)
    request_id = e.request_member_id
    if request_id is None:  # a journal without the column: a known id is a rejoin
        known = g.member(e.member_id) or g.pending(e.member_id)
        request_id = e.member_id if g.exists and known else ""
    if not g.exists:
        if request_id:
            raise Refused(errors.UNKNOWN_MEMBER_ID)
        g = create_group(g, step)
        step.snapshot_record(g)  # the new coordinator persists a brand-new group at once
    _check_capacity(g, request_id, cfg.max_size)
    if not _supports_protocols(g, e):
        raise Refused(errors.INCONSISTENT_GROUP_PROTOCOL)
    if request_id == "":
        return _join_new_member(g, e, step)
    return _join_existing_member(g, e, step, request_id)


def _check_capacity(g: Group, member_id: str, max_size: int) -> None:
    if g.state == EMPTY:
        return
    if g.state == PREPARING_REBALANCE:
        waiting = [m for m in g.members if m.awaiting_join]
        if any(m.member_id == member_id for m in waiting) or len(waiting) < max_size:
            return
    elif g.member(member_id) is not None or len(g.members) < max_size:
        return
    raise Refused(errors.GROUP_MAX_SIZE_REACHED)


def _supports_protocols(g: Group, e: Event) -> bool:
    protocols = e.protocols or ()
    if g.state == EMPTY:
        return bool(e.protocol_type) and bool(protocols)
    if e.protocol_type != g.protocol_type:
        return False
    support = Counter(name for m in g.members for name in set(m.protocol_names))
    return any(support[p.name] == len(g.members) for p in protocols)


def _new_member(e: Event, member_id: str, now: int) -> Member:
    assert e.session_timeout_ms is not None
    return Member(
        member_id=member_id,
        group_instance_id=e.group_instance_id,
        client_id=e.client_id,
        client_host=e.client_host,
        session_timeout_ms=e.session_timeout_ms,
        rebalance_timeout_ms=e.rebalance_timeout_ms or e.session_timeout_ms,
        protocols=e.protocols or (),
        joined_at=now,
        last_heartbeat=now,
        awaiting_join=True,
        is_new=True,
    )


def _join_new_member(g: Group, e: Event, step: Step) -> Group:
    member_id = e.member_id
    assert member_id is not None
    if g.member(member_id) is not None or g.pending(member_id) is not None:
        raise Refused(errors.malformed(f"member_id {member_id!r} is already in use"))
    if e.group_instance_id is not None:
        old = g.static_member(e.group_instance_id)
        if old is not None:
            return _replace_static_member(g, e, step, old)
    elif e.api_version is None or e.api_version >= 4:
        # KIP-394: the id is handed out with MEMBER_ID_REQUIRED; the member must come back.
        pending = PendingMember(member_id, step.now, e.session_timeout_ms or 0)
        step.answer(errors.MEMBER_ID_REQUIRED)
        return g.evolve(pending_members=(*g.pending_members, pending))
    return _add_member_and_rebalance(g, e, step, member_id)


def _add_member_and_rebalance(g: Group, e: Event, step: Step, member_id: str) -> Group:
    g = g.with_member(_new_member(e, member_id, step.now))
    if g.leader_id is None:
        g = g.evolve(leader_id=member_id)
    if g.protocol_type is None:
        g = g.evolve(protocol_type=e.protocol_type)
    if g.state == PREPARING_REBALANCE and g.rebalance is not None and g.rebalance.initial:
        g = g.evolve(rebalance=replace(g.rebalance, new_member_added=True))
    return maybe_prepare_or_complete(g, step, Cause.MEMBER_JOINED, member_id)


def _replace_static_member(g: Group, e: Event, step: Step, old: Member) -> Group:
    """A known instance id joins with a new member id: the old id is fenced (KIP-345)."""
    new_id = e.member_id
    assert new_id is not None and e.session_timeout_ms is not None
    member = replace(
        old, member_id=new_id, client_id=e.client_id, client_host=e.client_host,
        session_timeout_ms=e.session_timeout_ms,
        rebalance_timeout_ms=e.rebalance_timeout_ms or e.session_timeout_ms,
        protocols=e.protocols or (), last_heartbeat=step.now, awaiting_join=True,
        awaiting_sync=False,
    )
    # ClassicGroup.replaceStaticMember: members.remove(old id), then put(new id).
    g = g.evolve(members=tuple(m for m in g.members if m.member_id != old.member_id))
    g = g.with_member(member).evolve(
        leader_id=new_id if g.leader_id == old.member_id else g.leader_id,
        pending_sync=(g.pending_sync - {old.member_id}) | (
            {new_id} if old.member_id in g.pending_sync else set()),
    )
    if g.state == STABLE:
        if select_protocol(g) == g.protocol:
            g = g.with_member(member.evolve(awaiting_join=False))
            step.snapshot_record(g)  # same generation, the new member id persisted
            return g
        return prepare_rebalance(g, step, Cause.STATIC_MEMBER_REJOINED, new_id)
    if g.state == COMPLETING_REBALANCE:
        return prepare_rebalance(g, step, Cause.STATIC_MEMBER_REJOINED, new_id)
    return try_complete_join(g, step)


def _join_existing_member(g: Group, e: Event, step: Step, member_id: str) -> Group:
    if g.pending(member_id) is not None:
        g = g.evolve(pending_members=tuple(
            p for p in g.pending_members if p.member_id != member_id))
        return _add_member_and_rebalance(g, e, step, member_id)
    m = validate_member(g, member_id, e.group_instance_id)
    assert e.session_timeout_ms is not None
    changed = (e.protocols or ()) != m.protocols
    updated = replace(
        m, protocols=e.protocols or (), session_timeout_ms=e.session_timeout_ms,
        rebalance_timeout_ms=e.rebalance_timeout_ms or e.session_timeout_ms,
        client_id=e.client_id, client_host=e.client_host,
        last_heartbeat=step.now, awaiting_join=True,
    )
    if g.state == PREPARING_REBALANCE:
        return try_complete_join(g.with_member(updated), step)
    if g.state == COMPLETING_REBALANCE and changed:
        return prepare_rebalance(g.with_member(updated), step, Cause.METADATA_CHANGED, member_id)
    if g.state == STABLE and (g.leader_id == member_id or changed):
        cause = Cause.LEADER_REJOINED if g.leader_id == member_id else Cause.METADATA_CHANGED
        return prepare_rebalance(g.with_member(updated), step, cause, member_id)
    # Unchanged follower (or unchanged member while completing): the current generation.
    return g.with_member(m.heard(step.now))


def on_sync(g: Group, e: Event, step: Step) -> Group:
    m = _validate_generation(g, e)
    checks_protocol = e.api_version is None or e.api_version >= 5
    if checks_protocol and (
            (e.protocol_type is not None and e.protocol_type != g.protocol_type)
            or (e.protocol is not None and e.protocol != g.protocol)):
        raise Refused(errors.INCONSISTENT_GROUP_PROTOCOL)
    if g.state == PREPARING_REBALANCE:
        raise Refused(errors.REBALANCE_IN_PROGRESS)
    g = _synced(g, m, step.now)
    if g.state == STABLE or g.leader_id != m.member_id:
        if g.state == COMPLETING_REBALANCE:
            g = g.with_member((g.member(m.member_id) or m).evolve(awaiting_sync=True))
        return g
    given = dict(e.assignments or ())
    members = tuple(  # setAndPropagateAssignment
        propagated(x, step.now).evolve(assignment=tuple(sorted(given.get(x.member_id, ()))))
        for x in g.members
    )
    g = transition(g.evolve(members=members), step, STABLE, Cause.LEADER_SYNC, m.member_id)
    step.snapshot_record(g)
    return finish_rebalance(g, step, COMPLETED)


def _synced(g: Group, m: Member, now: int) -> Group:
    pending = g.pending_sync - {m.member_id}
    g = g.evolve(pending_sync=pending, sync_deadline=g.sync_deadline if pending else None)
    current = g.member(m.member_id) or m
    return g.with_member(current.heard(now))


def _validate_generation(g: Group, e: Event) -> Member:
    if not g.exists:
        raise Refused(errors.UNKNOWN_MEMBER_ID)
    m = validated_generation(g, e.member_id, e.group_instance_id, e.generation_id, g.member,
                             g.static_member)
    if isinstance(m, str):
        raise Refused(m)
    return m


def on_heartbeat(g: Group, e: Event, step: Step) -> Group:
    m = _validate_generation(g, e)
    if g.state == PREPARING_REBALANCE:
        # The answer is REBALANCE_IN_PROGRESS, yet the session is kept alive.
        step.answer(errors.REBALANCE_IN_PROGRESS)
    return g.with_member(m.heard(step.now))


def on_leave(g: Group, e: Event, step: Step) -> Group:
    if not g.exists:
        raise Refused(errors.UNKNOWN_MEMBER_ID)
    if not e.member_id:
        static = g.static_member(e.group_instance_id)
        if static is None:
            raise Refused(errors.UNKNOWN_MEMBER_ID)
        return remove_member(g, step, static.member_id, Cause.STATIC_MEMBER_REMOVED)
    if g.pending(e.member_id) is not None:
        g = g.evolve(pending_members=tuple(
            p for p in g.pending_members if p.member_id != e.member_id))
        return try_complete_join(g, step)
    m = validate_member(g, e.member_id, e.group_instance_id)
    return remove_member(g, step, m.member_id, Cause.MEMBER_LEFT)
