"""Consumer lag as pure rules: Burrow's partition and group verdicts, time lag by
interpolation between end-offset samples, and their settings. Standard library only: the
Spark lag step (`pipeline.spark.lag.lag`) evaluates the same rules as column expressions over
whole tables, and a test holds the two equal."""

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
