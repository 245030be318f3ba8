"""Consumer lag as pure rules: Burrow's partition and group verdicts, time lag by
interpolation between end-offset samples, and their settings. Standard library only: the
incremental engine (`engine`, `batch`) applies them per key, and Spark runs that engine on
its executors for the stream and the backfill alike (`pipeline.spark.lag.lagstate`)."""

from __future__ import annotations

from pipeline.lag.config import LagConfig
from pipeline.lag.rules import (
    Commit,
    Sample,
    Verdict,
    group_status,
    partition_status,
    time_lag,
)

__all__ = ["Commit", "LagConfig", "Sample", "Verdict", "group_status", "partition_status",
           "time_lag"]
