"""The end-offset samples (`schemas/lag.py` LOG_END_OFFSETS) as a Delta table: written by the
ingest's sampler and the generator, read by replay and backfill.

Every writer goes through `merge_samples`: one Delta MERGE that inserts a sample only if its
key (topic, partition, sampled_at) is not in the table yet, so a sample written twice (a
retried round, a restarted ingest, a generator run again) is kept once. Readers take the
table through `read_samples`, which casts a user's table to the contract's types and splits
off the rows that cannot be a sample (a required column null, a negative partition or offset)
with the reason, for `rejected_samples`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pipeline.errors import UsageError
from pipeline.spark.events.validate import check_columns
from pipeline.spark.tables import paths, sqltext
from pipeline.spark.tables.contract import arrow_schema, struct_of
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.options import delta_table, latest_version, read_delta
from pipeline.spark.tables.warehouse import insert_missing
from schemas.lag import LOG_END_OFFSETS, SAMPLE_KEY, SAMPLE_REQUIRED

REASON = "reason"
log = logging.getLogger(__name__)


@cache
def samples_schema() -> StructType:
    """LOG_END_OFFSETS as a Spark schema; every column nullable on disk, as the event log's."""
    return struct_of(LOG_END_OFFSETS)


def samples_arrow(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Samples given as dicts under LOG_END_OFFSETS' names, times in epoch milliseconds (the
    pure side's form: the generator's, the sampler's), as Arrow in the contract's types.
    Through Arrow: a round of 200,000 partitions as Python rows costs seconds to convert."""
    listed = list(rows)
    schema = arrow_schema(samples_schema())
    columns = []
    for f in schema:
        values = [r.get(f.name) for r in listed]
        columns.append(pc.multiply(pa.array(values, pa.int64()), 1000).cast(f.type)
                       if pa.types.is_timestamp(f.type) else pa.array(values, f.type))
    return pa.table(columns, schema=schema)


def samples_frame(spark: SparkSession, rows: Iterable[Mapping[str, Any]]) -> DataFrame:
    """`samples_arrow` as a DataFrame."""
    return spark.createDataFrame(samples_arrow(rows), samples_schema())


# Delta's change data feed on the samples table: each row a stream reads carries the commit it
# came in (`wire.COMMIT_VERSION`), the replay's record of the table's version a batch read.
CHANGE_FEED = "delta.enableChangeDataFeed"


def ensure_samples_table(spark: SparkSession, path: str) -> None:
    create_table(spark, path, samples_schema(), {CHANGE_FEED: "true"})


def with_change_feed(spark: SparkSession, source: str) -> None:
    """The samples table (a path or a table name) with its change data feed on: turned on,
    said in one line, on a table made without it (a metadata commit; its rows are untouched).
    A stream reads the table's changes from the version it was turned on at."""
    table = delta_table(spark, source)
    row = table.detail().select("properties").first()
    if row is not None and str((row[0] or {}).get(CHANGE_FEED, "")).lower() == "true":
        return
    target = f"delta.`{source}`" if paths.is_path(source) else source
    spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ('{CHANGE_FEED}' = 'true')")
    log.info("turned on Delta's change data feed of the end-offset samples %s at version %d: "
             "the replay learns from it which version of the table each batch read",
             source, latest_version(spark, source))


def merge_samples(spark: SparkSession, target: str, rows: pa.Table) -> int:
    """Insert the samples whose key `target` (a Delta path or table name) lacks; how many
    were offered. Samples arrive in time order: their time range prunes the files."""
    return insert_missing(spark, lambda: ensure_samples_table(spark, target), target, rows,
                          SAMPLE_KEY, "sampled_at")


def write_samples(spark: SparkSession, rows: Iterable[Mapping[str, Any]], target: str) -> int:
    """`rows` (dicts, times in ms) merged into the samples table at `target`."""
    return merge_samples(spark, paths.qualify(target) if paths.is_path(target) else target,
                         samples_arrow(rows))


def check_samples(spark: SparkSession, source: str, flag: str = "--end-offsets") -> None:
    """`source` (a path or a table name) is a Delta table whose columns fit LOG_END_OFFSETS:
    the required ones present, every one present castable without loss."""
    label = f"{flag} {source}"
    if paths.is_path(source):
        if not paths.exists(spark, source) or not DeltaTable.isDeltaTable(spark, source):
            raise UsageError(f"{label}: no Delta table there; expected the end-offset samples "
                             "written by jobs/ingest.py --end-offsets or jobs/generate.py "
                             "--end-offsets (columns: see schemas/lag.py)")
    elif not spark.catalog.tableExists(source):
        raise UsageError(f"{label}: no such table in the catalog; expected a path or the "
                         "name of a Delta table of end-offset samples")
    schema = read_delta(spark, source).schema
    check_columns(schema, samples_schema(), SAMPLE_REQUIRED, label,
                  "end-offset samples need", "schemas/lag.py")


def select_samples(df: DataFrame, *keep: str) -> DataFrame:
    """A samples table's rows in the contract's columns and types (optional columns it lacks
    read as null), `keep`'s columns as they are, with `reason` set on a row that cannot be a
    sample."""
    columns = [sqltext.named(sqltext.cast(sqltext.ident(f.name) if f.name in df.columns
                                          else "NULL", f.dataType), f.name)
               for f in samples_schema().fields]
    typed = df.selectExpr(*columns, *map(sqltext.ident, keep))
    return typed.withColumn(REASON, malformed_reason())


def malformed_reason() -> Column:
    """`MALFORMED: <what>` for a sample row lacking a required value or holding a negative
    partition or offset; null for a good one."""
    checks = [(F.col(c).isNull(), f"{c} is null") for c in SAMPLE_REQUIRED]
    checks += [(F.col(c) < 0, f"{c} must not be negative") for c in
               ("partition", "log_end_offset", "log_start_offset")]
    reason: Column = F.lit(None).cast("string")
    for failed, what in reversed(checks):
        reason = F.when(failed, F.lit(f"MALFORMED: {what}")).otherwise(reason)
    return reason


def read_samples(spark: SparkSession, source: str, version: int | None = None) -> DataFrame:
    """The samples table (a path or a table name), at `version` if given, through
    `select_samples`."""
    return select_samples(read_delta(spark, source, version))
