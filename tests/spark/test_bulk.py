"""The backfill with plain commit records kept in the JVM (`pipeline/spark/bulk.py`) writes
every table exactly as the backfill that folds every row in Python, on random logs of both
kinds (refusals, duplicates, transactions, expiry and timers in journal groups) and on the
rows that end or split a stretch: a duplicate delivery beside its original, a group
tombstone and the commit that recreates the group, a transaction and its marker, an offset
tombstone, commits without metadata, timestamp or member, a time that runs back, a row on
another partition and rows without a position (`tests/stretches.py`). Spark's
classification is held row for row to the rules restated in plain Python there, the oracle
tests/fold/test_stretches.py folds many more random logs with, without Spark."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.fold import Event
from pipeline.fold.partitioning import partition_for
from pipeline.generator import LogSpec, generate
from pipeline.spark.bulk import classified
from pipeline.spark.eventlog import select_events, write_event_log
from tests.grouping import by_group
from tests.spark.backends import CONFIG, assert_same_tables, backfill_tables
from tests.stretches import classify, edge_rows

pytestmark = pytest.mark.spark
KEY = ("log_partition", "log_offset", "bulk", "first", "stretch", "clock")
def test_bulk_and_row_by_row_backfills_write_the_same_tables(
        spark: SparkSession, tmp_path: Path) -> None:
    seed = 5
    rng = random.Random(seed)
    events: list[Event] = []
    for i, kind in enumerate(("offsets-topic", "offsets-topic", "journal")):
        spec = LogSpec(groups=4, events=1500, seed=seed * 10 + i, log_kind=kind,
                       bad_rows=rng.choice((0.0, 0.03)), out_of_order=0.0)
        log = generate(spec)
        # Each part of the log its own groups (their ids carry the part) and partition range.
        events += [replace(e, group_id=None if e.group_id is None else f"{e.group_id}-{i}",
                           log_partition=None if e.group_id is None else partition_for(
                               f"{e.group_id}-{i}")) for e in log]
    events += edge_rows(f"g-edge-{seed}", rng)
    path = str(tmp_path / "events")
    write_event_log(spark, events, path, commits=2)
    rows = classified(select_events(spark.read.format("delta").load(path)), CONFIG)
    # Spark's classification is the oracle's (tests/stretches.py), row for row...
    spark_rows = [tuple(r) for r in rows.where(F.col("group_id").isNotNull()).select(
        "group_id", *KEY).collect()]
    oracle = [(c.event.group_id, c.event.log_partition, c.event.log_offset, c.bulk, c.first,
               c.stretch, c.clock)
              for group in by_group(events).values() for c in classify(group, CONFIG)]
    assert sorted(spark_rows, key=repr) == sorted(oracle, key=repr)
    kept = sum(bulk and not first for _, _, _, bulk, first, _, _ in oracle)
    assert kept > len(events) // 3  # most offsets-topic rows never reach the fold
    # ... and the tables written are the row-by-row backfill's.
    bulk = backfill_tables(spark, path, tmp_path / "bulk", bulk=True)
    plain = backfill_tables(spark, path, tmp_path / "plain", bulk=False)
    assert bulk["offset_history"].count() > 1000
    assert_same_tables(bulk, plain)
