"""Three backends, one truth: the pure fold in one process, the streaming replay and the
batch backfill write identical tables for the same log, compared whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from pipeline.fold import Event
from pipeline.generator import LogSpec, generate
from pipeline.spark.events.eventlog import write_event_log
from schemas.events import EVENT_COLUMNS
from tests.spark.backends import assert_same_tables, backfill_tables, pure_tables, streaming_tables

pytestmark = pytest.mark.spark


# Two logs, one of each kind: the golden tables (tests/golden) pin the pure fold's output on
# six more, and test_golden_tables.py that Spark's pure path writes them.
@pytest.mark.parametrize(("kind", "seed"), [("journal", 11), ("offsets-topic", 11)])
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


def test_a_foreign_log_with_impossible_times_and_no_kip848_columns(
        spark: SparkSession, tmp_path: Path) -> None:
    """Another tool's log: no KIP-848 or decode_error columns, and two rows with times past
    2262 (no pandas frame holds them). Neither backend dies; both reject exactly those rows
    with the reason, and agree on every table."""
    events = generate(LogSpec(groups=3, events=300, seed=2, log_kind="journal"))
    log = str(tmp_path / "events")
    write_event_log(spark, events, log)
    names = [c.name for c in EVENT_COLUMNS]
    kip848 = names[names.index("group_epoch"):names.index("regex_timestamp_ms") + 1]
    kept = [n for n in names if n not in kip848 and n not in ("raw_key", "raw_value", "decode_error")]
    commit = next(e for e in reversed(events) if e.event_type == "OFFSET_COMMIT")
    join = next(e for e in events if e.event_type == "JOIN")

    def at(e: Event) -> Column:
        return (F.col("log_partition") == e.log_partition) & (F.col("log_offset") == e.log_offset)

    far = F.lit("3000-01-01 00:00:00").cast("timestamp")
    foreign = (spark.read.format("delta").load(log).select(*kept)
               .withColumn("commit_timestamp", F.when(at(commit), far).otherwise(F.col("commit_timestamp")))
               .withColumn("event_time", F.when(at(join), far).otherwise(F.col("event_time"))))
    assert "group_epoch" in names and "group_epoch" not in foreign.columns
    foreign_log = str(tmp_path / "foreign")
    foreign.write.format("delta").save(foreign_log)

    streamed = streaming_tables(spark, foreign_log, tmp_path / "stream")
    backfilled = backfill_tables(spark, foreign_log, tmp_path / "backfill")
    assert_same_tables(backfilled, streamed)
    reasons = {(r["log_partition"], r["log_offset"]): r["reason"]
               for r in streamed["rejected_events"].collect()}
    assert reasons[join.position] == ("MALFORMED: event_time 32503680000000000 us is outside "
                                      "the years 1677-2262 the replay can hold")
    assert reasons[commit.position] == ("MALFORMED: commit_timestamp 32503680000000000 us is "
                                        "outside the years 1677-2262 the replay can hold")
    assert streamed["group_state"].count() == 3
