"""The event log (docs/contract.md §1): one row per record of a `__consumer_offsets`-style log.

Every column is physically nullable: a malformed row (a null key, say) must still be
storable so that it reaches `rejected_events` instead of being lost. "Required" below is
what a valid row has; the fold checks it and rejects the rest with `MALFORMED: <what>`.
"""

from __future__ import annotations

from schemas.columns import TP, Column

TOPIC_ID_PARTITIONS = "array<struct<topic_id:string,partitions:array<int>>>"
TOPICS_METADATA = (
    "array<struct<topic_id:string,topic_name:string,num_partitions:int,"
    "partition_metadata:array<struct<partition:int,racks:array<string>>>>>"
)

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
    Column("decode_error", "string",
           doc="why the row could not be read whole (an undecodable record, a value no "
               "column holds); such a row is rejected as MALFORMED with this reason"),
    # Added beyond docs/contract.md §1 (allowed: add, never rename or drop).
    Column("request_member_id", "string",
           doc="JOIN: the member id as sent; '' for a new member. Null: inferred"),
    Column("api_version", "int", doc="request version; null means the newest"),
    Column("current_state_timestamp", "timestamp",
           doc="GROUP_METADATA: when the group entered its state (KIP-211)"),
    # KIP-848 consumer-group records (types 3-8, 16): the names and types the decoder emits
    # (pipeline.decode.columns.EXTRA_COLUMNS), so its rows fit the event log as they are.
    Column("group_epoch", "int", doc="CONSUMER_GROUP_METADATA: the group epoch"),
    Column("metadata_hash", "bigint", doc="CONSUMER_GROUP_METADATA: KIP-1101 hash; 0 if absent"),
    Column("topics_metadata", TOPICS_METADATA,
           doc="CONSUMER_GROUP_PARTITION_METADATA: the subscribed topics' metadata"),
    Column("rack_id", "string", doc="CONSUMER_GROUP_MEMBER_METADATA"),
    Column("subscribed_topic_names", "array<string>", doc="CONSUMER_GROUP_MEMBER_METADATA"),
    Column("subscribed_topic_regex", "string", doc="CONSUMER_GROUP_MEMBER_METADATA"),
    Column("server_assignor", "string", doc="CONSUMER_GROUP_MEMBER_METADATA"),
    Column("classic_protocols", "array<struct<name:string,metadata:binary>>",
           doc="CONSUMER_GROUP_MEMBER_METADATA of a classic-protocol member: JoinGroup protocols"),
    Column("assignment_epoch", "int", doc="CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA"),
    Column("assigned_partitions", TOPIC_ID_PARTITIONS,
           doc="CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER (target) or _CURRENT_MEMBER_ASSIGNMENT"),
    Column("member_epoch", "int", doc="CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT"),
    Column("previous_member_epoch", "int", doc="CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT"),
    Column("member_state", "int",
           doc="CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: 0 STABLE, 1 UNREVOKED_PARTITIONS, "
               "2 UNRELEASED_PARTITIONS, 127 UNKNOWN"),
    Column("member_state_name", "string", doc="member_state as Kafka's MemberState name"),
    Column("partitions_pending_revocation", TOPIC_ID_PARTITIONS,
           doc="CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT"),
    Column("regular_expression", "string", doc="CONSUMER_GROUP_REGULAR_EXPRESSION (key)"),
    Column("regex_topics", "array<string>", doc="CONSUMER_GROUP_REGULAR_EXPRESSION"),
    Column("regex_version", "bigint", doc="CONSUMER_GROUP_REGULAR_EXPRESSION"),
    Column("regex_timestamp_ms", "bigint", doc="CONSUMER_GROUP_REGULAR_EXPRESSION, epoch ms"),
)

CLASSIC_EVENT_TYPES = (
    "JOIN", "SYNC", "HEARTBEAT", "LEAVE",
    "OFFSET_COMMIT", "TXN_MARKER", "OFFSET_TOMBSTONE",
    "GROUP_METADATA", "GROUP_TOMBSTONE", "UNSUPPORTED_RECORD",
)
# A raw record jobs/ingest.py could not decode: kept, with its bytes and `decode_error`.
MALFORMED_RECORD = "MALFORMED_RECORD"

_KIP848_RECORDS = (
    "CONSUMER_GROUP_METADATA", "CONSUMER_GROUP_PARTITION_METADATA",
    "CONSUMER_GROUP_MEMBER_METADATA", "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA",
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER", "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT",
    "CONSUMER_GROUP_REGULAR_EXPRESSION",
)
KIP848_EVENT_TYPES: tuple[str, ...] = _KIP848_RECORDS + tuple(f"{r}_TOMBSTONE" for r in _KIP848_RECORDS)

EVENT_TYPES: tuple[str, ...] = CLASSIC_EVENT_TYPES + KIP848_EVENT_TYPES + (MALFORMED_RECORD,)
