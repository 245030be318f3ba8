"""The stream's own record of what its lag step was given (`lagflow.Read`), without Spark: the
newest event time a fold call saw, as Spark's watermark takes it, and the watermark and
samples' version the record gives a batch. (Through Spark, tests/spark/test_lag.py holds a
stream on that record to one backfill of everything, and tests/spark/test_replay_guarantees.py
a killed and restarted one to an uninterrupted run.)"""

from __future__ import annotations

import pyarrow as pa

from pipeline.spark.fold.folding import newest_ms
from pipeline.spark.fold.wire import NEWEST, ROW, TABLE, with_newest
from pipeline.spark.lag.lagflow import Read


def test_a_fold_call_reports_its_newest_event_time_in_whole_milliseconds() -> None:
    times = pa.array([1_700_000_000_123_999, None, 1_600_000_000_000_000], pa.timestamp("us", "UTC"))
    assert newest_ms(pa.table({"event_time": times})) == 1_700_000_000_123
    assert newest_ms(pa.table({"event_time": pa.nulls(2, pa.timestamp("us", "UTC"))})) is None
    assert newest_ms(pa.table({"event_time": times.slice(0, 0)})) is None


def test_the_wire_carries_the_newest_event_time_as_one_row_of_its_own() -> None:
    wire = pa.table({TABLE: pa.array(["group_state"], pa.string()), ROW: ["{}"]})
    assert with_newest(wire, None) is wire
    assert with_newest(wire, 42).to_pylist()[-1] == {TABLE: NEWEST, ROW: "42"}


def test_the_record_only_rises() -> None:
    first = Read().then(10_000, None)
    assert first == Read(10_000, None)
    second = first.then(8_000, 3)  # a late batch: its events older, its samples new
    assert second == Read(10_000, 3)
    assert second.then(None, None) == second  # a batch without events or samples


def test_the_watermark_is_sparks_rule_over_the_record_a_batch_starts_from() -> None:
    assert Read().watermark(5_000) == 0  # no event yet: Spark's watermark is 0 too
    assert Read(3_000).watermark(5_000) == 0  # never below 0
    assert Read(60_000, 7).watermark(5_000) == 55_000


def test_a_batch_run_again_after_its_record_went_in_starts_where_its_first_run_did() -> None:
    """Its watermark must not move: what the first run left waiting must wait again, or a
    sample between the two watermarks would get neither rows nor a place in the pending set
    (the pending set and the record are two commits a kill can fall between)."""
    before, after = Read(50_000, 6), Read(60_000, 7)
    text = after.row(before, "replay:ck#4").column("state")[0].as_py()
    assert Read.of_row(text, "replay:ck#4") == (before, after)  # batch 4 again
    assert Read.of_row(text, "replay:ck#5") == (after, after)  # the next batch
    assert Read.of_row(None, "replay:ck#0") == (Read(), Read())  # no record yet
    assert after.row(before, "m").column("kind").to_pylist() == ["read"]
