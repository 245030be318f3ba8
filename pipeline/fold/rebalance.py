"""The rebalance machinery shared by requests and timers: transitions, join-phase start and
completion, member removal, protocol selection, and the rebalances table's rows.

Mirrors `prepareRebalance`, `maybeCompleteJoinPhase`, `completeClassicGroupJoin` and
`removeMemberAndUpdateClassicGroup` of Kafka's GroupMetadataManager (classic groups).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from pipeline.fold.context import Step
from pipeline.fold.model import Group, Member, Rebalance, next_generation
from pipeline.fold.partitioning import java_hashmap_order
from pipeline.fold.states import (
    CAN_REBALANCE,
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    Cause,
    check_transition,
)

COMPLETED, EMPTIED, ABANDONED = "COMPLETED", "EMPTIED", "ABANDONED"
EAGER, COOPERATIVE, INCREMENTAL = "EAGER", "COOPERATIVE", "INCREMENTAL"
# Classic assignors whose clients revoke only what moves (`RebalanceProtocol.COOPERATIVE` in
# Kafka's clients: CooperativeStickyAssignor, and Kafka Streams' StreamsPartitionAssignor,
# protocol "stream", since 2.4); every other assignor is eager.
COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky", "stream"})


def transition(g: Group, step: Step, target: str, cause: str,
               member_id: str | None = None, detail: str | None = None) -> Group:
    check_transition(g.group_id, g.state, target)
    after = g.evolve(state=target, state_since=step.now)
    return step.transition_row(g, after, cause, member_id, detail)


def create_group(g: Group, step: Step, cause: str = Cause.GROUP_CREATED,
                 detail: str | None = None, **typed: Any) -> Group:
    """A new Empty group with generation 0; offsets that outlived a previous life are kept.
    `typed`: the new group's part of its type and its protocol type (`streams=StreamsGroup(),
    protocol_type="streams"`), so that its GROUP_CREATED row already says its type."""
    fresh = Group(
        group_id=g.group_id, exists=True, state=EMPTY, state_since=step.now,
        offsets=g.offsets, pending_txns=g.pending_txns, clock=g.clock, position=g.position,
        recent=g.recent, seq=g.seq, journal=g.journal, last_event_time=g.last_event_time,
        rebalance_count=g.rebalance_count, rejected_count=g.rejected_count,
        duplicate_count=g.duplicate_count, out_of_order_count=g.out_of_order_count,
        snapshot_mismatch_count=g.snapshot_mismatch_count, late_count=g.late_count, **typed,
    )
    return step.transition_row(g, fresh, cause, None, detail)


def prepare_rebalance(g: Group, step: Step, cause: str, member_id: str | None) -> Group:
    if g.state == COMPLETING_REBALANCE:
        # resetAndPropagateAssignmentWithError: every member loses its assignment, and those
        # parked in SyncGroup get REBALANCE_IN_PROGRESS and a fresh session.
        g = finish_rebalance(g, step, ABANDONED)
        g = g.evolve(members=tuple(
            propagated(m, step.now).evolve(assignment=()) for m in g.members))
    timeout = g.rebalance_timeout_ms
    if g.state == EMPTY:
        delay = step.config.initial_rebalance_delay_ms
        rebalance = Rebalance(step.now, cause, step.now + delay, True, delay,
                              max(timeout - delay, 0))
    else:
        rebalance = Rebalance(step.now, cause, step.now + timeout)
    g = g.evolve(rebalance=rebalance, pending_sync=frozenset(), sync_deadline=None)
    g = transition(g, step, PREPARING_REBALANCE, cause, member_id)
    return try_complete_join(g, step)


def propagated(m: Member, now: int) -> Member:
    """Kafka's `propagateAssignment` for one member: a member parked in SyncGroup is answered
    (assignment or error) and its heartbeat rescheduled (`rescheduleClassicGroupMemberHeartbeat`),
    so time spent waiting for a slow leader never counts against its session."""
    if not m.awaiting_sync:
        return m
    return m.evolve(awaiting_sync=False, last_heartbeat=now)


def maybe_prepare_or_complete(g: Group, step: Step, cause: str, member_id: str | None) -> Group:
    if g.state in CAN_REBALANCE:
        return prepare_rebalance(g, step, cause, member_id)
    return try_complete_join(g, step)


def try_complete_join(g: Group, step: Step, initial_waits: bool = True) -> Group:
    """Complete the join phase early once every member waits in JoinGroup and none is pending.

    `initial_waits`: Kafka's `maybeCompleteJoinPhase` (joins, leaves) never completes a
    rebalance that started from Empty early: the initial delay runs out. A timer's removal
    (`removeMemberAndUpdateClassicGroup`, `removePendingMemberAndUpdateClassicGroup`) checks
    only `hasAllMembersJoined`, so in Kafka 4.x it completes at once even then (the old Scala
    coordinator waited for the delay there too).
    """
    if g.state != PREPARING_REBALANCE or g.rebalance is None:
        return g
    if initial_waits and g.rebalance.initial:
        return g
    if g.pending_members or not all(m.awaiting_join for m in g.members):
        return g
    return complete_join(g, step, Cause.ALL_MEMBERS_JOINED)


def complete_join(g: Group, step: Step, cause: str) -> Group:
    # Dynamic members that did not rejoin are dropped; static members are kept.
    kept = tuple(m for m in g.members if m.awaiting_join or m.group_instance_id is not None)
    for m in g.members:
        if m not in kept:
            step.depart(m.member_id, cause)
    g = g.evolve(members=kept, pending_sync=frozenset())
    if g.member(g.leader_id) is None:
        g = g.evolve(leader_id=g.first_member_id())  # ClassicGroup.remove of the leader
    if not kept:
        g = g.evolve(generation_id=next_generation(g.generation_id), protocol=None, leader_id=None)
        g = transition(g, step, EMPTY, cause)
        step.snapshot_record(g)
        return finish_rebalance(g, step, EMPTIED)
    leader = g.member(g.leader_id)
    if leader is None or not leader.awaiting_join:
        # maybeElectNewJoinedLeader: the first member in HashMap order that rejoined.
        joined = g.first_member_id(joined_only=True)
        if joined is None:
            # Only static members that have not rejoined: wait another rebalance timeout.
            assert g.rebalance is not None
            later = replace(g.rebalance, join_deadline=step.now + g.rebalance_timeout_ms,
                            initial=False)
            return g.evolve(rebalance=later)
        g = g.evolve(leader_id=joined)
    members = tuple(
        m.evolve(awaiting_join=False, is_new=False, last_heartbeat=step.now) for m in kept)
    g = g.evolve(members=members, generation_id=next_generation(g.generation_id),
        pending_sync=frozenset(m.member_id for m in members),
        sync_deadline=step.now + g.rebalance_timeout_ms,
    )
    g = g.evolve(protocol=select_protocol(g))
    return transition(g, step, COMPLETING_REBALANCE, cause)


def remove_member(g: Group, step: Step, member_id: str, cause: str,
                  by_timer: bool = False) -> Group:
    """LeaveGroup's removal, or (`by_timer`) Kafka's `removeMemberAndUpdateClassicGroup`."""
    step.depart(member_id, cause)
    g = g.without_member(member_id)
    if g.leader_id == member_id:
        # ClassicGroup.remove: members.keySet().iterator().next(), HashMap order.
        g = g.evolve(leader_id=g.first_member_id())
    if g.state in (STABLE, COMPLETING_REBALANCE):
        return prepare_rebalance(g, step, cause, member_id)
    return try_complete_join(g, step, initial_waits=not by_timer)


def select_protocol(g: Group) -> str | None:
    """Kafka's `ClassicGroup.selectProtocol`: each member picks its first protocol every
    member supports; most votes wins.

    Members vote in their HashMap order; ties go to the first maximum in java.util.HashMap
    iteration order of the vote map, as `Stream.max` over Kafka's HashMap keeps the first it
    meets.
    """
    members = g.hashmap_members()
    if not members:
        return None
    common = set(members[0].protocol_names)
    for m in members[1:]:
        common &= set(m.protocol_names)
    votes = [next(p for p in m.protocol_names if p in common) for m in members if common]
    if not votes:
        return None
    counts = Counter(votes)
    best: str | None = None
    for name in java_hashmap_order(votes):
        if best is None or counts[name] > counts[best]:
            best = name
    return best


def finish_rebalance(g: Group, step: Step, outcome: str) -> Group:
    """Write the rebalances row for the rebalance under way and close it."""
    r = g.rebalance
    before = dict(g.stable_owners)
    before_members = set(g.stable_members)
    after = before if outcome == ABANDONED else (g.owners() if outcome == COMPLETED else {})
    after_members = set(g.member_ids)
    # the partitions whose owner changed (none when abandoned: `after` is `before`)
    changed = {tp for tp in before.keys() | after.keys() if before.get(tp) != after.get(tp)}
    moved = len(changed)
    # A streams group's members own active tasks, keyed (subtopology, partition): counted as
    # tasks, its partition columns null.
    tasks = g.streams is not None
    started = None if r is None else r.started_at
    step.out.rebalances.append({
        "group_id": g.group_id,
        "generation_id": g.generation_id,
        "started_at": started,
        "completed_at": step.now,
        "duration_ms": None if started is None else step.now - started,
        "cause": Cause.SNAPSHOT if r is None else r.cause,
        "protocol": g.protocol,
        "leader_id": g.leader_id,
        "member_count": len(after_members),
        "members_joined": len(after_members - before_members),
        "members_left": len(before_members - after_members),
        "partitions_moved": None if tasks else moved,
        "partitions_total": None if tasks else len(after),
        "outcome": outcome,
        "log_partition": step.log_partition,
        "log_offset": step.log_offset,
        "group_type": g.group_type,
        "active_tasks_moved": moved if tasks else None,
        "active_tasks_total": len(after) if tasks else None,
    })
    step.out.rebalance_cost.append(cost_row(g, step, before, after, changed, outcome, started,
                                            Cause.SNAPSHOT if r is None else r.cause))
    g = g.evolve(rebalance=None, rebalance_count=g.rebalance_count + 1)
    if outcome != ABANDONED:
        g = g.evolve(stable_owners=tuple(sorted(after.items())),
                    stable_members=tuple(sorted(after_members)))
    return g


def rebalance_protocol(g: Group) -> str:
    """EAGER, COOPERATIVE or INCREMENTAL: how the group's members give partitions up."""
    if g.modern is not None:
        return INCREMENTAL
    return COOPERATIVE if g.protocol in COOPERATIVE_ASSIGNORS else EAGER


def cost_row(g: Group, step: Step, before: dict[Any, str], after: dict[Any, str],
             moved: set[Any], outcome: str, started: int | None, cause: str) -> dict[str, Any]:
    """The rebalance_cost row of a rebalance that moved ownership from `before` to `after`
    (`moved`: the partitions whose owner changed).

    Eager: every member revokes all it owns when the rebalance starts and gets its new share
    at the sync, so every partition is unowned for the whole rebalance. Cooperative: a member
    keeps what it keeps, a partition that moves is revoked at the completion of the round that
    takes it away and handed out by the next, so the partitions unowned while a round runs are
    those it hands out that no member still in the group owned before it. Incremental
    (KIP-848): every partition that changes owner passes through none, between its revocation
    and its new owner's next heartbeat; counted for the whole reconciliation, an upper bound.
    """
    protocol = rebalance_protocol(g)
    staying = set(after.values())
    if protocol == EAGER:
        revoked, unowned = len(before), len(before.keys() | after.keys())
    elif protocol == COOPERATIVE:
        revoked = sum(1 for tp in moved if tp in before)
        unowned = sum(1 for tp in after if before.get(tp) not in staying)
    else:
        revoked = sum(1 for tp in moved if tp in before)
        unowned = sum(1 for tp in after if before.get(tp) != after[tp])
    duration = None if started is None else step.now - started
    return {
        "group_id": g.group_id, "generation_id": g.generation_id, "completed_at": step.now,
        "log_partition": step.log_partition, "log_offset": step.log_offset,
        "group_type": g.group_type, "rebalance_protocol": protocol, "cause": cause,
        "duration_ms": duration, "partitions_total": len(before.keys() | after.keys()),
        "partitions_revoked": revoked, "partitions_moved": len(moved),
        "partitions_unowned": unowned,
        "unowned_partition_ms": None if duration is None else unowned * duration,
        "outcome": outcome,
    }
