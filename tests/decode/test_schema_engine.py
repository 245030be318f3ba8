"""The generic schema engine: varints, compact and nullable encodings, tagged fields (known,
unknown, the nullable tagged ClassicMemberMetadata), defaults of absent fields, error paths."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.decode.messages import CONSUMER_GROUP_MEMBER_METADATA_VALUE as MEMBER_VALUE
from pipeline.decode.messages import CONSUMER_GROUP_METADATA_VALUE, OFFSET_COMMIT_VALUE
from pipeline.decode.primitives import ZERO_UUID, DecodeError, EncodeError, Reader, Writer
from pipeline.decode.reader import read_message
from pipeline.decode.schema import (
    INT8,
    INT32,
    STRING,
    ArrayOf,
    Struct,
    Versions,
    field,
    message,
)
from pipeline.decode.writer import write_message


def write(m: Any, version: int, data: dict[str, Any]) -> bytes:
    w = Writer()
    write_message(m, version, data, w)
    return w.getvalue()


def read(m: Any, version: int, data: bytes) -> dict[str, Any]:
    r = Reader(data)
    out = read_message(m, version, r)
    assert r.remaining == 0
    return out


@pytest.mark.parametrize(("value", "encoded"), [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16383, "ff7f"),
    (16384, "808001"), (0xFFFFFFFF, "ffffffff0f"),
])
def test_unsigned_varint_encodes_and_decodes_like_kafka(value: int, encoded: str) -> None:
    w = Writer()
    w.uvarint(value)
    assert w.getvalue().hex() == encoded
    assert Reader(bytes.fromhex(encoded)).uvarint() == value


@pytest.mark.parametrize("data", ["80", "8080808080", "ffffffff1f", ""])
def test_malformed_or_overlong_varints_raise_decode_error(data: str) -> None:
    with pytest.raises(DecodeError):
        Reader(bytes.fromhex(data)).uvarint()


def test_compact_string_lengths_use_varints_across_the_one_byte_boundary() -> None:
    m = message("S", "0", "0+", field("s", STRING))
    for n, prefix in ((126, "7f"), (127, "8001"), (299, "ac02")):
        data = write(m, 0, {"s": "x" * n})
        assert data.hex().startswith(prefix)
        assert len(data) == len(bytes.fromhex(prefix)) + n + 1  # + empty tagged section
        assert read(m, 0, data)["s"] == "x" * n


def test_nullable_and_non_nullable_encodings_per_flexibility() -> None:
    m = message("N", "0-1", "1+", field("s", STRING, nullable="0+"),
                field("a", ArrayOf(INT32), nullable="0+"))
    assert write(m, 0, {"s": None, "a": None}).hex() == "ffff" + "ffffffff"
    assert write(m, 1, {"s": None, "a": None}).hex() == "00" + "00" + "00"
    assert read(m, 1, bytes.fromhex("000000")) == {"s": None, "a": None}
    strict = message("S", "0", "0+", field("s", STRING))
    with pytest.raises(DecodeError, match="non-nullable compact string is null"):
        read(strict, 0, bytes.fromhex("0000"))


def test_fields_absent_at_a_version_take_their_defaults() -> None:
    v0 = read(OFFSET_COMMIT_VALUE, 0, write(OFFSET_COMMIT_VALUE, 0, {
        "offset": 1, "metadata": "m", "commit_timestamp": 2}))
    assert v0 == {"offset": 1, "leader_epoch": -1, "metadata": "m", "commit_timestamp": 2,
                  "expire_timestamp": -1, "topic_id": ZERO_UUID}


def test_writer_leaves_out_fields_the_version_lacks() -> None:
    data = {"offset": 1, "leader_epoch": 9, "metadata": "", "commit_timestamp": 2,
            "expire_timestamp": 3}
    assert len(write(OFFSET_COMMIT_VALUE, 0, data)) == 8 + 2 + 8
    assert len(write(OFFSET_COMMIT_VALUE, 2, data)) == 8 + 2 + 8
    assert len(write(OFFSET_COMMIT_VALUE, 3, data)) == 8 + 4 + 2 + 8


def test_unknown_tagged_fields_are_skipped_by_their_size() -> None:
    data = write(CONSUMER_GROUP_METADATA_VALUE, 0, {
        "epoch": 5, "_unknown_tagged": {1: b"\x00" * 8, 7: b"\xff" * 300}})
    # epoch, then 2 tagged fields: tag 1 size 8, tag 7 size 300 (varint ac 02)
    assert data[:4].hex() == "00000005"
    assert data[4:7].hex() == "020108"
    assert data[15:18].hex() == "07ac02"
    assert read(CONSUMER_GROUP_METADATA_VALUE, 0, data) == {"epoch": 5, "metadata_hash": 0}


def test_known_tagged_field_is_read_and_written_only_when_not_default() -> None:
    assert write(CONSUMER_GROUP_METADATA_VALUE, 0, {"epoch": 5}).hex() == "0000000500"
    data = write(CONSUMER_GROUP_METADATA_VALUE, 0, {"epoch": 5, "metadata_hash": 258})
    assert data.hex() == "00000005" + "01" + "00" + "08" + "0000000000000102"
    assert read(CONSUMER_GROUP_METADATA_VALUE, 0, data) == {"epoch": 5, "metadata_hash": 258}


def test_tagged_field_that_overruns_or_underuses_its_size_is_malformed() -> None:
    good = bytes.fromhex("00000005" "01" "00" "08" "0000000000000102")
    with pytest.raises(DecodeError, match="runs past the end"):
        read(CONSUMER_GROUP_METADATA_VALUE, 0, good[:-1])
    bad = bytes.fromhex("00000005" "01" "00" "09" "0000000000000102" "00")
    with pytest.raises(DecodeError, match="declares 9 bytes but uses 8"):
        read(CONSUMER_GROUP_METADATA_VALUE, 0, bad)


MEMBER = {"instance_id": None, "rack_id": None, "client_id": "c", "client_host": "h",
          "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
          "rebalance_timeout_ms": 1000, "server_assignor": None}
MEMBER_BODY = "00" "00" "0263" "0268" "02" "0274" "00" "000003e8" "00"


def test_a_null_classic_member_metadata_is_written_as_a_tag_with_a_null_marker() -> None:
    """As Kafka 4.4 writes a consumer-protocol member (tests/decode/kafka_records.json,
    consumer_member_nulls): its default is the empty struct, so a null is written, and a
    record without the tag reads as that empty struct."""
    data = write(MEMBER_VALUE, 0, {**MEMBER, "classic_member_metadata": None})
    assert data.hex() == MEMBER_BODY + "01" "00" "01" "00"
    assert read(MEMBER_VALUE, 0, data) == {**MEMBER, "classic_member_metadata": None}
    assert read(MEMBER_VALUE, 0, bytes.fromhex(MEMBER_BODY + "00")) == {
        **MEMBER, "classic_member_metadata": {"session_timeout_ms": 0, "supported_protocols": []}}


def test_classic_member_metadata_present_has_size_plus_one_and_a_presence_marker() -> None:
    classic = {"session_timeout_ms": 45000,
               "supported_protocols": [{"name": "range", "metadata": b"\x01\x02"}]}
    data = write(MEMBER_VALUE, 0, {**MEMBER, "classic_member_metadata": classic})
    struct_hex = "0000afc8" "02" "0672616e6765" "03" "0102" "00" "00"
    assert len(bytes.fromhex(struct_hex)) == 16
    assert data.hex() == MEMBER_BODY + "01" + "00" + "11" + "01" + struct_hex
    assert read(MEMBER_VALUE, 0, data)["classic_member_metadata"] == classic
    # a zero presence marker reads as null, like Kafka's `readUnsignedVarint() <= 0`
    null_marker = bytes.fromhex(MEMBER_BODY + "01" + "00" + "01" + "00")
    assert read(MEMBER_VALUE, 0, null_marker)["classic_member_metadata"] is None


def test_non_tagged_nullable_struct_uses_an_int8_marker() -> None:
    inner = Struct("Inner", (field("x", INT8),))
    m = message("Outer", "0", "none", field("inner", inner, nullable="0+"))
    assert write(m, 0, {"inner": None}).hex() == "ff"
    assert write(m, 0, {"inner": {"x": 3}}).hex() == "0103"
    assert read(m, 0, bytes.fromhex("0103")) == {"inner": {"x": 3}}


def test_versions_parse_kafka_ranges() -> None:
    assert Versions.parse("3+") == Versions(3)
    assert 2 not in Versions.parse("3+")
    assert 1 in Versions.parse("1") and 2 not in Versions.parse("1")
    assert 4 in Versions.parse("0-4") and 5 not in Versions.parse("0-4")
    assert 0 not in Versions.parse("none")


def test_decode_error_names_the_field_path_and_byte_offset() -> None:
    m = message("M", "0", "0+", field("items", ArrayOf(Struct("Item", (field("name", STRING),)))))
    data = bytes.fromhex("03" "0261" "00" "0562")  # second item's name claims 4 bytes, has 1
    with pytest.raises(DecodeError) as info:
        read(m, 0, data)
    assert str(info.value) == "items[1].name: string needs 4 bytes but 1 remain at byte offset 5"


def test_array_count_beyond_the_remaining_bytes_is_refused_before_allocating() -> None:
    m = message("M", "0", "none", field("xs", ArrayOf(INT32)))
    with pytest.raises(DecodeError, match="array count 2147483647 exceeds"):
        read(m, 0, bytes.fromhex("7fffffff"))


def test_writer_reports_bad_values_as_encode_errors() -> None:
    with pytest.raises(EncodeError, match="OffsetCommitValue.metadata"):
        write(OFFSET_COMMIT_VALUE, 3, {"offset": 1, "metadata": None, "commit_timestamp": 1})
    with pytest.raises(EncodeError, match="offset"):
        write(OFFSET_COMMIT_VALUE, 3, {"offset": 2**70, "metadata": "", "commit_timestamp": 1})
    with pytest.raises(EncodeError, match="no version 9"):
        write(OFFSET_COMMIT_VALUE, 9, {})


def test_writer_refuses_strings_kafka_would_not_read() -> None:
    m = message("S", "0-1", "1+", field("s", STRING))
    with pytest.raises(EncodeError, match="exceeds 32767"):
        write(m, 1, {"s": "x" * 40_000})
    with pytest.raises(EncodeError, match="S.s"):
        write(m, 0, {"s": "x" * 40_000})


def test_writer_refuses_a_non_mapping_struct_value() -> None:
    inner = Struct("Inner", (field("x", INT8),))
    m = message("Outer", "0", "none", field("inner", inner))
    with pytest.raises(EncodeError, match="Outer.inner: Inner: expected a mapping"):
        write(m, 0, {"inner": 5})
