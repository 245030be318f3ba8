"""Every supported value version of every record type survives encode -> decode unchanged, and
re-encoding the decoded row gives the same bytes."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.decode import decode_record, encode_record
from pipeline.decode.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    decode_user_data,
    encode_assignment,
    encode_subscription,
    encode_user_data,
)
from tests.decode import samples

ROWS = samples.all_valid_rows()


def _id(row: dict[str, Any]) -> str:
    members = row.get("members") or [{}]
    return "-".join(str(x) for x in (
        row["event_type"], row.get("record_type"), row.get("record_version"),
        row.get("protocol"), members[0].get("subscription_version"),
        members[0].get("assignment_version")))


@pytest.mark.parametrize("row", ROWS, ids=[_id(r) for r in ROWS])
def test_row_survives_encode_then_decode(row: dict[str, Any]) -> None:
    key, value = encode_record(row)
    decoded = decode_record(key, value)
    assert {k: decoded[k] for k in row} == row
    assert decoded["raw_key"] == key and decoded["raw_value"] == value
    assert encode_record(decoded) == (key, value)


def test_every_value_version_is_covered() -> None:
    seen = {(r["record_type"], r.get("record_version")) for r in ROWS}
    assert {(t, v) for t in (0, 1, 2) for v in range(5)} <= seen
    assert {(t, 0) for t in (3, 4, 5, 6, 7, 8, 16)} <= seen
    assert {(t, None) for t in (0, 1, 2, 3, 4, 5, 6, 7, 8, 16)} <= seen
    share_streams = (10, 11, 12, 13, 14, 15, 17, 19, 20, 21, 22, 23)
    assert {(t, v) for t in share_streams for v in (0, None)} <= seen
    layouts = {(r["record_type"], r.get("record_layout")) for r in ROWS}
    assert {(t, lay) for t in (11, 15) for lay in ("kafka-4.0", "kafka-4.1+")} <= layouts


def test_tombstones_have_one_event_type_per_record_type() -> None:
    for row in samples.tombstones():
        key, value = encode_record(row)
        assert value is None
        decoded = decode_record(key, None)
        assert decoded["event_type"] == row["event_type"]
        assert str(decoded["event_type"]).endswith("TOMBSTONE")
        assert decoded["record_version"] is None


@pytest.mark.parametrize("version", range(4))
def test_subscription_round_trips_at_every_version(version: int) -> None:
    owned = [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 2},
             {"topic": "b", "partition": 1}]
    data = encode_subscription(["a", "b"], version=version, user_data=b"\x00\x01",
                               owned_partitions=owned, generation_id=9, rack_id="r")
    assert decode_subscription(data) == {
        "version": version, "topics": ["a", "b"], "user_data": b"\x00\x01",
        "owned_partitions": owned if version >= 1 else None,
        "generation_id": 9 if version >= 2 else None,
        "rack_id": "r" if version >= 3 else None,
    }


@pytest.mark.parametrize("version", range(4))
def test_assignment_round_trips_at_every_version_with_the_v0_layout(version: int) -> None:
    parts = [{"topic": "a", "partition": 0}, {"topic": "b", "partition": 5}]
    data = encode_assignment(parts, version=version, user_data=b"u")
    assert data[2:] == encode_assignment(parts, version=0, user_data=b"u")[2:]
    assert decode_assignment(data) == {"version": version, "partitions": parts, "user_data": b"u"}


def test_sticky_user_data_v1_v0_and_cooperative_sticky() -> None:
    parts = [{"topic": "a", "partition": 1}]
    v1 = encode_user_data("sticky", generation=3, partitions=parts)
    v0 = encode_user_data("sticky", generation=None, partitions=parts)
    assert v1 is not None and v0 is not None and v1 == v0 + b"\x00\x00\x00\x03"
    assert decode_user_data("sticky", v1) == {"user_data_generation": 3,
                                              "user_data_partitions": parts}
    assert decode_user_data("sticky", v0) == {"user_data_generation": None,
                                              "user_data_partitions": parts}
    coop = encode_user_data("cooperative-sticky", generation=8)
    assert coop == b"\x00\x00\x00\x08"
    assert decode_user_data("cooperative-sticky", coop)["user_data_generation"] == 8
    assert encode_user_data("range", generation=1, partitions=parts) is None


def test_unparseable_user_data_is_ignored_like_the_assignors_do() -> None:
    assert decode_user_data("sticky", b"\x7f") == {"user_data_generation": None,
                                                   "user_data_partitions": []}
    assert decode_user_data("cooperative-sticky", b"\x01") == {
        "user_data_generation": None, "user_data_partitions": None}


def test_zero_length_assignment_is_an_empty_assignment() -> None:
    row = samples.group_metadata(3, asg_version=None)
    key, value = encode_record(row)
    member = decode_record(key, value)["members"][0]  # type: ignore[index]
    assert member["assignment"] == [] and member["assignment_version"] is None


def test_v0_member_rebalance_timeout_falls_back_to_the_session_timeout() -> None:
    row = samples.group_metadata(0)
    row["members"][0]["rebalance_timeout_ms"] = 999  # v0 cannot hold it
    decoded = decode_record(*encode_record(row))
    assert decoded["members"][0]["rebalance_timeout_ms"] == 45_000  # type: ignore[index]


def test_members_may_carry_verbatim_protocol_bytes() -> None:
    row = samples.connect_group(3)
    row["members"][0].update(subscription_bytes=b"opaque-sub", assignment_bytes=b"opaque-asg")
    key, value = encode_record(row)
    assert value is not None and b"opaque-sub" in value and b"opaque-asg" in value
    assert decode_record(key, value)["members"][0]["subscription"] is None  # type: ignore[index]


def test_kip848_member_protocols_are_written_as_subscriptions_when_only_topics_are_given() -> None:
    row = {"event_type": "CONSUMER_GROUP_MEMBER_METADATA", "group_id": "g", "member_id": "m",
           "client_id": "c", "client_host": "h", "session_timeout_ms": 10_000,
           "protocols": [{"name": "range", "topics": ["x", "y"]}]}
    decoded = decode_record(*encode_record(row))
    assert decoded["protocols"] == [{"name": "range", "topics": ["x", "y"]}]
    assert decoded["session_timeout_ms"] == 10_000
