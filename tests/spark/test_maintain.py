"""Upkeep, on one warehouse in order: a stream that maintains its tables every N batches writes
what the pure fold writes, compacted; the maintenance job leaves every row as it was and a
stream resumes after it; a retention deletes the history older than it, nothing else."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.fold import Event
from pipeline.generator import LogSpec, generate
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.stream.maintain import FILE_RETENTION, RETAINED, Upkeep, file_count, maintain
from pipeline.spark.stream.replay import ReplayOptions, run_replay
from pipeline.spark.tables.catalog import quote_path
from pipeline.spark.tables.contract import table_schema
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.warehouse import (
    APPEND_ONLY,
    AUTO_COMPACT,
    append_only,
    ensure_tables,
    open_for_rewrite,
)
from pipeline.times import utc_datetime
from schemas import OUTPUT_TABLES
from tests.jobs.jobs import load_job
from tests.spark.backends import CONFIG, DELAY, assert_same_tables, pure_tables, read_tables

pytestmark = pytest.mark.spark
SPEC = LogSpec(groups=4, events=450, seed=35, log_kind="offsets-topic")


@dataclass
class Streamed:
    parts: list[list[Event]]  # the log's three commits; the stream has read the first two
    root: Path

    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    def replay(self, spark: SparkSession, upkeep: Upkeep | None = None) -> None:
        run_replay(spark, ReplayOptions(
            events=str(self.root / "events"), warehouse=str(self.warehouse),
            checkpoint=str(self.root / "checkpoint"), database=None, watermark_delay=DELAY,
            max_files_per_trigger=1, config=CONFIG, upkeep=upkeep))


def _rows(spark: SparkSession, warehouse: Path) -> dict[str, Counter[str]]:
    return {t: Counter(repr(tuple(r)) for r in df.collect())
            for t, df in read_tables(spark, warehouse).items()}


def _properties(spark: SparkSession, path: Path) -> dict[str, str]:
    detail = spark.sql(f"DESCRIBE DETAIL {quote_path(str(path))}").first()
    assert detail is not None
    return dict(detail["properties"])


@pytest.fixture(scope="module")
def streamed(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Streamed:
    """The log's first two commits streamed one a batch, maintained after the second, into a
    warehouse whose group_history an earlier release made (with Delta's auto compaction)."""
    root = tmp_path_factory.mktemp("maintain")
    events = generate(SPEC)
    third = len(events) // 3
    run = Streamed([events[:third], events[third:2 * third], events[2 * third:]], root)
    create_table(spark, str(run.warehouse / "group_history"), table_schema("group_history"),
                 {AUTO_COMPACT: "true"})
    for i, part in enumerate(run.parts[:2]):
        write_event_log(spark, part, str(root / "events"), mode="append" if i else "overwrite")
    run.replay(spark, Upkeep(every=2))
    return run


def test_a_stream_maintaining_itself_writes_the_same_rows_compacted(
        spark: SparkSession, streamed: Streamed) -> None:
    warehouse = streamed.warehouse
    assert_same_tables(read_tables(spark, warehouse),
                       pure_tables(spark, streamed.parts[0] + streamed.parts[1]))
    # No table compacts after each commit (the stream's upkeep does): the older one's auto
    # compaction is gone.
    for table in OUTPUT_TABLES:
        assert AUTO_COMPACT not in _properties(spark, warehouse / table), table
    # Two batches appended a file each to offset_history; the upkeep after the second
    # compacted them, in a commit of its own marked as the maintenance's.
    history = spark.sql(f"DESCRIBE HISTORY {quote_path(str(warehouse / 'offset_history'))}")
    optimized = [r["userMetadata"] for r in history.collect() if r["operation"] == "OPTIMIZE"]
    assert len(optimized) == 1 and '"maintenance"' in optimized[0], optimized
    assert file_count(spark, str(warehouse / "offset_history")) <= 2  # + the final batch's


def test_the_job_keeps_every_row_and_a_stream_resumes_after_it(
        spark: SparkSession, streamed: Streamed, capsys: pytest.CaptureFixture[str]) -> None:
    warehouse = streamed.warehouse
    before = _rows(spark, warehouse)
    load_job("maintain").main(["--warehouse", str(warehouse)], spark=spark)
    printed = capsys.readouterr().out
    assert all(f"{t}: " in printed for t in OUTPUT_TABLES), printed
    assert _rows(spark, warehouse) == before
    write_event_log(spark, streamed.parts[2], str(streamed.root / "events"), mode="append")
    streamed.replay(spark)
    assert_same_tables(read_tables(spark, warehouse),
                       pure_tables(spark, [e for part in streamed.parts for e in part]))


def test_a_retention_deletes_only_history_older_than_it(
        spark: SparkSession, streamed: Streamed) -> None:
    warehouse = streamed.warehouse
    tables = ("offset_history", "rebalances", "group_state")
    before = {t: df.count() for t, df in read_tables(spark, warehouse).items()}
    times = sorted(e.event_time for part in streamed.parts for e in part
                   if e.event_time is not None)
    middle = times[len(times) // 2]
    done = {d.table: d for d in maintain(spark, str(warehouse), tables, retain_days=1,
                                         now=utc_datetime(middle) + timedelta(days=1))}
    assert set(done) == set(tables)
    assert done["offset_history"].deleted_rows > 0
    for table, df in read_tables(spark, warehouse).items():
        if table not in tables or table not in RETAINED:
            assert df.count() == before[table], table  # current state is never trimmed
            continue
        assert df.where(f"{RETAINED[table]} < timestamp_millis({middle})").count() == 0, table
        assert df.count() + done[table].deleted_rows == before[table], table
    # The append-only guard is back on once the rows are gone.
    assert _properties(spark, warehouse / "offset_history")["delta.appendOnly"] == "true"
    with pytest.raises(ValueError, match="168"):
        maintain(spark, str(warehouse), vacuum_hours=1)
    # Delta 4 ignores VACUUM's RETAIN: the hours asked for become the table's file retention.
    maintain(spark, str(warehouse), ("rebalances",), vacuum_hours=200)
    assert _properties(spark, warehouse / "rebalances")[FILE_RETENTION] == "interval 200 hours"
    assert FILE_RETENTION not in _properties(spark, warehouse / "group_state")  # the default


def test_a_table_left_open_by_a_kill_inside_a_rewrite_is_append_only_again_at_the_next_start(
        spark: SparkSession, streamed: Streamed, caplog: pytest.LogCaptureFixture) -> None:
    """A rewrite of an append-only table (the upkeep's retention delete, a backfill's replace)
    lifts the guard for its one commit; a kill between leaves it lifted, which is what the
    first ALTER alone leaves here. The next job to open the warehouse puts it back; a
    rewrite that fails puts it back itself."""
    warehouse = streamed.warehouse
    path = str(warehouse / "rebalances")
    with pytest.raises(RuntimeError, match="the rewrite failed"), \
            open_for_rewrite(spark, path):
        assert _properties(spark, warehouse / "rebalances")[APPEND_ONLY] == "false"
        raise RuntimeError("the rewrite failed")
    assert _properties(spark, warehouse / "rebalances")[APPEND_ONLY] == "true"
    spark.sql(f"ALTER TABLE {quote_path(path)} SET TBLPROPERTIES ('{APPEND_ONLY}' = 'false')")
    caplog.set_level(logging.WARNING, logger="pipeline.spark.tables.warehouse")
    ensure_tables(spark, str(warehouse), None)
    assert _properties(spark, warehouse / "rebalances")[APPEND_ONLY] == "true"
    assert f"{path} was open to rewrites" in caplog.text
    assert [t for t in OUTPUT_TABLES if append_only(t)
            and _properties(spark, warehouse / t).get(APPEND_ONLY) != "true"] == []
