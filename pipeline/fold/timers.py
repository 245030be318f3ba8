"""Event-time timers: what a group does by itself when time passes with no record for it.

Timers run only for groups whose log carries protocol requests (`Group.journal`, on from
its first request, `is_request`): in a log of bare `__consumer_offsets` records a silence
proves nothing (the requests that kept the group alive are not in it), and every consequence
the coordinator drew is already in the log as a record. A timer due at `t` fires before a
record whose time is after `t`; a record at exactly `t` comes first.
"""

from __future__ import annotations

from dataclasses import replace

from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.context import Step
from pipeline.fold.history import record_shape
from pipeline.fold.model import Group
from pipeline.fold.offsets import expire, expiry_deadline
from pipeline.fold.rebalance import (
    complete_join,
    prepare_rebalance,
    remove_member,
    try_complete_join,
)
from pipeline.fold.states import COMPLETING_REBALANCE, PREPARING_REBALANCE, STABLE, Cause

# Timers due at the same instant fire in this order.
PENDING, NEW_MEMBER, SESSION, JOIN, SYNC, EXPIRE = range(6)

Timer = tuple[int, int, str]  # (due, kind, member id or "")
PROTOCOL_REQUESTS = frozenset({"JOIN", "SYNC", "HEARTBEAT", "LEAVE"})


def is_request(event_type: str | None, generation_id: int | None) -> bool:
    """Whether a row is a client's request rather than a record the coordinator wrote: a
    protocol request, or an offset commit with a generation (a record carries none). From
    the first one the fold applies or refuses, the group's log is a journal (`Group.journal`)
    and its timers run; the quiet path leaves that first one to the general path."""
    return event_type in PROTOCOL_REQUESTS or (
        event_type == "OFFSET_COMMIT" and generation_id is not None)


def next_timer(g: Group, cfg: CoordinatorConfig, before: int | None = None) -> Timer | None:
    """The first timer due; with `before`, an expiry sweep due at or after it may be left
    out (the caller fires only timers due before it)."""
    if not g.journal:
        return None
    timers: list[Timer] = [
        (p.since + p.session_timeout_ms, PENDING, p.member_id) for p in g.pending_members
    ]
    for m in g.members:
        if m.awaiting_join:
            if m.is_new:
                timers.append((m.joined_at + cfg.new_member_join_timeout_ms, NEW_MEMBER,
                               m.member_id))
        elif not m.awaiting_sync:
            timers.append((m.last_heartbeat + m.session_timeout_ms, SESSION, m.member_id))
    if g.state == PREPARING_REBALANCE and g.rebalance is not None:
        timers.append((g.rebalance.join_deadline, JOIN, ""))
    if g.state in (COMPLETING_REBALANCE, STABLE) and g.pending_sync and g.sync_deadline:
        timers.append((g.sync_deadline, SYNC, ""))
    swept = expiry_deadline(g, cfg, before)
    if swept is not None:
        timers.append((swept, EXPIRE, ""))
    return min(timers) if timers else None


def next_deadline(g: Group, cfg: CoordinatorConfig) -> int | None:
    """When the group will next change by itself, or None if it never will."""
    timer = next_timer(g, cfg)
    return None if timer is None else timer[0]


def fire(g: Group, timer: Timer, step: Step) -> Group:
    _, kind, member_id = timer
    if kind == PENDING:  # removePendingMemberAndUpdateClassicGroup
        g = g.evolve(pending_members=tuple(
            p for p in g.pending_members if p.member_id != member_id))
        return try_complete_join(g, step, initial_waits=False)
    if kind == NEW_MEMBER:
        return remove_member(g, step, member_id, Cause.NEW_MEMBER_JOIN_TIMEOUT, by_timer=True)
    if kind == SESSION:
        return remove_member(g, step, member_id, Cause.SESSION_TIMEOUT, by_timer=True)
    if kind == JOIN:
        return _join_deadline(g, step)
    if kind == SYNC:
        return _pending_sync_expired(g, step)
    return expire(g, step)


def _join_deadline(g: Group, step: Step) -> Group:
    r = g.rebalance
    assert r is not None
    if r.initial and r.new_member_added and r.remaining_ms > 0:
        # Kafka's InitialDelayedJoin: members keep arriving, so wait a little longer.
        delay = min(step.config.initial_rebalance_delay_ms, r.remaining_ms)
        later = replace(r, join_deadline=step.now + delay, delay_ms=delay,
                        remaining_ms=max(r.remaining_ms - r.delay_ms, 0),
                        new_member_added=False)
        return g.evolve(rebalance=later)
    cause = Cause.INITIAL_DELAY_ELAPSED if r.initial else Cause.REBALANCE_TIMEOUT
    return complete_join(g, step, cause)


def _pending_sync_expired(g: Group, step: Step) -> Group:
    late = g.pending_sync
    for member_id in sorted(late):
        step.depart(member_id, Cause.PENDING_SYNC_TIMEOUT)
    g = g.evolve(members=tuple(m for m in g.members if m.member_id not in late),
                pending_sync=frozenset(), sync_deadline=None)
    if g.leader_id in late:
        g = g.evolve(leader_id=g.first_member_id())  # ClassicGroup.remove: HashMap order
    return prepare_rebalance(g, step, Cause.PENDING_SYNC_TIMEOUT, ",".join(sorted(late)))


def advance(g: Group, until: int, cfg: CoordinatorConfig, steps: list[Step],
            records: bool = False) -> Group:
    """Fire, in time order, every timer due strictly before `until`; each firing is one step,
    whose shape change, if any, goes to group_history."""
    for _ in range(100_000):
        timer = next_timer(g, cfg, until)
        if timer is None or timer[0] >= until:
            return g
        due = max(timer[0], g.clock if g.clock is not None else timer[0])
        step = Step(cfg, due, g.position, keep_records=records)
        before, g = g, fire(g, timer, step).evolve(clock=due)
        g = record_shape(before, g, step)
        steps.append(step)
    raise RuntimeError(f"group {g.group_id!r}: timers keep firing at {g.clock}; a fold bug")
