"""`decode_record(key, value)`: one raw `__consumer_offsets` record as an event-log row
fragment (docs/contract.md §1). The key's int16 picks the record type (docs/kafka.md,
Decoding real records); its body is read strictly (trailing bytes are an error). The value's
int16 is its version: a known version is read strictly; a version higher than the newest
known is read with the newest known layout and its trailing bytes are ignored (the consumer
protocol's forward-compatibility rule, applied to record values too, since KIP-915 only lets
later versions add tagged fields at the end); a version below the lowest known is an error.
A null value is the type's tombstone. Share-group (10-15) and streams-group (17, 19-23)
records decode like the KIP-848 ones. ShareGroupMetadataValue and
ShareGroupStatePartitionMetadataValue have two layouts under version 0 (Kafka 4.0's, and 4.1+'s
with MetadataHash / InitializingTopics): the 4.1+ layout is tried first and taken when it reads
the value exactly to its end; otherwise the 4.0 layout is taken only if it reads the value
exactly and writes it back byte for byte (Kafka 4.0 wrote no tagged fields there); otherwise
the record raises. The row's `record_layout` says which ("kafka-4.1+" or "kafka-4.0"). A 4.0
record never reads as 4.1+ (4.0's 5-byte ShareGroupMetadataValue is shorter than 4.1's 13;
in ShareGroupStatePartitionMetadataValue the 4.1+ reading meets a 0x00 byte where it needs a
non-null array), so when both read, 4.1+ is right. Type 9 (4.0's
ShareGroupPartitionMetadata), type 18 and unknown types become UNSUPPORTED_RECORD rows and
never raise. A corrupt record of a known type (or a
null or too-short key) raises `DecodeError`, whose message names the record type, key or
value, version, field path and byte offset; the job routes it to rejected_events as
`MALFORMED: <message>`. Standard library only; nothing is evaluated or unpickled."""

from __future__ import annotations

from typing import Any

from pipeline.decode.messages import RECORD_TYPES, RecordType
from pipeline.decode.primitives import DecodeError, Reader, Writer
from pipeline.decode.reader import message_reader, read_message
from pipeline.decode.rows import VALUE_ROWS, key_columns, tombstone_type
from pipeline.decode.schema import Message
from pipeline.decode.writer import write_message

__all__ = ["LAYOUT_40", "LAYOUT_NEW", "DecodeError", "as_bytes", "decode_record", "read_either_layout",
           "read_key", "record_type_of"]

UNSUPPORTED = "UNSUPPORTED_RECORD"
LAYOUT_NEW, LAYOUT_40 = "kafka-4.1+", "kafka-4.0"  # record_layout of types 11 and 15


def as_bytes(data: object, what: str) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise DecodeError(f"the {what} is a {type(data).__name__}, not bytes").within("record")


def record_type_of(key: bytes) -> int:
    """The record type: the key's leading big-endian int16."""
    if len(key) < 2:
        raise DecodeError(f"the key has {len(key)} bytes, fewer than its int16 record type",
                          0).within("record key")
    return int.from_bytes(key[:2], "big", signed=True)


def _context(spec: RecordType, part: str) -> str:
    return f"record type {spec.type} ({spec.name}) {part}"


def read_key(spec: RecordType, key: bytes) -> dict[str, Any]:
    r = Reader(key, 2)
    try:
        fields = message_reader(spec.key, 0)(r)
        if r.remaining:
            raise DecodeError(f"{r.remaining} trailing bytes after the key", r.pos)
    except DecodeError as e:
        raise e.within(_context(spec, "key")) from None
    return fields


def _read_value(spec: RecordType, m: Message, value: bytes) -> tuple[int, dict[str, Any]]:
    r = Reader(value)
    version = -1
    try:
        version = r.int16()
        if version < m.valid.low:
            raise DecodeError(f"unknown value version {version}", 0)
        body = message_reader(m, min(version, m.valid.high))(r)
        if version <= m.valid.high and r.remaining:
            raise DecodeError(f"{r.remaining} trailing bytes after the value", r.pos)
    except DecodeError as e:
        part = "value" if version < 0 else f"value v{version}"
        raise e.within(_context(spec, part)) from None
    return version, body


def read_either_layout(spec: RecordType, value: bytes) -> tuple[int, dict[str, Any], str]:
    """(version, body, layout) of a type Kafka wrote in two layouts under version 0."""
    assert spec.value is not None and spec.legacy is not None
    try:
        version, body = _read_value(spec, spec.value, value)
        return version, body, LAYOUT_NEW
    except DecodeError as e:
        newer = e
    if len(value) < 2 or int.from_bytes(value[:2], "big", signed=True) != 0:
        raise newer
    try:
        version, body = _read_value(spec, spec.legacy, value)
    except DecodeError as e:
        raise DecodeError(f"the value fits neither layout: Kafka 4.1+: {newer}; Kafka 4.0: {e}"
                          ).within(_context(spec, "value v0")) from None
    w = Writer()
    w.int16(version)
    write_message(spec.legacy, version, body, w)
    if w.getvalue() != value:
        raise DecodeError(f"the value fits neither layout: Kafka 4.1+: {newer}; Kafka 4.0 "
                          "reads it only with tagged fields, which 4.0 never wrote"
                          ).within(_context(spec, "value v0"))
    return version, body, LAYOUT_40


def _unsupported(rtype: int, spec: RecordType | None, key: bytes,
                 value: bytes | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "event_type": UNSUPPORTED,
        "record_type": rtype,
        "record_version": (int.from_bytes(value[:2], "big", signed=True)
                           if value is not None and len(value) >= 2 else None),
        "record_name": None if spec is None else spec.name,
        "group_id": None,
        "raw_key": key,
        "raw_value": value,
    }
    if spec is not None:
        r = Reader(key, 2)
        try:
            fields = read_message(spec.key, 0, r)
        except DecodeError:
            return row
        if not r.remaining:
            key_columns(fields, row)
    return row


def decode_record(key: bytes | None, value: bytes | None) -> dict[str, object]:
    """Decode one record into an event-log row fragment (column name -> value).

    Every row has event_type, record_type, record_version (None for a tombstone), group_id,
    raw_key and raw_value, plus the columns of its type: event-log columns
    (`schemas.events`) and the decoder's own (`pipeline.decode.columns`).
    """
    if key is None:
        raise DecodeError("the record has a null key").within("record")
    key = as_bytes(key, "key")
    value = None if value is None else as_bytes(value, "value")
    rtype = record_type_of(key)
    spec = RECORD_TYPES.get(rtype)
    if spec is None or spec.value is None:
        return _unsupported(rtype, spec, key, value)
    schema = spec.value
    row: dict[str, Any] = {
        "event_type": spec.event_type,
        "record_type": rtype,
        "record_version": None,
        "group_id": None,
        "raw_key": key,
        "raw_value": value,
    }
    key_columns(read_key(spec, key), row)
    if value is None:
        row["event_type"] = tombstone_type(spec.event_type)
        return row
    if spec.legacy is None:
        version, body = _read_value(spec, schema, value)
    else:
        version, body, row["record_layout"] = read_either_layout(spec, value)
    row["record_version"] = version
    try:
        VALUE_ROWS[spec.event_type](body, row)
    except DecodeError as e:
        raise e.within(_context(spec, f"value v{version}")) from None
    return row
