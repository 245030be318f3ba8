"""The event log (contract §1): one row per record of a `__consumer_offsets`-style log.

Every column is physically nullable: a malformed row (a null key, say) must still be
storable so that it reaches `rejected_events` instead of being lost. "Required" below is
what a valid row has; the fold checks it and rejects the rest with `MALFORMED: <what>`.
"""

from __future__ import annotations

from schemas.columns import TP, Column

MEMBER = (
    "struct<member_id:string,group_instance_id:string,client_id:string,client_host:string,"
    f"session_timeout_ms:int,rebalance_timeout_ms:int,subscription:array<string>,assignment:array<{TP}>>"
)

EVENT_COLUMNS: tuple[Column, ...] = (
    Column("log_partition", "int", doc="partition of the log (required)"),
    Column("log_offset", "bigint", doc="offset in that partition (required)"),
    Column("event_time", "timestamp", doc="when the coordinator appended or handled it (required)"),
    Column("group_id", "string", doc="the consumer group; the fold key (required)"),
    Column("event_type", "string", doc="one of EVENT_TYPES (required)"),
    Column("member_id", "string", doc="member id the coordinator assigned or recognised"),
    Column("group_instance_id", "string", doc="static membership id (KIP-345)"),
    Column("client_id", "string"),
    Column("client_host", "string"),
    Column("session_timeout_ms", "int"),
    Column("rebalance_timeout_ms", "int"),
    Column("protocol_type", "string"),
    Column("protocols", "array<struct<name:string,topics:array<string>>>",
           doc="JOIN: assignors in preference order, each with the subscription"),
    Column("generation_id", "int"),
    Column("protocol", "string"),
    Column("leader_id", "string"),
    Column("assignments", f"array<struct<member_id:string,partitions:array<{TP}>>>"),
    Column("members", f"array<{MEMBER}>"),
    Column("topic", "string"),
    Column("partition", "int"),
    Column("committed_offset", "bigint"),
    Column("leader_epoch", "int"),
    Column("commit_metadata", "string"),
    Column("commit_timestamp", "timestamp"),
    Column("expire_timestamp", "timestamp"),
    Column("producer_id", "bigint"),
    Column("txn_result", "string"),
    Column("raw_key", "binary"),
    Column("raw_value", "binary"),
    # Added beyond contract §1 (allowed: add, never rename or drop).
    Column("request_member_id", "string",
           doc="JOIN: the member id as sent; '' for a new member. Null: inferred"),
    Column("api_version", "int", doc="request version; null means the newest"),
    Column("current_state_timestamp", "timestamp",
           doc="GROUP_METADATA: when the group entered its state (KIP-211)"),
)

CLASSIC_EVENT_TYPES = (
    "JOIN", "SYNC", "HEARTBEAT", "LEAVE",
    "OFFSET_COMMIT", "TXN_MARKER", "OFFSET_TOMBSTONE",
    "GROUP_METADATA", "GROUP_TOMBSTONE", "UNSUPPORTED_RECORD",
)

_KIP848_RECORDS = (
    "CONSUMER_GROUP_METADATA", "CONSUMER_GROUP_PARTITION_METADATA",
    "CONSUMER_GROUP_MEMBER_METADATA", "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA",
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER", "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT",
    "CONSUMER_GROUP_REGULAR_EXPRESSION",
)
KIP848_EVENT_TYPES: tuple[str, ...] = _KIP848_RECORDS + tuple(f"{r}_TOMBSTONE" for r in _KIP848_RECORDS)

EVENT_TYPES: tuple[str, ...] = CLASSIC_EVENT_TYPES + KIP848_EVENT_TYPES
