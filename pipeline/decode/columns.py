"""What `decode_record` emits beyond the event log's columns (`schemas.events.EVENT_COLUMNS`,
docs/contract.md §1), as Spark DDL types. Every other key it emits is an event-log column of
the same name, its type stated there once.

`DECODER_ONLY_COLUMNS`: the record's own header (type, version, name) and the timestamps
as integer milliseconds under `_ms` names; `MS_TO_TIMESTAMP` says which event-log timestamp
column each one feeds, for the Spark adapter to convert. `EXTRA_MEMBER_FIELDS`: the keys of
each GROUP_METADATA member struct beyond the event log's `members` struct (`schemas.events
.MEMBER`): what the embedded subscription and assignment carry."""

from __future__ import annotations

TOPIC_PARTITION_LIST = "array<struct<topic:string,partition:int>>"

DECODER_ONLY_COLUMNS: dict[str, str] = {
    "record_type": "int",  # the key's int16 record type
    "record_version": "int",  # the value's int16 version; null for a tombstone
    "record_name": "string",  # UNSUPPORTED_RECORD: Kafka's record name when known
    # OFFSET_COMMIT / GROUP_METADATA timestamps, integer ms (see MS_TO_TIMESTAMP)
    "commit_timestamp_ms": "bigint",
    "expire_timestamp_ms": "bigint",
    "current_state_timestamp_ms": "bigint",
}

EXTRA_MEMBER_FIELDS: dict[str, str] = {
    "owned_partitions": TOPIC_PARTITION_LIST,  # subscription v1+
    "subscription_version": "int",
    "assignment_version": "int",  # null for zero-length assignment bytes
    "subscription_generation_id": "int",  # subscription v2+; null for -1
    "rack_id": "string",  # subscription v3+
    "user_data_generation": "int",  # sticky v1 / cooperative-sticky user data
    "user_data_partitions": TOPIC_PARTITION_LIST,  # sticky user data: previous assignment
}

MS_TO_TIMESTAMP: dict[str, str] = {
    "commit_timestamp_ms": "commit_timestamp",
    "expire_timestamp_ms": "expire_timestamp",
    "current_state_timestamp_ms": "current_state_timestamp",
}
