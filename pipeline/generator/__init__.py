"""A seeded, realistic synthetic `__consumer_offsets`-style log, made by simulated clients
talking to the fold as their coordinator. Standard library only."""

from __future__ import annotations

from pipeline.generator.log import LogSpec, generate

__all__ = ["LogSpec", "generate"]
