"""Hand-written scenarios through both Spark backends, one log, one run of each: the stream
(two micro-batches) and the backfill write what the pure fold writes, row for row, and each
scenario ends as Kafka ends it:
- propagateAssignment (a follower parked in SyncGroup gets a fresh session) and
  ClassicGroup.remove (the next leader in HashMap order);
- a group Kafka's coordinator removes (Dead, nothing left) leaves the stream's state store,
  its final rows kept in the tables, and a later record for the same id starts a new group;
- share- and streams-group records as Kafka's own classes wrote them
  (tests/decode/kafka_records.json): a share group and a streams group live, are deleted in
  Kafka's order and come back under the same ids, nested columns and rejected rows included.
Each scenario's groups have their own log partition; every event lies within a minute, far
inside the watermark delay, so no timer fires and the scenarios cannot touch each other."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.fold import Event
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.fold.folding import BucketState
from tests.fold.records import Log
from tests.fold.scenarios import LEADER_PLAN, leader_leaves, slow_leader_syncs
from tests.fold.test_share_streams_from_kafka import (
    SHARE_DELETION,
    SHARE_LIFE,
    STREAMS_DELETION,
    STREAMS_LIFE,
    _events,
)
from tests.spark.backends import assert_same_tables, backfill_tables, pure_tables, streaming_tables

pytestmark = pytest.mark.spark

ISSUE_11 = ("g-slow-leader", "g-leader-leaves")
GONE = ("reborn", "gone", "live")
SHARE_STREAMS = ("share-g", "app", "share-40")


def _issue_11() -> tuple[list[Event], list[Event]]:
    events = sorted(slow_leader_syncs(Log(group="g-slow-leader")).events
                    + leader_leaves(Log(group="g-leader-leaves")).events,
                    key=lambda e: (e.event_time, e.log_partition))
    return events[:len(events) // 2], events[len(events) // 2:]


def _gone() -> tuple[list[Event], list[Event]]:
    """`reborn`: deleted, then joined again; `gone`: deleted for good; `live`: stays Stable.
    The deaths in the first part, the return in the second."""
    reborn, gone, live = Log("reborn"), Log("gone"), Log("live")
    for log in (reborn, gone, live):
        log.stable_group("a-1")
        log.at(12_000).leave("a-1")
    reborn.at(15_000).add("GROUP_TOMBSTONE")
    gone.at(15_000).add("GROUP_TOMBSTONE")
    live.at(15_000).stable_group("b-1")
    reborn.at(40_000).stable_group("c-1")
    live.at(60_000).heartbeat("b-1", 2)
    events = sorted((e for log in (reborn, gone, live) for e in log.events),
                    key=lambda e: (e.event_time, e.log_partition, e.log_offset))
    cut = max(i for i, e in enumerate(events) if e.event_type == "GROUP_TOMBSTONE") + 1
    return events[:cut], events[cut:]


def _share_streams() -> tuple[list[Event], list[Event]]:
    """Each group's life and deletion in the first part, its return in the second."""
    offsets = Log(group="app")
    offsets.commit("words", 0, 10)
    share = _events("share-g", SHARE_LIFE + SHARE_DELETION + SHARE_LIFE)
    streams = _events("app", STREAMS_LIFE + STREAMS_DELETION + STREAMS_LIFE, first=1)
    share_back, streams_back = len(SHARE_LIFE + SHARE_DELETION), len(STREAMS_LIFE + STREAMS_DELETION)
    # Type 9 (Kafka 4.0 only) stays an UNSUPPORTED_RECORD row.
    old = _events("share-40", ["share_partition_metadata_40", "share_metadata_40"])
    return (share[:share_back] + offsets.events + streams[:streams_back] + old,
            share[share_back:] + streams[streams_back:])


def _of(df: DataFrame, groups: tuple[str, ...]) -> DataFrame:
    return df.where(F.col("group_id").isin(*groups))


def test_the_scenarios_replay_alike_on_both_backends_and_end_as_kafka_ends_them(
        spark: SparkSession, tmp_path: Path) -> None:
    parts = [_issue_11(), _gone(), _share_streams()]
    first = [e for part in parts for e in part[0]]
    second = [e for part in parts for e in part[1]]
    path = str(tmp_path / "events")
    write_event_log(spark, first, path)
    write_event_log(spark, second, path, mode="append")
    expected = pure_tables(spark, first + second)
    stream = streaming_tables(spark, path, tmp_path / "stream", max_files=1)  # two batches
    backfilled = backfill_tables(spark, path, tmp_path / "backfill")
    assert_same_tables(stream, expected)
    assert_same_tables(backfilled, expected)

    # The next leader in HashMap order, on each backend.
    for tables in (stream, backfilled):
        causes = [r["cause"] for r in tables["group_transitions"]
                  .where("group_id = 'g-slow-leader'").orderBy("event_time", "seq").collect()]
        assert causes[-2:] == ["LEADER_SYNC", "MEMBER_LEFT"] and "SESSION_TIMEOUT" not in causes
        state = tables["group_state"].where("group_id = 'g-leader-leaves'").first()
        assert (state["state"], state["generation_id"], state["leader_id"]) == ("Stable", 2, "g-7")
        assert {m["member_id"]: sorted((tp["topic"], tp["partition"]) for tp in m["assignment"])
                for m in state["members"]} == LEADER_PLAN
        responses = [(r["member_id"], r["response"])
                     for r in _of(tables["error_responses"], ISSUE_11).collect()]
        assert sorted(responses) == sorted(  # every member's first JoinGroup
            [(m, "MEMBER_ID_REQUIRED") for m in ("a-1", "b-2", "a-1", "b-2", "g-7")])
        assert _of(tables["rejected_events"], ISSUE_11).count() == 0

    # A removed group: its final row kept, its state gone from the store; the same id later
    # a new group.
    states = {r["group_id"]: r for r in stream["group_state"].collect()}
    assert states["gone"]["state"] == "Dead"
    assert (states["reborn"]["state"], states["reborn"]["generation_id"]) == ("Stable", 1)
    store = spark.read.format("statestore").load(str(tmp_path / "stream" / "checkpoint"))
    kept = {g for r in store.select(F.col("value.groupState.groups")).collect()
            for g in BucketState.unpacked(r[0]).states}
    assert kept & set(GONE) == {"reborn", "live"}, kept  # live groups only: "gone" left
    assert "app" in kept  # a streams group deleted and back
    seeds = spark.read.format("delta").load(
        str(tmp_path / "backfill" / "warehouse" / "_backfill_state"))
    assert {r[0] for r in seeds.select("group_id").collect()} & set(GONE) == {"reborn", "live"}

    # Share and streams groups.
    assert {(r["group_id"], r["group_type"], r["state"])
            for r in _of(expected["group_state"], SHARE_STREAMS).collect()} == {
        ("share-g", "share", "Stable"), ("app", "streams", "Reconciling"),
        ("share-40", "share", "Empty")}
    transitions = expected["group_transitions"].where("group_id = 'app'").collect()
    assert {r["to_state"] for r in transitions} >= {"Dead", "Stable"}
    rejected = [r["reason"] for r in _of(expected["rejected_events"], SHARE_STREAMS).collect()]
    assert rejected == ["UNSUPPORTED_RECORD"], rejected
