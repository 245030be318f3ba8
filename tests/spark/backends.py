"""The same log through each backend, as whole tables to compare: the pure fold in this
process (as streaming would end: every timer due before the final watermark fired), the
streaming replay and the batch backfill."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from chispa import DataFramesNotEqualError
from chispa.rows_comparer import assert_basic_rows_equality
from chispa.schema_comparer import SchemasNotEqualError, assert_schema_equality
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from pipeline.fold import CoordinatorConfig, Event
from pipeline.fold.group_replay import DELETES_KEY, Tables, replay_group
from pipeline.lag import LagConfig
from pipeline.spark.backfill import BackfillOptions, run_backfill
from pipeline.spark.fold.wire import (
    Checks,
    packed_tables,
    table_rows,
    wire_checks,
    wire_schema,
    wire_table_of,
)
from pipeline.spark.lag.lagflow import LagOptions
from pipeline.spark.lag.samples import read_samples
from pipeline.spark.stream.replay import ReplayOptions, run_replay
from pipeline.spark.tables.options import interval_ms
from schemas import OUTPUT_TABLES
from schemas.lag import LAG_TABLES
from tests.grouping import by_group
from tests.lag.oracle import lag_tables

CONFIG = CoordinatorConfig()
DELAY = "10 minutes"


def pure_tables(spark: SparkSession, events: list[Event], config: CoordinatorConfig = CONFIG,
                watermark: int | None = None) -> dict[str, DataFrame]:
    """`watermark`: timers fire up to it; by default the stream's final one. Each group in
    one `replay_group` call, its rows through the stream's own converter."""
    if watermark is None:
        watermark = max(e.event_time for e in events if e.event_time is not None) - interval_ms(DELAY)
    tables: Tables = defaultdict(list)
    for group_id, group_events in by_group(events, unkeyed=True).items():
        for table, rows in replay_group(group_id, None, group_events, watermark, config).tables.items():
            tables[table] += [r for r in rows if not r.get(DELETES_KEY)]
    wire = spark.createDataFrame(wire_table(tables, wire_checks()).to_pandas(), wire_schema())
    return {table: table_rows(wire, table) for table in OUTPUT_TABLES}


def streaming_tables(spark: SparkSession, events_path: str, root: Path,
                     max_files: int | None = None, delay: str = DELAY,
                     lag: LagOptions | None = None,
                     config: CoordinatorConfig = CONFIG) -> dict[str, DataFrame]:
    warehouse = root / "warehouse"
    run_replay(spark, ReplayOptions(
        events=events_path, warehouse=str(warehouse), checkpoint=str(root / "checkpoint"),
        database=None, watermark_delay=delay, max_files_per_trigger=max_files, config=config,
        lag=lag))
    return read_tables(spark, warehouse, lag is not None)


def backfill_tables(spark: SparkSession, events_path: str, root: Path, delay: str = DELAY,
                    config: CoordinatorConfig = CONFIG, **options: Any) -> dict[str, DataFrame]:
    warehouse = root / "warehouse"
    run_backfill(spark, BackfillOptions(events=events_path, warehouse=str(warehouse),
                                        database=None, watermark_delay=delay, config=config,
                                        **options))
    return read_tables(spark, warehouse, options.get("lag") is not None)


def table_versions(spark: SparkSession, warehouse: Path) -> dict[str, int]:
    """Each output table's newest Delta version: what a write that commits moves."""
    return {t: DeltaTable.forPath(spark, str(warehouse / t)).history(1).first()["version"]
            for t in OUTPUT_TABLES}


def read_tables(spark: SparkSession, warehouse: Path, lag: bool = False) -> dict[str, DataFrame]:
    """The warehouse's output tables (with `lag`, its lag tables too)."""
    return {t: spark.read.format("delta").load(str(warehouse / t))
            for t in (*OUTPUT_TABLES, *(LAG_TABLES if lag else ()))}


def assert_same_tables(actual: dict[str, DataFrame], expected: dict[str, DataFrame],
                       tables: Iterable[str] = OUTPUT_TABLES) -> None:
    """Whole tables equal: the same columns and types (nullability and comments aside) and
    the same rows in any order, judged by chispa on one collect a side (its
    `assert_df_equality` ignoring row order runs four Spark jobs a table, two of them
    sorts)."""
    for table in tables:
        columns = sorted(expected[table].columns)
        a, e = actual[table].select(*columns), expected[table].select(*columns)
        try:
            assert_schema_equality(a.schema, e.schema, ignore_nullable=True, ignore_metadata=True)
            assert_basic_rows_equality(sorted(a.collect(), key=repr), sorted(e.collect(), key=repr))
        except (SchemasNotEqualError, DataFramesNotEqualError) as exc:
            raise AssertionError(f"{table}: {exc}") from None


# ---- the lag tables against the oracle (tests/lag/oracle.py) ----

def time_ms(value: Any) -> Any:
    if isinstance(value, datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, list):
        return [time_ms(v) for v in value]
    if hasattr(value, "asDict"):
        return {k: time_ms(v) for k, v in value.asDict(recursive=False).items()}
    return value


def rows(df: DataFrame, time: str | None = None) -> list[dict[str, Any]]:
    """Collected rows, every time in epoch ms; `time` also copied to `t` (the oracle's)."""
    out = []
    for r in df.collect():
        d = {k: time_ms(v) for k, v in r.asDict(recursive=False).items()}
        if time is not None:
            d["t"] = d[time]
        out.append(d)
    return out


SHARE_ONLY = ("start_offset", "delivery_complete_count")


def compare(actual: list[dict[str, Any]], expected: list[dict[str, Any]], what: str) -> None:
    columns = sorted(c for c in actual[0] if c not in ("sampled_at", "t")) + ["t"]
    got = Counter(tuple(r[c] for c in columns) for r in actual)
    # the oracle's rows leave out the share-only columns (null in a consumer group's row)
    want = Counter(tuple(r.get(c) if c in SHARE_ONLY else r[c] for c in columns)
                   for r in expected)
    extra, missing = sorted((got - want).elements(), key=repr), sorted((want - got).elements(), key=repr)
    assert not extra and not missing, (
        f"{what}: {sum(got.values())} rows, expected {sum(want.values())}; columns {columns}"
        f"\nunexpected {extra[:3]}\nmissing {missing[:3]}")


def assert_oracle_agrees(spark: SparkSession, warehouse: Path, samples_path: str, cut: int,
                         cfg: LagConfig) -> list[dict[str, Any]]:
    """The warehouse's lag tables equal the oracle's over its history tables, for every good
    sample taken before `cut`; returns the partition_lag rows."""
    def table(name: str) -> DataFrame:
        return spark.read.format("delta").load(str(warehouse / name))

    good = read_samples(spark, samples_path).where("reason IS NULL")
    want_parts, want_groups = lag_tables(
        [s for s in rows(good, "sampled_at") if s["t"] < cut],
        rows(table("offset_history"), "event_time"), rows(table("group_history"), "event_time"),
        rows(table("group_transitions"), "event_time"), rows(table("rebalances")), cfg)
    parts = rows(table("partition_lag"), "sampled_at")
    compare(parts, want_parts, "partition_lag")
    compare(rows(table("group_lag"), "sampled_at"), want_groups, "group_lag")
    return parts


def wire_table(rows: Tables, checks: Checks) -> pa.Table:
    """`rows` as the backfill's Arrow wire (`wire_schema()`, no row left to the JVM)."""
    return wire_table_of(*packed_tables(rows, checks), None)
