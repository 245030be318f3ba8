"""Prometheus metrics over the tables' newest rows and the replay's progress, pure Python (no
Spark): `catalogue` lists every metric and the contract column it reads, `exporter` turns
rows into metrics and serves them, `replay_progress` is the replay's snapshot. docs/metrics.md
documents them."""

from __future__ import annotations

from pipeline.metrics.exporter import MetricsServer, RowsCollector, Snapshot, serve
from pipeline.metrics.replay_progress import ReplayProgress, advance

__all__ = ["MetricsServer", "ReplayProgress", "RowsCollector", "Snapshot", "advance", "serve"]
