"""The same log through each backend, as whole tables to compare: the pure fold in this
process (as streaming would end: every timer due before the final watermark fired), the
streaming replay and the batch backfill."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from pipeline.fold import CoordinatorConfig, Event, advance, fold, reject_unkeyed
from pipeline.spark.backfill import BackfillOptions, run_backfill
from pipeline.spark.convert import Tagged, wire_frame
from pipeline.spark.folding import tagged_rows
from pipeline.spark.replay import ReplayOptions, delay_ms, run_replay
from pipeline.spark.sinks import table_rows
from pipeline.spark.tables import wire_schema
from schemas import OUTPUT_TABLES

CONFIG = CoordinatorConfig()
DELAY = "10 minutes"


def pure_tables(spark: SparkSession, events: list[Event], config: CoordinatorConfig = CONFIG,
                watermark: int | None = None) -> dict[str, DataFrame]:
    """`watermark`: timers fire up to it; by default the stream's final one."""
    by_group: dict[str | None, list[Event]] = defaultdict(list)
    for e in events:
        by_group[e.group_id].append(e)
    if watermark is None:
        watermark = max(e.event_time for e in events if e.event_time is not None) - delay_ms(DELAY)
    tagged: list[Tagged] = [("rejected_events", r) for r in reject_unkeyed(by_group.pop(None, []))]
    for group_id, group_events in by_group.items():
        assert group_id is not None
        result = fold(group_id, group_events, config)
        timed = advance(result.group, watermark, config)
        result.outputs.extend(timed.outputs)
        result.group = timed.group
        tagged += [t for t in tagged_rows(result, config)
                   if not (t[0] == "committed_offsets" and t[1].get("_deleted"))]
    wire = spark.createDataFrame(wire_frame(tagged, wire_schema()), wire_schema())
    return {table: table_rows(wire, table) for table in OUTPUT_TABLES}


def streaming_tables(spark: SparkSession, events_path: str, root: Path,
                     max_files: int | None = None) -> dict[str, DataFrame]:
    warehouse = root / "warehouse"
    run_replay(spark, ReplayOptions(
        events=events_path, warehouse=str(warehouse), checkpoint=str(root / "checkpoint"),
        database=None, watermark_delay=DELAY, max_files_per_trigger=max_files, config=CONFIG))
    return read_tables(spark, warehouse)


def backfill_tables(spark: SparkSession, events_path: str, root: Path,
                    **options: Any) -> dict[str, DataFrame]:
    warehouse = root / "warehouse"
    run_backfill(spark, BackfillOptions(events=events_path, warehouse=str(warehouse),
                                        database=None, watermark_delay=DELAY, config=CONFIG,
                                        **options))
    return read_tables(spark, warehouse)


def read_tables(spark: SparkSession, warehouse: Path) -> dict[str, DataFrame]:
    return {t: spark.read.format("delta").load(str(warehouse / t)) for t in OUTPUT_TABLES}


def assert_same_tables(actual: dict[str, DataFrame], expected: dict[str, DataFrame]) -> None:
    """Whole tables equal: the same columns and types (nullability aside) and the same rows in
    any order. One collect a side: chispa's `assert_df_equality` (ignoring row order) and the
    counts before it ran four jobs a table, two of them sorts."""
    for table in OUTPUT_TABLES:
        a, e = actual[table], expected[table]
        columns = sorted(e.columns)
        assert _types(a, columns) == _types(e, columns), (
            f"{table}: columns {_types(a, sorted(a.columns))}, expected {_types(e, columns)}")
        got = Counter(repr(tuple(r)) for r in a.select(*columns).collect())
        want = Counter(repr(tuple(r)) for r in e.select(*columns).collect())
        if got != want:
            extra, missing = sorted((got - want).elements()), sorted((want - got).elements())
            raise AssertionError(
                f"{table} ({', '.join(columns)}): {sum(got.values())} rows, expected "
                f"{sum(want.values())}; {len(extra)} unexpected, e.g. {extra[:3]}; "
                f"{len(missing)} missing, e.g. {missing[:3]}")


def _types(df: DataFrame, columns: list[str]) -> list[tuple[str, str]]:
    fields = {f.name: f.dataType.simpleString() for f in df.schema.fields}
    return [(c, fields.get(c, "absent")) for c in columns]
