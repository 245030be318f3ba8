"""The backfill with plain commit records kept in the JVM (`pipeline/spark/bulk.py`) writes
every table exactly as the backfill that folds every row in Python, on random logs of both
kinds (refusals, duplicates, transactions, expiry and timers in journal groups) and on the
rows that end or split a stretch: a duplicate delivery beside its original, a group
tombstone and the commit that recreates the group, a transaction and its marker, an offset
tombstone, commits without metadata, timestamp or member, a time that runs back, a row on
another partition and rows without a position."""

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
from tests.spark.backends import CONFIG, assert_same_tables, backfill_tables

pytestmark = pytest.mark.spark
T0 = 1_700_000_000_000


def edge_rows(group: str, rng: random.Random) -> list[Event]:
    """One records-only group's rows meant to end or split its stretches."""
    home, t, rows = partition_for(group), T0, []

    def add(kind: str, **values: object) -> Event:
        nonlocal t
        t += rng.choice((0, 5, 400, -300))  # a time running back keeps the group's clock
        e = Event(home, len(rows) * 2, t, group, kind, **values)  # type: ignore[arg-type]
        rows.append(e)
        return e

    def commit(**values: object) -> Event:
        fields: dict[str, object] = dict(topic="t", partition=rng.randrange(3),
                                         committed_offset=rng.randrange(10_000),
                                         commit_timestamp=t, member_id="m")
        fields.update(values)
        return add("OFFSET_COMMIT", **fields)

    for _ in range(6):
        commit()
    rows.append(rows[-2])  # a duplicate delivery, right behind... (re-sorted by position)
    commit(commit_metadata=None, commit_timestamp=None, member_id="")
    commit(leader_epoch=7, commit_metadata="é" * 3, expire_timestamp=t + 10_000)
    add("OFFSET_TOMBSTONE", topic="t", partition=1)
    for _ in range(4):
        commit()
    commit(producer_id=42)
    commit()
    add("TXN_MARKER", producer_id=42, txn_result="COMMIT")
    for _ in range(3):
        commit()
    add("GROUP_TOMBSTONE")
    for _ in range(3):
        commit()  # the first recreates the group
    commit(partition=-3)  # malformed: it ends a stretch, and is rejected
    for _ in range(3):
        commit()
    other = (home + 1) % 50
    rows.append(replace(rows[-1], log_partition=other, log_offset=10**9))  # a foreign row
    rows.append(replace(rows[-1], log_partition=None, log_offset=None))  # no position
    return rows


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
    kept = rows.where(F.col("bulk") & ~F.col("first")).count()
    assert kept > len(events) // 3  # most offsets-topic rows never reach the fold
    bulk = backfill_tables(spark, path, tmp_path / "bulk", bulk=True)
    plain = backfill_tables(spark, path, tmp_path / "plain", bulk=False)
    assert bulk["offset_history"].count() > 1000
    assert_same_tables(bulk, plain)
