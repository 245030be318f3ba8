"""Worked byte examples of each record layout (docs/kafka.md, Decoding real records), asserted
byte for byte in both directions."""

from __future__ import annotations

import pytest

from pipeline.decode import decode_record, encode_key, encode_record, encode_value
from pipeline.decode.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


OFFSET_KEY = h("00 01 00 08 6d 79 2d 67 72 6f 75 70 00 06 6f 72 64 65 72 73 00 00 00 03")
OFFSET_V3 = h("00 03 00 00 00 00 00 00 00 2a 00 00 00 05 00 00 00 00 01 8b cf e5 68 00")
OFFSET_V1 = h("00 01 00 00 00 00 00 00 00 2a 00 00 00 00 01 8b cf e5 68 00 00 00 01 8b f3 f1 ec 00")
OFFSET_V4 = h("00 04 00 00 00 00 00 00 00 2a 00 00 00 05 01 00 00 01 8b cf e5 68 00 00")
GROUP_KEY = h("00 02 00 08 6d 79 2d 67 72 6f 75 70")
GROUP_V3_EMPTY = h(
    "00 03 00 08 63 6f 6e 73 75 6d 65 72 00 00 00 02 ff ff ff ff"
    "00 00 01 8b cf e6 ee a0 00 00 00 00")
SUBSCRIPTION_V1 = h("00 01 00 00 00 01 00 06 6f 72 64 65 72 73 ff ff ff ff 00 00 00 00")
ASSIGNMENT_V1 = h(
    "00 01 00 00 00 01 00 06 6f 72 64 65 72 73 00 00 00 02 00 00 00 00 00 00 00 01 ff ff ff ff")

COMMIT = {"group_id": "my-group", "topic": "orders", "partition": 3, "committed_offset": 42,
          "commit_metadata": "", "commit_timestamp_ms": 1_700_000_000_000}


@pytest.mark.parametrize(("value", "version", "epoch", "expire"), [
    (OFFSET_V3, 3, 5, None),
    (OFFSET_V1, 1, None, 1_700_604_800_000),
    (OFFSET_V4, 4, 5, None),
])
def test_offset_commit_examples_decode_and_encode_exactly(
        value: bytes, version: int, epoch: int | None, expire: int | None) -> None:
    row = decode_record(OFFSET_KEY, value)
    expected = {**COMMIT, "event_type": "OFFSET_COMMIT", "record_type": 1,
                "record_version": version, "leader_epoch": epoch, "expire_timestamp_ms": expire}
    assert {k: row[k] for k in expected} == expected
    assert encode_record(expected) == (OFFSET_KEY, value)


def test_offset_commit_default_versions_are_v3_or_v1_with_an_expire_timestamp() -> None:
    row = {**COMMIT, "event_type": "OFFSET_COMMIT", "leader_epoch": 5}
    assert encode_key(row) == OFFSET_KEY
    assert encode_value(row) == OFFSET_V3
    assert encode_value({**COMMIT, "event_type": "OFFSET_COMMIT",
                         "expire_timestamp_ms": 1_700_604_800_000}) == OFFSET_V1


def test_offset_commit_accepts_the_fold_timestamp_names() -> None:
    row = {"event_type": "OFFSET_COMMIT", "group_id": "my-group", "topic": "orders",
           "partition": 3, "committed_offset": 42, "leader_epoch": 5,
           "commit_timestamp": 1_700_000_000_000}
    assert encode_record(row) == (OFFSET_KEY, OFFSET_V3)


def test_group_metadata_key_and_empty_v3_group_example() -> None:
    row = decode_record(GROUP_KEY, GROUP_V3_EMPTY)
    expected = {"event_type": "GROUP_METADATA", "group_id": "my-group", "record_version": 3,
                "protocol_type": "consumer", "generation_id": 2, "protocol": None,
                "leader_id": None, "current_state_timestamp_ms": 1_700_000_100_000, "members": []}
    assert {k: row[k] for k in expected} == expected
    assert encode_record(expected) == (GROUP_KEY, GROUP_V3_EMPTY)


def test_subscription_v1_example_is_22_bytes_both_ways() -> None:
    assert len(SUBSCRIPTION_V1) == 22
    assert encode_subscription(["orders"], version=1) == SUBSCRIPTION_V1
    decoded = decode_subscription(SUBSCRIPTION_V1)
    assert decoded["version"] == 1
    assert decoded["topics"] == ["orders"]
    assert decoded["user_data"] is None
    assert decoded["owned_partitions"] == []


def test_assignment_v1_example_is_30_bytes_both_ways() -> None:
    partitions = [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}]
    assert len(ASSIGNMENT_V1) == 30
    assert encode_assignment(partitions, version=1) == ASSIGNMENT_V1
    assert decode_assignment(ASSIGNMENT_V1) == {
        "version": 1, "partitions": partitions, "user_data": None}
