"""The columns `decode_record` emits beyond docs/contract.md §1, as Spark DDL types, for the schema owner
to add to the event log (add, never rename): `EXTRA_COLUMNS` for top-level keys and
`EXTRA_MEMBER_FIELDS` for the extra keys of each GROUP_METADATA member struct. Timestamps stay
integer milliseconds under `_ms` names; `MS_TO_TIMESTAMP` says which contract timestamp column
each one feeds, for the Spark adapter to convert. `raw_key`/`raw_value`, `group_id`,
`member_id`, `topic`, `partition` and the other contract columns are not repeated here."""

from __future__ import annotations

TOPIC_ID_PARTITIONS = "array<struct<topic_id:string,partitions:array<int>>>"
TOPIC_PARTITION_LIST = "array<struct<topic:string,partition:int>>"

TOPICS_METADATA = (
    "array<struct<topic_id:string,topic_name:string,num_partitions:int,"
    "partition_metadata:array<struct<partition:int,racks:array<string>>>>>"
)

KEY_VALUES = "array<struct<key:string,value:string>>"
TASKS = "array<struct<subtopology_id:string,partitions:array<int>,assignment_epochs:array<int>>>"
TOPIC_INFO = "struct<name:string,partitions:int,replication_factor:smallint,topic_configs:" + KEY_VALUES + ">"
SUBTOPOLOGIES = (
    "array<struct<subtopology_id:string,source_topics:array<string>,"
    f"source_topic_regex:array<string>,state_changelog_topics:array<{TOPIC_INFO}>,"
    f"repartition_sink_topics:array<string>,repartition_source_topics:array<{TOPIC_INFO}>,"
    "copartition_groups:array<struct<source_topics:array<smallint>,"
    "source_topic_regex:array<smallint>,repartition_source_topics:array<smallint>>>>>"
)
SHARE_TOPICS = "array<struct<topic_id:string,topic_name:string,partitions:array<int>>>"

# Share-group (types 10-15) and streams-group (17, 19-23) columns; these rows also fill the
# KIP-848 columns of the same meaning (group_epoch, metadata_hash, assignment_epoch,
# member_epoch, previous_member_epoch, member_state, member_state_name, assigned_partitions,
# rack_id, client_id, client_host, group_instance_id, rebalance_timeout_ms,
# subscribed_topic_names).
SHARE_STREAMS_COLUMNS: dict[str, str] = {
    "record_layout": "string",  # types 11 and 15: "kafka-4.1+" or "kafka-4.0"
    "initializing_topics": SHARE_TOPICS,  # SHARE_GROUP_STATE_PARTITION_METADATA; null in 4.0
    "initialized_topics": SHARE_TOPICS,
    "deleting_topics": "array<struct<topic_id:string,topic_name:string>>",
    "validated_topology_epoch": "int",  # STREAMS_GROUP_METADATA; -1 when not validated
    "assignment_configs": KEY_VALUES,  # STREAMS_GROUP_METADATA's LastAssignmentConfigs
    "stored_description_topology_epoch": "int",  # STREAMS_GROUP_METADATA, Kafka 4.4; -1 none
    "failed_description_topology_epoch": "int",
    "assignment_timestamp_ms": "bigint",  # share/streams target assignment metadata, 4.3+
    "topology_epoch": "int",  # STREAMS_GROUP_MEMBER_METADATA, STREAMS_GROUP_TOPOLOGY
    "process_id": "string",
    "user_endpoint": "struct<host:string,port:int>",
    "client_tags": KEY_VALUES,
    **{name: TASKS for kind in ("active", "standby", "warmup")
       for name in (f"{kind}_tasks", f"{kind}_tasks_pending_revocation")},
    "subtopologies": SUBTOPOLOGIES,  # STREAMS_GROUP_TOPOLOGY
}

EXTRA_COLUMNS: dict[str, str] = {
    # every row
    "record_type": "int",  # the key's int16 record type
    "record_version": "int",  # the value's int16 version; null for a tombstone
    "record_name": "string",  # UNSUPPORTED_RECORD: Kafka's record name when known
    # OFFSET_COMMIT / GROUP_METADATA timestamps, integer ms (see MS_TO_TIMESTAMP)
    "commit_timestamp_ms": "bigint",
    "expire_timestamp_ms": "bigint",
    "current_state_timestamp_ms": "bigint",
    # OFFSET_COMMIT, Kafka 4.3+ (tagged): the committed topic's id; null where not carried
    "topic_id": "string",
    # CONSUMER_GROUP_METADATA (type 3)
    "group_epoch": "int",
    "metadata_hash": "bigint",  # KIP-1101 tagged field; 0 when absent
    # CONSUMER_GROUP_PARTITION_METADATA (type 4)
    "topics_metadata": TOPICS_METADATA,
    # CONSUMER_GROUP_MEMBER_METADATA (type 5); also uses group_instance_id, client_id,
    # client_host, rebalance_timeout_ms, session_timeout_ms (classic members) and protocols
    "rack_id": "string",
    "subscribed_topic_names": "array<string>",
    "subscribed_topic_regex": "string",
    "server_assignor": "string",
    "classic_protocols": "array<struct<name:string,metadata:binary>>",
    # CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA (type 6)
    "assignment_epoch": "int",
    # CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER (7) and CURRENT_MEMBER_ASSIGNMENT (8)
    "assigned_partitions": TOPIC_ID_PARTITIONS,
    "member_epoch": "int",
    "previous_member_epoch": "int",
    "member_state": "int",  # 0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_PARTITIONS, 127
    "member_state_name": "string",
    "partitions_pending_revocation": TOPIC_ID_PARTITIONS,
    # CONSUMER_GROUP_REGULAR_EXPRESSION (type 16)
    "regular_expression": "string",
    "regex_topics": "array<string>",
    "regex_version": "bigint",
    "regex_timestamp_ms": "bigint",
    **SHARE_STREAMS_COLUMNS,
}

EXTRA_MEMBER_FIELDS: dict[str, str] = {
    "owned_partitions": TOPIC_PARTITION_LIST,  # subscription v1+
    "subscription_version": "int",
    "assignment_version": "int",  # null for zero-length assignment bytes
    "subscription_generation_id": "int",  # subscription v2+; null for -1
    "rack_id": "string",  # subscription v3+
    "user_data_generation": "int",  # sticky v1 / cooperative-sticky user data
    "user_data_partitions": TOPIC_PARTITION_LIST,  # sticky user data: previous assignment
}

MS_TO_TIMESTAMP: dict[str, str] = {
    "commit_timestamp_ms": "commit_timestamp",
    "expire_timestamp_ms": "expire_timestamp",
    "current_state_timestamp_ms": "current_state_timestamp",
}
