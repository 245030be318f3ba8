"""The `__consumer_offsets` record schemas as data, in Kafka's field order, and the record-type
table that maps a key's int16 type to its key schema, value schema and event type. Field names
are Kafka's, in snake case. Keys are never flexible; values are flexible from the version
Kafka's JSON says (OffsetCommitValue and GroupMetadataValue from v4, the KIP-848 values from v0).
Facts come from Kafka's coordinator record schemas (docs/kafka.md, Decoding real records) and apache/kafka's
`group-coordinator/src/main/resources/common/message/*.json`; the one field taken from a newer
upstream file than the fact sheet's snapshot is ConsumerGroupMetadataValue's tagged
`MetadataHash` (tag 0, KIP-1101, Kafka 4.1). Other tags added upstream later are skipped as
unknown tags. Share-group types 9–15 are declared by key only: their rows are labelled
UNSUPPORTED_RECORD, as are streams-group types 17+ and anything unknown."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.decode.schema import (
    BYTES,
    INT8,
    INT32,
    INT64,
    STRING,
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
    field("classic_member_metadata", CLASSIC_MEMBER_METADATA, nullable="0+", tag=0,
          default=None),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = message(
    "ConsumerGroupTargetAssignmentMetadataValue", "0", "0+",
    field("assignment_epoch", INT32),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = message(
    "ConsumerGroupTargetAssignmentMemberValue", "0", "0+",
    field("topic_partitions", ArrayOf(TOPIC_PARTITIONS)),
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "ConsumerGroupCurrentMemberAssignmentValue", "0", "0+",
    field("member_epoch", INT32),
    field("previous_member_epoch", INT32),
    field("state", INT8),
    field("assigned_partitions", ArrayOf(TOPIC_PARTITIONS)),
    field("partitions_pending_revocation", ArrayOf(TOPIC_PARTITIONS)),
)

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = message(
    "ConsumerGroupRegularExpressionValue", "0", "0+",
    field("topics", ArrayOf(STRING)),
    field("version", INT64),
    field("timestamp", INT64),
)

MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}

# ---------------------------------------------------------------- the record-type table


@dataclass(frozen=True, slots=True)
class RecordType:
    """One key type: Kafka's record name, its event type, and its key and value schemas.

    `value is None` marks a type this package labels but does not model (share groups): its
    rows are UNSUPPORTED_RECORD, with the group id read from the key when the key decodes.
    """

    type: int
    name: str
    event_type: str
    key: Message
    value: Message | None


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
    RecordType(10, "ShareGroupMemberMetadata", "UNSUPPORTED_RECORD", MEMBER_KEY, None),
    RecordType(11, "ShareGroupMetadata", "UNSUPPORTED_RECORD", GROUP_KEY, None),
    RecordType(12, "ShareGroupTargetAssignmentMetadata", "UNSUPPORTED_RECORD", GROUP_KEY, None),
    RecordType(13, "ShareGroupTargetAssignmentMember", "UNSUPPORTED_RECORD", MEMBER_KEY, None),
    RecordType(14, "ShareGroupCurrentMemberAssignment", "UNSUPPORTED_RECORD", MEMBER_KEY, None),
    RecordType(15, "ShareGroupStatePartitionMetadata", "UNSUPPORTED_RECORD", GROUP_KEY, None),
    RecordType(16, "ConsumerGroupRegularExpression", "CONSUMER_GROUP_REGULAR_EXPRESSION",
               REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
)}

EVENT_TO_RECORD_TYPE: dict[str, int] = {
    r.event_type: r.type for r in RECORD_TYPES.values()
    if r.value is not None and r.type != 0
}
