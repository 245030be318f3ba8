"""Poison pills: hostile rows appended to a clean log. Neither backend dies, in any
micro-batching; each row is applied exactly or rejected with a reason, and a restart on the
same checkpoint passes. A group whose fold raises is rejected as INTERNAL, alone. One log
for all of it (a stream and a backfill are the suite's cost, not the rows)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pyspark import cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.fold import CoordinatorConfig, Event, SnapshotMember
from pipeline.fold.partitioning import partition_for
from pipeline.generator import LogSpec, generate
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.stream.replay import ReplayOptions, run_replay
from tests.fold.records import Log
from tests.spark.backends import (
    DELAY,
    assert_same_tables,
    backfill_tables,
    pure_tables,
    streaming_tables,
    table_versions,
)

pytestmark = pytest.mark.spark
INT64_MAX, INT32_MAX, EXACT_PLUS_ONE = 2**63 - 1, 2**31 - 1, 2**53 + 1
FAR = 10**6  # hostile groups' offsets, away from the generated ones


def _log(group: str) -> Log:
    log = Log(group=group)
    log.next_offset = FAR
    return log


def hostile_rows() -> list[list[Event]]:
    """Three appends: the rows of the issue's table and its silent cases."""
    first: list[Event] = []
    second: list[Event] = []
    third: list[Event] = []

    big = _log("h-offsets")  # committed_offset 2^63-1 and 2^53+1; log_offset 2^53+1, 2^63-1
    first.append(big.commit("orders", 0, INT64_MAX))
    second.append(big.commit("orders", 1, EXACT_PLUS_ONE))
    big.next_offset = EXACT_PLUS_ONE
    second.append(big.commit("orders", 2, 7))
    big.next_offset = INT64_MAX
    third.append(big.commit("orders", 3, 8))

    txn = _log("h-producer")  # a transactional commit of producer 2^63-1, then its marker
    first.append(txn.commit("orders", 0, 11, producer_id=INT64_MAX))
    second.append(txn.marker(INT64_MAX, "COMMIT"))

    gen = _log("h-generation")  # a snapshot at int32 max, then the leader rejoins
    first.append(gen.snapshot(INT32_MAX, {"a-1": [("orders", 0)]}))
    second.append(gen.at(1_000).join("a-1"))
    third.append(gen.at(2_000).sync("a-1", -(2**31), {"a-1": [("orders", 0)]}))

    foreign = _log("h-foreign")  # a row on a lower and one on a higher foreign partition
    foreign.stable_group("a-1")
    first += foreign.events
    home = foreign.partition
    stray = Event(home - 1, 0, foreign.now, "h-foreign", "OFFSET_COMMIT", member_id="x",
                  generation_id=1, topic="orders", partition=0, committed_offset=99)
    first.append(stray)
    second.append(foreign.at(9_500).commit("orders", 0, 5, member="a-1", generation=1))
    second.append(Event(home + 1, 0, foreign.now, "h-foreign", "OFFSET_COMMIT", member_id="x",
                        generation_id=1, topic="orders", partition=1, committed_offset=99))
    third.append(foreign.at(9_800).commit("orders", 1, 6, member="a-1", generation=1))

    refused = _log("h-refused")  # only refused rows: no group
    first.append(refused.heartbeat("ghost", 3))

    dupe = _log("h-dupe")  # one member id twice in a snapshot
    first.append(dupe.add("GROUP_METADATA", generation_id=3, protocol_type="consumer",
                          protocol="range", leader_id="a-1", members=tuple(
                              SnapshotMember("a-1", None, c, "/h", 10_000, 30_000, ("orders",))
                              for c in ("a", "b"))))
    return [first, second, third]


class Tripwire(int):
    """An offset.metadata.max.bytes that raises when compared with a 13-byte metadata: a test's
    way to make one group's fold fail deep inside a handler. The jobs build their config
    from properties files (plain ints), so no input can reach this."""

    def __lt__(self, other: object) -> bool:
        if other == len(BOOM):
            raise RuntimeError("tripwire: a bug in the fold")
        return int(self) < other  # type: ignore[operator]


BOOM = "kaboom-kaboom"
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _not_victim(tables: dict[str, DataFrame]) -> dict[str, DataFrame]:
    return {t: df.filter(~F.col("group_id").eqNullSafe("h-victim")) for t, df in tables.items()}


def test_hostile_rows_and_a_raising_fold_neither_kill_nor_bend_the_stream_or_the_backfill(
        spark: SparkSession, tmp_path: Path) -> None:
    """One log: a clean one, the hostile rows appended in three commits, and `h-victim`, one
    commit of whose in the clean part and two, whose fold raises, in the first append."""
    clean = generate(LogSpec(groups=3, events=300, seed=7))
    appends = hostile_rows()
    victim = _log("h-victim")
    before = [victim.commit("orders", 0, 1)]
    poison = [victim.commit("orders", 0, 2, metadata=BOOM), victim.commit("orders", 1, 3)]
    log = str(tmp_path / "events")
    write_event_log(spark, clean + before, log)
    for i, rows in enumerate(appends):
        write_event_log(spark, rows + (poison if i == 0 else []), log, mode="append")
    config = CoordinatorConfig(offset_metadata_max_bytes=Tripwire(4096))

    # What every row but the poisoned ones gives.
    expected = pure_tables(spark, clean + before + [e for rows in appends for e in rows])
    # The two extremes of batching: one file a micro-batch, and the backfill's one call a group.
    one_by_one = streaming_tables(spark, log, tmp_path / "stream", max_files=1, config=config)
    backfilled = backfill_tables(spark, log, tmp_path / "backfill", config=config)
    # The stream: the victim keeps what batch 0 gave it; batch 1's rows are INTERNAL.
    assert_same_tables(
        {t: df.filter("NOT (reason LIKE 'INTERNAL:%')") if t == "rejected_events" else df
         for t, df in one_by_one.items()}, expected)
    internal = [r for r in one_by_one["rejected_events"].collect()
                if r["reason"].startswith("INTERNAL:")]
    assert sorted(r["log_offset"] for r in internal) == [e.log_offset for e in poison]
    assert {r["reason"] for r in internal} == {
        "INTERNAL: RuntimeError: tripwire: a bug in the fold"}
    # The backfill: the victim's whole history is one call, so all its rows are INTERNAL (a
    # fold that raises leaves none of its plain commits to the JVM, fold/left.py); the other
    # groups as the stream.
    assert_same_tables(_not_victim(backfilled), _not_victim(expected))
    victim_rows = backfilled["rejected_events"].filter("group_id = 'h-victim'").collect()
    assert sorted(r["log_offset"] for r in victim_rows) == [e.log_offset for e in before + poison]
    assert backfilled["group_state"].filter("group_id = 'h-victim'").count() == 0

    state = {r["group_id"]: r for r in one_by_one["group_state"].collect()}
    assert state["h-offsets"]["last_log_offset"] == INT64_MAX
    assert state["h-generation"]["generation_id"] == -(2**31)
    assert state["h-generation"]["state"] == "Stable"
    assert "h-refused" not in state and "h-dupe" not in state
    offsets = {(r["group_id"], r["partition"]): r["committed_offset"]
               for r in one_by_one["committed_offsets"].collect()}
    assert offsets[("h-offsets", 0)] == INT64_MAX
    assert offsets[("h-offsets", 1)] == EXACT_PLUS_ONE
    assert offsets[("h-producer", 0)] == 11
    assert offsets[("h-foreign", 0)] == 5 and offsets[("h-foreign", 1)] == 6
    reasons = {(r["group_id"], r["log_partition"]): r["reason"]
               for r in one_by_one["rejected_events"].collect()}
    assert reasons[("h-foreign", partition_for("h-foreign") - 1)].startswith(
        "MALFORMED: group h-foreign belongs to partition ")
    assert reasons[("h-dupe", appends[0][-1].log_partition)] == (
        "MALFORMED: GROUP_METADATA lists member a-1 more than once")

    # A restart on the same checkpoint passes and adds nothing: no table gets a commit.
    warehouse = tmp_path / "stream" / "warehouse"
    before_restart = table_versions(spark, warehouse)
    run_replay(spark, ReplayOptions(
        events=log, warehouse=str(warehouse), checkpoint=str(tmp_path / "stream" / "checkpoint"),
        database=None, watermark_delay=DELAY, config=config))
    assert table_versions(spark, warehouse) == before_restart
