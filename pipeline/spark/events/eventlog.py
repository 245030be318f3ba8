"""The event log as a Delta table: read and checked for the fold (`select_events`: the
contract's columns and types whatever tool wrote it), and written from the fold's Events (the
generator's logs and the tests', `write_event_log`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType, TimestampType

from pipeline.fold import CoordinatorConfig, Event
from pipeline.spark.events.validate import check_event_schema
from pipeline.spark.tables import paths, sqltext, writes
from pipeline.spark.tables.catalog import quote_path
from pipeline.spark.tables.contract import arrow_schema, event_schema
from pipeline.spark.tables.creation import forget_uncreated
from pipeline.spark.tables.options import delta_table
from pipeline.times import PANDAS_MS_RANGE

log = logging.getLogger(__name__)


def events_to_arrow(events: Sequence[Event], schema: StructType | None = None) -> pa.Table:
    """`events` as an Arrow table of the event log's schema (`event_schema()`, which needs a
    Spark session: a process without one passes it, computed where there is one)."""
    schema = schema or event_schema()
    stamps = [f.name for f in schema.fields if isinstance(f.dataType, TimestampType)]
    rows: list[dict[str, Any]] = []
    for e in events:
        row = e.to_row()
        for name in stamps:
            if row[name] is not None:
                row[name] = row[name] * 1000  # ms -> the arrow schema's microseconds
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=arrow_schema(schema))


def select_events(df: DataFrame) -> DataFrame:
    """The event log's columns, cast to the contract's types. A log written by other tools may
    carry more columns or narrower types, or lack optional columns (read as null; older logs
    lack the KIP-848 ones). A timestamp outside 1677-2262 is read as null and the row gets a
    `decode_error`, so it is rejected as MALFORMED instead of failing the stream's pandas
    conversion; both backends see the same rows. A log lacking a required column, or with
    a column no lossless cast turns into the contract's type, is refused here, on its schema,
    before any row is read (`validate.check_event_schema`)."""
    check_event_schema(df.schema)
    columns: dict[str, str] = {}
    problems: list[str] = []
    low, high = (ms * 1000 for ms in PANDAS_MS_RANGE)
    for f in event_schema().fields:
        present = f.name in df.columns
        column = sqltext.cast(sqltext.ident(f.name) if present else "NULL", f.dataType)
        if isinstance(f.dataType, TimestampType) and present:
            micros = f"unix_micros({column})"
            outside = f"NOT ({micros} >= {low} AND {micros} <= {high})"
            note = sqltext.string(" us is outside the years 1677-2262 the replay can hold")
            problems.append(f"CASE WHEN {outside} THEN concat({sqltext.string(f.name + ' ')}, "
                            f"CAST({micros} AS STRING), {note}) END")
            column = f"CASE WHEN {outside} THEN {sqltext.null(f.dataType)} ELSE {column} END"
        columns[f.name] = column
    columns["decode_error"] = f"coalesce({', '.join([columns['decode_error'], *problems])})"
    return df.selectExpr(*[sqltext.named(text, name) for name, text in columns.items()])


def events_frame(spark: SparkSession, events: Sequence[Event]) -> DataFrame:
    return spark.createDataFrame(events_to_arrow(events), schema=event_schema())


def write_event_log(spark: SparkSession, events: Sequence[Event], path: str,
                    commits: int = 1, mode: str = "overwrite") -> None:
    """Write `events` in log order as `commits` Delta commits of one file each."""
    if commits < 1:
        raise ValueError(f"commits must be at least 1, got {commits}")
    size = max(1, -(-len(events) // commits))
    forget_uncreated(spark, path)
    for i, start in enumerate(range(0, max(len(events), 1), size)):
        chunk = events_frame(spark, events[start:start + size]).coalesce(1)
        if i == 0 and mode == "overwrite":
            writes.overwrite(spark, chunk, path)
        else:
            writes.append(spark, chunk, path)


# What the live ingest records on the event log (a table property): the cluster's
# __consumer_offsets partition count, which the fold needs (each group's records live in
# the partition its id hashes to) and which a dump cannot tell.
PARTITIONS_PROPERTY = "kafka.offsets.topic.num.partitions"


def recorded_partitions(spark: SparkSession, events: str) -> int | None:
    """The partition count the ingest recorded on the log, or None."""
    row = delta_table(spark, events).detail().select("properties").first()
    value = None if row is None or row[0] is None else dict(row[0]).get(PARTITIONS_PROPERTY)
    return None if value is None else int(value)


def record_partitions(spark: SparkSession, events: str, count: int) -> None:
    """`count` recorded on the log, in a commit of its own only when it changes."""
    if recorded_partitions(spark, events) != count:
        target = quote_path(events) if paths.is_path(events) else events
        spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ('{PARTITIONS_PROPERTY}' = '{count}')")
        log.info("recorded on %s: offsets.topic.num.partitions=%d", events, count)


def with_recorded_partitions(spark: SparkSession, events: str, config: CoordinatorConfig
                             ) -> CoordinatorConfig:
    """`config` with the partition count recorded on the log, where it has one (the caller
    keeps `config` as it is when the user set the count: the flags override)."""
    count = recorded_partitions(spark, events)
    if count is None or count == config.offsets_topic_num_partitions:
        return config
    log.info("offsets.topic.num.partitions=%d, as the ingest recorded it on %s", count, events)
    return replace(config, offsets_topic_num_partitions=count)
