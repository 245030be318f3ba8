// Kafka 4.0's layout of the share coordinator's records, under the same value version 0 as
// 4.1+'s: SnapshotEpoch a uint16, no CreateTimestamp and WriteTimestamp in ShareSnapshotValue,
// no DeliveryCompleteCount; written with kafka-share-coordinator 4.0.0's generated classes and
// serde. In 4.0 a key is a message whose version is the record type (0 ShareSnapshot,
// 1 ShareUpdate): the same bytes as 4.1+'s. Output as WriteRecords.java's.

import java.util.List;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;
import org.apache.kafka.coordinator.share.generated.*;

public class WriteShareState40 {
    static final ShareCoordinatorRecordSerde SERDE = new ShareCoordinatorRecordSerde();

    static void print(String name, int type, ApiMessage key, ApiMessage value) {
        Print40.record(SERDE, name, type, key, value);
    }

    public static void main(String[] args) {
        ShareSnapshotKey snapshot = new ShareSnapshotKey()
            .setGroupId("share-g").setTopicId(Print.TOPIC_A).setPartition(2);
        ShareUpdateKey updates = new ShareUpdateKey()
            .setGroupId("share-g").setTopicId(Print.TOPIC_A).setPartition(2);
        print("share_snapshot_40_initialized", 0, snapshot, new ShareSnapshotValue()
            .setSnapshotEpoch(0).setStateEpoch(1).setLeaderEpoch(0).setStartOffset(-1)
            .setStateBatches(List.of()));
        print("share_snapshot_40", 0, snapshot, new ShareSnapshotValue()
            .setSnapshotEpoch(65_535).setStateEpoch(1).setLeaderEpoch(2).setStartOffset(100)
            .setStateBatches(List.of(
                new ShareSnapshotValue.StateBatch().setFirstOffset(100).setLastOffset(104)
                    .setDeliveryState((byte) 2).setDeliveryCount((short) 1),
                new ShareSnapshotValue.StateBatch().setFirstOffset(105).setLastOffset(109)
                    .setDeliveryState((byte) 0).setDeliveryCount((short) 2))));
        print("share_update_40", 1, updates, new ShareUpdateValue()
            .setSnapshotEpoch(3).setLeaderEpoch(-1).setStartOffset(-1)
            .setStateBatches(List.of(new ShareUpdateValue.StateBatch().setFirstOffset(105)
                .setLastOffset(107).setDeliveryState((byte) 2).setDeliveryCount((short) 2))));
        print("share_update_40_empty", 1, updates, new ShareUpdateValue()
            .setSnapshotEpoch(4).setLeaderEpoch(3).setStartOffset(108).setStateBatches(List.of()));
        print("share_snapshot_40_tombstone", 0, snapshot, null);
    }
}
