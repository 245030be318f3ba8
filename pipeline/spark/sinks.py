"""Writing a micro-batch of wire rows to the Delta tables, idempotently per batch.

History tables are appended to, current tables MERGEd, each table in one Delta commit of its
own, side by side (`pipeline.spark.parallel`). Tables live at `<warehouse>/<table>`.

Exactly once: every commit carries the batch's mark in its `userMetadata` (the stream's app
id and the batch id). Before writing a table, the writer reads the table's newest commits
and skips the table if its last mark for this app is this batch or a later one: a batch
Spark runs again after a crash writes only the tables it had not committed. A table with no
mark of this app yet (new, backfilled, or written before marks) is written with Delta's own
`txnAppId`/`txnVersion` as well, which Delta checks itself. Marks, not Delta's pair, on
every other write: Delta answers its check by rebuilding the table's snapshot state in a
Spark job before each write, which made a small append ~3.7x slower here (1.35 s against
0.37 s; reading the last commits costs ~0.2 s). What the pair would add beyond this: when
two applications run one checkpoint at once (Spark refuses it within an application and does
not support it across two), Delta would refuse the second commit of a batch to a table;
marks let both through.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

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
from pipeline.spark.lagflow import StreamLag
from pipeline.spark.parallel import WRITERS, run_all
from pipeline.spark.tables import (
    APPEND_TABLES,
    SAMPLE_WIRE,
    WIRE_ROW,
    holds,
    row_schema,
    table_schema,
)
from schemas import OUTPUT_TABLES, TABLE_KEYS
from schemas.lag import LAG_TABLES

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
COMMIT_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
HISTORY_PAGE = 16  # commits read first when looking for a table's last mark
PROGRESS_KEPT = 64  # batches whose figures the writer keeps for the progress line to read
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
    as_json = _as_json(schema)
    assert isinstance(as_json, StructType)
    parsed = rows.select(F.from_json(F.col(WIRE_ROW), as_json, {"mode": "FAILFAST"}).alias("r"))
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


def ensure_tables(spark: SparkSession, warehouse: str, database: str | None,
                  lag: bool = False) -> None:
    """Create every output table (empty) if missing, and register it in the catalog:
    `database` is a schema of the session catalog, or `catalog.schema`; in a persistent
    catalog the as-of and rebalance functions and the group_members view go there too, and
    the columns get their docs as comments. With `lag`, the lag tables too."""
    if database:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote_name(database)}")
    tables = [*OUTPUT_TABLES, *(LAG_TABLES if lag else ())]
    run_all([partial(_ensure_table, spark, paths.join(warehouse, table), table, database)
             for table in tables])
    # Functions, views and comments are for other processes: only in a persistent catalog
    # (Hive's, or a catalog.schema such as Unity Catalog's); the in-memory one gets
    # register_views' own, and tests' tables stay as the fold writes them.
    if database and persistent_catalog(spark, database):
        comment_columns(spark, warehouse)
        register_permanent(spark, database, lag)


def _ensure_table(spark: SparkSession, path: str, table: str, database: str | None) -> None:
    if not DeltaTable.isDeltaTable(spark, path):
        builder = (DeltaTable.createIfNotExists(spark).location(path)
                   .addColumns(table_schema(table))
                   .property("delta.checkpointInterval", str(CHECKPOINT_INTERVAL)))
        if table in APPEND_TABLES or table in LAG_TABLES:
            builder = builder.property("delta.appendOnly", "true")
        builder.execute()
    if database:
        spark.sql(f"CREATE TABLE IF NOT EXISTS {quote_name(database)}.`{table}` "
                  f"USING DELTA LOCATION '{path}'")


def batch_mark(app_id: str, batch_id: int) -> str:
    """A commit's `userMetadata` saying which stream and which of its batches wrote it."""
    return json.dumps({"replay_app": app_id, "batch": batch_id})


def _marked_batch(metadata: str | None, app_id: str) -> int | None:
    try:
        mark = json.loads(metadata) if metadata else None
    except ValueError:
        return None  # another writer's free text
    if isinstance(mark, dict) and mark.get("replay_app") == app_id \
            and isinstance(mark.get("batch"), int):
        return int(mark["batch"])
    return None


def last_batch(spark: SparkSession, path: str, app_id: str) -> int | None:
    """The batch of `app_id`'s newest mark among the commits of the table at `path`, newest
    first (a page of them, then the whole history); None if no commit carries one."""
    table = DeltaTable.forPath(spark, path)
    for limit in (HISTORY_PAGE, None):
        history = table.history(limit) if limit else table.history()
        commits = history.select("userMetadata").collect()
        for (metadata,) in commits:
            batch = _marked_batch(metadata, app_id)
            if batch is not None:
                return batch
        if limit is not None and len(commits) < limit:
            break
    return None


@dataclass
class BatchWriter:
    """The foreachBatch function of the replay job."""

    warehouse: str
    app_id: str
    # Per batch: groups, rejected and failed rows, the seconds of the fold (the stateful
    # operator, run by the batch's first job) and of the writes, and each table's write
    # seconds (`tables`); the last `PROGRESS_KEPT` batches.
    progress: dict[int, dict[str, Any]] = field(default_factory=dict)
    # The last batch each table is known to hold, from this writer's own commits: a table's
    # marks only rise, so after its first write here the writer skips reading its history
    # (~0.2-0.6 s a table a batch). Empty at start, and nothing is kept for a write that
    # raised (its commit may or may not be in): the table's history answers then.
    marks: dict[str, int] = field(default_factory=dict)
    writers: int = WRITERS  # tables written side by side
    lag: StreamLag | None = None  # with --end-offsets: the lag tables, after the others

    def path(self, table: str) -> str:
        return paths.join(self.warehouse, table)

    def __call__(self, wire: DataFrame, batch_id: int) -> None:
        start = time.monotonic()
        seconds: dict[str, float] = {}  # each table's write, side by side with the others
        wire = wire.persist()
        try:
            # The first job of the batch: Spark runs the stateful operator (the fold) here.
            counts = {r["_table"]: r["count"] for r in wire.groupBy("_table").count().collect()}
            folded = time.monotonic()
            log_failed_groups(wire, counts.get(FAILED, 0), f"batch {batch_id}")
            spark = wire.sparkSession
            # Every commit of the batch carries its mark (the MERGEs take it from the session).
            spark.conf.set(COMMIT_METADATA, batch_mark(self.app_id, batch_id))
            try:
                self._write_phase(spark, batch_id, {
                    t: partial(self._commit, wire, t, counts[t])
                    for t in OUTPUT_TABLES if counts.get(t)}, seconds)
                if self.lag is not None:  # over the history tables as this batch left them
                    new = table_rows(wire, SAMPLE_WIRE) if counts.get(SAMPLE_WIRE) else None
                    try:
                        for phase in self.lag.writes(spark, new, batch_id):
                            self._write_phase(spark, batch_id, phase, seconds)
                    finally:
                        self.lag.release()
            finally:
                spark.conf.unset(COMMIT_METADATA)
        finally:
            wire.unpersist()
        self.progress[batch_id] = {
            "groups": counts.get("group_state", 0),
            "rejected": counts.get("rejected_events", 0),
            "failed": counts.get(FAILED, 0),
            "fold_s": folded - start,
            "write_s": time.monotonic() - folded,
            "tables": seconds,
        }
        while len(self.progress) > PROGRESS_KEPT:
            del self.progress[next(iter(self.progress))]

    def _write_phase(self, spark: SparkSession, batch_id: int,
                     commits: dict[str, Callable[[], None]], seconds: dict[str, float]) -> None:
        """Commit each table's write of the batch unless the table holds it already, side by
        side; a table without a mark of this app yet is written after the others, one by
        one, under Delta's own pair."""
        unmarked: list[str] = []
        run_all([partial(self._write_once, spark, t, commit, batch_id, unmarked, seconds)
                 for t, commit in commits.items()], self.writers)
        if unmarked:
            spark.conf.set(TXN_APP_ID, self.app_id)
            spark.conf.set(TXN_VERSION, str(batch_id))
            try:
                for table in sorted(unmarked, key=list(commits).index):
                    self._write(table, commits[table], seconds)
                    self.marks[table] = batch_id
            finally:
                spark.conf.unset(TXN_APP_ID)
                spark.conf.unset(TXN_VERSION)

    def _write_once(self, spark: SparkSession, table: str, commit: Callable[[], None],
                    batch_id: int, unmarked: list[str], seconds: dict[str, float]) -> None:
        """Write `table` unless its marks say this batch is in it; a table without a mark of
        this app is left in `unmarked` for a write under Delta's own pair."""
        last = self.marks.get(table)
        if last is None:
            last = last_batch(spark, self.path(table), self.app_id)
        if last is None:
            unmarked.append(table)
        elif last < batch_id:
            self._write(table, commit, seconds)
            self.marks[table] = batch_id

    def _write(self, table: str, commit: Callable[[], None], seconds: dict[str, float]) -> None:
        start = time.monotonic()
        commit()
        seconds[table] = time.monotonic() - start

    def _commit(self, wire: DataFrame, table: str, count: int) -> None:
        spark = wire.sparkSession
        if table == "group_state":
            self._merge_state(spark, wire, count)
        elif table == "committed_offsets":
            self._merge_offsets(spark, wire, count)
        else:
            (table_rows(wire, table, count=count).write.format("delta").mode("append")
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
        values: dict[str, str | Column] = {
            f.name: f"s.`{f.name}`" for f in table_schema("committed_offsets").fields}
        (DeltaTable.forPath(spark, self.path("committed_offsets")).alias("t")
         .merge(source.alias("s"), _on_keys("committed_offsets"))
         .whenMatchedDelete("s._deleted")
         .whenMatchedUpdate(set=values)
         .whenNotMatchedInsert(condition="NOT s._deleted", values=values)
         .execute())
