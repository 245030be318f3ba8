// Kafka 4.0's layouts of the share-group records that 4.1 changed without a new version
// number (ShareGroupMetadataValue without MetadataHash, ShareGroupStatePartitionMetadataValue
// without InitializingTopics), and 4.0's type 9 (ShareGroupPartitionMetadata, removed in 4.1),
// written with kafka-group-coordinator 4.0.0's generated classes and serde. In 4.0 a key is a
// message whose version is the record type. Output as WriteRecords.java's.

import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.*;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public class WriteRecords40 {
    static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    static final Uuid TOPIC_A = new Uuid(0x0001020304050607L, 0x08090a0b0c0d0e0fL);
    static final Uuid TOPIC_B = new Uuid(0x6465666768696a6bL, 0x6c6d6e6f70717273L);

    static String hex(byte[] bytes) {
        StringBuilder out = new StringBuilder();
        for (byte b : bytes) out.append(String.format("%02x", b));
        return out.toString();
    }

    static void print(String name, int type, ApiMessage key, ApiMessage value) {
        CoordinatorRecord record = new CoordinatorRecord(
            new ApiMessageAndVersion(key, (short) type),
            value == null ? null : new ApiMessageAndVersion(value, (short) 0));
        byte[] bytes = SERDE.serializeValue(record);
        System.out.println(name + " " + hex(SERDE.serializeKey(record)) + " "
            + (bytes == null ? "null" : hex(bytes)));
    }

    public static void main(String[] args) {
        ShareGroupPartitionMetadataKey partitions =
            new ShareGroupPartitionMetadataKey().setGroupId("share-g");
        print("share_partition_metadata_40", 9, partitions, new ShareGroupPartitionMetadataValue()
            .setTopics(List.of(new ShareGroupPartitionMetadataValue.TopicMetadata()
                .setTopicId(TOPIC_A).setTopicName("orders").setNumPartitions(3)
                .setPartitionMetadata(List.of()))));

        ShareGroupMetadataKey group = new ShareGroupMetadataKey().setGroupId("share-g");
        print("share_metadata_40", 11, group, new ShareGroupMetadataValue().setEpoch(5));
        print("share_metadata_40_tombstone", 11, group, null);

        ShareGroupStatePartitionMetadataKey state =
            new ShareGroupStatePartitionMetadataKey().setGroupId("share-g");
        print("share_state_partitions_40", 15, state, new ShareGroupStatePartitionMetadataValue()
            .setInitializedTopics(List.of(
                new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo()
                    .setTopicId(TOPIC_A).setTopicName("orders").setPartitions(List.of(0, 1, 2))))
            .setDeletingTopics(List.of(
                new ShareGroupStatePartitionMetadataValue.TopicInfo()
                    .setTopicId(TOPIC_B).setTopicName("old"))));
        print("share_state_partitions_40_empty", 15, state,
            new ShareGroupStatePartitionMetadataValue()
                .setInitializedTopics(List.of()).setDeletingTopics(List.of()));
    }
}
