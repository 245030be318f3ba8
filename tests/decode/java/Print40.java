// What the two Kafka 4.0 programs (WriteRecords40.java, WriteShareState40.java) share: in 4.0 a
// record's key is a message whose version is the record type, and either coordinator's serde
// writes it. Compiled only with those two: 4.1 changed CoordinatorRecord's key.

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;

final class Print40 {
    private Print40() { }

    /** Prints `key` of record type `type` and its version-0 `value` (null: a tombstone). */
    static void record(CoordinatorRecordSerde serde, String name, int type, ApiMessage key,
                       ApiMessage value) {
        CoordinatorRecord record = new CoordinatorRecord(
            new ApiMessageAndVersion(key, (short) type),
            value == null ? null : new ApiMessageAndVersion(value, (short) 0));
        Print.line(name, serde.serializeKey(record), serde.serializeValue(record));
    }
}
