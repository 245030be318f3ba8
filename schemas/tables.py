"""The output tables (docs/contract.md §3), each a tuple of columns, plus the key of each table.

Times are `timestamp` columns here; inside the pure fold they are integer milliseconds
since the epoch and the Spark adapter converts at the edge.
"""

from __future__ import annotations

from schemas.columns import TP, Column
from schemas.events import EVENT_COLUMNS, TOPIC_ID_PARTITIONS

# The fields after joined_at are a KIP-848 member's (null for classic members); as stored, its
# `assignment` lists only partitions whose topic id the log's subscription metadata names (Kafka
# 4.0; 4.1+ writes none). The SQL views and the report add the rest through TOPICS.
STATE_MEMBER = (
    "struct<member_id:string,group_instance_id:string,client_id:string,client_host:string,"
    "session_timeout_ms:int,rebalance_timeout_ms:int,subscription:array<string>,"
    f"assignment:array<{TP}>,last_heartbeat:timestamp,joined_at:timestamp,"
    "member_epoch:int,previous_member_epoch:int,member_state:string,rack_id:string,"
    "server_assignor:string,subscribed_topic_regex:string,"
    f"assigned_partitions:{TOPIC_ID_PARTITIONS},"
    f"partitions_pending_revocation:{TOPIC_ID_PARTITIONS},"
    f"target_partitions:{TOPIC_ID_PARTITIONS}>"
)

GROUP_STATE: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("state", "string", False, "Kafka's state name, as DescribeGroups prints it"),
    Column("generation_id", "int", False),
    Column("protocol_type", "string"),
    Column("protocol", "string"),
    Column("leader_id", "string"),
    Column("members", f"array<{STATE_MEMBER}>", False),
    Column("member_count", "int", False),
    Column("state_since", "timestamp"),
    Column("last_event_time", "timestamp"),
    Column("last_log_offset", "bigint"),
    Column("rebalance_count", "bigint", False),
    Column("log_partition", "int"),
    Column("log_kind", "string", False, "journal (protocol events seen) or records"),
    Column("rejected_count", "bigint", False),
    Column("duplicate_count", "bigint", False),
    Column("out_of_order_count", "bigint", False),
    Column("snapshot_mismatch_count", "bigint", False),
    Column("late_count", "bigint", False, "rows that arrived behind the watermark"),
    Column("pending_transactions", "int", False),
    Column("next_deadline", "timestamp", doc="when the group next changes by itself"),
    Column("group_type", "string", False, "classic, or consumer (KIP-848)"),
    Column("group_epoch", "int", doc="consumer groups: the group epoch (also generation_id)"),
    Column("assignment_epoch", "int", doc="consumer groups: the target assignment epoch"),
)

_OFFSET_BASE: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("topic", "string", False),
    Column("partition", "int", False),
    Column("committed_offset", "bigint"),
    Column("leader_epoch", "int"),
    Column("commit_metadata", "string"),
    Column("commit_timestamp", "timestamp"),
    Column("expire_timestamp", "timestamp"),
    Column("member_id", "string"),
    Column("generation_id", "int"),
    Column("log_partition", "int"),
    Column("log_offset", "bigint"),
)

COMMITTED_OFFSETS = _OFFSET_BASE

OFFSET_HISTORY: tuple[Column, ...] = _OFFSET_BASE + (
    Column("event_time", "timestamp", False),
    Column("change", "string", False, "COMMIT, TOMBSTONE, EXPIRED or TXN_ABORTED"),
    Column("producer_id", "bigint"),
)

GROUP_TRANSITIONS: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("event_time", "timestamp", False),
    Column("log_partition", "int"),
    Column("log_offset", "bigint"),
    Column("from_state", "string"),
    Column("to_state", "string", False),
    Column("generation_id", "int", False),
    Column("cause", "string", False),
    Column("member_id", "string"),
    Column("member_count", "int", False),
    Column("detail", "string"),
    Column("seq", "int", False, "order of rows caused by the same log position"),
)

REBALANCES: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("generation_id", "int"),
    Column("started_at", "timestamp"),
    Column("completed_at", "timestamp", False),
    Column("duration_ms", "bigint"),
    Column("cause", "string", False),
    Column("protocol", "string"),
    Column("leader_id", "string"),
    Column("member_count", "int", False),
    Column("members_joined", "int", False),
    Column("members_left", "int", False),
    Column("partitions_moved", "int", False),
    Column("partitions_total", "int", False),
    Column("outcome", "string", False, "COMPLETED, EMPTIED (no member left) or ABANDONED"),
    Column("log_partition", "int"),
    Column("log_offset", "bigint"),
)

GROUP_HISTORY: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("event_time", "timestamp", False, "when the group took this shape"),
    Column("log_partition", "int"),
    Column("log_offset", "bigint", doc="the record that changed it (a timer: the last one)"),
    Column("seq", "int", False, "order of rows at the same log position and time"),
    Column("state", "string", False),
    Column("generation_id", "int", False),
    Column("protocol_type", "string"),
    Column("protocol", "string"),
    Column("leader_id", "string"),
    Column("members", f"array<{STATE_MEMBER}>", False,
           "as in group_state, last_heartbeat null: heartbeats do not change the shape"),
    Column("member_count", "int", False),
    Column("state_since", "timestamp"),
    Column("rebalance_count", "bigint", False),
    Column("group_type", "string", False),
    Column("group_epoch", "int"),
    Column("assignment_epoch", "int"),
    Column("departures", "array<struct<member_id:string,cause:string>>", False,
           "members this step removed and why (SESSION_TIMEOUT, MEMBER_LEFT, REBALANCE_TIMEOUT "
           "for a member that did not rejoin, ...); empty when none left"),
)

REJECTED_EVENTS: tuple[Column, ...] = EVENT_COLUMNS + (
    Column("reason", "string", False, "Kafka's error name, MALFORMED: <what>, DUPLICATE, ..."),
    Column("group_state", "string", doc="the group's state when the row was refused"),
    Column("group_generation_id", "int"),
)

ERROR_RESPONSES: tuple[Column, ...] = EVENT_COLUMNS + (
    Column("response", "string", False,
           "the error Kafka answered a request it applied with: MEMBER_ID_REQUIRED (a new "
           "member's first JoinGroup: its id is now pending) or REBALANCE_IN_PROGRESS (a "
           "heartbeat during PreparingRebalance: the session is kept alive)"),
    Column("group_state", "string", doc="the group's state after the request"),
    Column("group_generation_id", "int"),
)

# Not written by the fold (it cannot know names: Kafka 4.1+ writes no subscription metadata
# record, so the log names topics of KIP-848 groups by id only). `jobs/ingest.py` records it
# from the cluster's metadata, or from a map file beside a raw dump; the SQL views and the
# report name KIP-848 members' partitions through it at query time.
TOPICS: tuple[Column, ...] = (
    Column("topic_id", "string", False, "Kafka's topic id (Uuid.toString(), URL-safe base64)"),
    Column("topic_name", "string", False),
    Column("seen_at", "timestamp", False,
           "when the ingest first saw this id with this name (wall clock); ids are never "
           "reused, a deleted and recreated topic gets a new id and a new row"),
    Column("source", "string", False, "cluster (the live ingest's admin call) or the map file"),
)

OUTPUT_TABLES: dict[str, tuple[Column, ...]] = {
    "group_state": GROUP_STATE,
    "committed_offsets": COMMITTED_OFFSETS,
    "offset_history": OFFSET_HISTORY,
    "group_transitions": GROUP_TRANSITIONS,
    "rebalances": REBALANCES,
    "rejected_events": REJECTED_EVENTS,
    "error_responses": ERROR_RESPONSES,
    "group_history": GROUP_HISTORY,
}

# Tables under the warehouse that the replay does not write.
METADATA_TABLES: dict[str, tuple[Column, ...]] = {"topics": TOPICS}

TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "group_state": ("group_id",),
    "committed_offsets": ("group_id", "topic", "partition"),
}
# The tables without a key are history: appended to, never updated.
APPEND_TABLES: tuple[str, ...] = tuple(t for t in OUTPUT_TABLES if t not in TABLE_KEYS)
