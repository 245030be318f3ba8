"""Lag settings (`conf/lag.properties`): Burrow's evaluator settings under their Burrow names,
with Burrow's code defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.fold.config import PropertiesSettings


@dataclass(frozen=True)
class LagConfig(PropertiesSettings):
    intervals: int = 10  # Burrow storage `intervals`: commits (and samples) in the window
    allowed_lag: int = 0  # Burrow evaluator `allowed-lag`
    minimum_complete: float = 0.0  # Burrow evaluator `minimum-complete`
    expire_group_ms: int = 604_800_000  # Burrow storage `expire-group` (7 days), in ms

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> LagConfig:
        """From `lag.burrow.*` property names; an unknown `lag.` key is an error."""
        values: dict[str, float | int] = {}
        for key, raw in props.items():
            name = PROPERTY_NAMES.get(key)
            if name is None:
                if key.startswith("lag."):
                    raise ValueError(f"unknown lag setting {key!r}; known: "
                                     f"{', '.join(sorted(PROPERTY_NAMES))}")
                continue
            try:
                values[name] = float(raw) if name == "minimum_complete" else int(raw)
            except ValueError:
                raise ValueError(f"{key} must be a number, got {raw!r}") from None
        config = cls(**values)  # type: ignore[arg-type]
        config.validate()
        return config

    def validate(self) -> None:
        if self.intervals < 1:
            raise ValueError(f"lag.burrow.intervals must be at least 1, got {self.intervals}")
        if self.allowed_lag < 0 or self.expire_group_ms <= 0:
            raise ValueError("lag.burrow.allowed.lag must not be negative and "
                             "lag.burrow.expire.group.ms must be positive")
        if not 0.0 <= self.minimum_complete <= 1.0:
            raise ValueError(f"lag.burrow.minimum.complete must be in [0, 1], got "
                             f"{self.minimum_complete}")


PROPERTY_NAMES: dict[str, str] = {
    "lag.burrow.intervals": "intervals",
    "lag.burrow.allowed.lag": "allowed_lag",
    "lag.burrow.minimum.complete": "minimum_complete",
    "lag.burrow.expire.group.ms": "expire_group_ms",
}
