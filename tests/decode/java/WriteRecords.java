// Writes share-group and streams-group records of __consumer_offsets with Kafka's own generated
// message classes and the group coordinator's serde (GroupCoordinatorRecordSerde: key = int16
// record type + key body, value = int16 version + body, a tombstone has no value), as Kafka
// 4.2's coordinator writes them. Prints one record a line: name, key hex, value hex or "null".
// tests/decode/test_kafka_records.py compiles and runs it against kafka-group-coordinator 4.2.1
// and compares its output with tests/decode/kafka_records.json.

import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.*;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public class WriteRecords {
    static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    static final Uuid TOPIC_A = Print.TOPIC_A;
    static final Uuid TOPIC_B = Print.TOPIC_B;

    static void print(String name, CoordinatorRecord record) {
        Print.line(name, SERDE.serializeKey(record), SERDE.serializeValue(record));
    }

    static void record(String name, ApiMessage key, ApiMessage value) {
        print(name, CoordinatorRecord.record(key, new ApiMessageAndVersion(value, (short) 0)));
    }

    static void tombstone(String name, ApiMessage key) {
        print(name, CoordinatorRecord.tombstone(key));
    }

    public static void main(String[] args) {
        share();
        streams();
    }

    static void share() {
        ShareGroupMemberMetadataKey member = new ShareGroupMemberMetadataKey()
            .setGroupId("share-g").setMemberId("sm-1");
        record("share_member_no_rack", member, new ShareGroupMemberMetadataValue()
            .setRackId(null).setClientId("sc-1").setClientHost("/10.0.0.1")
            .setSubscribedTopicNames(List.of("orders", "payments")));
        record("share_member_rack", member, new ShareGroupMemberMetadataValue()
            .setRackId("rack-a").setClientId("sc-1").setClientHost("/10.0.0.1")
            .setSubscribedTopicNames(List.of()));
        tombstone("share_member_tombstone", member);

        ShareGroupMetadataKey group = new ShareGroupMetadataKey().setGroupId("share-g");
        record("share_metadata", group, new ShareGroupMetadataValue()
            .setEpoch(7).setMetadataHash(-1234567890123456789L));
        tombstone("share_metadata_tombstone", group);

        ShareGroupTargetAssignmentMetadataKey targetMeta =
            new ShareGroupTargetAssignmentMetadataKey().setGroupId("share-g");
        record("share_target_metadata", targetMeta,
            new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(7));
        tombstone("share_target_metadata_tombstone", targetMeta);

        ShareGroupTargetAssignmentMemberKey target = new ShareGroupTargetAssignmentMemberKey()
            .setGroupId("share-g").setMemberId("sm-1");
        record("share_target_member", target, new ShareGroupTargetAssignmentMemberValue()
            .setTopicPartitions(List.of(
                new ShareGroupTargetAssignmentMemberValue.TopicPartition()
                    .setTopicId(TOPIC_A).setPartitions(List.of(0, 1, 2)),
                new ShareGroupTargetAssignmentMemberValue.TopicPartition()
                    .setTopicId(TOPIC_B).setPartitions(List.of()))));
        tombstone("share_target_member_tombstone", target);

        ShareGroupCurrentMemberAssignmentKey current = new ShareGroupCurrentMemberAssignmentKey()
            .setGroupId("share-g").setMemberId("sm-1");
        record("share_current", current, new ShareGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(7).setPreviousMemberEpoch(6).setState((byte) 0)
            .setAssignedPartitions(List.of(
                new ShareGroupCurrentMemberAssignmentValue.TopicPartitions()
                    .setTopicId(TOPIC_A).setPartitions(List.of(0, 2)))));
        tombstone("share_current_tombstone", current);

        ShareGroupStatePartitionMetadataKey state =
            new ShareGroupStatePartitionMetadataKey().setGroupId("share-g");
        record("share_state_partitions", state, new ShareGroupStatePartitionMetadataValue()
            .setInitializingTopics(List.of(
                new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo()
                    .setTopicId(TOPIC_B).setTopicName("payments").setPartitions(List.of(3))))
            .setInitializedTopics(List.of(
                new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo()
                    .setTopicId(TOPIC_A).setTopicName("orders").setPartitions(List.of(0, 1, 2))))
            .setDeletingTopics(List.of(
                new ShareGroupStatePartitionMetadataValue.TopicInfo()
                    .setTopicId(TOPIC_B).setTopicName("old"))));
        tombstone("share_state_partitions_tombstone", state);
    }

    static StreamsGroupCurrentMemberAssignmentValue.TaskIds task(String id, List<Integer> parts,
                                                                 List<Integer> epochs) {
        return new StreamsGroupCurrentMemberAssignmentValue.TaskIds()
            .setSubtopologyId(id).setPartitions(parts).setAssignmentEpochs(epochs);
    }

    static StreamsGroupTargetAssignmentMemberValue.TaskIds target(String id, List<Integer> parts) {
        return new StreamsGroupTargetAssignmentMemberValue.TaskIds()
            .setSubtopologyId(id).setPartitions(parts);
    }

    static StreamsGroupTopologyValue.TopicInfo topic(String name, int partitions, short rf,
                                                     List<StreamsGroupTopologyValue.TopicConfig> configs) {
        return new StreamsGroupTopologyValue.TopicInfo().setName(name).setPartitions(partitions)
            .setReplicationFactor(rf).setTopicConfigs(configs);
    }

    static void streams() {
        StreamsGroupMetadataKey group = new StreamsGroupMetadataKey().setGroupId("app");
        record("streams_metadata_no_tags", group, new StreamsGroupMetadataValue()
            .setEpoch(3).setMetadataHash(42L));
        record("streams_metadata_tags", group, new StreamsGroupMetadataValue()
            .setEpoch(4).setMetadataHash(-42L).setValidatedTopologyEpoch(0)
            .setLastAssignmentConfigs(List.of(
                new StreamsGroupMetadataValue.LastAssignmentConfig()
                    .setKey("num.standby.replicas").setValue("1"))));
        tombstone("streams_metadata_tombstone", group);

        StreamsGroupMemberMetadataKey member = new StreamsGroupMemberMetadataKey()
            .setGroupId("app").setMemberId("stm-1");
        record("streams_member_nulls", member, new StreamsGroupMemberMetadataValue()
            .setInstanceId(null).setRackId(null).setClientId("app-client").setClientHost("/10.0.0.2")
            .setRebalanceTimeoutMs(300000).setTopologyEpoch(0).setProcessId("proc-1")
            .setUserEndpoint(null).setClientTags(List.of()));
        record("streams_member_set", member, new StreamsGroupMemberMetadataValue()
            .setInstanceId("inst-1").setRackId("rack-b").setClientId("app-client")
            .setClientHost("/10.0.0.2").setRebalanceTimeoutMs(60000).setTopologyEpoch(1)
            .setProcessId("proc-2")
            .setUserEndpoint(new StreamsGroupMemberMetadataValue.Endpoint()
                .setHost("app-host").setPort(65000))
            .setClientTags(List.of(new StreamsGroupMemberMetadataValue.KeyValue()
                .setKey("zone").setValue("eu-1"))));
        tombstone("streams_member_tombstone", member);

        StreamsGroupTargetAssignmentMetadataKey targetMeta =
            new StreamsGroupTargetAssignmentMetadataKey().setGroupId("app");
        record("streams_target_metadata", targetMeta,
            new StreamsGroupTargetAssignmentMetadataValue().setAssignmentEpoch(4));
        tombstone("streams_target_metadata_tombstone", targetMeta);

        StreamsGroupTargetAssignmentMemberKey targetMember =
            new StreamsGroupTargetAssignmentMemberKey().setGroupId("app").setMemberId("stm-1");
        record("streams_target_member", targetMember, new StreamsGroupTargetAssignmentMemberValue()
            .setActiveTasks(List.of(target("0", List.of(0, 1)), target("1", List.of(2))))
            .setStandbyTasks(List.of(target("0", List.of(2))))
            .setWarmupTasks(List.of()));
        tombstone("streams_target_member_tombstone", targetMember);

        StreamsGroupCurrentMemberAssignmentKey current =
            new StreamsGroupCurrentMemberAssignmentKey().setGroupId("app").setMemberId("stm-1");
        record("streams_current", current, new StreamsGroupCurrentMemberAssignmentValue()
            .setMemberEpoch(4).setPreviousMemberEpoch(3).setState((byte) 2)
            .setActiveTasks(List.of(task("0", List.of(0, 1), List.of(3, 4))))
            .setStandbyTasks(List.of(task("0", List.of(2), List.of())))
            .setWarmupTasks(List.of(task("1", List.of(0), List.of(4))))
            .setActiveTasksPendingRevocation(List.of(task("1", List.of(2), List.of(3))))
            .setStandbyTasksPendingRevocation(List.of())
            .setWarmupTasksPendingRevocation(List.of()));
        tombstone("streams_current_tombstone", current);

        StreamsGroupTopologyKey topology = new StreamsGroupTopologyKey().setGroupId("app");
        record("streams_topology", topology, new StreamsGroupTopologyValue()
            .setEpoch(0)
            .setSubtopologies(List.of(
                new StreamsGroupTopologyValue.Subtopology()
                    .setSubtopologyId("0")
                    .setSourceTopics(List.of("words"))
                    .setSourceTopicRegex(List.of())
                    .setStateChangelogTopics(List.of(topic("app-counts-changelog", 0, (short) 0,
                        List.of(new StreamsGroupTopologyValue.TopicConfig()
                            .setKey("cleanup.policy").setValue("compact")))))
                    .setRepartitionSinkTopics(List.of("app-repartition"))
                    .setRepartitionSourceTopics(List.of())
                    .setCopartitionGroups(List.of()),
                new StreamsGroupTopologyValue.Subtopology()
                    .setSubtopologyId("1")
                    .setSourceTopics(List.of())
                    .setSourceTopicRegex(List.of("in-.*"))
                    .setStateChangelogTopics(List.of())
                    .setRepartitionSinkTopics(List.of())
                    .setRepartitionSourceTopics(List.of(topic("app-repartition", 4, (short) 3,
                        List.of())))
                    .setCopartitionGroups(List.of(new StreamsGroupTopologyValue.CopartitionGroup()
                        .setSourceTopics(List.of())
                        .setSourceTopicRegex(List.of((short) 0))
                        .setRepartitionSourceTopics(List.of((short) 0)))))));
        tombstone("streams_topology_tombstone", topology);
    }
}
