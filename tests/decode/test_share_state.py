"""`pipeline.decode.share_state` against the bytes Kafka's own share coordinator wrote
(tests/decode/kafka_records.py: kafka-share-coordinator 4.2.1 and 4.0.0), and against every
layout this decoder writes itself, random: each record reads as its writer wrote it, in the
layout it was written in, never in the other."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pipeline.decode.primitives import DecodeError, Writer
from pipeline.decode.records import LAYOUT_40, LAYOUT_NEW, _read_value
from pipeline.decode.share_state import SHARE_STATE_TYPES, decode_share_state
from pipeline.decode.writer import write_message
from schemas.share_state import SHARE_STATE_LOG
from tests.decode import kafka_records

RECORDS = kafka_records.records(share_state=True)
TOPIC_A = "AAECAwQFBgcICQoLDA0ODw"  # Print.TOPIC_A, as Kafka prints a topic id
T = 1_700_000_000_000
COLUMNS = {c.name for c in SHARE_STATE_LOG}


def decoded(name: str) -> dict[str, Any]:
    return decode_share_state(*RECORDS[name])


def batches(*rows: tuple[int, int, int, int]) -> list[dict[str, int]]:
    return [{"first_offset": f, "last_offset": last, "delivery_state": s, "delivery_count": c}
            for f, last, s, c in rows]


def test_every_record_kafka_wrote_reads_into_the_logs_columns() -> None:
    assert len(RECORDS) == 12
    for name in RECORDS:
        row = decoded(name)
        assert set(row) <= COLUMNS, (name, set(row) - COLUMNS)
        assert (row["group_id"], row["topic_id"], row["partition"]) in (
            ("share-g", TOPIC_A, 2), ("é-share", "ZGVmZ2hpamtsbW5vcHFycw", 2**31 - 1)), name


def test_a_snapshot_and_updates_of_kafka_4_2_say_what_was_written() -> None:
    row = decoded("share_snapshot")
    assert row["event_type"] == "SHARE_SNAPSHOT" and row["record_layout"] == LAYOUT_NEW
    assert (row["snapshot_epoch"], row["state_epoch"], row["leader_epoch"], row["start_offset"],
            row["delivery_complete_count"], row["create_timestamp"], row["write_timestamp"]) == (
        3, 1, 2, 100, 7, T, T + 5_000)
    assert row["state_batches"] == batches((100, 104, 2, 1), (105, 109, 0, 2), (110, 110, 4, 5))
    initialized = decoded("share_snapshot_initialized")
    assert (initialized["start_offset"], initialized["delivery_complete_count"],
            initialized["state_batches"]) == (-1, -1, [])  # the tag left out: Kafka's -1
    wide = decoded("share_snapshot_wide")
    assert (wide["snapshot_epoch"], wide["state_epoch"], wide["start_offset"],
            wide["delivery_complete_count"]) == (70_000, 2**31 - 1, 2**63 - 11, 0)
    assert wide["state_batches"] == batches((2**63 - 11, 2**63 - 2, 0, 2**15 - 1))
    update = decoded("share_update")
    assert update["event_type"] == "SHARE_UPDATE" and update["state_epoch"] is None
    assert (update["leader_epoch"], update["start_offset"], update["delivery_complete_count"],
            update["create_timestamp"]) == (-1, -1, -1, None)  # keeps them
    assert update["state_batches"] == batches((105, 107, 2, 2))
    moved = decoded("share_update_start")
    assert (moved["snapshot_epoch"], moved["leader_epoch"], moved["start_offset"],
            moved["delivery_complete_count"]) == (3, 2, 108, 2)
    assert decoded("share_update_empty")["state_batches"] == []


def test_kafka_4_0s_layout_is_told_apart_by_its_bytes() -> None:
    snapshot = decoded("share_snapshot_40")
    assert snapshot["record_layout"] == LAYOUT_40 and snapshot["record_version"] == 0
    assert (snapshot["snapshot_epoch"], snapshot["state_epoch"], snapshot["leader_epoch"],
            snapshot["start_offset"], snapshot["create_timestamp"],
            snapshot["delivery_complete_count"]) == (65_535, 1, 2, 100, None, -1)  # uint16
    assert snapshot["state_batches"] == batches((100, 104, 2, 1), (105, 109, 0, 2))
    for name in ("share_snapshot_40_initialized", "share_update_40", "share_update_40_empty"):
        row = decoded(name)
        assert row["record_layout"] == LAYOUT_40, name
        spec = SHARE_STATE_TYPES[row["record_type"]]
        with pytest.raises(DecodeError):  # the 4.1+ reading fails on 4.0's bytes
            _read_value(spec, spec.value, RECORDS[name][1] or b"")
    assert decoded("share_update_40")["state_batches"] == batches((105, 107, 2, 2))


def test_tombstones_and_unknown_types_keep_their_key() -> None:
    for name in ("share_snapshot_tombstone", "share_snapshot_40_tombstone"):
        row = decoded(name)
        assert (row["event_type"], row["record_version"], row["raw_value"]) == (
            "SHARE_SNAPSHOT_TOMBSTONE", None, None), name
    key, value = RECORDS["share_update"]
    assert decode_share_state(key, None)["event_type"] == "SHARE_UPDATE_TOMBSTONE"
    unknown = decode_share_state(b"\x00\x07" + key[2:], value)
    assert (unknown["event_type"], unknown["record_type"], unknown["group_id"],
            unknown["partition"]) == ("UNSUPPORTED_RECORD", 7, "share-g", 2)
    assert decode_share_state(b"\x00\x07\xff", value)["group_id"] is None  # an unreadable key


@pytest.mark.parametrize("cut", [1, 3, 9])
def test_a_corrupt_record_raises_naming_its_type(cut: int) -> None:
    key, value = RECORDS["share_snapshot"]
    assert value is not None
    with pytest.raises(DecodeError, match=r"record type 0 \(ShareSnapshot\)"):
        decode_share_state(key, value[:-cut])
    with pytest.raises(DecodeError, match="ShareSnapshot"):
        decode_share_state(key, value + b"\x00")
    with pytest.raises(DecodeError, match="null key"):
        decode_share_state(None, value)


def _written(layout: str, rtype: int, body: dict[str, Any]) -> bytes:
    spec = SHARE_STATE_TYPES[rtype]
    schema = spec.value if layout == LAYOUT_NEW else spec.legacy
    assert schema is not None
    w = Writer()
    w.int16(0)
    write_message(schema, 0, body, w)
    return w.getvalue()


def test_random_values_of_either_layout_read_back_in_that_layout() -> None:
    rng = random.Random(11)
    key = RECORDS["share_snapshot"][0]
    for _ in range(2_000):
        rtype = rng.randrange(2)
        layout = rng.choice((LAYOUT_NEW, LAYOUT_40))
        body: dict[str, Any] = {
            "snapshot_epoch": rng.randrange(2**16 if layout == LAYOUT_40 else 2**31),
            "leader_epoch": rng.choice((-1, 0, rng.randrange(2**31))),
            "start_offset": rng.choice((-1, rng.randrange(2**48))),
            "state_batches": [
                {"first_offset": (f := rng.randrange(2**48)), "last_offset": f + rng.randrange(500),
                 "delivery_state": rng.choice((0, 2, 4)), "delivery_count": rng.randrange(1, 11)}
                for _ in range(rng.choice((0, 0, 1, 2, 7)))],
        }
        if rtype == 0:
            body["state_epoch"] = rng.randrange(2**31)
            if layout == LAYOUT_NEW:
                body["create_timestamp"] = T + rng.randrange(10**9)
                body["write_timestamp"] = body["create_timestamp"] + rng.randrange(10**6)
        if layout == LAYOUT_NEW:
            body["delivery_complete_count"] = rng.choice((-1, rng.randrange(10**6)))
        row = decode_share_state(bytes([0, rtype]) + key[2:], _written(layout, rtype, body))
        assert row["record_layout"] == layout, body
        assert {k: row[k] for k in body} == body
