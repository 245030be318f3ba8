"""The warehouse's tables as Delta tables and catalog names: created empty when missing (with
their properties: append-only history, a checkpoint every `CHECKPOINT_INTERVAL` commits) and
registered in the catalog database, with, in a persistent catalog, the permanent functions
and view and the columns' docs as comments."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
from delta.tables import DeltaTable
from deltalake import DeltaTable as DeltaLake
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pipeline.spark.runtime.keep import kept
from pipeline.spark.tables import paths, writes
from pipeline.spark.tables.catalog import (
    comment_columns,
    persistent_catalog,
    quote_name,
    quote_path,
    register_permanent,
)
from pipeline.spark.tables.contract import table_schema
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.parallel import run_all
from schemas import APPEND_TABLES, OUTPUT_TABLES
from schemas.lag import LAG_TABLES
from schemas.share_state import SHARE_TABLES

log = logging.getLogger(__name__)

# A stream commits to each table every micro-batch. At Delta's default, every tenth commit
# also writes a checkpoint, in the committing thread: six Spark jobs, several times a small
# append (docs/performance.md). Readers replay at most this many small JSON commits after
# the last checkpoint.
CHECKPOINT_INTERVAL = 100
# Delta's auto compaction, which releases before this one set on every table: after each
# commit its hook lists the table's files (two Spark jobs a table a commit) to decide whether
# 50 small ones wait: both the backfill and a stream's warm batch are faster without it
# (docs/performance.md). The stream compacts its tables itself every N batches
# instead (--maintain-every, stream/maintain.py), and a table still carrying the property
# loses it when a job opens the warehouse.
AUTO_COMPACT = "delta.autoOptimize.autoCompact"
# History, lag and share tables are append-only: Delta refuses them any commit that removes
# rows. The few rewrites the jobs make of them (a backfill's replace, the upkeep's retention
# delete) lift it for one commit (`open_for_rewrite`).
APPEND_ONLY = "delta.appendOnly"


def ensure_tables(spark: SparkSession, warehouse: str, database: str | None,
                  lag: bool = False, share: bool = False) -> None:
    """Create every output table (empty) if missing, and register it in the catalog:
    `database` is a schema of the session catalog, or `catalog.schema`; in a persistent
    catalog the as-of and rebalance functions and the group_members view go there too, and
    the columns get their docs as comments. With `lag`, the lag tables too; with `share`,
    the share-state tables."""
    if database:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote_name(database)}")
    tables = [*OUTPUT_TABLES, *(LAG_TABLES if lag else ()), *(SHARE_TABLES if share else ())]
    run_all([partial(_ensure_table, spark, paths.join(warehouse, table), table, database)
             for table in tables])
    # Functions, views and comments are for other processes: only in a persistent catalog
    # (Hive's, or a catalog.schema such as Unity Catalog's); the in-memory one gets
    # register_views' own, and tests' tables stay as the fold writes them.
    if database and persistent_catalog(spark, database):
        comment_columns(spark, warehouse)
        register_permanent(spark, database, lag)


def append_only(table: str) -> bool:
    return table in APPEND_TABLES or table in LAG_TABLES or table in SHARE_TABLES


def _ensure_table(spark: SparkSession, path: str, table: str, database: str | None) -> None:
    properties = {"delta.checkpointInterval": str(CHECKPOINT_INTERVAL)}
    if append_only(table):
        properties[APPEND_ONLY] = "true"
    schema = table_schema(table)
    if not create_table(spark, path, schema, properties):
        table_ = DeltaTable.forPath(spark, path)  # one snapshot for both checks
        _properties_as_made(spark, path, table_, append_only(table))
        _with_columns(spark, path, schema, table_)
    if database:
        spark.sql(f"CREATE TABLE IF NOT EXISTS {quote_name(database)}.`{table}` "
                  f"USING DELTA LOCATION '{path}'")


def _properties_as_made(spark: SparkSession, path: str, table: DeltaTable,
                        appends_only: bool) -> None:
    """A table an earlier release made with auto compaction loses it, in one commit, once; an
    append-only table a job was killed inside a rewrite of (`open_for_rewrite`) is closed
    again, with a warning."""
    detail = table.detail().select("properties").first()
    have = {} if detail is None or detail[0] is None else dict(detail[0])
    if AUTO_COMPACT in have:
        spark.sql(f"ALTER TABLE {quote_path(path)} UNSET TBLPROPERTIES ('{AUTO_COMPACT}')")
    if appends_only and have.get(APPEND_ONLY) != "true":
        log.warning("%s was open to rewrites (%s=%s: a job stopped inside a backfill's replace "
                    "or a retention delete): append-only again", path, APPEND_ONLY,
                    have.get(APPEND_ONLY, "unset"))
        spark.sql(f"ALTER TABLE {quote_path(path)} SET TBLPROPERTIES ('{APPEND_ONLY}' = 'true')")


@contextmanager
def open_for_rewrite(spark: SparkSession, path: str, protected: bool = True) -> Iterator[None]:
    """Lift an append-only table's protection for the one rewrite made inside (a commit that
    removes rows), and restore it after, even when the rewrite fails; nothing for a table
    not `protected`. A kill between the two leaves it open; the next job that opens the
    warehouse closes it (`ensure_tables`)."""
    if not protected:
        yield
        return
    table = quote_path(path)
    spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{APPEND_ONLY}' = 'false')")
    try:
        yield
    finally:
        spark.sql(f"ALTER TABLE {table} SET TBLPROPERTIES ('{APPEND_ONLY}' = 'true')")


def missing_fields(have: T.DataType, want: T.DataType, at: str = "") -> list[str]:
    """The dotted paths of the fields `want` declares and `have` lacks, looking into
    structs, arrays' elements and maps' values: what a table written by an older release
    lacks of the contract."""
    if isinstance(want, T.ArrayType) and isinstance(have, T.ArrayType):
        return missing_fields(have.elementType, want.elementType, f"{at}element.")
    if isinstance(want, T.MapType) and isinstance(have, T.MapType):
        return missing_fields(have.valueType, want.valueType, f"{at}value.")
    if not isinstance(want, T.StructType) or not isinstance(have, T.StructType):
        return []
    had = {f.name: f.dataType for f in have.fields}
    return [path for f in want.fields
            for path in ([f"{at}{f.name}"] if f.name not in had
                         else missing_fields(had[f.name], f.dataType, f"{at}{f.name}."))]


def _with_columns(spark: SparkSession, path: str, schema: T.StructType,
                  table: DeltaTable) -> None:
    """A table written by an older release gets the columns (and nested fields) the
    contract added since, null in its rows, in one schema-merging commit of no rows:
    Delta puts them after the ones it has, and every write here goes by name."""
    missing = missing_fields(table.toDF().schema, schema)
    if missing:
        log.warning("%s: adding the columns this release writes: %s", path,
                    ", ".join(missing))
        writes.append(spark, spark.createDataFrame([], schema), path, merge_schema=True)


@contextmanager
def _offered(rows: DataFrame, key: Sequence[str], ranged: str
             ) -> Iterator[tuple[DataFrame, int, Column]]:
    """`rows` once per `key`, kept for the block: the rows, how many, and the condition on a
    table's `ranged` column that holds their range (a column that grows with the log: an
    offset, a time), which lets Delta skip files by their statistics."""
    with kept(rows.dropDuplicates(list(key))) as source:
        bounds = source.agg(F.count(F.lit(1)).alias("n"), F.min(ranged).alias("lo"),
                            F.max(ranged).alias("hi")).first()
        assert bounds is not None
        yield source, int(bounds["n"]), F.col(f"t.`{ranged}`").between(
            F.lit(bounds["lo"]), F.lit(bounds["hi"]))


def _same_key(key: Sequence[str]) -> Column:
    return F.expr(" AND ".join(f"t.`{k}` <=> s.`{k}`" for k in key))


def insert_missing(spark: SparkSession, ensure: Callable[[], object], target: str,
                   rows: pa.Table, key: Sequence[str], ranged: str) -> int:
    """Insert the `rows` whose `key` the Delta table at `target` (made by `ensure` when first
    needed) lacks, in one MERGE (`writes.merge`: from the driver where it writes the table);
    how many distinct rows were offered. Their range of `ranged` (a column that grows with
    the log: an offset, a time) lets the MERGE skip the table's files outside it."""
    source = writes.distinct(rows, key)
    if not source.num_rows:
        return 0
    ensure()
    lo, hi = pc.min_max(source.column(ranged)).as_py().values()
    writes.merge(spark, source, target, key, insert_only=True,
                 within=None if lo is None else writes.Within(ranged, lo, hi))
    return int(source.num_rows)


def append_missing(table: Callable[[], DeltaTable], target: str, rows: DataFrame,
                   key: Sequence[str], ranged: str, cluster: str) -> int:
    """Append the `rows` whose `key` the Delta `table` at `target` (made when first needed)
    lacks, one file per value of `cluster`, sorted by `key`; the table takes new columns. How
    many distinct rows were offered (`_offered`: `ranged`).

    An event log's layout (`ingest.merge_into_log`): a replay that caps its micro-batches
    (`--max-files-per-trigger`) may split one commit's files between two batches, and reads
    each batch after the last. With each log partition's rows of a commit in one file, in
    order, no split puts a later record of a partition (and so of a group) in an earlier
    batch than an earlier one. A MERGE could not keep this: it writes the rows as its join
    with the table left them, one partition's records spread over every file. What the MERGE
    gave besides, a refusal when another writer added rows in the range at the same moment,
    an append does not: one writer a log at a time."""
    with _offered(rows, key, ranged) as (source, n, in_range):
        if n:
            delta = table()
            spark = source.sparkSession
            small = _driver_rows(spark, target, source, n, (*key, cluster))
            if small is not None:
                new_rows = _lacking(small, target, key, ranged, cluster)
                if new_rows.num_rows:
                    writes.append(spark, new_rows.sort_by([(k, "ascending") for k in key]),
                                  target, merge_schema=True)
                return n
            have = delta.toDF().alias("t").where(in_range).select(*key)
            new = source.alias("s").join(have.alias("t"), _same_key(key), "left_anti")
            writes.append(spark, new.repartition(cluster).sortWithinPartitions(*key),
                          target, merge_schema=True)
        return n


def _driver_rows(spark: SparkSession, target: str, source: DataFrame, n: int,
                 columns: Sequence[str]) -> pa.Table | None:
    """The rows as Arrow where the driver appends them (`writes.on_driver`) and none of
    `columns` (the key and the cluster column) is null (Spark's anti-join compares keys
    null-safe); else None."""
    if not writes.on_driver(spark, target, n):
        return None
    data = source.toArrow()
    return None if any(data.column(c).null_count for c in columns) else data


def _lacking(data: pa.Table, target: str, key: Sequence[str], ranged: str,
             cluster: str) -> pa.Table:
    """The rows of `data` whose key the table at `target` lacks, read by delta-rs over each
    `cluster` value's own range of `ranged` (a log partition's offsets), so the files
    outside are skipped by their statistics. All the rows go in one file, sorted by key:
    each cluster value's rows of the commit are in one file, in order, as Spark writes them."""
    local = writes.local_path(target)
    assert local is not None, target
    ranges = data.group_by(cluster).aggregate([(ranged, "min"), (ranged, "max")])
    within = None
    for value, lo, hi in zip(*(ranges.column(c).to_pylist()
                               for c in (cluster, f"{ranged}_min", f"{ranged}_max")), strict=True):
        # never null here (`_driver_rows`)
        one = (pds.field(cluster) == value) & (pds.field(ranged) >= lo) & \
            (pds.field(ranged) <= hi)
        within = one if within is None else within | one
    have = DeltaLake(local).to_pyarrow_dataset().to_table(columns=list(key), filter=within)
    seen = set(zip(*(have.column(k).to_pylist() for k in key), strict=True))
    if not seen:
        return data
    keep = [k not in seen for k in zip(*(data.column(c).to_pylist() for c in key), strict=True)]
    return data.filter(pa.array(keep, pa.bool_()))

