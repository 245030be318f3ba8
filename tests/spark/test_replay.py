"""The streaming replay on real Spark and Delta: it equals the pure fold, whole tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.generator import LogSpec, generate
from pipeline.spark.eventlog import write_event_log
from tests.spark.backends import assert_same_tables, pure_tables, streaming_tables

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("kind", "bad"), [("journal", 0.03), ("offsets-topic", 0.03)])
def test_streaming_replay_writes_the_tables_the_pure_fold_computes(
        spark: SparkSession, tmp_path: Path, kind: str, bad: float) -> None:
    events = generate(LogSpec(groups=12, events=4000, seed=11, log_kind=kind, bad_rows=bad))
    write_event_log(spark, events, str(tmp_path / "events"), commits=2)
    actual = streaming_tables(spark, str(tmp_path / "events"), tmp_path)
    assert actual["rejected_events"].count() > 0
    assert actual["group_transitions"].count() > 0
    assert_same_tables(actual, pure_tables(spark, events))
