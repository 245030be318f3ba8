"""A seeded, realistic synthetic `__consumer_offsets`-style log, made by simulated clients
talking to the fold as their coordinator, with simulated producers behind its topics (their
end offsets bound what consumers commit, and are sampled for the lag tables). Standard
library only."""

from __future__ import annotations

from pipeline.generator.log import (
    LogSpec,
    end_offset_samples,
    generate,
    last_event_ms,
    producers_for,
)

__all__ = ["LogSpec", "end_offset_samples", "generate", "last_event_ms", "producers_for"]
