"""Arrow and pandas at the edge of the fold: Spark's rows in as Events, the fold's rows out.

In, Spark hands a group's rows over as pandas frames (stream), where a null timestamp is NaT
and an array a numpy array, or as Arrow (backfill); the fold wants plain Python values and
integer milliseconds. Out, one converter driven by the schemas turns the rows per table
(`pipeline.fold.tables`) into Arrow, times at any depth included, and the wire union and
the pandas frame are thin steps on top of it. Times are UTC (the session's time zone).

Integers never pass through float: a float64 holds integers exactly only up to 2^53, and
pandas turns an int64 column with a null into float64. The stream asks Spark for nullable
integer columns (`PREFER_INT_EXTENSION`, set by `replay.py`), and a float column that
reaches `_ints` anyway is refused unless every value is exact; going out, Python ints go
straight into Arrow int64, and the pandas frame's int columns are object columns of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, IntegerType, LongType, StructType, TimestampType

from pipeline.fold import Event
from pipeline.fold.context import Row
from pipeline.fold.events import EventColumns, events_of
from pipeline.fold.tables import Tables
from pipeline.spark.eventlog import PACKED
from pipeline.spark.tables import EXTRA_COLUMNS, wire_name
from pipeline.times import PANDAS_MS_RANGE
from schemas import OUTPUT_TABLES

_COLUMNS = {table: tuple(c.name for c in cols) for table, cols in OUTPUT_TABLES.items()}
# Spark 4.2's switch for Int64/Int32 pandas columns in place of int64-or-float64 ones.
PREFER_INT_EXTENSION = "spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype"
_EXACT = 2**53  # beyond this a float64 no longer holds every integer


def columns_from_frames(frames: Iterable[pd.DataFrame], schema: StructType) -> EventColumns:
    """A group's rows as `EventColumns` (times in ms, ints exact, nested values plain), from
    the stream's pandas frames. `schema` is `event_schema()`, built on the driver: workers
    have no JVM to parse DDL."""
    parts = [columns_from_frame(pdf, schema) for pdf in frames if len(pdf)]
    if len(parts) == 1:
        return parts[0]
    return {f.name: [v for part in parts for v in part[f.name]] for f in schema.fields}


def columns_from_frame(pdf: pd.DataFrame, schema: StructType) -> EventColumns:
    columns: EventColumns = {}
    for f in schema.fields:
        if f.name not in pdf.columns:
            columns[f.name] = [None] * len(pdf)
        elif isinstance(f.dataType, TimestampType):
            columns[f.name] = _millis(pdf[f.name])
        elif isinstance(f.dataType, IntegerType | LongType):
            columns[f.name] = _ints(pdf[f.name])
        elif isinstance(f.dataType, ArrayType):
            columns[f.name] = [_plain(v) for v in pdf[f.name]]
        else:
            columns[f.name] = [None if v is None or v is pd.NA or (isinstance(v, float) and v != v)
                               else v for v in pdf[f.name].tolist()]
    return columns


def columns_from_arrow(table: pa.Table) -> EventColumns:
    """The batch path: Spark's Arrow table of a group's rows (timestamps in microseconds) as
    `EventColumns`; a column with no value is left out (the fold reads it as nulls), but for
    group_id, which keeps the row count when every other value is null too."""
    columns: EventColumns = {}
    for name in table.column_names:
        column = table.column(name)
        if column.null_count == len(column) and name != "group_id":
            continue
        if pa.types.is_timestamp(column.type):
            column = pc.divide(column.cast(pa.int64()), _PER_MS[column.type.unit])
        columns[name] = column.to_pylist()
    return columns


def columns_from_packed(table: pa.Table) -> EventColumns:
    """`columns_from_arrow` for `eventlog.packed_events`' rows: each packed JSON object read
    back (times in ms already), one column for each name any row holds, and the byte columns
    as Arrow carried them."""
    rows = [json.loads(text) for text in table.column(PACKED).to_pylist()]
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    columns: EventColumns = {name: [row.get(name) for row in rows] for name in names}
    rest = columns_from_arrow(table.drop_columns([PACKED]))
    columns.update(rest)
    return columns


def events_from_frames(frames: Iterable[pd.DataFrame], schema: StructType) -> list[Event]:
    return events_of(columns_from_frames(frames, schema))


def events_from_arrow(table: pa.Table) -> list[Event]:
    return events_of(columns_from_arrow(table))


_PER_MS = {"s": 1, "ms": 1, "us": 1000, "ns": 1_000_000}  # seconds never occur: Spark sends us


def _millis(s: pd.Series) -> list[int | None]:
    # Integer division of the nanoseconds: numpy's ns -> ms cast overflows near 1677.
    ms = s.to_numpy(dtype="datetime64[ns]").view(np.int64) // 1_000_000
    nulls = s.isna().to_numpy()
    return [None if null else int(v) for v, null in zip(ms.tolist(), nulls.tolist(), strict=True)]


def _ints(s: pd.Series) -> list[int | None]:
    if s.dtype.kind == "f" and s.abs().max() > _EXACT:
        raise ValueError(f"column {s.name} came as float64 with values past 2^53, which no "
                         f"longer are exact: set {PREFER_INT_EXTENSION}=true")
    nulls = s.isna().to_numpy().tolist()
    return [None if null else int(v) for v, null in zip(s.tolist(), nulls, strict=True)]


def _plain(value: Any) -> Any:
    """numpy arrays and NaNs inside nested values, as lists and None."""
    if value is None:
        return None
    if isinstance(value, np.ndarray | list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, np.integer):
        return int(value)
    return value


def wire_table(rows: Tables, schema: pa.Schema) -> pa.Table:
    """The rows as one Arrow table of the wire schema (`schema`: `wire_schema()`'s Arrow
    form), every column through `arrow_column`."""
    n, columns = _wire_columns(rows)
    arrays = [arrow_column(columns[f.name], f.type, f.name) if f.name in columns
              else pa.nulls(n, f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _wire_columns(rows: Tables) -> tuple[int, dict[str, list[Any]]]:
    """The wire union as Python columns: tables one after another, each table's columns
    under their wire names, null where another table's rows are; no entry for a column no
    table has."""
    tables = {table: table_rows for table, table_rows in rows.items() if table_rows}
    n = sum(map(len, tables.values()))
    columns: dict[str, list[Any]] = {"_table": []}
    at = 0
    for table, table_rows in tables.items():
        names = _names(table, table_rows)
        for name, values in zip(names, _columns(table_rows, names), strict=True):
            column = columns.setdefault(wire_name(table, name), [None] * n)
            column[at:at + len(values)] = values
        columns["_table"] += [table] * len(table_rows)
        at += len(table_rows)
    return n, columns


def table_arrow(table: str, rows: list[Row], wire: pa.Schema) -> pa.Table:
    """One table's rows as Arrow, typed by its columns in the wire schema (the shape a later
    issue writes per table; the wire is the union of these)."""
    names = _names(table, rows)
    fields = [wire.field(wire_name(table, name)).with_name(name) for name in names]
    arrays = [arrow_column(values, f.type, f"{table}.{f.name}")
              for f, values in zip(fields, _columns(rows, names), strict=True)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _names(table: str, rows: list[Row]) -> list[str]:
    """A table's columns: its schemas/ columns (plus the wire's extra `_deleted` flag) or,
    for the engine's own tables (FAILED, SEED_TABLE), the first row's."""
    return list(_COLUMNS.get(table) or rows[0]) + list(EXTRA_COLUMNS.get(table, ()))


def _columns(rows: list[Row], names: list[str]) -> list[list[Any]]:
    """The rows' values column by column; a row without a column (a deleted offset's) has null."""
    if len(names) < 2:  # itemgetter of one name gives values, not tuples
        return [[r.get(name) for r in rows] for name in names]
    try:
        return [list(c) for c in zip(*map(itemgetter(*names), rows), strict=True)]
    except KeyError:
        return [[r.get(name) for r in rows] for name in names]


def arrow_column(values: list[Any], target: pa.DataType, name: str) -> pa.Array:
    """Fold values (times in ms, ints as Python ints) as an Arrow array of `target`, at any
    depth: times are built in milliseconds, checked against what pandas can hold (so both
    backends refuse alike) and cast to the target's unit by Arrow; every other value goes
    straight in, Arrow refusing an int out of its type's range."""
    wide = _in_ms(target)
    try:
        array = pa.array(values, type=target if wide is None else wide)
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        if target.id in _KIND:
            _check_fits(name, _KIND[target.id], values)  # names the value that does not fit
        raise ValueError(f"{name}: {exc}") from exc
    if wide is None:
        return array
    _check_times(array, target, name)
    return array.cast(target)


@cache
def _in_ms(t: pa.DataType) -> pa.DataType | None:
    """`t` with its times, at any depth, in milliseconds; None if it holds no time."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("ms", t.tz)
    if pa.types.is_list(t):
        inner = _in_ms(t.value_type)
        return None if inner is None else pa.list_(t.value_field.with_type(inner))
    if pa.types.is_struct(t):
        fields = [(f, _in_ms(f.type)) for f in t]
        if all(inner is None for _, inner in fields):
            return None
        return pa.struct([f if inner is None else f.with_type(inner) for f, inner in fields])
    return None


def _check_times(array: pa.Array, target: pa.DataType, name: str) -> None:
    """Raise if a time (at any depth) is out of pandas' range, naming the column."""
    if pa.types.is_list(target):
        _check_times(array.flatten(), target.value_type, name)
    elif pa.types.is_struct(target):
        for child, f in zip(array.flatten(), target, strict=True):
            _check_times(child, f.type, f"{name}.{f.name}")
    elif pa.types.is_timestamp(target) and array.null_count < len(array):
        low, high = pc.min_max(array).values()
        _check_fits(name, "timestamp", [low.value, high.value])


def wire_frame(rows: Tables, schema: StructType | pa.Schema) -> pd.DataFrame:
    """The wire rows as the pandas frame applyInPandasWithState returns: top-level times as
    naive UTC datetime64[ns], every other column an object column of Python values (nested
    times naive UTC datetimes). Times and top-level ints are range-checked as in
    `wire_table`; Spark refuses any other value that does not fit as it converts."""
    if isinstance(schema, StructType):
        schema = to_arrow_schema(schema, timezone="UTC")
    n, columns = _wire_columns(rows)
    nulls = np.full(n, None, dtype=object)
    no_times = np.full(n, np.datetime64("NaT"), dtype="datetime64[ns]")
    return pd.DataFrame({f.name: _pandas_column(columns[f.name], f.type, f.name)
                         if f.name in columns else
                         no_times if pa.types.is_timestamp(f.type) else nulls
                         for f in schema}, copy=False)


def _pandas_column(values: list[Any], t: pa.DataType, name: str) -> np.ndarray:
    if pa.types.is_timestamp(t):
        _check_fits(name, "timestamp", values)
        # The session time zone is UTC: naive datetimes, through integers (numpy's own
        # ms -> ns cast overflows near 1677).
        ms = np.array([_NAT if v is None else v for v in values], dtype=np.int64)
        return ms.view("datetime64[ms]").astype("datetime64[ns]")
    if _in_ms(t) is not None:
        values = arrow_column(values, t, name).cast(_naive(t)).to_pylist()
    elif t.id in _KIND:  # Spark's own conversion would refuse it too, without the name
        _check_fits(name, _KIND[t.id], values)
    # Every other column an object column: left to pandas, [2**63 - 1, None] becomes float64
    # and 2**63, and a column of nulls float64, which Arrow cannot make a list or struct of.
    return np.fromiter(values, dtype=object, count=len(values))


@cache
def _naive(t: pa.DataType) -> pa.DataType:
    """`t` with its times, at any depth, without a time zone: to_pylist gives naive ones."""
    if pa.types.is_timestamp(t):
        return pa.timestamp(t.unit)
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_naive(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_naive(f.type)) for f in t])
    return t


_NAT = np.iinfo(np.int64).min  # numpy's NaT
_KIND = {pa.int32().id: "int", pa.int64().id: "bigint", pa.timestamp("ms").id: "timestamp"}
_BOUNDS = {"int": (-(2**31), 2**31 - 1), "bigint": (-(2**63), 2**63 - 1),
           "timestamp": PANDAS_MS_RANGE}


def _check_fits(name: str, kind: str, values: list[Any]) -> None:
    """Raise if a value cannot be stored as `kind`, naming the column, in both backends alike
    (pandas would wrap a time past 2262 silently, Arrow would refuse an int out of range)."""
    present = [v for v in values if v is not None]
    if not present:
        return
    low, high = min(present), max(present)
    bounds = _BOUNDS[kind]
    if low < bounds[0] or high > bounds[1]:
        bad = low if low < bounds[0] else high
        raise ValueError(f"{name} = {bad} does not fit the column's type ({kind})")
