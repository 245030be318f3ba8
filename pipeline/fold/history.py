"""The group's shape over time: a `group_history` row each time what DescribeGroups would
show changes (state, generation, protocol, leader, members and their assignments, epochs).

A step (an event, or a timer firing) that changes the shape writes the shape after it, so
the group as of any event time T is its last history row at or before T. Heartbeats and
commits leave the shape alone and write nothing; a cheap identity check skips them.
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.fold.context import Row, Step
from pipeline.fold.events import (
    endpoint_row,
    key_value_rows,
    member_identity,
    share_topic_rows,
    subtopology_row,
    task_rows,
    topic_id_rows,
    topic_name_rows,
    tp_rows,
)
from pipeline.fold.model import (
    ConsumerGroup,
    ConsumerMember,
    Group,
    Member,
    ShareGroup,
    ShareMember,
    StreamsGroup,
    StreamsMember,
    StreamsTasks,
)
from pipeline.fold.states import MEMBER_STATE_NAMES, STREAMS_MEMBER_STATE_NAMES
from schemas.tables import SHARE_STREAMS_GROUP, STATE_MEMBER_FIELDS

# Every field of a member struct null: each kind of member fills its own on top.
_MEMBER_NULLS: Row = dict.fromkeys(c.name for c in STATE_MEMBER_FIELDS)
_GROUP_NULLS: Row = dict.fromkeys(c.name for c in SHARE_STREAMS_GROUP)


def record_shape(before: Group, after: Group, step: Step) -> Group:
    """Write `after`'s shape if the step changed it; returns `after`, its row counter (`seq`,
    shared with group_transitions) advanced past the row."""
    if _same_shape(before, after):
        return after
    shape = group_shape_row(after, heartbeats=False)
    if before.modern is not None and group_shape_row(before, heartbeats=False) == shape:
        return after
    step.out.history.append(shape | {
        "event_time": step.now, "log_partition": step.log_partition,
        "log_offset": step.log_offset, "seq": after.seq,
        "departures": [{"member_id": m, "cause": why} for m, why in step.departures]})
    return after.evolve(seq=after.seq + 1)


def _same_shape(before: Group, after: Group) -> bool:
    """A cheap check that the shape did not move, run after every step: the scalars, then
    the classic members pair by pair, where a member the step did not touch is the same object
    (a heartbeat replaces one member, and only its last_heartbeat, which the shape omits)."""
    if not (before.consumer is after.consumer and before.share is after.share
            and before.streams is after.streams and before.state == after.state
            and before.generation_id == after.generation_id and before.exists == after.exists
            and before.leader_id == after.leader_id and before.protocol == after.protocol
            and before.protocol_type == after.protocol_type
            and before.state_since == after.state_since
            and before.rebalance_count == after.rebalance_count):
        return False
    if before.members is after.members:
        return True
    if len(before.members) != len(after.members):
        return False
    protocol = after.protocol
    return all(a is b or _member_shape(a, protocol) == _member_shape(b, protocol)
               for a, b in zip(before.members, after.members, strict=True))


def _member_shape(m: Member, protocol: str | None) -> tuple[object, ...]:
    return (m.member_id, m.group_instance_id, m.client_id, m.client_host,
            m.session_timeout_ms, m.rebalance_timeout_ms, m.topics_for(protocol),
            m.assignment, m.joined_at)


def group_shape_row(g: Group, heartbeats: bool) -> Row:
    """What DescribeGroups would show of the group (the group_history columns but time and
    position); without `heartbeats`, members' last_heartbeat is null."""
    c = g.modern
    return {
        "group_id": g.group_id,
        "state": g.state,
        "generation_id": g.generation_id,
        "protocol_type": g.protocol_type,
        "protocol": g.protocol,
        "leader_id": g.leader_id,
        "members": [
            {
                **_MEMBER_NULLS,
                **member_identity(m),
                "subscription": list(m.topics_for(g.protocol)),
                "assignment": tp_rows(m.assignment),
                "last_heartbeat": m.last_heartbeat if heartbeats else None,
                "joined_at": m.joined_at,
            }
            for m in g.members
        ] if c is None else _modern_member_rows(g, heartbeats),
        "member_count": len(g.member_ids),
        "state_since": g.state_since,
        "rebalance_count": g.rebalance_count,
        "group_type": g.shown_type,
        "group_epoch": None if c is None else c.group_epoch,
        "assignment_epoch": None if c is None else c.assignment_epoch,
        **_GROUP_NULLS,
        **(_share_group_columns(g.share) if g.share is not None else
           _streams_group_columns(g.streams) if g.streams is not None else {}),
    }


def _share_group_columns(s: ShareGroup) -> Row:
    sp = s.state_partitions
    return {"share_state_partitions": None if sp is None else {
        "initializing": share_topic_rows(sp.initializing),
        "initialized": share_topic_rows(sp.initialized),
        "deleting": topic_name_rows(sp.deleting)}}


def _streams_group_columns(s: StreamsGroup) -> Row:
    topology = s.topology
    return {
        "topology": None if topology is None else {
            "epoch": topology.epoch,
            "subtopologies": [subtopology_row(st) for st in topology.subtopologies]},
        "validated_topology_epoch": s.validated_topology_epoch,
        "assignment_configs": key_value_rows(s.assignment_configs),
    }


def _tasks_row(t: StreamsTasks | None) -> Row | None:
    if t is None:
        return None
    return {"active": task_rows(t.active), "standby": task_rows(t.standby),
            "warmup": task_rows(t.warmup)}


def _modern_member_rows(g: Group, heartbeats: bool) -> list[Row]:
    if g.consumer is not None:
        return [_consumer_member_row(g.consumer, m, heartbeats) for m in g.consumer.members]
    if g.share is not None:
        return [_share_member_row(g.share, m, heartbeats) for m in g.share.members]
    assert g.streams is not None
    return [_streams_member_row(g.streams, m, heartbeats) for m in g.streams.members]


def _modern_member(m: ShareMember | StreamsMember | ConsumerMember, heartbeats: bool,
                   state_names: Mapping[int, str]) -> Row:
    """The member fields the three modern types hold alike: the last record as the last
    heartbeat (where the log has requests), when it joined, its epochs, state and rack."""
    return {
        "last_heartbeat": m.last_record if heartbeats else None,
        "joined_at": m.joined_at,
        "member_epoch": m.member_epoch,
        "previous_member_epoch": m.previous_member_epoch,
        "member_state": state_names.get(m.member_state, "UNKNOWN"),
        "rack_id": m.rack_id,
    }


def _share_member_row(s: ShareGroup, m: ShareMember, heartbeats: bool) -> Row:
    """A share member as the STATE_MEMBER struct holds it: its assigned partitions by topic id,
    and by name where the share state partitions name the topic."""
    names = s.topic_names()
    return {
        **_MEMBER_NULLS,
        "member_id": m.member_id, "group_instance_id": None, "client_id": m.client_id,
        "client_host": m.client_host, "session_timeout_ms": None, "rebalance_timeout_ms": None,
        "subscription": list(m.subscribed_topic_names),
        "assignment": [{"topic": names[t], "partition": p}
                       for t, ps in m.assigned_partitions if t in names for p in ps],
        **_modern_member(m, heartbeats, MEMBER_STATE_NAMES),
        "assigned_partitions": topic_id_rows(m.assigned_partitions),
        "target_partitions": topic_id_rows(s.target(m.member_id)),
    }


def _streams_member_row(s: StreamsGroup, m: StreamsMember, heartbeats: bool) -> Row:
    """A streams member as the STATE_MEMBER struct holds it: its process, endpoint, client
    tags and topology epoch, and its tasks (current, pending revocation, target) by
    subtopology; as `assignment`, the topic partitions its active tasks read by the group's
    topology (none without one); the partition fields null."""
    read = () if s.topology is None else s.topology.task_partitions(m.assigned.active)
    return {
        **_MEMBER_NULLS,
        "member_id": m.member_id, "group_instance_id": m.group_instance_id,
        "client_id": m.client_id, "client_host": m.client_host, "session_timeout_ms": None,
        "rebalance_timeout_ms": m.rebalance_timeout_ms, "subscription": [],
        "assignment": [{"topic": topic, "partition": p} for topic, p in read],
        **_modern_member(m, heartbeats, STREAMS_MEMBER_STATE_NAMES),
        "process_id": m.process_id,
        "user_endpoint": endpoint_row(m.user_endpoint),
        "client_tags": key_value_rows(m.client_tags),
        "topology_epoch": m.topology_epoch,
        "assigned_tasks": _tasks_row(m.assigned),
        "tasks_pending_revocation": _tasks_row(m.pending_revocation),
        "target_tasks": _tasks_row(s.target(m.member_id)),
    }


def _consumer_member_row(c: ConsumerGroup, m: ConsumerMember, heartbeats: bool) -> Row:
    names = c.topic_names()
    return {
        **_MEMBER_NULLS,
        **member_identity(m),
        "subscription": list(m.subscribed_topic_names),
        "assignment": [{"topic": names[t], "partition": p}
                       for t, ps in m.assigned_partitions if t in names for p in ps],
        **_modern_member(m, heartbeats, MEMBER_STATE_NAMES),
        "server_assignor": m.server_assignor,
        "subscribed_topic_regex": m.subscribed_topic_regex,
        "assigned_partitions": topic_id_rows(m.assigned_partitions),
        "partitions_pending_revocation": topic_id_rows(m.partitions_pending_revocation),
        "target_partitions": topic_id_rows(c.target(m.member_id)),
    }
