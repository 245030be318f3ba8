"""The `__consumer_offsets` record schemas as data, in Kafka's field order, and the record-type
table that maps a key's int16 type to its key schema, value schema and event type. Field names
are Kafka's, in snake case. Keys are never flexible; values are flexible from the version
Kafka's JSON says (OffsetCommitValue and GroupMetadataValue from v4, the KIP-848 values from v0).
Every declaration equals the JSON schema Kafka 4.4.0 ships in its coordinator JARs
(`common/message/*.json`), field by field at every version, tagged fields included
(tests/decode/test_kafka_specs.py reads them there); the two layouts only Kafka 4.0 wrote
under the same version 0, of ShareGroupMetadataValue and ShareGroupStatePartitionMetadataValue
(`RecordType.legacy`; `pipeline.decode.records` tells the two apart by the bytes), equal 4.0.0's.
Type 9 (ShareGroupPartitionMetadata, Kafka 4.0 only) is declared by key only: its rows are
labelled UNSUPPORTED_RECORD, as is anything unknown (18, 24+). Last, the records of the other
coordinator topic, `__share_group_state` (`SHARE_STATE_TYPES`, from Kafka 4.4.0's share-coordinator
JAR, and 4.0.0's other layouts), which `pipeline.decode.share_state` decodes."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.decode.primitives import ZERO_UUID
from pipeline.decode.schema import (
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    ArrayOf,
    Message,
    Struct,
    field,
    message,
)

# ---------------------------------------------------------------- keys (version 0, non-flexible)

OFFSET_COMMIT_KEY = message(
    "OffsetCommitKey", "0", "none",
    field("group", STRING), field("topic", STRING), field("partition", INT32),
)
GROUP_METADATA_KEY = message("GroupMetadataKey", "0", "none", field("group", STRING))
GROUP_KEY = message("GroupIdKey", "0", "none", field("group_id", STRING))
MEMBER_KEY = message(
    "GroupMemberKey", "0", "none", field("group_id", STRING), field("member_id", STRING),
)
REGULAR_EXPRESSION_KEY = message(
    "ConsumerGroupRegularExpressionKey", "0", "none",
    field("group_id", STRING), field("regular_expression", STRING),
)

# ---------------------------------------------------------------- classic values

OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue", "0-4", "4+",
    field("offset", INT64),
    field("leader_epoch", INT32, "3+", default=-1),
    field("metadata", STRING),
    field("commit_timestamp", INT64),
    field("expire_timestamp", INT64, "1", default=-1),
    field("topic_id", UUID, "4+", tag=0, default=ZERO_UUID),  # Kafka 4.3+: the topic's id
)

MEMBER_METADATA = Struct("MemberMetadata", (
    field("member_id", STRING),
    field("group_instance_id", STRING, "3+", nullable="3+", default=None),
    field("client_id", STRING),
    field("client_host", STRING),
    field("rebalance_timeout", INT32, "1+", default=-1),
    field("session_timeout", INT32),
    field("subscription", BYTES),
    field("assignment", BYTES),
))

GROUP_METADATA_VALUE = message(
    "GroupMetadataValue", "0-4", "4+",
    field("protocol_type", STRING),
    field("generation", INT32),
    field("protocol", STRING, nullable="0+"),
    field("leader", STRING, nullable="0+"),
    field("current_state_timestamp", INT64, "2+", default=-1),
    field("members", ArrayOf(MEMBER_METADATA)),
)

# ---------------------------------------------------------------- KIP-848 values (v0, flexible)

TOPIC_PARTITIONS = Struct("TopicPartitions", (
    field("topic_id", UUID),
    field("partitions", ArrayOf(INT32)),
))

CONSUMER_GROUP_METADATA_VALUE = message(
    "ConsumerGroupMetadataValue", "0", "0+",
    field("epoch", INT32),
    field("metadata_hash", INT64, tag=0, default=0),
)

CONSUMER_GROUP_PARTITION_METADATA_VALUE = message(
    "ConsumerGroupPartitionMetadataValue", "0", "0+",
    field("topics", ArrayOf(Struct("TopicMetadata", (
        field("topic_id", UUID),
        field("topic_name", STRING),
        field("num_partitions", INT32),
        field("partition_metadata", ArrayOf(Struct("PartitionMetadata", (
            field("partition", INT32),
            field("racks", ArrayOf(STRING)),
        )))),
    )))),
)

CLASSIC_MEMBER_METADATA = Struct("ClassicMemberMetadata", (
    field("session_timeout_ms", INT32),
    field("supported_protocols", ArrayOf(Struct("ClassicProtocol", (
        field("name", STRING),
        field("metadata", BYTES),
    )))),
))

CONSUMER_GROUP_MEMBER_METADATA_VALUE = message(
    "ConsumerGroupMemberMetadataValue", "0", "0+",
    field("instance_id", STRING, nullable="0+"),
    field("rack_id", STRING, nullable="0+"),
    field("client_id", STRING),
    field("client_host", STRING),
    field("subscribed_topic_names", ArrayOf(STRING)),
    field("subscribed_topic_regex", STRING, nullable="0+"),
    field("rebalance_timeout_ms", INT32, default=-1),
    field("server_assignor", STRING, nullable="0+"),
    # Kafka writes a null explicitly (a consumer-protocol member): its default is the empty
    # struct, which it never writes
    field("classic_member_metadata", CLASSIC_MEMBER_METADATA, nullable="0+", tag=0,
          default={"session_timeout_ms": 0, "supported_protocols": []}),
)

def _assignment_metadata(group: str) -> Message:
    """`<group>GroupTargetAssignmentMetadataValue`: the same body for every group type
    (AssignmentTimestamp, tag 0, since Kafka 4.3, KIP-1263; 0 when absent)."""
    return message(f"{group}GroupTargetAssignmentMetadataValue", "0", "0+",
                   field("assignment_epoch", INT32),
                   field("assignment_timestamp", INT64, tag=0, default=0))


def _target_partitions(group: str) -> Message:
    """`<group>GroupTargetAssignmentMemberValue` of a consumer or share group."""
    return message(f"{group}GroupTargetAssignmentMemberValue", "0", "0+",
                   field("topic_partitions", ArrayOf(TOPIC_PARTITIONS)))


# The leading fields of every *CurrentMemberAssignmentValue.
MEMBER_EPOCHS = (
    field("member_epoch", INT32), field("previous_member_epoch", INT32), field("state", INT8),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _assignment_metadata("Consumer")
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _target_partitions("Consumer")

# A member's partitions with the epoch each was assigned at (Kafka 4.4, tagged: the
# coordinator fences a zombie's commits by it).
ASSIGNED_TOPIC_PARTITIONS = Struct("TopicPartitions", (
    *TOPIC_PARTITIONS.fields,
    field("assignment_epochs", ArrayOf(INT32), nullable="0+", tag=0, default=[]),
))

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "ConsumerGroupCurrentMemberAssignmentValue", "0", "0+",
    *MEMBER_EPOCHS,
    field("assigned_partitions", ArrayOf(ASSIGNED_TOPIC_PARTITIONS)),
    field("partitions_pending_revocation", ArrayOf(ASSIGNED_TOPIC_PARTITIONS)),
)

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = message(
    "ConsumerGroupRegularExpressionValue", "0", "0+",
    field("topics", ArrayOf(STRING)),
    field("version", INT64),
    field("timestamp", INT64),
)

MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}

# ---------------------------------------------------------------- share groups (KIP-932), v0 flexible

SHARE_GROUP_MEMBER_METADATA_VALUE = message(
    "ShareGroupMemberMetadataValue", "0", "0+",
    field("rack_id", STRING, nullable="0+"),
    field("client_id", STRING),
    field("client_host", STRING),
    field("subscribed_topic_names", ArrayOf(STRING)),
)

SHARE_GROUP_METADATA_VALUE = message(
    "ShareGroupMetadataValue", "0", "0+",
    field("epoch", INT32),
    field("metadata_hash", INT64),  # not tagged; Kafka 4.1+
)
# Kafka 4.0 wrote the same version 0 without MetadataHash.
SHARE_GROUP_METADATA_VALUE_40 = message(
    "ShareGroupMetadataValue(4.0)", "0", "0+", field("epoch", INT32),
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _assignment_metadata("Share")
SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = _target_partitions("Share")

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "ShareGroupCurrentMemberAssignmentValue", "0", "0+",
    *MEMBER_EPOCHS,
    field("assigned_partitions", ArrayOf(TOPIC_PARTITIONS)),
)

TOPIC_PARTITIONS_INFO = Struct("TopicPartitionsInfo", (
    field("topic_id", UUID),
    field("topic_name", STRING),
    field("partitions", ArrayOf(INT32)),
))
TOPIC_INFO = Struct("TopicInfo", (field("topic_id", UUID), field("topic_name", STRING)))

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = message(
    "ShareGroupStatePartitionMetadataValue", "0", "0+",
    field("initializing_topics", ArrayOf(TOPIC_PARTITIONS_INFO)),  # Kafka 4.1+
    field("initialized_topics", ArrayOf(TOPIC_PARTITIONS_INFO)),
    field("deleting_topics", ArrayOf(TOPIC_INFO)),
)
# Kafka 4.0 wrote the same version 0 without InitializingTopics.
SHARE_GROUP_STATE_PARTITION_METADATA_VALUE_40 = message(
    "ShareGroupStatePartitionMetadataValue(4.0)", "0", "0+",
    field("initialized_topics", ArrayOf(TOPIC_PARTITIONS_INFO)),
    field("deleting_topics", ArrayOf(TOPIC_INFO)),
)

# ---------------------------------------------------------------- streams groups (KIP-1071), v0 flexible

KEY_VALUE = Struct("KeyValue", (field("key", STRING), field("value", STRING)))

STREAMS_GROUP_METADATA_VALUE = message(
    "StreamsGroupMetadataValue", "0", "0+",
    field("epoch", INT32),
    field("metadata_hash", INT64),
    field("validated_topology_epoch", INT32, tag=0, default=-1),  # Kafka 4.2+
    # Kafka 4.2+; nullable from 4.4 (the bytes of a non-null array are the same)
    field("last_assignment_configs", ArrayOf(KEY_VALUE), nullable="0+", tag=1, default=[]),
    field("stored_description_topology_epoch", INT32, tag=2, default=-1),  # Kafka 4.4+
    field("failed_description_topology_epoch", INT32, tag=3, default=-1),  # Kafka 4.4+
)

STREAMS_GROUP_MEMBER_METADATA_VALUE = message(
    "StreamsGroupMemberMetadataValue", "0", "0+",
    field("instance_id", STRING, nullable="0+"),
    field("rack_id", STRING, nullable="0+"),
    field("client_id", STRING),
    field("client_host", STRING),
    field("rebalance_timeout_ms", INT32),
    field("topology_epoch", INT32),
    field("process_id", STRING),
    field("user_endpoint", Struct("Endpoint", (field("host", STRING), field("port", UINT16))),
          nullable="0+"),
    field("client_tags", ArrayOf(KEY_VALUE)),
)

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = _assignment_metadata("Streams")

TARGET_TASK_IDS = Struct("TaskIds", (
    field("subtopology_id", STRING),
    field("partitions", ArrayOf(INT32)),
))
CURRENT_TASK_IDS = Struct("TaskIds", (
    field("subtopology_id", STRING),
    field("partitions", ArrayOf(INT32)),
    field("assignment_epochs", ArrayOf(INT32), nullable="0+", tag=0, default=[]),  # 4.2+
))
TASK_KINDS = ("active_tasks", "standby_tasks", "warmup_tasks")

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = message(
    "StreamsGroupTargetAssignmentMemberValue", "0", "0+",
    *(field(kind, ArrayOf(TARGET_TASK_IDS)) for kind in TASK_KINDS),
)

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "StreamsGroupCurrentMemberAssignmentValue", "0", "0+",
    *MEMBER_EPOCHS,
    *(field(kind, ArrayOf(CURRENT_TASK_IDS)) for kind in TASK_KINDS),
    *(field(f"{kind}_pending_revocation", ArrayOf(CURRENT_TASK_IDS)) for kind in TASK_KINDS),
)

STREAMS_TOPIC_INFO = Struct("TopicInfo", (
    field("name", STRING),
    field("partitions", INT32),
    field("replication_factor", INT16),
    field("topic_configs", ArrayOf(KEY_VALUE)),
))

STREAMS_GROUP_TOPOLOGY_VALUE = message(
    "StreamsGroupTopologyValue", "0", "0+",
    field("epoch", INT32),
    field("subtopologies", ArrayOf(Struct("Subtopology", (
        field("subtopology_id", STRING),
        field("source_topics", ArrayOf(STRING)),
        field("source_topic_regex", ArrayOf(STRING)),
        field("state_changelog_topics", ArrayOf(STREAMS_TOPIC_INFO)),
        field("repartition_sink_topics", ArrayOf(STRING)),
        field("repartition_source_topics", ArrayOf(STREAMS_TOPIC_INFO)),
        field("copartition_groups", ArrayOf(Struct("CopartitionGroup", (
            field("source_topics", ArrayOf(INT16)),
            field("source_topic_regex", ArrayOf(INT16)),
            field("repartition_source_topics", ArrayOf(INT16)),
        )))),
    )))),
)

STREAMS_MEMBER_STATES = {1: "STABLE", 2: "UNREVOKED_TASKS", 3: "UNRELEASED_TASKS", 127: "UNKNOWN"}

# ---------------------------------------------------------------- the record-type table


@dataclass(frozen=True, slots=True)
class RecordType:
    """One key type: Kafka's record name, its event type, and its key and value schemas.

    `value is None` marks a type this package labels but does not model (type 9): its rows
    are UNSUPPORTED_RECORD, with the group id read from the key when the key decodes.
    `legacy` is the other layout Kafka 4.0 wrote under the same value version, if any.
    """

    type: int
    name: str
    event_type: str
    key: Message
    value: Message | None
    legacy: Message | None = None


RECORD_TYPES: dict[int, RecordType] = {r.type: r for r in (
    RecordType(0, "OffsetCommit", "OFFSET_COMMIT", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    RecordType(1, "OffsetCommit", "OFFSET_COMMIT", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    RecordType(2, "GroupMetadata", "GROUP_METADATA", GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    RecordType(3, "ConsumerGroupMetadata", "CONSUMER_GROUP_METADATA",
               GROUP_KEY, CONSUMER_GROUP_METADATA_VALUE),
    RecordType(4, "ConsumerGroupPartitionMetadata", "CONSUMER_GROUP_PARTITION_METADATA",
               GROUP_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    RecordType(5, "ConsumerGroupMemberMetadata", "CONSUMER_GROUP_MEMBER_METADATA",
               MEMBER_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    RecordType(6, "ConsumerGroupTargetAssignmentMetadata",
               "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA",
               GROUP_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    RecordType(7, "ConsumerGroupTargetAssignmentMember",
               "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER",
               MEMBER_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    RecordType(8, "ConsumerGroupCurrentMemberAssignment",
               "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT",
               MEMBER_KEY, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    RecordType(9, "ShareGroupPartitionMetadata", "UNSUPPORTED_RECORD", GROUP_KEY, None),
    RecordType(10, "ShareGroupMemberMetadata", "SHARE_GROUP_MEMBER_METADATA",
               MEMBER_KEY, SHARE_GROUP_MEMBER_METADATA_VALUE),
    RecordType(11, "ShareGroupMetadata", "SHARE_GROUP_METADATA",
               GROUP_KEY, SHARE_GROUP_METADATA_VALUE, SHARE_GROUP_METADATA_VALUE_40),
    RecordType(12, "ShareGroupTargetAssignmentMetadata", "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA",
               GROUP_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    RecordType(13, "ShareGroupTargetAssignmentMember", "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER",
               MEMBER_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    RecordType(14, "ShareGroupCurrentMemberAssignment", "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT",
               MEMBER_KEY, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    RecordType(15, "ShareGroupStatePartitionMetadata", "SHARE_GROUP_STATE_PARTITION_METADATA",
               GROUP_KEY, SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
               SHARE_GROUP_STATE_PARTITION_METADATA_VALUE_40),
    RecordType(16, "ConsumerGroupRegularExpression", "CONSUMER_GROUP_REGULAR_EXPRESSION",
               REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
    RecordType(17, "StreamsGroupMetadata", "STREAMS_GROUP_METADATA",
               GROUP_KEY, STREAMS_GROUP_METADATA_VALUE),
    RecordType(19, "StreamsGroupMemberMetadata", "STREAMS_GROUP_MEMBER_METADATA",
               MEMBER_KEY, STREAMS_GROUP_MEMBER_METADATA_VALUE),
    RecordType(20, "StreamsGroupTargetAssignmentMetadata",
               "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA",
               GROUP_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    RecordType(21, "StreamsGroupTargetAssignmentMember", "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER",
               MEMBER_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    RecordType(22, "StreamsGroupCurrentMemberAssignment",
               "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT",
               MEMBER_KEY, STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    RecordType(23, "StreamsGroupTopology", "STREAMS_GROUP_TOPOLOGY",
               GROUP_KEY, STREAMS_GROUP_TOPOLOGY_VALUE),
)}

EVENT_TO_RECORD_TYPE: dict[str, int] = {
    r.event_type: r.type for r in RECORD_TYPES.values()
    if r.value is not None and r.type != 0
}

# ---------------------------------------------------------------- the share-state log
# `__share_group_state`, the share coordinator's topic (KIP-932): its own key, values and
# record-type table, decoded by `pipeline.decode.share_state` (which says how).

SHARE_STATE_KEY = message(
    "ShareStateKey", "0", "none",
    field("group_id", STRING), field("topic_id", UUID), field("partition", INT32),
)
STATE_BATCH = Struct("StateBatch", (
    field("first_offset", INT64), field("last_offset", INT64),
    field("delivery_state", INT8), field("delivery_count", INT16),
))
_DELIVERY_COMPLETE = field("delivery_complete_count", INT32, tag=0, default=-1)  # Kafka 4.2+

SHARE_SNAPSHOT_VALUE = message(
    "ShareSnapshotValue", "0", "0+",
    field("snapshot_epoch", INT32), field("state_epoch", INT32), field("leader_epoch", INT32),
    field("start_offset", INT64), _DELIVERY_COMPLETE,
    field("create_timestamp", INT64), field("write_timestamp", INT64),
    field("state_batches", ArrayOf(STATE_BATCH)),
)
SHARE_SNAPSHOT_VALUE_40 = message(
    "ShareSnapshotValue(4.0)", "0", "0+",
    field("snapshot_epoch", UINT16), field("state_epoch", INT32), field("leader_epoch", INT32),
    field("start_offset", INT64), field("state_batches", ArrayOf(STATE_BATCH)),
)
SHARE_UPDATE_VALUE = message(
    "ShareUpdateValue", "0", "0+",
    field("snapshot_epoch", INT32), field("leader_epoch", INT32), field("start_offset", INT64),
    _DELIVERY_COMPLETE, field("state_batches", ArrayOf(STATE_BATCH)),
)
SHARE_UPDATE_VALUE_40 = message(
    "ShareUpdateValue(4.0)", "0", "0+",
    field("snapshot_epoch", UINT16), field("leader_epoch", INT32), field("start_offset", INT64),
    field("state_batches", ArrayOf(STATE_BATCH)),
)

SHARE_STATE_TYPES: dict[int, RecordType] = {r.type: r for r in (
    RecordType(0, "ShareSnapshot", "SHARE_SNAPSHOT", SHARE_STATE_KEY, SHARE_SNAPSHOT_VALUE,
               SHARE_SNAPSHOT_VALUE_40),
    RecordType(1, "ShareUpdate", "SHARE_UPDATE", SHARE_STATE_KEY, SHARE_UPDATE_VALUE,
               SHARE_UPDATE_VALUE_40),
)}
