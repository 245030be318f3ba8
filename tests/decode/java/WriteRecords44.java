// The tagged fields Kafka 4.3 and 4.4 added to share and streams records, written with
// kafka-group-coordinator 4.4.0's generated classes and serde: AssignmentTimestamp (tag 0) of
// the target assignment metadata (KIP-1263, 4.3), and StreamsGroupMetadataValue's
// topology-description epochs (tags 2 and 3, 4.4) with a null LastAssignmentConfigs (nullable
// from 4.4). Output as WriteRecords.java's.

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.*;
import org.apache.kafka.server.common.ApiMessageAndVersion;

public class WriteRecords44 {
    static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();

    static void record(String name, ApiMessage key, ApiMessage value) {
        CoordinatorRecord record =
            CoordinatorRecord.record(key, new ApiMessageAndVersion(value, (short) 0));
        Print.line(name, SERDE.serializeKey(record), SERDE.serializeValue(record));
    }

    public static void main(String[] args) {
        record("share_target_metadata_44",
            new ShareGroupTargetAssignmentMetadataKey().setGroupId("share-g"),
            new ShareGroupTargetAssignmentMetadataValue()
                .setAssignmentEpoch(8).setAssignmentTimestamp(1700000000123L));
        record("streams_target_metadata_44",
            new StreamsGroupTargetAssignmentMetadataKey().setGroupId("app"),
            new StreamsGroupTargetAssignmentMetadataValue()
                .setAssignmentEpoch(5).setAssignmentTimestamp(1700000000456L));
        record("streams_metadata_44", new StreamsGroupMetadataKey().setGroupId("app"),
            new StreamsGroupMetadataValue()
                .setEpoch(5).setMetadataHash(7L).setValidatedTopologyEpoch(1)
                .setLastAssignmentConfigs(null)
                .setStoredDescriptionTopologyEpoch(1).setFailedDescriptionTopologyEpoch(0));
    }
}
