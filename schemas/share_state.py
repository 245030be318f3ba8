"""The share-state log: `__share_group_state`, the share coordinator's topic (KIP-932), as rows.

A share group commits no offsets: where each share partition's consumption stands (its start
offset, the in-flight records after it and their delivery states) is written by the share
coordinator, one key per (group, topic id, partition), as ShareSnapshot records (the whole
state) and ShareUpdate records (changes to merge into it); a ShareSnapshot tombstone deletes a
key's state. `jobs/ingest.py` reads that topic into a Delta log of its own, one row per record,
these columns; `pipeline.decode.share_state` decodes a record into them. Kafka 4.0 wrote both
values in another layout under the same version 0 (SnapshotEpoch a uint16, no timestamps);
`record_layout` says which the bytes were. Kafka 4.2 added DeliveryCompleteCount (KIP-1226),
a tagged field: -1 where a record does not carry it, as Kafka reads it.
"""

from __future__ import annotations

from schemas.columns import Column, struct

SHARE_STATE_EVENT_TYPES = ("SHARE_SNAPSHOT", "SHARE_UPDATE", "SHARE_SNAPSHOT_TOMBSTONE",
                           "SHARE_UPDATE_TOMBSTONE", "UNSUPPORTED_RECORD", "MALFORMED_RECORD")

# Delivery states as the share coordinator persists them (ACQUIRED is never persisted).
DELIVERY_STATES = {0: "AVAILABLE", 2: "ACKNOWLEDGED", 4: "ARCHIVED"}

STATE_BATCH = struct((
    Column("first_offset", "bigint", False),
    Column("last_offset", "bigint", False),
    Column("delivery_state", "tinyint", False,
           "0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED (Kafka's PersisterStateBatch)"),
    Column("delivery_count", "smallint", False, "deliveries of these records so far"),
))

SHARE_STATE_LOG: tuple[Column, ...] = (
    Column("log_partition", "int", doc="partition of __share_group_state"),
    Column("log_offset", "bigint", doc="offset in that partition"),
    Column("event_time", "timestamp", doc="the record's timestamp"),
    Column("event_type", "string", False, ", ".join(SHARE_STATE_EVENT_TYPES)),
    Column("record_type", "int", doc="the key's int16: 0 ShareSnapshot, 1 ShareUpdate"),
    Column("record_version", "int", doc="the value's version (null for a tombstone)"),
    Column("record_layout", "string",
           doc="kafka-4.1+ or kafka-4.0: the value's layout under version 0"),
    Column("group_id", "string"),
    Column("topic_id", "string", doc="Kafka's base64 topic id"),
    Column("partition", "int"),
    Column("snapshot_epoch", "int", doc="the snapshot the record belongs to"),
    Column("state_epoch", "int", doc="ShareSnapshot: the state's epoch (only initialize "
                                     "changes it); null in a ShareUpdate"),
    Column("leader_epoch", "int", doc="the share partition leader's epoch; -1 in an update "
                                      "that keeps it"),
    Column("start_offset", "bigint",
           doc="the share-partition start offset (SPSO); -1: not initialized, or, in an "
               "update, unchanged"),
    Column("delivery_complete_count", "int",
           doc="records at or after the start offset whose delivery is complete (Kafka 4.2+, "
               "KIP-1226); -1 where the record does not say"),
    Column("create_timestamp", "timestamp", doc="ShareSnapshot, Kafka 4.1+: when the state "
                                                "was made"),
    Column("write_timestamp", "timestamp", doc="ShareSnapshot, Kafka 4.1+: when this "
                                               "snapshot was written"),
    Column("state_batches", f"array<{STATE_BATCH}>",
           doc="in-flight records after the start offset, by delivery state and count"),
    Column("raw_key", "binary"),
    Column("raw_value", "binary"),
    Column("decode_error", "string", doc="why the record could not be decoded (then only the "
                                         "position and raw bytes are set)"),
)

# What the replay writes (`pipeline.share.state.history_row`): one row per record applied, the
# key's state after it, as kafka-share-groups.sh --describe --offsets and Kafka's share
# coordinator read it then.
SHARE_PARTITION_STATE: tuple[Column, ...] = (
    Column("group_id", "string", False),
    Column("topic_id", "string", False, "Kafka's base64 topic id"),
    Column("partition", "int", False),
    Column("event_time", "timestamp", doc="the record's timestamp"),
    Column("log_partition", "int", doc="the record's position in __share_group_state"),
    Column("log_offset", "bigint"),
    Column("change", "string", False,
           "SNAPSHOT (the state written whole), UPDATE (merged into it) or DELETED (a "
           "tombstone: the row's state columns are null)"),
    Column("record_layout", "string", doc="kafka-4.1+ or kafka-4.0"),
    Column("snapshot_epoch", "int"),
    Column("state_epoch", "int", doc="0 for a state an update started"),
    Column("leader_epoch", "int"),
    Column("start_offset", "bigint", doc="the share-partition start offset (SPSO); -1 "
                                         "before the partition is initialized"),
    Column("delivery_complete_count", "int",
           doc="Kafka 4.2+: records at or after the start offset whose delivery is complete; "
               "-1 unknown (Kafka 4.0/4.1 records)"),
    Column("create_timestamp", "timestamp", doc="when the state was made (4.1+ snapshots)"),
    Column("write_timestamp", "timestamp", doc="when its last snapshot was written"),
    Column("in_flight", "bigint", doc="records in the state's batches"),
    Column("available", "bigint", doc="of them, AVAILABLE (to be delivered again)"),
    Column("acknowledged", "bigint", doc="of them, ACKNOWLEDGED"),
    Column("archived", "bigint", doc="of them, ARCHIVED (delivery limit reached or rejected)"),
    Column("state_batches", f"array<{STATE_BATCH}>", doc="the batches themselves"),
)

# The tables a replay or backfill given a share-state log writes (`--share-state`): the
# history, appended to. What a stream continues from between micro-batches is each key's
# last row of it, kept in the warehouse's `_share_state` (same columns, MERGEd by key).
SHARE_TABLES: dict[str, tuple[Column, ...]] = {"share_partition_state": SHARE_PARTITION_STATE}
SHARE_KEY = ("group_id", "topic_id", "partition")
SHARE_STATE_TOPIC = "__share_group_state"
