"""GROUP_METADATA snapshots and group tombstones: the records a real `__consumer_offsets` holds.

A snapshot is authoritative: it replaces the group (Stable with members, else Empty), as
Kafka's loader does. Where the group's own log carries protocol requests, the replayed state
should already equal the snapshot; any difference is counted and written as a transition
with cause SNAPSHOT_MISMATCH, never hidden. Where the log holds only records, snapshots are
the only view of membership, and a generation step between two of them is a rebalance the
log did not show: it is written as one, with no start time.
"""

from __future__ import annotations

from pipeline.fold.context import Step
from pipeline.fold.events import Event, Protocol
from pipeline.fold.model import Group, Member
from pipeline.fold.rebalance import ABANDONED, COMPLETED, EMPTIED, create_group, finish_rebalance
from pipeline.fold.rebalance import transition as checked_transition
from pipeline.fold.states import DEAD, EMPTY, STABLE, Cause


def on_group_metadata(g: Group, e: Event, step: Step) -> Group:
    assert e.generation_id is not None
    snap = _snapshot_group(g, e, step.now)
    if g.journal and g.exists:
        if _creation_record(snap) and g.generation_id == 0:
            return g  # the new coordinator's record of a brand-new group, not its state
        diff = differences(g, snap)
        if not diff:
            return g
        g = g.evolve(snapshot_mismatch_count=g.snapshot_mismatch_count + 1)
        return _replace(g, snap, step, Cause.SNAPSHOT_MISMATCH, "; ".join(diff))
    return _replace(g, snap, step, Cause.SNAPSHOT, None)


def _snapshot_group(g: Group, e: Event, now: int) -> Group:
    members = []
    for sm in e.members or ():
        old = g.member(sm.member_id)
        session = sm.session_timeout_ms or 0
        members.append(Member(
            member_id=sm.member_id,
            group_instance_id=sm.group_instance_id,
            client_id=sm.client_id,
            client_host=sm.client_host,
            session_timeout_ms=session,
            rebalance_timeout_ms=sm.rebalance_timeout_ms or session,
            protocols=(Protocol(e.protocol or "", sm.subscription),),
            assignment=tuple(sorted(sm.assignment)),
            joined_at=old.joined_at if old else now,
            last_heartbeat=old.last_heartbeat if old else now,
        ))
    snap = Group(
        group_id=g.group_id, exists=True, state=STABLE if members else EMPTY,
        generation_id=e.generation_id or 0,
        protocol_type=e.protocol_type or None,
        protocol=e.protocol, leader_id=e.leader_id,
        state_since=e.current_state_timestamp if e.current_state_timestamp is not None else now,
    )
    return snap.with_members(members)  # ClassicGroup.fromRecord puts them in the record's order


def _creation_record(snap: Group) -> bool:
    return snap.generation_id == 0 and not snap.members and snap.protocol_type is None


def differences(replayed: Group, snap: Group) -> list[str]:
    """What a snapshot says that the replayed group does not, field by field."""
    diff = []
    for name in ("state", "generation_id", "protocol_type", "protocol", "leader_id"):
        a, b = getattr(replayed, name), getattr(snap, name)
        if a != b:
            diff.append(f"{name}: replayed {a!r}, snapshot {b!r}")
    ours = {m.member_id: m.assignment for m in replayed.members}
    theirs = {m.member_id: m.assignment for m in snap.members}
    if ours.keys() != theirs.keys():
        diff.append(f"members: replayed {sorted(ours)}, snapshot {sorted(theirs)}")
    else:
        moved = sorted(k for k in ours if set(ours[k]) != set(theirs[k]))
        if moved:
            diff.append(f"assignment differs for {moved}")
    return diff


def _replace(g: Group, snap: Group, step: Step, cause: str, detail: str | None) -> Group:
    changed = (not g.exists or g.state != snap.state or g.generation_id != snap.generation_id
               or detail is not None)
    if g.rebalance is not None:
        # A rebalance the replay had under way ends the way the snapshot says.
        g = finish_rebalance(g.evolve(members=snap.members, generation_id=snap.generation_id,
                                     protocol=snap.protocol, leader_id=snap.leader_id),
                             step, COMPLETED if snap.members else EMPTIED)
    elif g.exists and not g.journal and snap.generation_id > g.generation_id:
        g = finish_rebalance(g.evolve(members=snap.members, generation_id=snap.generation_id,
                                     protocol=snap.protocol, leader_id=snap.leader_id),
                             step, COMPLETED if snap.members else EMPTIED)
    after = g.evolve(exists=True, removed_as=None, state=snap.state,
        generation_id=snap.generation_id,
        protocol_type=snap.protocol_type, protocol=snap.protocol, leader_id=snap.leader_id,
        members=snap.members, pending_members=(), pending_sync=frozenset(), sync_deadline=None,
        # A coordinator's own group keeps its HashMap; a group known from records is loaded.
        member_capacity=max(g.member_capacity, snap.member_capacity) if g.journal and g.exists
        else snap.member_capacity,
        rebalance=None, state_since=snap.state_since,
    )
    if snap.members:
        after = after.evolve(stable_owners=tuple(sorted(after.owners().items())),
                        stable_members=tuple(sorted(m.member_id for m in snap.members)))
    if not changed:
        return after
    return step.transition_row(g, after, cause, None, detail)


def on_group_tombstone(g: Group, e: Event, step: Step) -> Group:
    if not g.exists:
        return g  # lenient: the group is already gone
    if g.rebalance is not None:
        g = finish_rebalance(g, step, ABANDONED)
    g = checked_transition(g, step, DEAD, Cause.GROUP_TOMBSTONE)
    g = g.removed(members=(), pending_members=(), pending_sync=frozenset(),
                  sync_deadline=None, leader_id=None, protocol=None)
    if g.offsets or g.pending_txns:
        # Offsets are separate keys and outlive the group: Kafka's loader keeps an Empty
        # group holding them.
        g = create_group(g, step, Cause.GROUP_CREATED, "offsets outlive the group tombstone")
    return g
