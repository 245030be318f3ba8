"""A micro-batch's small commits, written from the driver by delta-rs instead of by Spark jobs.

A warm micro-batch of a long-running stream brings a few hundred events: a few rows for each
table. Written by Spark, each commit costs far more than its rows: an append is a few Spark
jobs, a MERGE of 20 rows into `group_state` twelve of them and planning on the driver,
whatever its size. The same commit made by delta-rs (the `deltalake` package, Delta's Rust
implementation, kept by the delta-io project), from the rows collected to the driver as
Arrow, takes a small fraction of that (docs/performance.md, "A warm micro-batch").

So a write goes this way when it is small and the driver can reach the table:
- the table is on a filesystem the driver reads as a local path (a plain path or `file:`),
  not an object store or HDFS, which keep Spark's writer and its Hadoop settings;
- it holds at most `SMALL_ROWS` rows (a catch-up batch of millions keeps Spark's parallel
  writer); a write whose size is not known collects at most that many rows plus one, and
  falls back to Spark if there are more;
- no write under Delta's own idempotent pair (`TXN_APP_ID`), which only Spark's writer checks;
- `small_writes(spark)` is on: `SMALL_CONF` set to `false` in the session turns it off.

What is written is what Spark would write: the rows as Spark computed them, cast to the
table's own schema (by column name), in one Delta commit carrying the same `userMetadata`
(the stream's batch mark, from the session's `COMMIT_METADATA`), with Delta's checkpoints
at the table's `delta.checkpointInterval`. The tables keep their protocol: delta-rs writes
the reader/writer versions and features Spark made them with (appendOnly, invariants).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake
from pyspark.sql import DataFrame, SparkSession

from pipeline.spark.runtime.session import COMMIT_METADATA, TXN_APP_ID
from pipeline.spark.tables.paths import is_uri

SMALL_ROWS = 50_000  # the most rows a commit from the driver collects
SMALL_CONF = "spark.cgr.smallWrites"  # "false": every commit by Spark's writer
Mode = Literal["append", "overwrite"]


def local_path(path: str) -> str | None:
    """The local filesystem path of a table the driver can write itself, else None."""
    if not is_uri(path):
        return path
    if path.startswith("file:"):
        return "/" + path.removeprefix("file:").lstrip("/")
    return None


def small_writes(spark: SparkSession) -> bool:
    return (spark.conf.get(SMALL_CONF, "true") or "true").lower() != "false"


def driver_path(spark: SparkSession, path: str) -> str | None:
    """The local path at which the driver reads the table at `path` itself (delta-rs), or
    None where Spark reads it (an object store, HDFS, or `SMALL_CONF` off)."""
    return local_path(path) if small_writes(spark) else None


def writes_small(spark: SparkSession, path: str, rows: int | None = None) -> bool:
    """Whether a commit of `rows` rows (None: not known) to `path` may go from the driver."""
    return small_writes(spark) and local_path(path) is not None \
        and (rows is None or rows <= SMALL_ROWS) and spark.conf.get(TXN_APP_ID, None) is None


def _commit(spark: SparkSession) -> CommitProperties:
    mark = spark.conf.get(COMMIT_METADATA, None)
    return CommitProperties(custom_metadata={"userMetadata": mark} if mark else None)


def _schema(table: DeltaTable) -> pa.Schema:
    return pa.schema(table.schema().to_arrow())


def conformed(data: pa.Table, schema: pa.Schema, keep_extra: bool = False) -> pa.Table:
    """`data`'s columns in the table's order and types (a column the rows lack is null);
    with `keep_extra`, `data`'s other columns after them (a MERGE's condition columns)."""
    columns = [data.column(f.name).cast(f.type) if f.name in data.column_names
               else pa.nulls(data.num_rows, f.type) for f in schema]
    fields = [pa.field(f.name, f.type, True) for f in schema]
    if keep_extra:
        extra = [n for n in data.column_names if n not in schema.names]
        columns += [data.column(n) for n in extra]
        fields += [data.schema.field(n) for n in extra]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def collect(df: DataFrame, limit: int | None = None) -> pa.Table | None:
    """`df`'s rows on the driver as Arrow, or None if it holds more than `limit`
    (`SMALL_ROWS` by default)."""
    limit = SMALL_ROWS if limit is None else limit
    data = df.limit(limit + 1).toArrow()
    return None if data.num_rows > limit else data


def save(df: DataFrame, path: str, mode: Mode = "append") -> None:
    """`df` appended to (or replacing the rows of) the Delta table at `path`: from the driver
    if it may and `df` is small, else by Spark's writer."""
    spark = df.sparkSession
    data = collect(df) if writes_small(spark, path) else None
    if data is not None:
        write(spark, data, path, mode)
    else:
        df.write.format("delta").mode(mode).save(path)


def read(spark: SparkSession, path: str) -> pa.Table:
    """The whole (small) Delta table at `path` on the driver, as Arrow: read by delta-rs where
    the driver writes it, else by Spark."""
    target = driver_path(spark, path)
    if target is not None:
        return DeltaTable(target).to_pyarrow_table()
    return spark.read.format("delta").load(path).toArrow()


def save_arrow(spark: SparkSession, data: pa.Table, path: str, mode: Mode = "append") -> None:
    """Rows already on the driver appended to (or replacing the rows of) the table at `path`:
    by delta-rs where it may (whatever their number: they are collected already), else
    through Spark's writer."""
    if writes_small(spark, path):
        write(spark, data, path, mode)
    else:
        spark.createDataFrame(data).write.format("delta").mode(mode).save(path)


def write(spark: SparkSession, data: pa.Table, path: str, mode: Mode = "append") -> None:
    """`data` appended to (or, `mode="overwrite"`, replacing the rows of) the table at
    `path`, in one commit."""
    target = local_path(path)
    assert target is not None, path
    table = DeltaTable(target)
    rows = conformed(data, _schema(table))
    if mode == "overwrite":
        write_deltalake(table, rows, mode="overwrite", commit_properties=_commit(spark))
    else:
        write_deltalake(table, rows, mode="append", commit_properties=_commit(spark))


def merge(spark: SparkSession, data: pa.Table, path: str, keys: tuple[str, ...],
          deleted: str | None = None) -> None:
    """MERGE `data` into the table at `path` on `keys`, in one commit, as the stream's Spark
    MERGEs do: a matched row is updated, an unmatched one inserted; with `deleted` (a
    boolean column of `data`, never null), a row where it is true deletes its match instead
    and is not inserted."""
    target = local_path(path)
    assert target is not None, path
    table = DeltaTable(target)
    schema = _schema(table)
    on = " AND ".join(f"t.{_quoted(k)} = s.{_quoted(k)}" for k in keys)
    values: Mapping[str, str] = {_quoted(f.name): f"s.{_quoted(f.name)}" for f in schema}
    merger: Any = table.merge(conformed(data, schema, keep_extra=True), on, source_alias="s",
                              target_alias="t", commit_properties=_commit(spark))
    insert_when = None
    if deleted is not None:
        merger = merger.when_matched_delete(predicate=f"s.{_quoted(deleted)}")
        insert_when = f"NOT s.{_quoted(deleted)}"
    merger = merger.when_matched_update(updates=dict(values))
    merger = merger.when_not_matched_insert(updates=dict(values), predicate=insert_when)
    merger.execute()


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
