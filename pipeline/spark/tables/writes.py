"""Every write of rows to a Delta table: `append`, `overwrite`, `merge` (by the table's key),
and `read` of a small table, each deciding in one place (`on_driver`) who writes.

A warm micro-batch of a long-running stream brings a few hundred events: a few rows for each
table. Written by Spark, each commit costs far more than its rows: an append is a few Spark
jobs, a MERGE of 20 rows into `group_state` twelve of them and planning on the driver,
whatever its size. The same commit made by delta-rs (the `deltalake` package, Delta's Rust
implementation, kept by the delta-io project, pinned as exactly as delta-spark), from the
rows collected to the driver as Arrow, takes a small fraction of that (docs/performance.md,
"A warm micro-batch").

The rule (`on_driver`): a write goes from the driver when
- small writes are on (`SMALL_CONF`, on unless set to `false` in the session);
- the table is on a filesystem the driver reads as a local path (a plain path or `file:`),
  not an object store, HDFS or a catalog name, which keep Spark's writer and its settings;
- the table exists and the write keeps its schema (a new table or schema is Spark's);
- no Delta idempotent pair (`TXN_APP_ID`) is set, which only Spark's writer checks;
- it holds at most `SMALL_ROWS` rows: rows already on the driver (Arrow) always do; a
  DataFrame whose size is not known is collected up to that many plus one, and goes to
  Spark's parallel writer if there are more.

What is written is the same either way: the rows as Spark computed them, cast to the table's
own schema (by column name), in one Delta commit carrying the same `userMetadata` (the
stream's batch mark, from the session's `COMMIT_METADATA`, or the write's own), with Delta's
checkpoints at the table's `delta.checkpointInterval`. The tables keep their protocol:
delta-rs writes the reader/writer versions and features Spark made them with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias

import pyarrow as pa
from delta.tables import DeltaTable as SparkTable
from deltalake import CommitProperties, DeltaTable, write_deltalake
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.spark.runtime.session import COMMIT_METADATA, TXN_APP_ID, temporary_conf
from pipeline.spark.tables.options import read_delta
from pipeline.spark.tables.paths import is_path, is_uri

SMALL_ROWS = 50_000  # the most rows a commit from the driver collects
SMALL_CONF = "spark.cgr.smallWrites"  # "false": every commit by Spark's writer
SKIP_EMPTY_COMMITS = "spark.databricks.delta.skipRecordingEmptyCommits"
Rows: TypeAlias = DataFrame | pa.Table  # noqa: UP040 - Python 3.11 has no `type` statement
__all__ = ["SMALL_CONF", "SMALL_ROWS", "Rows", "Within", "append", "distinct", "driver_path",
           "merge", "on_driver", "overwrite", "read"]


@dataclass(frozen=True)
class Within:
    """Where every match of a MERGE lies: the table's `column` (one that grows with the log,
    an offset or a time) between `lo` and `hi`, the rows' own range. Either engine skips
    the files outside it by their statistics."""

    column: str
    lo: int | datetime
    hi: int | datetime

    def spark(self) -> Column:
        return F.col(f"t.`{self.column}`").between(F.lit(self.lo), F.lit(self.hi))

    def sql(self) -> str:
        """The condition in delta-rs's SQL (DataFusion): a time as an ISO literal with its
        zone, which DataFusion casts to the column's timestamp."""
        def literal(value: int | datetime) -> str:
            if isinstance(value, datetime):
                if value.tzinfo is None:
                    raise ValueError(f"{self.column}: a time without its zone ({value})")
                return f"'{value.isoformat()}'"
            return str(int(value))
        return f"(t.{_quoted(self.column)} BETWEEN {literal(self.lo)} AND {literal(self.hi)})"


def distinct(rows: pa.Table, key: Sequence[str]) -> pa.Table:
    """`rows` with the first row of each `key` only (a row delivered twice is one)."""
    seen: set[tuple[Any, ...]] = set()
    firsts = []
    for i, k in enumerate(zip(*(rows.column(c).to_pylist() for c in key), strict=True)):
        if k not in seen:
            seen.add(k)
            firsts.append(i)
    return rows if len(firsts) == rows.num_rows else rows.take(firsts)


def local_path(path: str) -> str | None:
    """The local filesystem path of a table the driver can write itself, else None."""
    if not is_path(path):
        return None  # a catalog table name
    if not is_uri(path):
        return path
    if path.startswith("file:"):
        return "/" + path.removeprefix("file:").lstrip("/")
    return None


def small_writes(spark: SparkSession) -> bool:
    return (spark.conf.get(SMALL_CONF, "true") or "true").lower() != "false"


def driver_path(spark: SparkSession, path: str) -> str | None:
    """The local path at which the driver reads the table at `path` itself (delta-rs), or
    None where Spark reads it (an object store, HDFS, a catalog name, or `SMALL_CONF` off)."""
    return local_path(path) if small_writes(spark) else None


def on_driver(spark: SparkSession, path: str, rows: int | None = None) -> bool:
    """Whether a write of `rows` rows (None: not known yet) to the existing table at `path`,
    keeping its schema, goes from the driver (the module's rule)."""
    local = driver_path(spark, path)
    return local is not None and (rows is None or rows <= SMALL_ROWS) \
        and spark.conf.get(TXN_APP_ID, None) is None and DeltaTable.is_deltatable(local)


def _on_driver(spark: SparkSession, rows: Rows, path: str, count: int | None) -> pa.Table | None:
    """`rows` as Arrow when this write goes from the driver, else None (Spark writes them)."""
    if isinstance(rows, pa.Table):
        return rows if on_driver(spark, path) else None
    if not on_driver(spark, path, count):
        return None
    return rows.toArrow() if count is not None else collect(rows)


def _frame(spark: SparkSession, rows: Rows) -> DataFrame:
    return spark.createDataFrame(rows) if isinstance(rows, pa.Table) else rows


def append(spark: SparkSession, rows: Rows, path: str, *, count: int | None = None,
           merge_schema: bool = False) -> None:
    """`rows` added to the table at `path` (a catalog name too) by column name; `count`: how
    many, if known; `merge_schema`: the table takes the rows' new columns (Spark's writer
    does that: a DataFrame goes to it, Arrow rows without a new column from the driver)."""
    data = None if merge_schema and not isinstance(rows, pa.Table) \
        else _on_driver(spark, rows, path, count)
    if data is not None and _driver_write(spark, data, path, "append"):
        return
    writer = _frame(spark, rows).write.format("delta").mode("append")
    if merge_schema:
        writer = writer.option("mergeSchema", "true")
    if is_path(path):
        writer.save(path)
    else:
        writer.saveAsTable(path)


def overwrite(spark: SparkSession, rows: Rows, path: str, *, new_schema: bool = False,
              metadata: str | None = None) -> None:
    """The table at `path` replaced by `rows` in one commit (made even when it changes
    nothing if it carries `metadata`, its `userMetadata`); `new_schema`: the table takes the
    rows' schema (Spark)."""
    data = None if new_schema else _on_driver(spark, rows, path, None)
    if data is not None and _driver_write(spark, data, path, "overwrite", metadata):
        return
    writer = _frame(spark, rows).write.format("delta").mode("overwrite")
    if new_schema:
        writer = writer.option("overwriteSchema", "true")
    if metadata is None:
        writer.save(path)
        return
    with temporary_conf(spark, {SKIP_EMPTY_COMMITS: "false"}):
        writer.option("userMetadata", metadata).save(path)


def merge(spark: SparkSession, rows: Rows, path: str, key: Sequence[str], *,
          deleted: str | None = None, count: int | None = None, insert_only: bool = False,
          within: Within | None = None) -> None:
    """MERGE `rows` into the table at `path` on `key`, in one commit: a matched row updated,
    an unmatched one inserted. `deleted`: a boolean column of the rows, never null, where
    true deletes the match instead and is not inserted. `insert_only`: matched rows left
    as they are, keys compared null-safe. `within`: the range of the table's rows that
    holds every match, which lets either engine skip files."""
    data = _on_driver(spark, rows, path, count)
    if data is not None and _driver_merge(spark, data, path, tuple(key), deleted, insert_only,
                                          within):
        return
    source = _frame(spark, rows)
    same = " <=> " if insert_only else " = "
    on: Column | str = " AND ".join(f"t.`{k}`{same}s.`{k}`" for k in key)
    if within is not None:
        on = within.spark() & F.expr(str(on))
    merger = SparkTable.forPath(spark, path).alias("t").merge(source.alias("s"), on)
    if insert_only:
        merger.whenNotMatchedInsertAll().execute()
    elif deleted is None:
        merger.whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    else:
        values: dict[str, str | Column] = {c: f"s.`{c}`" for c in source.columns if c != deleted}
        (merger.whenMatchedDelete(f"s.`{deleted}`").whenMatchedUpdate(set=values)
         .whenNotMatchedInsert(condition=f"NOT s.`{deleted}`", values=values).execute())


def read(spark: SparkSession, path: str) -> pa.Table:
    """The whole (small) Delta table at `path` on the driver, as Arrow: read by delta-rs where
    the driver writes it, else by Spark."""
    target = driver_path(spark, path)
    if target is not None:
        return DeltaTable(target).to_pyarrow_table()
    return read_delta(spark, path).toArrow()


def collect(df: DataFrame, limit: int | None = None) -> pa.Table | None:
    """`df`'s rows on the driver as Arrow, or None if it holds more than `limit`
    (`SMALL_ROWS` by default)."""
    limit = SMALL_ROWS if limit is None else limit
    data = df.limit(limit + 1).toArrow()
    return None if data.num_rows > limit else data


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


def _commit(spark: SparkSession, metadata: str | None = None) -> CommitProperties:
    mark = metadata if metadata is not None else spark.conf.get(COMMIT_METADATA, None)
    return CommitProperties(custom_metadata={"userMetadata": mark} if mark else None)


def _table(path: str) -> tuple[DeltaTable, pa.Schema]:
    target = local_path(path)
    assert target is not None, path
    table = DeltaTable(target)
    return table, pa.schema(table.schema().to_arrow())


def _unknown(data: pa.Table, schema: pa.Schema, *allowed: str | None) -> bool:
    """Whether the rows hold a column the table lacks (beyond `allowed`): Spark's writer, not
    the driver, says what is wrong, instead of the column being dropped."""
    return bool(set(data.column_names) - set(schema.names) - set(allowed))


def _driver_write(spark: SparkSession, data: pa.Table, path: str, mode: str,
                  metadata: str | None = None) -> bool:
    """The commit made from the driver; False (nothing written) if the rows do not fit."""
    table, schema = _table(path)
    if _unknown(data, schema):
        return False
    write_deltalake(table, conformed(data, schema), mode="overwrite" if mode == "overwrite"
                    else "append", commit_properties=_commit(spark, metadata))
    return True


def _driver_merge(spark: SparkSession, data: pa.Table, path: str, key: tuple[str, ...],
                  deleted: str | None, insert_only: bool, within: Within | None) -> bool:
    """The MERGE made from the driver; False (nothing written) if the rows do not fit."""
    table, schema = _table(path)
    if _unknown(data, schema, deleted):
        return False
    same = " IS NOT DISTINCT FROM " if insert_only else " = "
    # Each comparison in parentheses: DataFusion's parser binds `IS NOT DISTINCT FROM` more
    # loosely than AND.
    on = " AND ".join([*([within.sql()] if within is not None else []),
                       *(f"(t.{_quoted(k)}{same}s.{_quoted(k)})" for k in key)])
    values: Mapping[str, str] = {_quoted(f.name): f"s.{_quoted(f.name)}" for f in schema}
    merger: Any = table.merge(conformed(data, schema, keep_extra=True), on, source_alias="s",
                              target_alias="t", commit_properties=_commit(spark))
    insert_when = None
    if deleted is not None:
        merger = merger.when_matched_delete(predicate=f"s.{_quoted(deleted)}")
        insert_when = f"NOT s.{_quoted(deleted)}"
    if not insert_only:
        merger = merger.when_matched_update(updates=dict(values))
    merger = merger.when_not_matched_insert(updates=dict(values), predicate=insert_when)
    merger.execute()
    return True


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
