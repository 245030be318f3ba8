"""Share- and streams-group records as Kafka's own classes wrote them (tests/decode/
kafka_records.json) through both Spark backends: a share group and a streams group live,
are deleted in Kafka's order and come back under the same ids; the stream (two micro-batches)
and the backfill write what the pure fold writes, row for row, their nested columns and
rejected rows included."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.fold import Event
from pipeline.spark.events.eventlog import write_event_log
from tests.fold.records import Log
from tests.fold.test_share_streams_from_kafka import (
    SHARE_DELETION,
    SHARE_LIFE,
    STREAMS_DELETION,
    STREAMS_LIFE,
    _events,
)
from tests.spark.backends import assert_same_tables, backfill_tables, pure_tables, streaming_tables

pytestmark = pytest.mark.spark


def _log() -> list[Event]:
    share = SHARE_LIFE + SHARE_DELETION + SHARE_LIFE
    offsets = Log(group="app")
    offsets.commit("words", 0, 10)
    streams = STREAMS_LIFE + STREAMS_DELETION + STREAMS_LIFE
    # Type 9 (Kafka 4.0 only) stays an UNSUPPORTED_RECORD row.
    old = ["share_partition_metadata_40", "share_metadata_40"]
    return (_events("share-g", share) + offsets.events + _events("app", streams, first=1)
            + _events("share-40", old))


def test_share_and_streams_groups_replay_alike_on_both_backends(
        spark: SparkSession, tmp_path: Path) -> None:
    events = _log()
    path = str(tmp_path / "events")
    write_event_log(spark, events, path, commits=2)
    expected = pure_tables(spark, events)
    states = {(r["group_id"], r["group_type"], r["state"])
              for r in expected["group_state"].collect()}
    assert states == {("share-g", "share", "Stable"), ("app", "streams", "Reconciling"),
                      ("share-40", "share", "Empty")}, states
    transitions = expected["group_transitions"].collect()
    assert {r["to_state"] for r in transitions if r["group_id"] == "app"} >= {"Dead", "Stable"}
    rejected = [r["reason"] for r in expected["rejected_events"].collect()]
    assert rejected == ["UNSUPPORTED_RECORD"], rejected
    assert_same_tables(streaming_tables(spark, path, tmp_path / "stream", max_files=1), expected)
    assert_same_tables(backfill_tables(spark, path, tmp_path / "backfill"), expected)
