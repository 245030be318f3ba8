"""The batch backfill: cuts by version and by event time, replacing a warehouse, and the
hand-off to a stream that continues exactly where the backfill stopped."""

from __future__ import annotations

from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.fold import Event
from pipeline.generator import LogSpec, generate
from pipeline.spark.backfill import BackfillOptions, run_backfill
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.fold.handoff import read_manifest
from pipeline.spark.stream.replay import ReplayOptions, run_replay
from pipeline.spark.tables.contract import table_schema
from pipeline.spark.tables.warehouse import missing_fields
from pipeline.times import event_time_ms
from tests.spark.backends import (
    CONFIG,
    DELAY,
    assert_same_tables,
    backfill_tables,
    pure_tables,
    read_tables,
    table_versions,
)

pytestmark = pytest.mark.spark


def _log(kind: str = "journal", seed: int = 7) -> list[Event]:
    return generate(LogSpec(groups=10, events=2000, seed=seed, log_kind=kind, bad_rows=0.03))


def _replay(spark: SparkSession, log: str, root: Path, checkpoint: str = "checkpoint") -> None:
    run_replay(spark, ReplayOptions(events=log, warehouse=str(root / "warehouse"),
                                    checkpoint=str(root / checkpoint), database=None,
                                    watermark_delay=DELAY, config=CONFIG))


def _as_before_issue_37(spark: SparkSession, path: str) -> None:
    """Rewrite the group_state table at `path` without the columns (and member fields) that
    share and streams groups added."""
    added = {"share_state_partitions", "topology", "validated_topology_epoch",
             "assignment_configs"}
    new_member = {"process_id", "user_endpoint", "client_tags", "topology_epoch",
                  "assigned_tasks", "tasks_pending_revocation", "target_tasks"}
    df = spark.read.format("delta").load(path)
    member = df.schema["members"].dataType.elementType
    old = [f.name for f in member.fields if f.name not in new_member]
    assert len(old) < len(member.fields) and added <= set(df.columns)
    (df.drop(*added)
     .withColumn("members", F.transform(
         "members", lambda m: F.struct(*[m[name].alias(name) for name in old])))
     .write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path))
    assert missing_fields(spark.read.format("delta").load(path).schema,
                          table_schema("group_state"))


# The journal: its groups carry members, sessions and timers across the hand-off, where an
# offsets-topic log's carry snapshots and offsets, which the journal's also have.
def test_a_stream_continues_from_a_backfill_without_reapplying_or_skipping_a_record(
        spark: SparkSession, tmp_path: Path) -> None:
    events = _log("journal")
    cut = len(events) * 3 // 5  # duplicates sit right after their original: some straddle it
    log = str(tmp_path / "events")
    write_event_log(spark, events[:cut], log, commits=2)
    manifest = run_backfill(spark, BackfillOptions(
        events=log, warehouse=str(tmp_path / "warehouse"), database=None,
        watermark_delay=DELAY, config=CONFIG))
    assert manifest.version == 1 and manifest.streamable
    assert read_manifest(spark, str(tmp_path / "warehouse")) == manifest
    # No version after the backfill's yet, which Delta would refuse to start from: an
    # available-now stream has nothing to do, and writes nothing.
    before = table_versions(spark, tmp_path / "warehouse")
    _replay(spark, log, tmp_path)
    assert table_versions(spark, tmp_path / "warehouse") == before
    # The stream continues on a group_state as an older release wrote it: the
    # columns share and streams groups added (null for this log's classic groups) missing.
    state = str(tmp_path / "warehouse" / "group_state")
    _as_before_issue_37(spark, state)
    write_event_log(spark, events[cut:], log, commits=2, mode="append")
    _replay(spark, log, tmp_path)
    assert not missing_fields(spark.read.format("delta").load(state).schema,
                              table_schema("group_state"))
    _replay(spark, log, tmp_path)  # a restart on the same checkpoint adds nothing
    assert_same_tables(read_tables(spark, tmp_path / "warehouse"), pure_tables(spark, events))


def test_a_backfill_up_to_an_event_time_equals_the_fold_of_the_rows_until_then(
        spark: SparkSession, tmp_path: Path) -> None:
    events = _log(seed=9)
    times = sorted(e.event_time for e in events if e.event_time is not None)
    until = times[len(times) // 2]
    log = str(tmp_path / "events")
    write_event_log(spark, events, log, commits=2)
    actual = backfill_tables(spark, log, tmp_path, until_ms=until)
    before = [e for e in events if e.event_time is None or e.event_time <= until]
    assert len(before) < len(events)
    assert_same_tables(actual, pure_tables(spark, before, watermark=until))
    manifest = read_manifest(spark, str(tmp_path / "warehouse"))
    assert manifest is not None and not manifest.streamable
    with pytest.raises(ValueError, match="backfilled up to an event time"):
        _replay(spark, log, tmp_path)


def test_a_backfill_refuses_to_overwrite_tables_unless_asked_and_keeps_their_history(
        spark: SparkSession, tmp_path: Path) -> None:
    events = _log(seed=5)
    log = str(tmp_path / "events")
    write_event_log(spark, events[:1000], log)
    write_event_log(spark, events[1000:], log, mode="append")
    backfill_tables(spark, log, tmp_path, version=0)
    with pytest.raises(ValueError, match="pass --replace"):
        backfill_tables(spark, log, tmp_path)
    replaced = backfill_tables(spark, log, tmp_path, replace=True)
    assert_same_tables(replaced, pure_tables(spark, events))
    history = DeltaTable.forPath(spark, str(tmp_path / "warehouse" / "offset_history")).history()
    assert history.filter("operation = 'WRITE'").count() == 2  # the first backfill is still there
    appends_only = spark.sql(
        f"SHOW TBLPROPERTIES delta.`{tmp_path / 'warehouse' / 'offset_history'}`"
        " ('delta.appendOnly')").first()
    assert appends_only is not None and appends_only["value"] == "true"


def test_a_fresh_backfill_commits_once_to_each_table_with_rows_and_never_to_one_without(
        spark: SparkSession, tmp_path: Path) -> None:
    events = generate(LogSpec(groups=3, events=300, seed=4, log_kind="offsets-topic"))
    log = str(tmp_path / "events")
    write_event_log(spark, events, log)
    tables = backfill_tables(spark, log, tmp_path)
    versions = table_versions(spark, tmp_path / "warehouse")
    empty = {t for t, df in tables.items() if df.isEmpty()}
    assert empty and empty != set(tables)  # both kinds are here
    # version 0 creates a table; a table with rows gets one more commit, an empty one none
    assert versions == {t: 0 if t in empty else 1 for t in tables}


def test_a_stream_refuses_a_backfill_of_another_log(spark: SparkSession, tmp_path: Path) -> None:
    events = _log(seed=2)[:500]
    write_event_log(spark, events, str(tmp_path / "a"))
    write_event_log(spark, events, str(tmp_path / "b"))
    run_backfill(spark, BackfillOptions(events=str(tmp_path / "a"), database=None,
                                        warehouse=str(tmp_path / "warehouse")))
    with pytest.raises(ValueError, match="was backfilled from"):
        _replay(spark, str(tmp_path / "b"), tmp_path)


def test_until_reads_iso_times_as_utc_unless_an_offset_is_given() -> None:
    assert event_time_ms("1970-01-01T00:00:01") == 1000
    assert event_time_ms("1970-01-01T01:00:00+01:00") == 0
    with pytest.raises(ValueError, match="not an ISO-8601 time"):
        event_time_ms("last tuesday")
