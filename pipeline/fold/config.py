"""Coordinator settings the fold honours, with Kafka's defaults, read from Kafka's property names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Self

from pipeline.properties import read_properties

INT32_MAX = 2**31 - 1


class PropertiesSettings:
    """Settings a `.properties` file gives (`read_properties`), parsed by the class's own
    `from_properties`."""

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> Self:
        raise NotImplementedError

    @classmethod
    def from_file(cls, path: str | Path) -> Self:
        return cls.from_properties(read_properties(path))


@dataclass(frozen=True)
class CoordinatorConfig(PropertiesSettings):
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    max_size: int = INT32_MAX
    offsets_retention_ms: int = 10080 * 60_000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    offsets_topic_num_partitions: int = 50
    new_member_join_timeout_ms: int = 300_000  # hard-coded in Kafka, not a broker setting
    recent_positions: int = 16  # how many applied positions a group remembers for DUPLICATE

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> CoordinatorConfig:
        """Build from Kafka's property names; unknown `group.`/`offset` keys are an error."""
        values: dict[str, int] = {}
        for key, raw in props.items():
            target = PROPERTY_NAMES.get(key)
            if target is None:
                if key.startswith(("group.", "offset")):
                    raise ValueError(f"unknown coordinator setting {key!r}")
                continue
            name, scale = target
            try:
                values[name] = int(raw) * scale
            except ValueError:
                raise ValueError(f"{key} must be an integer, got {raw!r}") from None
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value < 0:
                raise ValueError(f"{f.name} must not be negative, got {value!r}")
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise ValueError("group.min.session.timeout.ms exceeds group.max.session.timeout.ms")
        if self.offsets_retention_check_interval_ms == 0:
            raise ValueError("offsets.retention.check.interval.ms must be positive")
        if self.offsets_topic_num_partitions == 0:
            raise ValueError("offsets.topic.num.partitions must be positive")


# Kafka property name -> (field, multiplier to milliseconds or 1).
PROPERTY_NAMES: dict[str, tuple[str, int]] = {
    "group.initial.rebalance.delay.ms": ("initial_rebalance_delay_ms", 1),
    "group.min.session.timeout.ms": ("min_session_timeout_ms", 1),
    "group.max.session.timeout.ms": ("max_session_timeout_ms", 1),
    "group.max.size": ("max_size", 1),
    "offsets.retention.minutes": ("offsets_retention_ms", 60_000),
    "offsets.retention.check.interval.ms": ("offsets_retention_check_interval_ms", 1),
    "offset.metadata.max.bytes": ("offset_metadata_max_bytes", 1),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", 1),
    "replay.recent.positions": ("recent_positions", 1),
}
