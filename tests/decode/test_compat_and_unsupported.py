"""Forward compatibility (higher value versions read with the newest layout, trailing bytes
ignored), strictness at known versions, unsupported record types, and malformed input."""

from __future__ import annotations

import pytest

from pipeline.decode import DecodeError, EncodeError, decode_record, encode_record
from pipeline.decode.consumer_protocol import decode_subscription, encode_subscription
from tests.decode import samples

TRAILER = b"\x00\x07future"


def _bump(value: bytes, version: int) -> bytes:
    return version.to_bytes(2, "big") + value[2:] + TRAILER


@pytest.mark.parametrize(("row", "newer"), [
    (samples.offset_commit(4), 5),
    (samples.offset_commit(4), 32767),
    (samples.group_metadata(4, "cooperative-sticky"), 6),
    *((row, 1) for row in samples.kip848_rows()),
])
def test_higher_value_version_is_read_with_the_newest_layout_ignoring_trailing_bytes(
        row: dict[str, object], newer: int) -> None:
    key, value = encode_record(row)
    assert value is not None
    decoded = decode_record(key, _bump(value, newer))
    assert decoded["record_version"] == newer
    assert {k: decoded[k] for k in row if k != "record_version"} == {
        k: v for k, v in row.items() if k != "record_version"}


def test_higher_consumer_protocol_version_is_read_as_v3_ignoring_trailing_bytes() -> None:
    data = encode_subscription(["t"], version=3, generation_id=5, rack_id="r")
    decoded = decode_subscription(b"\x00\x09" + data[2:] + TRAILER)
    assert decoded["version"] == 9
    assert (decoded["topics"], decoded["generation_id"], decoded["rack_id"]) == (["t"], 5, "r")


@pytest.mark.parametrize("row", [samples.offset_commit(3), samples.group_metadata(2),
                                 samples.kip848_rows()[0]])
def test_trailing_bytes_at_a_known_version_are_malformed(row: dict[str, object]) -> None:
    key, value = encode_record(row)
    assert value is not None
    with pytest.raises(DecodeError, match="trailing bytes after the value"):
        decode_record(key, value + b"\x00")
    with pytest.raises(DecodeError, match="trailing bytes after the key"):
        decode_record(key + b"\x00", value)


def test_negative_value_version_is_malformed() -> None:
    key, value = encode_record(samples.offset_commit(3))
    assert value is not None
    with pytest.raises(DecodeError, match="unknown value version -2"):
        decode_record(key, b"\xff\xfe" + value[2:])


def test_decode_error_message_names_type_version_field_and_offset() -> None:
    key, value = encode_record(samples.offset_commit(3))
    assert value is not None
    with pytest.raises(DecodeError) as info:
        decode_record(key, value[:12])
    assert str(info.value) == ("record type 1 (OffsetCommit) value v3: leader_epoch: "
                               "int32 needs 4 bytes but 2 remain at byte offset 10")


def test_corrupt_subscription_inside_a_group_snapshot_is_malformed_with_its_path() -> None:
    row = samples.group_metadata(3)
    row["members"][1]["subscription_bytes"] = b"\x00\x01\x00\x00\x00\x05"
    with pytest.raises(DecodeError) as info:
        decode_record(*encode_record(row))
    message = str(info.value)
    assert message.startswith("record type 2 (GroupMetadata) value v3: members[1].subscription")
    assert "of the subscription bytes" in message


def test_kafka_40_share_partition_metadata_is_labelled_unsupported_with_its_group() -> None:
    key = b"\x00\x09\x00\x02sg"  # type 9, ShareGroupPartitionMetadata: Kafka 4.0 only
    for value in (b"\x00\x00\x01\x02\x03", b"\x00", None):
        row = decode_record(key, value)
        assert row["event_type"] == "UNSUPPORTED_RECORD"
        assert row["record_type"] == 9
        assert row["record_name"] == "ShareGroupPartitionMetadata"
        assert row["group_id"] == "sg"
        assert row["raw_key"] == key and row["raw_value"] == value


@pytest.mark.parametrize("record_type", [*range(10, 16), 17, *range(19, 24)])
def test_share_and_streams_records_that_do_not_decode_raise(record_type: int) -> None:
    member_key = record_type in (10, 13, 14, 19, 21, 22)
    key = record_type.to_bytes(2, "big") + b"\x00\x02sg" + (b"\x00\x01m" if member_key else b"")
    for value in (b"\x00\x00\x01\x02\x03", b"\x00"):
        with pytest.raises(DecodeError, match=f"^record type {record_type} \\("):
            decode_record(key, value)
    assert decode_record(key, None)["event_type"].endswith("_TOMBSTONE")  # type: ignore[union-attr]


@pytest.mark.parametrize("key", [
    b"\x00\x63\x00\x02sg", b"\x00\x12\x00\x02sg", b"\x00\x18\x00\x02sg", b"\xff\xff",
    b"\x7f\xff garbage",
    b"\x00\x09\xff\xff\xff",  # a type-9 key that does not decode
])
def test_unknown_streams_and_future_types_are_unsupported_and_never_raise(key: bytes) -> None:
    for value in (b"\x00\x00anything", None, b""):
        row = decode_record(key, value)
        assert row["event_type"] == "UNSUPPORTED_RECORD"
        assert row["record_type"] == int.from_bytes(key[:2], "big", signed=True)
        assert row["raw_value"] == value


def test_unsupported_rows_can_be_re_emitted_verbatim() -> None:
    row = decode_record(b"\x00\x63abc", b"\x00\x01xyz")
    assert encode_record(row) == (b"\x00\x63abc", b"\x00\x01xyz")


@pytest.mark.parametrize("key", [None, b"", b"\x00"])
def test_null_or_short_key_is_malformed(key: bytes | None) -> None:
    with pytest.raises(DecodeError, match="key"):
        decode_record(key, b"\x00\x03")


def test_bytearray_and_memoryview_inputs_are_accepted() -> None:
    key, value = encode_record(samples.offset_commit(3))
    assert value is not None
    row = decode_record(bytearray(key), memoryview(value))  # type: ignore[arg-type]
    assert row["committed_offset"] == 42 and row["raw_key"] == key


def test_invalid_utf8_is_replaced_like_java_does() -> None:
    key = b"\x00\x02\x00\x03a\xffb"
    assert decode_record(key, None)["group_id"] == "a\ufffdb"


def test_rows_that_cannot_be_encoded_raise_encode_error() -> None:
    bad_rows: list[dict[str, object]] = [
        {"event_type": "UNSUPPORTED_RECORD"},
        {"event_type": "JOIN", "group_id": "g"},
        {"event_type": "OFFSET_COMMIT", "group_id": "g", "topic": "t", "partition": 0},
        {"event_type": "OFFSET_COMMIT", "group_id": None, "topic": "t", "partition": 0,
         "committed_offset": 1},
        {"event_type": "OFFSET_COMMIT", "record_type": 2, "group_id": "g", "topic": "t",
         "partition": 0, "committed_offset": 1},
        {"event_type": "GROUP_METADATA", "group_id": "g", "generation_id": 1,
         "protocol_type": "consumer", "members": [{"member_id": None}]},
    ]
    for row in bad_rows:
        with pytest.raises(EncodeError):
            encode_record(row)
