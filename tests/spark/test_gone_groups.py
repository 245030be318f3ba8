"""A group Kafka's coordinator removes (Dead, nothing left) leaves the stream's state store,
its final rows kept in the tables; a later record for the same id starts a new group, on both
backends alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.fold import Event
from pipeline.spark.events.eventlog import write_event_log
from tests.fold.records import Log
from tests.spark.backends import (
    assert_same_tables,
    backfill_tables,
    pure_tables,
    streaming_tables,
)

pytestmark = pytest.mark.spark


def _log() -> list[Event]:
    """`reborn`: deleted, then joined again; `gone`: deleted for good; `live`: stays Stable."""
    reborn, gone, live = Log("reborn"), Log("gone"), Log("live")
    for log in (reborn, gone, live):
        log.stable_group("a-1")
        log.at(12_000).leave("a-1")
    reborn.at(15_000).add("GROUP_TOMBSTONE")
    gone.at(15_000).add("GROUP_TOMBSTONE")
    live.at(15_000).stable_group("b-1")
    reborn.at(40_000).stable_group("c-1")
    live.at(60_000).heartbeat("b-1", 2)
    events = [e for log in (reborn, gone, live) for e in log.events]
    return sorted(events, key=lambda e: (e.event_time, e.log_partition, e.log_offset))


def test_a_removed_group_leaves_the_state_store_and_comes_back_new_on_both_backends(
        spark: SparkSession, tmp_path: Path) -> None:
    events = _log()
    path = str(tmp_path / "events")
    # Two commits, one a batch: the deaths in the first, the return in the second.
    cut = max(i for i, e in enumerate(events) if e.event_type == "GROUP_TOMBSTONE") + 1
    write_event_log(spark, events[:cut], path)
    write_event_log(spark, events[cut:], path, mode="append")
    expected = pure_tables(spark, events)
    stream = streaming_tables(spark, path, tmp_path / "stream", max_files=1)
    assert_same_tables(stream, expected)
    assert_same_tables(backfill_tables(spark, path, tmp_path / "backfill"), expected)
    states = {r["group_id"]: r for r in stream["group_state"].collect()}
    assert states["gone"]["state"] == "Dead"  # its final row is kept
    assert (states["reborn"]["state"], states["reborn"]["generation_id"]) == ("Stable", 1)
    store = spark.read.format("statestore").load(str(tmp_path / "stream" / "checkpoint"))
    kept = {r[0] for r in store.select(F.col("key.group_id")).collect()}
    assert kept == {"reborn", "live"}, kept  # live groups only: "gone" left
    seeds = spark.read.format("delta").load(str(tmp_path / "backfill" / "warehouse" / "_backfill_state"))
    assert {r[0] for r in seeds.select("group_id").collect()} == {"reborn", "live"}
