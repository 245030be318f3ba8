// Kafka 4.0's layouts of the share-group records that 4.1 changed without a new version
// number (ShareGroupMetadataValue without MetadataHash, ShareGroupStatePartitionMetadataValue
// without InitializingTopics), and 4.0's type 9 (ShareGroupPartitionMetadata, removed in 4.1),
// written with kafka-group-coordinator 4.0.0's generated classes and serde. In 4.0 a key is a
// message whose version is the record type. Output as WriteRecords.java's.

import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.*;

public class WriteRecords40 {
    static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    static final Uuid TOPIC_A = Print.TOPIC_A;
    static final Uuid TOPIC_B = Print.TOPIC_B;

    static void print(String name, int type, ApiMessage key, ApiMessage value) {
        Print40.record(SERDE, name, type, key, value);
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
