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

# Share groups (KIP-932) and streams groups (KIP-1071), Kafka 4.0-4.4.
KEY_VALUES = "array<struct<key:string,value:string>>"
TASKS = "array<struct<subtopology_id:string,partitions:array<int>,assignment_epochs:array<int>>>"
SHARE_TOPICS = "array<struct<topic_id:string,topic_name:string,partitions:array<int>>>"
TOPIC_NAMES = "array<struct<topic_id:string,topic_name:string>>"
USER_ENDPOINT = "struct<host:string,port:int>"
_TOPIC_INFO = f"struct<name:string,partitions:int,replication_factor:smallint,topic_configs:{KEY_VALUES}>"
_INDEXES = "array<smallint>"
SUBTOPOLOGIES = (
    "array<struct<subtopology_id:string,source_topics:array<string>,"
    f"source_topic_regex:array<string>,state_changelog_topics:array<{_TOPIC_INFO}>,"
    f"repartition_sink_topics:array<string>,repartition_source_topics:array<{_TOPIC_INFO}>,"
    f"copartition_groups:array<struct<source_topics:{_INDEXES},source_topic_regex:{_INDEXES},"
    f"repartition_source_topics:{_INDEXES}>>>>"
)

MEMBER = (
    "struct<member_id:string,group_instance_id:string,client_id:string,client_host:string,"
    f"session_timeout_ms:int,rebalance_timeout_ms:int,subscription:array<string>,assignment:array<{TP}>>"
)


def _filled_by(record: str, *columns: tuple[str, str]) -> tuple[Column, ...]:
    """Columns (name, type) of the record type `record` that need no more doc than its name."""
    return tuple(Column(name, type_, doc=record) for name, type_ in columns)


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
    Column("topic_id", "string",
           doc="OFFSET_COMMIT: the topic's id (base64), a tagged field of Kafka 4.3+; null "
               "where the record does not carry it. It names the topic that KIP-848 "
               "assignments give by id only"),
    # KIP-848 consumer-group records (types 3-8, 16): the decoder emits these names (and
    # the share and streams ones below), so its rows fit the event log as they are.
    Column("group_epoch", "int", doc="CONSUMER_GROUP_METADATA: the group epoch"),
    Column("metadata_hash", "bigint", doc="CONSUMER_GROUP_METADATA: KIP-1101 hash; 0 if absent"),
    Column("topics_metadata", TOPICS_METADATA,
           doc="CONSUMER_GROUP_PARTITION_METADATA: the subscribed topics' metadata"),
    *_filled_by("CONSUMER_GROUP_MEMBER_METADATA", ("rack_id", "string"),
                ("subscribed_topic_names", "array<string>"), ("subscribed_topic_regex", "string"),
                ("server_assignor", "string")),
    Column("classic_protocols", "array<struct<name:string,metadata:binary>>",
           doc="CONSUMER_GROUP_MEMBER_METADATA of a classic-protocol member: JoinGroup protocols"),
    Column("assignment_epoch", "int", doc="CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA"),
    Column("assigned_partitions", TOPIC_ID_PARTITIONS,
           doc="CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER (target) or _CURRENT_MEMBER_ASSIGNMENT"),
    *_filled_by("CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT", ("member_epoch", "int"),
                ("previous_member_epoch", "int")),
    Column("member_state", "int",
           doc="CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: 0 STABLE, 1 UNREVOKED_PARTITIONS, "
               "2 UNRELEASED_PARTITIONS, 127 UNKNOWN"),
    Column("member_state_name", "string", doc="member_state as Kafka's MemberState name"),
    Column("partitions_pending_revocation", TOPIC_ID_PARTITIONS,
           doc="CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT"),
    Column("regular_expression", "string", doc="CONSUMER_GROUP_REGULAR_EXPRESSION (key)"),
    *_filled_by("CONSUMER_GROUP_REGULAR_EXPRESSION", ("regex_topics", "array<string>"),
                ("regex_version", "bigint")),
    Column("regex_timestamp_ms", "bigint", doc="CONSUMER_GROUP_REGULAR_EXPRESSION, epoch ms"),
    # Share-group (types 10-15) and streams-group (17, 19-23) records. They also fill the
    # columns above of the same meaning: group_epoch, metadata_hash (share: null in Kafka
    # 4.0's layout), assignment_epoch, member_epoch, previous_member_epoch, member_state
    # (+ member_state_name, by the group type's names), assigned_partitions, rack_id,
    # client_id, client_host, group_instance_id, rebalance_timeout_ms, subscribed_topic_names.
    Column("record_layout", "string",
           doc="SHARE_GROUP_METADATA, SHARE_GROUP_STATE_PARTITION_METADATA: the layout the value "
               "was read with under version 0, 'kafka-4.1+' or 'kafka-4.0'; null for others"),
    Column("initializing_topics", SHARE_TOPICS,
           doc="SHARE_GROUP_STATE_PARTITION_METADATA: share state being initialized (null in 4.0)"),
    Column("initialized_topics", SHARE_TOPICS,
           doc="SHARE_GROUP_STATE_PARTITION_METADATA: share state initialized"),
    Column("deleting_topics", TOPIC_NAMES,
           doc="SHARE_GROUP_STATE_PARTITION_METADATA: share state being deleted"),
    Column("validated_topology_epoch", "int",
           doc="STREAMS_GROUP_METADATA: topology epoch validated against metadata; -1 none"),
    Column("assignment_configs", KEY_VALUES,
           doc="STREAMS_GROUP_METADATA: the last assignment configs (Kafka 4.2+; null if null)"),
    Column("stored_description_topology_epoch", "int",
           doc="STREAMS_GROUP_METADATA: topology epoch whose description is stored (4.4); -1 none"),
    Column("failed_description_topology_epoch", "int",
           doc="STREAMS_GROUP_METADATA: topology epoch whose description failed (4.4); -1 none"),
    Column("assignment_timestamp_ms", "bigint",
           doc="SHARE/STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA: when the target assignment was "
               "computed, epoch ms (Kafka 4.3+); null when not recorded"),
    Column("topology_epoch", "int", doc="STREAMS_GROUP_MEMBER_METADATA, STREAMS_GROUP_TOPOLOGY"),
    Column("process_id", "string", doc="STREAMS_GROUP_MEMBER_METADATA: the Streams process"),
    Column("user_endpoint", USER_ENDPOINT,
           doc="STREAMS_GROUP_MEMBER_METADATA: interactive-query endpoint; null if none"),
    Column("client_tags", KEY_VALUES, doc="STREAMS_GROUP_MEMBER_METADATA"),
    *(Column(name, TASKS, doc="STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER (no pending revocation, "
                              "null assignment_epochs) or _CURRENT_MEMBER_ASSIGNMENT")
      for kind in ("active", "standby", "warmup")
      for name in (f"{kind}_tasks", f"{kind}_tasks_pending_revocation")),
    Column("subtopologies", SUBTOPOLOGIES, doc="STREAMS_GROUP_TOPOLOGY"),
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

_SHARE_STREAMS_RECORDS = (
    "SHARE_GROUP_MEMBER_METADATA", "SHARE_GROUP_METADATA",
    "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA", "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER",
    "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT", "SHARE_GROUP_STATE_PARTITION_METADATA",
    "STREAMS_GROUP_METADATA", "STREAMS_GROUP_MEMBER_METADATA",
    "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA", "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER",
    "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT", "STREAMS_GROUP_TOPOLOGY",
)
# Share (KIP-932) and streams (KIP-1071) group records, replayed by pipeline/fold/share_groups.py
# and streams_groups.py.
SHARE_STREAMS_EVENT_TYPES: tuple[str, ...] = _SHARE_STREAMS_RECORDS + tuple(
    f"{r}_TOMBSTONE" for r in _SHARE_STREAMS_RECORDS)

EVENT_TYPES: tuple[str, ...] = (CLASSIC_EVENT_TYPES + KIP848_EVENT_TYPES + SHARE_STREAMS_EVENT_TYPES
                                + (MALFORMED_RECORD,))
