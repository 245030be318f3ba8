// Writes the classic and consumer-group records of __consumer_offsets (types 0-8 and 16) at
// every version Kafka declares for them, with kafka-group-coordinator 4.4.0's generated classes
// and serde, every field set to a value that is not its default (and, for nullable fields, a
// second record with them null). Prints one record a line: name, key hex, value hex, then the
// value as Kafka's own generated JsonConverter renders it at that version (no spaces: values
// are chosen without them). tests/decode/test_every_version.py decodes each and compares.

import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.*;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import com.fasterxml.jackson.databind.JsonNode;

public class WriteEveryVersion {
    static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    // ConsumerProtocol v0: a subscription to "orders", and an assignment of orders-0.
    static final byte[] SUBSCRIPTION = {0, 0, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's',
                                        -1, -1, -1, -1};
    static final byte[] ASSIGNMENT = {0, 0, 0, 0, 0, 1, 0, 6, 'o', 'r', 'd', 'e', 'r', 's',
                                      0, 0, 0, 1, 0, 0, 0, 0, -1, -1, -1, -1};
    static final Uuid TOPIC_A = Print.TOPIC_A;
    static final Uuid TOPIC_B = Print.TOPIC_B;

    static void record(String name, ApiMessage key, ApiMessage value, short version, JsonNode json) {
        CoordinatorRecord record =
            CoordinatorRecord.record(key, new ApiMessageAndVersion(value, version));
        System.out.println(name + " " + Print.hex(SERDE.serializeKey(record)) + " "
            + Print.hex(SERDE.serializeValue(record)) + " " + json.toString());
    }

    public static void main(String[] args) {
        offsetCommits();
        groupMetadata();
        consumerGroups();
    }

    static void offsetCommits() {
        LegacyOffsetCommitValue legacy = new LegacyOffsetCommitValue()
            .setOffset(41L).setMetadata("legacy-meta").setCommitTimestamp(1700000000001L);
        record("legacy_offset_commit_v0",
            new LegacyOffsetCommitKey().setGroup("g-legacy").setTopic("orders").setPartition(2),
            legacy, (short) 0, LegacyOffsetCommitValueJsonConverter.write(legacy, (short) 0));
        OffsetCommitKey key = new OffsetCommitKey().setGroup("g1").setTopic("orders").setPartition(3);
        for (short v = 0; v <= 4; v++) {
            OffsetCommitValue value = new OffsetCommitValue()
                .setOffset(1234567890123L).setLeaderEpoch(7).setMetadata("meta-" + v)
                .setCommitTimestamp(1700000000002L).setTopicId(TOPIC_A);
            if (v == 1) value.setExpireTimestamp(1700000600002L);  // v1 only
            record("offset_commit_v" + v, key, value, v, OffsetCommitValueJsonConverter.write(value, v));
        }
    }

    static GroupMetadataValue.MemberMetadata member(String id, String instance) {
        return new GroupMetadataValue.MemberMetadata()
            .setMemberId(id).setGroupInstanceId(instance).setClientId("client-" + id)
            .setClientHost("/10.0.0.9").setRebalanceTimeout(60000).setSessionTimeout(45000)
            .setSubscription(SUBSCRIPTION).setAssignment(ASSIGNMENT);
    }

    static void groupMetadata() {
        GroupMetadataKey key = new GroupMetadataKey().setGroup("g1");
        for (short v = 0; v <= 4; v++) {
            GroupMetadataValue value = new GroupMetadataValue()
                .setProtocolType("consumer").setGeneration(5).setProtocol("range")
                .setLeader("m-1").setCurrentStateTimestamp(1700000000003L)
                .setMembers(List.of(member("m-1", v >= 3 ? "static-1" : null), member("m-2", null)));
            record("group_metadata_v" + v, key, value, v, GroupMetadataValueJsonConverter.write(value, v));
            GroupMetadataValue nulls = new GroupMetadataValue()
                .setProtocolType("consumer").setGeneration(0).setProtocol(null).setLeader(null)
                .setCurrentStateTimestamp(-1L).setMembers(List.of());
            record("group_metadata_nulls_v" + v, key, nulls, v,
                GroupMetadataValueJsonConverter.write(nulls, v));
        }
    }

    static void consumerGroups() {
        short v = 0;
        ConsumerGroupMetadataKey group = new ConsumerGroupMetadataKey().setGroupId("cg");
        ConsumerGroupMetadataValue metadata = new ConsumerGroupMetadataValue()
            .setEpoch(9).setMetadataHash(-8765432109876L);
        record("consumer_metadata", group, metadata, v,
            ConsumerGroupMetadataValueJsonConverter.write(metadata, v));

        ConsumerGroupPartitionMetadataValue partitions = new ConsumerGroupPartitionMetadataValue()
            .setTopics(List.of(new ConsumerGroupPartitionMetadataValue.TopicMetadata()
                .setTopicId(TOPIC_A).setTopicName("orders").setNumPartitions(3)
                .setPartitionMetadata(List.of(
                    new ConsumerGroupPartitionMetadataValue.PartitionMetadata()
                        .setPartition(0).setRacks(List.of("rack-a", "rack-b"))))));
        record("consumer_partition_metadata",
            new ConsumerGroupPartitionMetadataKey().setGroupId("cg"), partitions, v,
            ConsumerGroupPartitionMetadataValueJsonConverter.write(partitions, v));

        ConsumerGroupMemberMetadataKey member =
            new ConsumerGroupMemberMetadataKey().setGroupId("cg").setMemberId("cm-1");
        ConsumerGroupMemberMetadataValue classic = new ConsumerGroupMemberMetadataValue()
            .setInstanceId("inst-1").setRackId("rack-a").setClientId("c-1").setClientHost("/10.0.0.2")
            .setSubscribedTopicNames(List.of("orders", "payments")).setSubscribedTopicRegex("ord.*")
            .setRebalanceTimeoutMs(30000).setServerAssignor("uniform")
            .setClassicMemberMetadata(new ConsumerGroupMemberMetadataValue.ClassicMemberMetadata()
                .setSessionTimeoutMs(45000).setSupportedProtocols(List.of(
                    new ConsumerGroupMemberMetadataValue.ClassicProtocol()
                        .setName("range").setMetadata(SUBSCRIPTION))));
        record("consumer_member_classic", member, classic, v,
            ConsumerGroupMemberMetadataValueJsonConverter.write(classic, v));
        ConsumerGroupMemberMetadataValue nulls = new ConsumerGroupMemberMetadataValue()
            .setInstanceId(null).setRackId(null).setClientId("c-2").setClientHost("/10.0.0.3")
            .setSubscribedTopicNames(List.of()).setSubscribedTopicRegex(null)
            .setServerAssignor(null).setClassicMemberMetadata(null);
        record("consumer_member_nulls", member, nulls, v,
            ConsumerGroupMemberMetadataValueJsonConverter.write(nulls, v));

        ConsumerGroupTargetAssignmentMetadataValue target = new ConsumerGroupTargetAssignmentMetadataValue()
            .setAssignmentEpoch(9).setAssignmentTimestamp(1700000000004L);
        record("consumer_target_metadata",
            new ConsumerGroupTargetAssignmentMetadataKey().setGroupId("cg"), target, v,
            ConsumerGroupTargetAssignmentMetadataValueJsonConverter.write(target, v));

        ConsumerGroupTargetAssignmentMemberValue targetMember = new ConsumerGroupTargetAssignmentMemberValue()
            .setTopicPartitions(List.of(new ConsumerGroupTargetAssignmentMemberValue.TopicPartition()
                .setTopicId(TOPIC_B).setPartitions(List.of(1, 4))));
        record("consumer_target_member",
            new ConsumerGroupTargetAssignmentMemberKey().setGroupId("cg").setMemberId("cm-1"),
            targetMember, v, ConsumerGroupTargetAssignmentMemberValueJsonConverter.write(targetMember, v));

        ConsumerGroupCurrentMemberAssignmentValue current = new ConsumerGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(9).setPreviousMemberEpoch(8).setState((byte) 1)
            .setAssignedPartitions(List.of(new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
                .setTopicId(TOPIC_A).setPartitions(List.of(0, 2)).setAssignmentEpochs(List.of(7, 9))))
            .setPartitionsPendingRevocation(List.of(new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions()
                .setTopicId(TOPIC_B).setPartitions(List.of(5)).setAssignmentEpochs(null)));
        record("consumer_current",
            new ConsumerGroupCurrentMemberAssignmentKey().setGroupId("cg").setMemberId("cm-1"),
            current, v, ConsumerGroupCurrentMemberAssignmentValueJsonConverter.write(current, v));

        ConsumerGroupRegularExpressionValue regex = new ConsumerGroupRegularExpressionValue()
            .setTopics(List.of("orders", "ord-2")).setVersion(12L).setTimestamp(1700000000005L);
        record("consumer_regex",
            new ConsumerGroupRegularExpressionKey().setGroupId("cg").setRegularExpression("ord.*"),
            regex, v, ConsumerGroupRegularExpressionValueJsonConverter.write(regex, v));
    }
}
