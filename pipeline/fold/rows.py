"""A group's current rows: its `group_state` row and its `committed_offsets` rows."""

from __future__ import annotations

from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.context import Row, offset_columns
from pipeline.fold.events import topic_id_rows
from pipeline.fold.model import ConsumerGroup, ConsumerMember, Group
from pipeline.fold.states import MEMBER_STATE_NAMES
from pipeline.fold.timers import next_deadline

_KIP848_MEMBER_FIELDS = dict.fromkeys((
    "member_epoch", "previous_member_epoch", "member_state", "rack_id", "server_assignor",
    "subscribed_topic_regex", "assigned_partitions", "partitions_pending_revocation",
    "target_partitions",
))


def group_state_row(g: Group, cfg: CoordinatorConfig) -> Row:
    return {
        **group_shape_row(g, heartbeats=True),
        "last_event_time": g.last_event_time,
        "last_log_offset": None if g.position is None else g.position[1],
        "log_partition": None if g.position is None else g.position[0],
        "log_kind": "journal" if g.journal else "records",
        "rejected_count": g.rejected_count,
        "duplicate_count": g.duplicate_count,
        "out_of_order_count": g.out_of_order_count,
        "snapshot_mismatch_count": g.snapshot_mismatch_count,
        "late_count": g.late_count,
        "pending_transactions": len(g.pending_txns),
        "next_deadline": next_deadline(g, cfg),
    }


def group_shape_row(g: Group, heartbeats: bool) -> Row:
    """What DescribeGroups would show of the group (the group_history columns but time and
    position); without `heartbeats`, members' last_heartbeat is null."""
    c = g.consumer
    return {
        "group_id": g.group_id,
        "state": g.state,
        "generation_id": g.generation_id,
        "protocol_type": g.protocol_type,
        "protocol": g.protocol,
        "leader_id": g.leader_id,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "session_timeout_ms": m.session_timeout_ms,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "subscription": list(m.topics_for(g.protocol)),
                "assignment": [{"topic": t, "partition": p} for t, p in m.assignment],
                "last_heartbeat": m.last_heartbeat if heartbeats else None,
                "joined_at": m.joined_at,
                **_KIP848_MEMBER_FIELDS,
            }
            for m in g.members
        ] if c is None else [_consumer_member_row(c, m, heartbeats) for m in c.members],
        "member_count": len(g.member_ids),
        "state_since": g.state_since,
        "rebalance_count": g.rebalance_count,
        "group_type": g.group_type,
        "group_epoch": None if c is None else c.group_epoch,
        "assignment_epoch": None if c is None else c.assignment_epoch,
    }


def _consumer_member_row(c: ConsumerGroup, m: ConsumerMember, heartbeats: bool) -> Row:
    names = c.topic_names()
    return {
        "member_id": m.member_id,
        "group_instance_id": m.group_instance_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "session_timeout_ms": m.session_timeout_ms,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "subscription": list(m.subscribed_topic_names),
        "assignment": [{"topic": names[t], "partition": p}
                       for t, ps in m.assigned_partitions if t in names for p in ps],
        "last_heartbeat": m.last_record if heartbeats else None,
        "joined_at": m.joined_at,
        "member_epoch": m.member_epoch,
        "previous_member_epoch": m.previous_member_epoch,
        "member_state": MEMBER_STATE_NAMES.get(m.member_state, "UNKNOWN"),
        "rack_id": m.rack_id,
        "server_assignor": m.server_assignor,
        "subscribed_topic_regex": m.subscribed_topic_regex,
        "assigned_partitions": topic_id_rows(m.assigned_partitions),
        "partitions_pending_revocation": topic_id_rows(m.partitions_pending_revocation),
        "target_partitions": topic_id_rows(c.target(m.member_id)),
    }


def committed_offset_rows(g: Group) -> list[Row]:
    return [offset_columns(g.group_id, tp, o) for tp, o in sorted(g.offsets.items())]
