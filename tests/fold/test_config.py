from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.fold import CoordinatorConfig

CONF = Path(__file__).resolve().parents[2] / "conf" / "coordinator.properties"


def test_shipped_coordinator_settings_are_kafkas_defaults() -> None:
    assert CoordinatorConfig.from_file(CONF) == CoordinatorConfig()


def test_kafka_property_names_set_the_fold_and_minutes_become_milliseconds() -> None:
    c = CoordinatorConfig.from_properties({"offsets.retention.minutes": "1440",
                                           "group.max.size": "10"})
    assert c.offsets_retention_ms == 1440 * 60_000
    assert c.max_size == 10


@pytest.mark.parametrize(("props", "message"), [
    ({"group.max.sise": "1"}, "unknown coordinator setting 'group.max.sise'"),
    ({"group.max.size": "ten"}, "group.max.size must be an integer, got 'ten'"),
    ({"group.min.session.timeout.ms": "9", "group.max.session.timeout.ms": "8"}, "exceeds"),
])
def test_bad_settings_are_named(props: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CoordinatorConfig.from_properties(props)
