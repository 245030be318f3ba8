"""The group's shape over time: a `group_history` row each time what DescribeGroups would
show changes (state, generation, protocol, leader, members and their assignments, epochs).

A step (an event, or a timer firing) that changes the shape writes the shape after it, so
the group as of any event time T is its last history row at or before T. Heartbeats and
commits leave the shape alone and write nothing; a cheap identity check skips them.
"""

from __future__ import annotations

from pipeline.fold.context import Step
from pipeline.fold.model import Group, Member
from pipeline.fold.rows import group_shape_row

_SCALARS = ("exists", "state", "generation_id", "protocol_type", "protocol", "leader_id",
            "state_since", "rebalance_count")


def record_shape(before: Group, after: Group, step: Step) -> Group:
    """Write `after`'s shape if the step changed it; returns `after`, its row counter (`seq`,
    shared with group_transitions) advanced past the row."""
    if all(getattr(before, n) == getattr(after, n) for n in _SCALARS) and (
            before.consumer is after.consumer
            and (before.members is after.members
                 or _classic_members(before) == _classic_members(after))):
        return after
    shape = group_shape_row(after, heartbeats=False)
    if before.consumer is not None and group_shape_row(before, heartbeats=False) == shape:
        return after
    step.out.history.append(shape | {
        "event_time": step.now, "log_partition": step.log_partition,
        "log_offset": step.log_offset, "seq": after.seq,
        "departures": [{"member_id": m, "cause": why} for m, why in step.departures]})
    return after.evolve(seq=after.seq + 1)


def _classic_members(g: Group) -> list[tuple[object, ...]]:
    """What the shape row shows of each classic member (a heartbeat changes none of it)."""
    return [_member_shape(m, g.protocol) for m in g.members]


def _member_shape(m: Member, protocol: str | None) -> tuple[object, ...]:
    return (m.member_id, m.group_instance_id, m.client_id, m.client_host,
            m.session_timeout_ms, m.rebalance_timeout_ms, m.topics_for(protocol),
            m.assignment, m.joined_at)
