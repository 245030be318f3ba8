"""The Spark/Python boundary under extreme values: rows whose every numeric column
is 0, -1, an int32/int64 bound or null go through the pure fold, the Arrow and the pandas
converters both ways and a small stream. Nothing raises, every row is applied or rejected
with a reason, and every value comes back exactly."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession
from pyspark.sql.conversion import ArrowBatchTransformer, PandasToArrowConversion
from pyspark.sql.types import StructField, StructType

from pipeline.fold import CoordinatorConfig, Event
from pipeline.fold.events import events_of
from pipeline.fold.group_replay import FAILED, replay_group
from pipeline.fold.partitioning import partition_for
from pipeline.spark.events.eventlog import events_to_arrow, write_event_log
from pipeline.spark.events.packing import columns_from_arrow
from pipeline.spark.fold.folding import arrow_of, frame_of
from pipeline.spark.fold.left import LEFT_COLUMNS
from pipeline.spark.fold.wire import packed_tables, wire_checks, wire_schema, wire_table_of
from pipeline.times import PANDAS_MS_RANGE
from schemas import EVENT_COLUMNS, EVENT_TYPES
from tests.grouping import by_group
from tests.spark.backends import (
    assert_same_tables,
    backfill_tables,
    pure_tables,
    streaming_tables,
)

pytestmark = pytest.mark.spark
CONFIG = CoordinatorConfig()
T0 = 1_700_000_000_000
INTS = [None, 0, -1, 1, -(2**31), 2**31 - 1]
BIGINTS = [None, 0, -1, 1, -(2**63), 2**63 - 1, 2**53 + 1]
TIMES = [None, 0, -1, T0, T0 + 1, *PANDAS_MS_RANGE]  # the times select_events lets through
GROUPS = ["g", "cg"]
TYPES = list(EVENT_TYPES)
MEMBER = {"member_id": "a-1", "group_instance_id": None, "client_id": "c", "client_host": "/h",
          "subscription": ["orders"], "assignment": [{"topic": "orders", "partition": 0}]}
NESTED: dict[str, list[Any]] = {
    "protocols": [None, [], [{"name": "range", "topics": ["orders"]}]],
    "assignments": [None, [{"member_id": "a-1", "partitions": [{"topic": "orders",
                                                                "partition": 2**31 - 1}]}]],
    "topics_metadata": [None, [{"topic_id": "t", "topic_name": "orders",
                                "num_partitions": 2**31 - 1, "partition_metadata": []}]],
    "assigned_partitions": [None, [{"topic_id": "t", "partitions": [0, 2**31 - 1]}]],
    "partitions_pending_revocation": [None, [{"topic_id": "t", "partitions": [-(2**31)]}]],
}
STRINGS: dict[str, list[Any]] = {
    "member_id": [None, "", "a-1"], "protocol_type": [None, "consumer"],
    "topic": [None, "orders"], "txn_result": [None, "COMMIT", "ABORT"],
    "leader_id": [None, "a-1"], "protocol": [None, "range"],
}


def _values(name: str, ddl: str, group: str) -> list[Any]:
    if name == "log_partition":
        return [partition_for(group)] * 4 + INTS  # mostly the group's own partition
    if name == "group_id":
        return [group]
    if name == "event_type":
        return TYPES
    if name == "members":
        return [None, [], [{**MEMBER, "session_timeout_ms": s, "rebalance_timeout_ms": s}
                           for s in (2**31 - 1, -(2**31))]]
    if name in NESTED:
        return NESTED[name]
    if name in STRINGS:
        return STRINGS[name]
    return {"int": INTS, "bigint": BIGINTS, "timestamp": TIMES}.get(ddl, [None])


def random_row(rng: random.Random) -> dict[str, Any]:
    group = rng.choice(GROUPS)
    return {c.name: rng.choice(_values(c.name, c.type, group)) for c in EVENT_COLUMNS}


rows_strategy = st.lists(st.randoms(use_true_random=False).map(random_row),
                         min_size=1, max_size=12)


def spark_pandas(table: pa.Table) -> pd.DataFrame:
    """The frame applyInPandasWithState hands the fold (its serializer's settings, with the
    nullable integer columns the replay asks for)."""
    series = ArrowBatchTransformer.to_pandas(table, timezone="UTC", struct_in_pandas="dict",
                                             prefer_int_ext_dtype=True)
    return pd.concat(series, axis=1).set_axis(table.column_names, axis=1)


def spark_arrow(frame: pd.DataFrame) -> pa.Table:
    """The Arrow batch Spark makes of the fold's output frame (its serializer's settings)."""
    batch = PandasToArrowConversion.convert(
        [frame], StructType([StructField("_1", wire_schema(typed=True))]), timezone="UTC",
        safecheck=True, arrow_cast=True, assign_cols_by_name=True)
    return pa.Table.from_struct_array(batch.column(0))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=rows_strategy)
def test_extreme_rows_cross_every_converter_and_the_fold_exactly(
        spark: SparkSession, rows: list[dict[str, Any]]) -> None:
    events = [Event.from_row(r) for r in rows]
    table = events_to_arrow(events)
    # In, both ways: exact (the stream's frames become Arrow as the backfill's rows are).
    assert [e.to_row() for e in events_of(columns_from_arrow(table))] == [e.to_row() for e in events]
    crossed = arrow_of([spark_pandas(table)], table.schema)
    assert [e.to_row() for e in events_of(columns_from_arrow(crossed))] == [
        e.to_row() for e in events]
    # The fold: nothing raises; every row is applied or rejected with a reason.
    for group_id, group_events in by_group(events, unkeyed=True).items():
        assert group_id is not None
        tables = replay_group(group_id, None, group_events, PANDAS_MS_RANGE[1], CONFIG).tables
        assert FAILED not in tables
        rejected = tables.get("rejected_events", [])
        assert all(r["reason"] for r in rejected)
        assert len(rejected) <= len(group_events)
        # Out: the wire, with every row also as a record left to the JVM (its typed columns
        # at their extremes), crosses the stream's frame exactly, or is refused for a time
        # past 2262 (a deadline of an event near 2262: docs/limits.md), a call whose rows
        # both backends reject as INTERNAL.
        try:
            names, texts = packed_tables(tables, wire_checks())
        except ValueError as refused:
            assert "does not fit the column's type (timestamp)" in str(refused)
            continue
        wire = wire_table_of(names, texts, table.select(list(LEFT_COLUMNS)), 0,
                             ["classic"] * table.num_rows)
        assert spark_arrow(frame_of(wire)).to_pylist() == wire.to_pylist()


def test_a_small_stream_of_extreme_rows_equals_the_backfill_and_the_pure_fold(
        spark: SparkSession, tmp_path: Path) -> None:
    rng = random.Random(12)
    rows = [random_row(rng) for _ in range(80)]
    seen: set[tuple[Any, Any]] = set()
    for i, r in enumerate(rows):  # one row per position: which of two comes first is arbitrary
        if (r["log_partition"], r["log_offset"]) in seen:
            r["log_offset"] = 1000 + i
        seen.add((r["log_partition"], r["log_offset"]))
    events = [Event.from_row(r) for r in rows]
    log = str(tmp_path / "events")
    write_event_log(spark, events, log, commits=3)
    pure = pure_tables(spark, events)
    # One micro-batch: with times from 1677 to 2262 in one log nearly every row of a later
    # batch is behind the watermark, and a late row meets timers fired up to the watermark
    # (docs/running.md: late rows are applied and counted, not replayed as if on time).
    assert_same_tables(streaming_tables(spark, log, tmp_path / "stream"), pure)
    assert_same_tables(backfill_tables(spark, log, tmp_path / "backfill"), pure)
