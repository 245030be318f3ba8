"""Three backends, one truth: the pure fold in one process, the streaming replay and the
batch backfill write identical tables for the same log, compared whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.generator import LogSpec, generate
from pipeline.spark.eventlog import write_event_log
from tests.spark.backends import assert_same_tables, backfill_tables, pure_tables, streaming_tables

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("kind", "seed"), [("journal", 11), ("offsets-topic", 11), ("journal", 5)])
def test_pure_streaming_and_backfill_write_identical_tables(
        spark: SparkSession, tmp_path: Path, kind: str, seed: int) -> None:
    events = generate(LogSpec(groups=12, events=4000, seed=seed, log_kind=kind, bad_rows=0.03))
    log = str(tmp_path / "events")
    write_event_log(spark, events, log, commits=2)
    pure = pure_tables(spark, events)
    streamed = streaming_tables(spark, log, tmp_path / "stream")
    backfilled = backfill_tables(spark, log, tmp_path / "backfill")
    assert streamed["rejected_events"].count() > 0
    assert streamed["group_transitions"].count() > 0
    assert streamed["offset_history"].count() > 0
    assert_same_tables(streamed, pure)
    assert_same_tables(backfilled, pure)
