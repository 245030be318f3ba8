"""Every version of the classic and consumer-group record types (0-8 and 16), as Kafka 4.4.0's
own classes wrote them (tests/decode/java/WriteEveryVersion.java, kept in
tests/decode/kafka_records.json): the decoder reads each value at its version to the very
values Kafka's own JsonConverter printed for it, and writes that body back to Kafka's bytes."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from pipeline.decode import decode_record
from pipeline.decode.messages import RECORD_TYPES
from pipeline.decode.primitives import Reader, Writer
from pipeline.decode.reader import read_message
from pipeline.decode.records import read_key, record_type_of
from pipeline.decode.writer import write_message
from tests.decode import kafka_records
from tests.decode.kafka_specs import snake

WRITTEN = {r["name"]: r for r in kafka_records.every_version()}


def _as_json(value: Any) -> Any:
    """A decoded body as Kafka's JsonConverter prints it: bytes in base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    return value


def _kafkas(value: Any) -> Any:
    """Kafka's JSON with its field names spelled as the decoder's."""
    if isinstance(value, list):
        return [_kafkas(v) for v in value]
    if isinstance(value, dict):
        return {snake(k): _kafkas(v) for k, v in value.items()}
    return value


def _only(ours: Any, theirs: Any) -> Any:
    """`ours` with only the fields `theirs` has, at every depth: the JsonConverter prints a
    version's fields, the decoder fills the others with their defaults."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        return {k: _only(ours.get(k), v) for k, v in theirs.items()}
    if isinstance(theirs, list) and isinstance(ours, list) and len(ours) == len(theirs):
        return [_only(o, t) for o, t in zip(ours, theirs, strict=True)]
    return ours


def _read(name: str) -> tuple[int, int, dict[str, Any]]:
    record = WRITTEN[name]
    key, value = bytes.fromhex(record["key"]), bytes.fromhex(record["value"])
    spec = RECORD_TYPES[record_type_of(key)]
    assert spec.value is not None
    r = Reader(value)
    version = r.int16()
    body = read_message(spec.value, version, r)
    assert not r.remaining, name
    return spec.type, version, body


def test_every_type_and_version_is_written() -> None:
    seen = {(t, v) for t, v, _ in map(_read, WRITTEN)}
    want = {(t, v) for t, r in RECORD_TYPES.items() if t <= 8 or t == 16
            for v in range(r.value.valid.low, (1 if t == 0 else r.value.valid.high + 1))
            if r.value is not None}
    assert want <= seen, sorted(want - seen)


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_each_value_decodes_to_what_kafka_wrote(name: str) -> None:
    _, version, body = _read(name)
    kafkas = _kafkas(WRITTEN[name]["json"])
    assert _only(_as_json(body), kafkas) == kafkas
    assert name.endswith(f"_v{version}") or version == 0


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_each_value_is_written_back_to_kafkas_bytes(name: str) -> None:
    rtype, version, body = _read(name)
    spec = RECORD_TYPES[rtype]
    assert spec.value is not None
    w = Writer()
    w.int16(version)
    write_message(spec.value, version, body, w)
    assert w.getvalue().hex() == WRITTEN[name]["value"]


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_each_record_becomes_an_event_log_row(name: str) -> None:
    """The key names the row; a commit carries its topic id (4.3+'s tag); a member's consumer
    protocol bytes are read into its subscription and assignment."""
    record = WRITTEN[name]
    key, value = bytes.fromhex(record["key"]), bytes.fromhex(record["value"])
    spec = RECORD_TYPES[record_type_of(key)]
    keyed = read_key(spec, key)
    row = decode_record(key, value)
    assert row["event_type"] == spec.event_type
    assert row["group_id"] == keyed.get("group", keyed.get("group_id"))
    if spec.event_type == "OFFSET_COMMIT":
        assert row["topic_id"] == record["json"].get("topicId")
    for member in row.get("members") or []:
        assert member["subscription"] == ["orders"]
        assert member["assignment"] == [{"topic": "orders", "partition": 0}]
    if name == "consumer_member_classic":
        assert row["protocols"] == [{"name": "range", "topics": ["orders"]}]
