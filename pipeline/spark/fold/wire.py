"""The output wire: how the fold's rows travel from Python back to the JVM, both directions.

The fold can return only one row type, so every output row travels as one narrow wire row:
`TABLE` names the table it belongs to and `ROW` holds the row as one JSON object under that
table's column names (times in epoch milliseconds, bytes in base64). Python writes them
(`packed_tables`, into an Arrow table, `wire_table_of`), after checking
that each int and time, at any depth, fits its column's type (naming the column if not, so
the group's call is rejected as INTERNAL instead of a value going wrong); the JVM parses each
table's rows back into its own schema (`table_rows`). Besides the tables of `schemas/`, the
wire carries a backfill's seed rows (`BACKFILL_STATE`: group_id and `_state`, the state a stream
continues from), a failed group's row (`FAILED`: group_id and the traceback) and, in a stream
with lag, the end-offset samples (`SAMPLE`), unioned after the fold. One kind of row is no
JSON: an input row the fold left to the JVM (`left.py`) comes back tagged `LEFT` in the
wire's typed `LEFT_COLUMNS`, as the fold's input carried them, and
`table_rows(wire, "offset_history")` holds the row built from it too.

Integers never pass through float: JSON carries Python ints as they are.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipeline.fold.group_replay import DELETES_KEY, FAILED, STATE, Tables
from pipeline.spark.fold.left import (
    LEFT_COLUMNS,
    LEFT_TAGS,
    LEFT_TYPE,
    left_rows,
    left_tags,
)
from pipeline.spark.runtime.keep import kept
from pipeline.spark.tables import sqltext
from pipeline.spark.tables.contract import event_schema, holds, struct_of, table_schema
from pipeline.times import PANDAS_MS_RANGE
from schemas import OUTPUT_TABLES
from schemas.internal import BACKFILL_STATE
from schemas.lag import LOG_END_OFFSETS

TABLE = "_table"  # the wire's column naming a row's table
ROW = "_row"  # the wire's column holding the row as JSON
SAMPLE = "_sample"  # an end-offset sample, the stream's second source (lagflow.py)
# One row of each stream fold call given rows: the newest event time among them (epoch ms, as
# its `ROW`), what Spark's watermark is computed from; the lag step keeps its own (lagflow.py).
NEWEST = "_newest"
# A sample's wire row also carries the samples table's commit it came in, as Delta's change
# data feed names it.
COMMIT_VERSION = "_commit_version"
# Wire columns a table's rows carry beyond its schemas/ columns.
EXTRA_COLUMNS = {"committed_offsets": (DELETES_KEY,)}
__all__ = ["BACKFILL_STATE", "COMMIT_VERSION", "EXTRA_COLUMNS", "FAILED", "NEWEST", "ROW",
           "SAMPLE", "TABLE", "counted", "from_wire_json", "log_failed_groups", "row_schema",
           "table_count", "table_rows", "wire_checks", "wire_json", "wire_schema",
           "wire_table_of", "with_newest"]
log = logging.getLogger("wire")
# One file (and one task) per this many rows of a write: a small micro-batch writes each table
# as one file instead of one per shuffle partition, a big batch keeps its parallelism.
ROWS_PER_FILE = 1_000_000


@cache
def wire_schema(typed: bool = False) -> StructType:
    """`TABLE` and `ROW` (JSON); `typed` (the backfill's): also the `LEFT_COLUMNS` of the
    rows left to the JVM, typed as the event log types them, and their `LEFT_TYPE`."""
    logged = {f.name: f.dataType for f in event_schema().fields}
    return StructType([StructField(TABLE, StringType(), False),
                       StructField(ROW, StringType(), True),
                       *[StructField(name, logged[name], True)
                         for name in (LEFT_COLUMNS if typed else ())],
                       *([StructField(LEFT_TYPE, StringType(), True)] if typed else [])])


@cache
def row_schema(table: str) -> StructType:
    """What a wire row of `table` holds: the table's columns, and the extra ones its rows
    carry (committed_offsets' `_deleted`); for the seed, FAILED and sample rows, theirs."""
    if table == BACKFILL_STATE:
        return StructType([StructField("group_id", StringType()),
                           StructField(STATE, BinaryType())])
    if table == FAILED:
        return StructType([StructField("group_id", StringType()),
                           StructField("reason", StringType()),
                           StructField("rejected_as", StringType())])
    if table == SAMPLE:
        return StructType([*struct_of(LOG_END_OFFSETS).fields,
                           StructField(COMMIT_VERSION, LongType())])
    extra = [StructField(name, BooleanType()) for name in EXTRA_COLUMNS.get(table, ())]
    return StructType([*table_schema(table).fields, *extra])


def counted(wire: DataFrame) -> dict[str, int]:
    """Rows of each table on the (kept) wire: one Spark job, which runs the fold. Under
    `NEWEST` (a stream's), not a count: the newest event time its fold calls were given."""
    newest = F.max(F.when(F.col(TABLE) == NEWEST, F.col(ROW).cast("long")))
    found = wire.groupBy(TABLE).agg(F.count(F.lit(1)).alias("n"), newest.alias("newest"))
    return {r[TABLE]: r["newest"] if r[TABLE] == NEWEST else r["n"] for r in found.collect()}


@contextmanager
def folded(wire: DataFrame, where: str) -> Iterator[tuple[DataFrame, dict[str, int]]]:
    """The wire kept while the caller writes its tables from it (`runtime.keep`), its rows counted
    per table (the one Spark job that runs the fold), each failed group logged (`where`
    says which run); released when the caller is done."""
    with kept(wire) as held:
        counts = counted(held)
        log_failed_groups(held, counts.get(FAILED, 0), where)
        yield held, counts


# ---- Python to the wire --------------------------------------------------------------------

# Where a column's ints and times sit, worked out once from its type on the driver (walking
# the DataType in every call cost as much as the checks): ("leaf", kind), ("array", the
# elements' plan) or ("struct", ((field, plan), ...) for the fields holding any).
Plan = tuple[str, Any]
Checks = dict[str, tuple[tuple[str, Plan], ...]]  # table -> its columns holding numbers


def wire_checks() -> Checks:
    """What `packed_tables` checks, per table: on the driver (the workers have no JVM to
    parse the schemas' DDL), handed to the functions Spark ships."""
    return {table: tuple((f.name, _plan(f.dataType)) for f in table_schema(table).fields
                         if holds(f.dataType, _NUMBERS)) for table in OUTPUT_TABLES}


def _plan(dtype: DataType) -> Plan:
    if isinstance(dtype, ArrayType):
        return ("array", _plan(dtype.elementType))
    if isinstance(dtype, StructType):
        return ("struct", tuple((f.name, _plan(f.dataType)) for f in dtype.fields
                                if holds(f.dataType, _NUMBERS)))
    return ("leaf", _KIND[type(dtype)])


def packed_tables(rows: Tables, checks: Checks) -> tuple[list[str], list[str]]:
    """The rows as the wire carries them: each row's table, and the row as one JSON object
    under its table's column names (times in epoch ms, bytes in base64), every int and time
    at any depth first checked to fit its column's type, naming the column if it does not
    (`table_rows` parses them back into each table's own schema in the JVM)."""
    names: list[str] = []
    texts: list[str] = []
    for table, table_rows in rows.items():
        if not table_rows:
            continue
        for name, plan in checks.get(table, ()):  # none for the seed and FAILED rows
            for path, kind, values in _walk(name, plan, [row.get(name) for row in table_rows]):
                _check_fits(path, kind, values)
        names += [table] * len(table_rows)
        texts += map(_DUMPS, table_rows)
    return names, texts


def wire_table_of(names: list[str], texts: list[str], left: pa.Table | None,
                  current: int = 0, types: list[str] | None = None) -> pa.Table:
    """The backfill's Arrow wire: the rows `packed_tables` made, as JSON; given `left` (the
    fold's input `LEFT_COLUMNS` of the records it left to the JVM, as Arrow carried them
    in, in `wire_order`: the first `current` of them current) and `types` (the group's type
    at each), those after them, typed (`wire_schema(typed=True)`)."""
    n, m = len(names), 0 if left is None else left.num_rows
    columns = [pa.array(names + left_tags(current, m), pa.string()),
               pa.concat_arrays([pa.array(texts, pa.string()), pa.nulls(m, pa.string())])]
    fields = [pa.field(TABLE, pa.string(), nullable=False), pa.field(ROW, pa.string())]
    if left is not None:
        for name in LEFT_COLUMNS:
            column = left.column(name)
            columns.append(pa.concat_arrays([pa.nulls(n, column.type), *column.chunks]))
            fields.append(pa.field(name, column.type))
        assert types is not None and len(types) == m
        columns.append(pa.array([None] * n + types, pa.string()))
        fields.append(pa.field(LEFT_TYPE, pa.string()))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def with_newest(wire: pa.Table, newest_ms: int | None) -> pa.Table:
    """`wire` and its `NEWEST` row (none when the call was given no event time)."""
    if newest_ms is None:
        return wire
    return pa.concat_tables([wire, pa.Table.from_pylist([{TABLE: NEWEST, ROW: str(newest_ms)}],
                                                        schema=wire.schema)])


def _base64(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not a value of any column")


_DUMPS = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                          default=_base64).encode


def _walk(path: str, plan: Plan, values: list[Any]) -> Iterator[tuple[str, str, list[Any]]]:
    shape, inner = plan
    if shape == "array":
        yield from _walk(path, inner, [x for v in values if v for x in v])
    elif shape == "struct":
        present = [v for v in values if v is not None]
        for name, field_plan in inner:
            yield from _walk(f"{path}.{name}", field_plan, [v.get(name) for v in present])
    else:
        yield path, inner, values


_KIND: dict[type[DataType], str] = {IntegerType: "int", LongType: "bigint",
                                    TimestampType: "timestamp"}
_NUMBERS = tuple(_KIND)
_INT = frozenset({int})  # a bool is no integer here
_BOUNDS = {"int": (-(2**31), 2**31 - 1), "bigint": (-(2**63), 2**63 - 1),
           "timestamp": PANDAS_MS_RANGE}


def _check_fits(name: str, kind: str, values: list[Any]) -> None:
    """Raise if a value cannot be stored as `kind`, naming the column: the JSON parser in
    the JVM would make a null of it, and pandas, reading the table, wraps a time past 2262."""
    present = [v for v in values if v is not None]
    if not present:
        return
    if not _INT.issuperset(map(type, present)):  # in C, not a Python loop over the values
        bad = next(v for v in present if type(v) is not int)
        raise ValueError(f"{name} = {bad!r} is not an integer ({kind})")
    low, high = min(present), max(present)
    bounds = _BOUNDS[kind]
    if low < bounds[0] or high > bounds[1]:
        bad = low if low < bounds[0] else high
        raise ValueError(f"{name} = {bad} does not fit the column's type ({kind})")


# ---- the wire to the JVM's tables ----------------------------------------------------------

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
    the columns its rows carry beyond it, as committed_offsets' `_deleted`); offset_history's
    and committed_offsets' with the rows built from the records left to the JVM
    (`left.left_rows`). Given their `count` (`table_count`), in as few
    partitions as hold them at `ROWS_PER_FILE` each."""
    parts = max(1, -(-count // ROWS_PER_FILE)) if count is not None else None
    schema = row_schema(table)
    rows = wire.filter(F.col(TABLE) == table)
    if parts is not None:
        rows = rows.coalesce(parts)
    keep = schema.fields if extra or table not in OUTPUT_TABLES else table_schema(table).fields
    found = rows.selectExpr(*from_wire_json(ROW, schema, StructType(keep), failfast=True))
    tags = LEFT_TAGS.get(table)
    if tags is None:
        return found
    if LEFT_COLUMNS[-1] not in wire.columns:  # a wire made without any row left (tests)
        return found
    left = wire.filter(F.col(TABLE).isin(*tags))
    if parts is not None:
        left = left.coalesce(parts)
    built = left_rows(left, table)
    if extra:
        built = built.select("*", *[F.lit(False).alias(name)
                                    for name in EXTRA_COLUMNS.get(table, ())])
    return found.unionByName(built)


def table_count(counts: dict[str, int], table: str) -> int:
    """How many rows `table_rows(wire, table)` holds, from `counted(wire)`."""
    return counts.get(table, 0) + sum(counts.get(tag, 0) for tag in LEFT_TAGS.get(table, ()))


def wire_json(schema: StructType) -> Column:
    """The columns of `schema` as one JSON object the way the wire holds a row: times as
    epoch ms, bytes as base64 (the JVM's side of what `packed_tables` writes in Python)."""
    fields = ", ".join(f"{sqltext.string(f.name)}, {_as_written(sqltext.ident(f.name), f.dataType)}"
                       for f in schema.fields)
    return F.expr(f"to_json(named_struct({fields}))")


def from_wire_json(text: str, schema: StructType, keep: StructType | None = None,
                   failfast: bool = False) -> list[str]:
    """The columns (`selectExpr` items) of `keep` (default: all of `schema`) out of the column `text`, a wire
    row's JSON holding `schema`'s, each restored to its type; `failfast`: a malformed row
    fails the query instead of reading as nulls."""
    as_json = _as_json(schema)
    options = ", map('mode', 'FAILFAST')" if failfast else ""
    parsed = (f"from_json({sqltext.ident(text)}, {sqltext.string(sqltext.type_sql(as_json))}"
              f"{options})")
    return [sqltext.named(_restored(f"{parsed}.{sqltext.ident(f.name)}", f.dataType), f.name)
            for f in (schema if keep is None else keep).fields]


def _as_written(c: str, t: DataType) -> str:
    """The SQL expression `c` of type `t` as the wire's JSON holds it (top-level times and
    bytes; nested values of those types never travel this way)."""
    if isinstance(t, TimestampType):
        return f"unix_millis({c})"
    if isinstance(t, BinaryType):
        return f"base64({c})"
    assert not holds(t, (TimestampType, BinaryType)), t
    return c


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


def _restored(c: str, t: DataType, depth: int = 0) -> str:
    """The SQL expression `c`, of JSON type `_as_json(t)`, as type `t`, at any depth."""
    if not holds(t, (TimestampType, BinaryType)):
        return c
    if isinstance(t, TimestampType):
        return f"timestamp_millis({c})"
    if isinstance(t, BinaryType):
        return f"unbase64({c})"
    if isinstance(t, ArrayType):
        x = f"x{depth}"
        return f"transform({c}, {x} -> {_restored(x, t.elementType, depth + 1)})"
    assert isinstance(t, StructType)
    fields = ", ".join(f"{sqltext.string(f.name)}, "
                       f"{_restored(f'{c}.{sqltext.ident(f.name)}', f.dataType, depth)}"
                       for f in t.fields)
    return f"CASE WHEN {c} IS NULL THEN NULL ELSE named_struct({fields}) END"


