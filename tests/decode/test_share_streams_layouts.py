"""Kafka 4.0 and 4.1+ wrote ShareGroupMetadataValue and ShareGroupStatePartitionMetadataValue
differently under the same version 0: how the decoder tells them apart, the case where both
read, and share/streams records that are truncated or corrupt (DecodeError, named, never
anything else)."""

from __future__ import annotations

import pytest

from pipeline.decode import DecodeError, decode_record
from pipeline.decode.messages import SHARE_GROUP_METADATA_VALUE_40
from pipeline.decode.primitives import Reader
from pipeline.decode.reader import read_message
from tests.decode import kafka_records

SHARE_METADATA_KEY = b"\x00\x0b\x00\x01g"
STATE_PARTITIONS_KEY = b"\x00\x0f\x00\x01g"
RECORDS = kafka_records.records()


def test_when_both_layouts_read_the_value_the_newer_one_is_taken() -> None:
    # A 4.1+ value whose MetadataHash bytes also read as 4.0's tagged-field section: one tag
    # (01), number 05, six bytes (06) running exactly to the end.
    body = b"\x00\x00\x00\x07" + bytes.fromhex("0105060708090a0b") + b"\x00"
    as_40 = Reader(body)
    read_message(SHARE_GROUP_METADATA_VALUE_40, 0, as_40)
    assert as_40.remaining == 0  # the 4.0 layout reads it whole too
    row = decode_record(SHARE_METADATA_KEY, b"\x00\x00" + body)
    assert row["record_layout"] == "kafka-4.1+"
    assert (row["group_epoch"], row["metadata_hash"]) == (7, 0x0105060708090A0B)


def test_a_value_only_40_reads_and_only_with_tagged_fields_is_refused() -> None:
    # Epoch, then one tagged field: too short for 4.1+, and 4.0 never wrote a tagged field here.
    value = b"\x00\x00" + b"\x00\x00\x00\x05" + b"\x01\x00\x01\xff"
    with pytest.raises(DecodeError, match="fits neither layout.*4.0 never wrote"):
        decode_record(SHARE_METADATA_KEY, value)


@pytest.mark.parametrize(("key", "value"), [
    (SHARE_METADATA_KEY, b"\x00\x00\x00\x00\x00\x05\x00\x00"),  # 4.0 + a stray byte
    (STATE_PARTITIONS_KEY, b"\x00\x00\x01\x01"),  # no tagged-field section at all
])
def test_a_value_neither_layout_reads_says_what_each_one_found(key: bytes, value: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        decode_record(key, value)
    message = str(info.value)
    assert message.startswith(f"record type {key[1]} (")
    assert "fits neither layout: Kafka 4.1+: " in message and "; Kafka 4.0: " in message


def test_kafka_40_records_never_read_as_41_and_41_records_never_as_40() -> None:
    for name, (key, value) in RECORDS.items():
        if key[1] in (11, 15) and value is not None:
            expected = "kafka-4.0" if name.endswith(("_40", "_40_empty")) else "kafka-4.1+"
            assert decode_record(key, value)["record_layout"] == expected, name


@pytest.mark.parametrize("name", sorted(n for n, (_, v) in RECORDS.items()
                                        if v is not None and not n.startswith("share_partition")))
def test_every_truncation_of_kafkas_records_raises_a_named_decode_error(name: str) -> None:
    key, value = RECORDS[name]
    assert value is not None
    prefix = f"record type {int.from_bytes(key[:2], 'big')} ("
    for cut in range(len(value)):
        with pytest.raises(DecodeError) as info:
            decode_record(key, value[:cut])
        assert str(info.value).startswith(prefix), (cut, str(info.value))
    for cut in range(2, len(key)):
        with pytest.raises(DecodeError, match=r"^record type \d+ \(\w+\) key"):
            decode_record(key[:cut], value)
