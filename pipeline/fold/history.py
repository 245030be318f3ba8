"""The group's shape over time: a `group_history` row each time what DescribeGroups would
show changes (state, generation, protocol, leader, members and their assignments, epochs).

A step (an event, or a timer firing) that changes the shape writes the shape after it, so
the group as of any event time T is its last history row at or before T. Heartbeats and
commits leave the shape alone and write nothing; a cheap identity check skips them.
"""

from __future__ import annotations

from pipeline.fold.context import Step
from pipeline.fold.model import Group
from pipeline.fold.rows import group_shape_row

_SCALARS = ("exists", "state", "generation_id", "protocol_type", "protocol", "leader_id",
            "state_since", "rebalance_count")


def record_shape(before: Group, after: Group, step: Step) -> Group:
    """Write `after`'s shape if the step changed it; returns `after`, its row counter (`seq`,
    shared with group_transitions) advanced past the row."""
    if (before.members is after.members and before.consumer is after.consumer
            and all(getattr(before, n) == getattr(after, n) for n in _SCALARS)):
        return after
    shape = group_shape_row(after, heartbeats=False)
    if group_shape_row(before, heartbeats=False) == shape and before.exists == after.exists:
        return after
    step.out.history.append(shape | {"event_time": step.now, "log_partition": step.log_partition,
                                     "log_offset": step.log_offset, "seq": after.seq})
    return after.evolve(seq=after.seq + 1)
