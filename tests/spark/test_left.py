"""The backfill, which builds the rows of the plain commit records the fold leaves in the JVM
(`pipeline/spark/fold/left.py`), writes every table exactly as the pure fold that writes
every row itself, on random logs of both kinds with rows delivered twice and the rows meant
to end or split a run (`tests/left.py`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.fold import Event
from pipeline.fold.group_replay import replay_group
from pipeline.fold.partitioning import partition_for
from pipeline.spark.events.eventlog import write_event_log
from tests.fold.test_left import random_log
from tests.grouping import by_group
from tests.spark.backends import CONFIG, assert_same_tables, backfill_tables, pure_tables

pytestmark = pytest.mark.spark


def test_the_backfill_leaving_rows_to_the_jvm_writes_what_the_pure_fold_writes_row_by_row(
        spark: SparkSession, tmp_path: Path) -> None:
    events: list[Event] = []
    for seed in (3, 4, 5):  # two offsets-topic logs and a journal
        # Each log its own groups (their ids carry the seed) on their own partitions.
        events += [e if e.group_id is None else replace(
            e, group_id=f"{e.group_id}-{seed}",
            log_partition=e.log_partition if e.log_partition is None else partition_for(
                f"{e.group_id}-{seed}")) for e in random_log(seed)]
    path = str(tmp_path / "events")
    write_event_log(spark, events, path, commits=2)
    left_out = 0
    for group_id, rows in by_group(events).items():
        left_out += len(replay_group(group_id, None, rows, None, CONFIG, leave=True).left.history)
    assert left_out > len(events) // 3  # most rows' offset_history never leaves the JVM
    leaving = backfill_tables(spark, path, tmp_path / "left")
    assert leaving["offset_history"].count() > left_out
    assert_same_tables(leaving, pure_tables(spark, events))
