// Records of the share coordinator's topic, __share_group_state (KIP-932), as Kafka 4.2.1's
// share coordinator writes them (kafka-share-coordinator 4.2.1's generated classes and serde):
// the snapshot an initialize writes, a snapshot with in-flight batches and the delivery-complete
// count 4.2 added (KIP-1226, a tagged field, written only when it is not -1), updates, and the
// tombstone a delete writes (always a ShareSnapshot key). A key is the int16 record type (0
// ShareSnapshot, 1 ShareUpdate) and the key message at version 0. Output as WriteRecords.java's.

import java.util.List;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;
import org.apache.kafka.coordinator.share.generated.*;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public class WriteShareState {
    static final ShareCoordinatorRecordSerde SERDE = new ShareCoordinatorRecordSerde();
    static final long T = 1_700_000_000_000L;

    static void print(String name, ApiMessage key, ApiMessage value) {
        CoordinatorRecord record = value == null ? CoordinatorRecord.tombstone(key)
            : CoordinatorRecord.record(key, new ApiMessageAndVersion(value, (short) 0));
        Print.line(name, SERDE.serializeKey(record), SERDE.serializeValue(record));
    }

    static ShareSnapshotValue.StateBatch batch(long first, long last, int state, int count) {
        return new ShareSnapshotValue.StateBatch().setFirstOffset(first).setLastOffset(last)
            .setDeliveryState((byte) state).setDeliveryCount((short) count);
    }

    static ShareUpdateValue.StateBatch update(long first, long last, int state, int count) {
        return new ShareUpdateValue.StateBatch().setFirstOffset(first).setLastOffset(last)
            .setDeliveryState((byte) state).setDeliveryCount((short) count);
    }

    public static void main(String[] args) {
        ShareSnapshotKey snapshot = new ShareSnapshotKey()
            .setGroupId("share-g").setTopicId(Print.TOPIC_A).setPartition(2);
        ShareUpdateKey updates = new ShareUpdateKey()
            .setGroupId("share-g").setTopicId(Print.TOPIC_A).setPartition(2);
        print("share_snapshot_initialized", snapshot, new ShareSnapshotValue()
            .setSnapshotEpoch(0).setStateEpoch(1).setLeaderEpoch(0).setStartOffset(-1)
            .setDeliveryCompleteCount(-1).setCreateTimestamp(T).setWriteTimestamp(T)
            .setStateBatches(List.of()));
        print("share_snapshot", snapshot, new ShareSnapshotValue()
            .setSnapshotEpoch(3).setStateEpoch(1).setLeaderEpoch(2).setStartOffset(100)
            .setDeliveryCompleteCount(7).setCreateTimestamp(T).setWriteTimestamp(T + 5_000)
            .setStateBatches(List.of(batch(100, 104, 2, 1), batch(105, 109, 0, 2),
                                     batch(110, 110, 4, 5))));
        print("share_snapshot_wide", new ShareSnapshotKey().setGroupId("é-share")
                .setTopicId(Print.TOPIC_B).setPartition(Integer.MAX_VALUE),
            new ShareSnapshotValue().setSnapshotEpoch(70_000).setStateEpoch(Integer.MAX_VALUE)
            .setLeaderEpoch(9).setStartOffset(Long.MAX_VALUE - 10).setDeliveryCompleteCount(0)
            .setCreateTimestamp(T).setWriteTimestamp(T)
            .setStateBatches(List.of(batch(Long.MAX_VALUE - 10, Long.MAX_VALUE - 1, 0,
                                           Short.MAX_VALUE))));
        print("share_update", updates, new ShareUpdateValue()
            .setSnapshotEpoch(3).setLeaderEpoch(-1).setStartOffset(-1)
            .setDeliveryCompleteCount(-1).setStateBatches(List.of(update(105, 107, 2, 2))));
        print("share_update_start", updates, new ShareUpdateValue()
            .setSnapshotEpoch(3).setLeaderEpoch(2).setStartOffset(108)
            .setDeliveryCompleteCount(2)
            .setStateBatches(List.of(update(111, 115, 2, 1), update(116, 116, 4, 5))));
        print("share_update_empty", updates, new ShareUpdateValue()
            .setSnapshotEpoch(4).setLeaderEpoch(3).setStartOffset(108)
            .setDeliveryCompleteCount(-1).setStateBatches(List.of()));
        print("share_snapshot_tombstone", snapshot, null);
    }
}
