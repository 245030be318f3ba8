"""Writing a micro-batch of wire rows to the Delta tables, idempotently per batch.

History tables are appended with Delta's `txnAppId`/`txnVersion`, current tables are
MERGEd with the same pair set on the session, so a batch Spark retries after a crash is
skipped by Delta instead of being written twice. Tables live at `<warehouse>/<table>`.
The batch's tables are written side by side (`pipeline.spark.parallel`), each its own commit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipeline.spark import paths
from pipeline.spark.catalog import (
    comment_columns,
    persistent_catalog,
    quote_name,
    register_permanent,
)
from pipeline.spark.folding import FAILED
from pipeline.spark.parallel import run_all
from pipeline.spark.tables import APPEND_TABLES, WIRE_ROW, holds, row_schema, table_schema
from schemas import OUTPUT_TABLES, TABLE_KEYS

# One file (and one task) per this many rows of a write: a small micro-batch writes each table
# as one file instead of one per shuffle partition, a big batch keeps its parallelism.
ROWS_PER_FILE = 1_000_000
# A stream commits to each table every micro-batch. At Delta's default, every tenth commit
# also writes a checkpoint, in the committing thread: six Spark jobs, ~2 s against ~0.3 s for
# a small append here (+60 % on an append's average). Readers replay at most this many small
# JSON commits after the last checkpoint.
CHECKPOINT_INTERVAL = 100
TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
log = logging.getLogger("replay")


def log_failed_groups(wire: DataFrame, failed: int, where: str) -> None:
    """Log each group whose fold raised, once, with its traceback (the FAILED wire rows)."""
    if not failed:
        return
    for row in table_rows(wire, FAILED).collect():
        log.error("%s: group %s could not be folded; its rows went to rejected_events as "
                  "INTERNAL and its state stays as it was:\n%s", where, row["group_id"],
                  row["reason"])


def table_rows(wire: DataFrame, table: str, extra: bool = False,
               count: int | None = None) -> DataFrame:
    """`table`'s rows of the wire, parsed into the table's own schema (with `extra`, also
    the columns its rows carry beyond it, as committed_offsets' `_deleted`). Given their
    `count`, in as few partitions as hold them at `ROWS_PER_FILE` each."""
    schema = row_schema(table)
    rows = wire.filter(F.col("_table") == table)
    if count is not None:
        rows = rows.coalesce(max(1, -(-count // ROWS_PER_FILE)))
    parsed = rows.select(
        F.from_json(F.col(WIRE_ROW), _as_json(schema), {"mode": "FAILFAST"}).alias("r"))
    keep = schema.fields if extra or table not in OUTPUT_TABLES else table_schema(table).fields
    return parsed.select(*[_restored(F.col("r").getField(f.name), f.dataType).alias(f.name)
                           for f in keep])


def _as_json(t: DataType) -> DataType:
    """`t` as the JSON holds it: times as epoch ms (bigint), bytes as base64 (string)."""
    if isinstance(t, TimestampType):
        return LongType()
    if isinstance(t, BinaryType):
        return StringType()
    if isinstance(t, ArrayType):
        return ArrayType(_as_json(t.elementType), t.containsNull)
    if isinstance(t, StructType):
        return StructType([StructField(f.name, _as_json(f.dataType), f.nullable)
                           for f in t.fields])
    return t


def _restored(c: Column, t: DataType) -> Column:
    """The value `c` of JSON type `_as_json(t)` as type `t`, at any depth."""
    if not holds(t, (TimestampType, BinaryType)):
        return c
    if isinstance(t, TimestampType):
        return F.timestamp_millis(c)
    if isinstance(t, BinaryType):
        return F.unbase64(c)
    if isinstance(t, ArrayType):
        return F.transform(c, lambda x: _restored(x, t.elementType))
    assert isinstance(t, StructType)
    return F.when(c.isNull(), F.lit(None)).otherwise(F.struct(
        *[_restored(c.getField(f.name), f.dataType).alias(f.name) for f in t.fields]))


def _on_keys(table: str) -> str:
    return " AND ".join(f"t.`{k}` = s.`{k}`" for k in TABLE_KEYS[table])


def ensure_tables(spark: SparkSession, warehouse: str, database: str | None) -> None:
    """Create every output table (empty) if missing, and register it in the catalog:
    `database` is a schema of the session catalog, or `catalog.schema`; in a persistent
    catalog the as-of and rebalance functions and the group_members view go there too, and
    the columns get their docs as comments."""
    if database:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote_name(database)}")
    run_all([partial(_ensure_table, spark, paths.join(warehouse, table), table, database)
             for table in OUTPUT_TABLES])
    # Functions, views and comments are for other processes: only in a persistent catalog
    # (Hive's, or a catalog.schema such as Unity Catalog's); the in-memory one gets
    # register_views' own, and tests' tables stay as the fold writes them.
    if database and persistent_catalog(spark, database):
        comment_columns(spark, warehouse)
        register_permanent(spark, database)


def _ensure_table(spark: SparkSession, path: str, table: str, database: str | None) -> None:
    if not DeltaTable.isDeltaTable(spark, path):
        builder = (DeltaTable.createIfNotExists(spark).location(path)
                   .addColumns(table_schema(table))
                   .property("delta.checkpointInterval", str(CHECKPOINT_INTERVAL)))
        if table in APPEND_TABLES:
            builder = builder.property("delta.appendOnly", "true")
        builder.execute()
    if database:
        spark.sql(f"CREATE TABLE IF NOT EXISTS {quote_name(database)}.`{table}` "
                  f"USING DELTA LOCATION '{path}'")


@dataclass
class BatchWriter:
    """The foreachBatch function of the replay job."""

    warehouse: str
    app_id: str
    progress: dict[int, dict[str, float]] = field(default_factory=dict)

    def path(self, table: str) -> str:
        return paths.join(self.warehouse, table)

    def __call__(self, wire: DataFrame, batch_id: int) -> None:
        start = time.monotonic()
        wire = wire.persist()
        try:
            counts = {r["_table"]: r["count"] for r in wire.groupBy("_table").count().collect()}
            log_failed_groups(wire, counts.get(FAILED, 0), f"batch {batch_id}")
            spark = wire.sparkSession
            writes: list[Callable[[], None]] = [
                partial(self._append, wire, table, batch_id, counts[table])
                for table in APPEND_TABLES if counts.get(table)]
            if counts.get("group_state"):
                writes.append(partial(self._merge_state, spark, wire, counts["group_state"]))
            if counts.get("committed_offsets"):
                writes.append(partial(self._merge_offsets, spark, wire,
                                      counts["committed_offsets"]))
            # The MERGEs read the idempotence pair from the session; the appends name it too.
            spark.conf.set(TXN_APP_ID, self.app_id)
            spark.conf.set(TXN_VERSION, str(batch_id))
            try:
                run_all(writes)
            finally:
                spark.conf.unset(TXN_APP_ID)
                spark.conf.unset(TXN_VERSION)
        finally:
            wire.unpersist()
        self.progress[batch_id] = {
            "groups": counts.get("group_state", 0),
            "rejected": counts.get("rejected_events", 0),
            "failed": counts.get(FAILED, 0),
            "write_s": time.monotonic() - start,
        }

    def _append(self, wire: DataFrame, table: str, batch_id: int, count: int) -> None:
        (table_rows(wire, table, count=count).write.format("delta").mode("append")
         .option("txnAppId", self.app_id).option("txnVersion", batch_id)
         .save(self.path(table)))

    def _merge_state(self, spark: SparkSession, wire: DataFrame, count: int) -> None:
        source = table_rows(wire, "group_state", count=count)
        (DeltaTable.forPath(spark, self.path("group_state")).alias("t")
         .merge(source.alias("s"), _on_keys("group_state"))
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

    def _merge_offsets(self, spark: SparkSession, wire: DataFrame, count: int) -> None:
        rows = table_rows(wire, "committed_offsets", extra=True, count=count)
        cols = [F.col(f.name) for f in table_schema("committed_offsets").fields]
        source = rows.select(*cols, F.coalesce(F.col("_deleted"), F.lit(False)).alias("_deleted"))
        values = {f.name: f"s.`{f.name}`" for f in table_schema("committed_offsets").fields}
        (DeltaTable.forPath(spark, self.path("committed_offsets")).alias("t")
         .merge(source.alias("s"), _on_keys("committed_offsets"))
         .whenMatchedDelete("s._deleted")
         .whenMatchedUpdate(set=values)
         .whenNotMatchedInsert(condition="NOT s._deleted", values=values)
         .execute())
