"""The decoder's record formats against the JSON schemas Kafka ships in its own coordinator
JARs (`tests/decode/kafka_specs.py`): every record type Kafka 4.4.0 declares, key and value, is
declared here with the same fields, versions, types, tags, nullability and defaults; the
layouts only Kafka 4.0 wrote match 4.0.0's. A Kafka release that adds a field (a tagged one
included) fails here once `NEWEST` names it, instead of being skipped as an unknown tag."""

from __future__ import annotations

import pytest

from pipeline.decode.messages import RECORD_TYPES, RecordType
from pipeline.decode.share_state import SHARE_STATE_TYPES
from tests.decode.kafka_specs import KAFKA_40, NEWEST, differences, specs, strip_comments

pytestmark = pytest.mark.kafka  # Kafka's JARs, fetched by Maven into the project's cache

SHARE_COORDINATOR = "kafka-share-coordinator"


def _ours(artifact: str) -> dict[int, RecordType]:
    return SHARE_STATE_TYPES if artifact == SHARE_COORDINATOR else RECORD_TYPES


def _name(spec_name: str) -> str:
    """Kafka's record name without Key/Value (and `Legacy`, type 0's)."""
    return spec_name.removeprefix("Legacy").removesuffix("Key").removesuffix("Value")


def test_comments_are_stripped_but_not_inside_strings() -> None:
    assert strip_comments('{"a": "x//y", // why\n "b": 1}') == '{"a": "x//y", \n "b": 1}'


@pytest.mark.parametrize("spec_name", sorted(specs(NEWEST)))
def test_every_record_format_kafka_ships_is_declared_alike(spec_name: str) -> None:
    spec = specs(NEWEST)[spec_name]
    ours = _ours(spec["artifact"]).get(spec["apiKey"])
    assert ours is not None, f"{spec_name}: record type {spec['apiKey']} is not declared"
    assert ours.name == _name(spec_name)
    message = ours.key if spec["type"] == "coordinator-key" else ours.value
    assert message is not None, spec_name
    assert list(differences(message, spec)) == []


def test_every_declared_record_type_is_one_kafka_ships() -> None:
    newest, old = specs(NEWEST), specs(KAFKA_40)
    for types in (RECORD_TYPES, SHARE_STATE_TYPES):
        for rtype, ours in types.items():
            shipped = newest if f"{ours.name}Key" in newest else old  # type 9: 4.0 only
            assert f"{'Legacy' if rtype == 0 and types is RECORD_TYPES else ''}{ours.name}Key" \
                in shipped, ours.name
            if ours.value is None:  # Kafka 4.0 numbered a key's version by its record type
                old_key = shipped[f"{ours.name}Key"]
                key = {**old_key, "validVersions": "0",
                       "fields": [{**f, "versions": "0+"} for f in old_key["fields"]]}
                assert list(differences(ours.key, key)) == []


def test_the_layouts_only_kafka_40_wrote_are_its_own() -> None:
    old = specs(KAFKA_40)
    legacy = [r for types in (RECORD_TYPES, SHARE_STATE_TYPES) for r in types.values()
              if r.legacy is not None]
    assert {r.name for r in legacy} == {"ShareGroupMetadata", "ShareGroupStatePartitionMetadata",
                                        "ShareSnapshot", "ShareUpdate"}
    for r in legacy:
        assert r.legacy is not None
        assert list(differences(r.legacy, old[f"{r.name}Value"])) == [], r.name


def test_a_field_kafka_adds_is_a_difference() -> None:
    """The comparison can fail: OffsetCommitValue without its 4.3 topicId tag differs."""
    from dataclasses import replace

    from pipeline.decode.schema import Struct

    value = RECORD_TYPES[1].value
    assert value is not None
    without = replace(value, struct=Struct(value.name, value.fields[:-1]))
    found = list(differences(without, specs(NEWEST)["OffsetCommitValue"]))
    assert len(found) == 1 and found[0].startswith("OffsetCommitValue v4:")
