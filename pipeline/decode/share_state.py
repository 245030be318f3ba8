"""`decode_share_state(key, value)`: one raw `__share_group_state` record (the share
coordinator's topic, KIP-932) as a share-state log row fragment (`schemas.share_state`).

The records, as Kafka's share coordinator writes them (`share-coordinator/src/main/resources/
common/message/Share{Snapshot,Update}{Key,Value}.json`; bytes checked against Kafka 4.0.0's
and 4.2.1's own serializers, tests/decode/kafka_records.py): a key is the int16 record type (0
ShareSnapshot, 1 ShareUpdate; Kafka 4.0 wrote the same int16 as the key's version) and then
GroupId, TopicId and Partition, never flexible; a value is an int16 version (0) and a flexible
message. ShareSnapshotValue: SnapshotEpoch, StateEpoch, LeaderEpoch, StartOffset, then
(Kafka 4.1+) CreateTimestamp and WriteTimestamp, and StateBatches; ShareUpdateValue:
SnapshotEpoch, LeaderEpoch, StartOffset, StateBatches. Kafka 4.2 added DeliveryCompleteCount
to both as tag 0 (default -1, written only when not -1). Kafka 4.0 wrote SnapshotEpoch as a
uint16 and no timestamps, under the same version 0: the 4.1+ layout is tried first, the 4.0
layout is taken only if it reads the value to its end and writes it back byte for byte
(`records.read_either_layout`, as for the two share-group types of `__consumer_offsets`), and
`record_layout` says which. A 4.0 value does not read as 4.1+: it is 2 bytes (an update) or 18
bytes (a snapshot) shorter before its batches, so the 4.1+ reading runs out of bytes (no
batch), or reads a non-nullable array's length from the second byte of the first batch's
first offset (an update: 0, null, below 2^48) or from the high byte of its delivery count (a
snapshot: 0 below 256 deliveries; Kafka's limit is 10). A null value is a tombstone (Kafka
writes them only under ShareSnapshot keys). Another type is UNSUPPORTED_RECORD, its key read
when it can be; a corrupt record raises `DecodeError`. The key, values and record-type table are
declared with `__consumer_offsets`'s, in `pipeline.decode.messages`. Standard library only."""

from __future__ import annotations

from typing import Any

from pipeline.decode.messages import SHARE_STATE_KEY, SHARE_STATE_TYPES
from pipeline.decode.primitives import DecodeError, Reader
from pipeline.decode.reader import read_message
from pipeline.decode.records import (
    UNSUPPORTED,
    as_bytes,
    read_either_layout,
    read_key,
    record_type_of,
)

__all__ = ["SHARE_STATE_TYPES", "decode_share_state"]


# What a value puts in the row, by name, as it reads (state_epoch and the timestamps: a
# snapshot's, and 4.1+'s; delivery_complete_count: -1 where the value does not carry it).
_VALUE_COLUMNS = ("snapshot_epoch", "state_epoch", "leader_epoch", "start_offset",
                  "delivery_complete_count", "create_timestamp", "write_timestamp")


def _key_row(rtype: int, key: bytes, value: bytes | None) -> dict[str, Any]:
    return {"event_type": UNSUPPORTED, "record_type": rtype,
            "record_version": None, "record_layout": None, "group_id": None, "topic_id": None,
            "partition": None, "raw_key": key, "raw_value": value}


def decode_share_state(key: bytes | None, value: bytes | None) -> dict[str, object]:
    """Decode one `__share_group_state` record into a row fragment (column -> value): every
    row has event_type, record_type, record_version, record_layout, group_id, topic_id,
    partition, raw_key and raw_value; a value adds its own columns (`schemas.share_state`)."""
    if key is None:
        raise DecodeError("the record has a null key").within("share-state record")
    key = as_bytes(key, "key")
    value = None if value is None else as_bytes(value, "value")
    rtype = record_type_of(key)
    row = _key_row(rtype, key, value)
    spec = SHARE_STATE_TYPES.get(rtype)
    if spec is None:  # Kafka's shard ignores a type it does not know: kept, with its key
        r = Reader(key, 2)
        try:
            fields = read_message(SHARE_STATE_KEY, 0, r)
        except DecodeError:
            return row
        if not r.remaining:
            row.update(fields)
        return row
    row.update(read_key(spec, key))
    row["event_type"] = spec.event_type
    if value is None:
        row["event_type"] = f"{spec.event_type}_TOMBSTONE"
        return row
    version, body, row["record_layout"] = read_either_layout(spec, value)
    row["record_version"] = version
    for name in _VALUE_COLUMNS:
        row[name] = body.get(name, -1 if name == "delivery_complete_count" else None)
    row["state_batches"] = [dict(b) for b in body["state_batches"]]
    return row
