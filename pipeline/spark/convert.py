"""Arrow, pandas and JSON at the edge of the fold: Spark's rows in, the fold's rows out.

In, Spark hands a group's rows over as pandas frames (stream), where a null timestamp is NaT
and an array a numpy array, or packed (backfill: `eventlog.packed_events`, one JSON object a
row); the fold wants plain Python values and integer milliseconds. Out, every row leaves as
one JSON object under its table's column names on the narrow wire (`tables.wire_schema`),
for both backends alike: `packed_tables` checks that each int and time, at any depth, fits
its column's type (naming the column if not, so the group's call is rejected as INTERNAL
instead of a value going wrong), and the JVM parses each table's rows back into its schema
(`sinks.table_rows`). Times are UTC (the session's time zone).

Integers never pass through float: a float64 holds integers exactly only up to 2^53, and
pandas turns an int64 column with a null into float64. The stream asks Spark for nullable
integer columns (`PREFER_INT_EXTENSION`, set by `replay.py`), and a float column that
reaches `_ints` anyway is refused unless every value is exact; going out, JSON carries
Python ints as they are.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import (
    ArrayType,
    DataType,
    IntegerType,
    LongType,
    StructType,
    TimestampType,
)

from pipeline.fold import Event
from pipeline.fold.events import EventColumns, events_of
from pipeline.fold.tables import Tables
from pipeline.spark.eventlog import PACKED
from pipeline.spark.tables import WIRE_ROW, holds, table_schema
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
    """`columns_from_arrow` for `eventlog.packed_events`' rows (the backfill): each packed
    JSON object read back (times in ms already), one column for each name any row holds,
    and the byte columns as Arrow carried them."""
    columns = _unpacked(table.column(PACKED).to_pylist())
    columns.update(columns_from_arrow(table.drop_columns([PACKED])))
    return columns


def columns_from_packed_frames(frames: Iterable[pd.DataFrame], schema: StructType
                               ) -> EventColumns:
    """The same from the stream's pandas frames; `schema`: group_id and the byte columns
    (`eventlog.unpacked_schema()`, built on the driver)."""
    frames = [pdf for pdf in frames if len(pdf)]
    columns = _unpacked([text for pdf in frames for text in pdf[PACKED].tolist()])
    columns.update(columns_from_frames(frames, schema))
    return columns


def _unpacked(texts: list[str]) -> EventColumns:
    rows = [json.loads(text) for text in texts]
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    return {name: [row.get(name) for row in rows] for name in names}


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
    (`sinks.table_rows` parses them back into each table's own schema in the JVM)."""
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


def wire_table(rows: Tables, checks: Checks) -> pa.Table:
    """The backfill's applyInArrow output (`tables.wire_schema`)."""
    names, texts = packed_tables(rows, checks)
    return pa.Table.from_arrays([pa.array(names, pa.string()), pa.array(texts, pa.string())],
                                schema=_WIRE)


def wire_frame(rows: Tables, checks: Checks) -> pd.DataFrame:
    """The stream's applyInPandasWithState output (`tables.wire_schema`)."""
    names, texts = packed_tables(rows, checks)
    return pd.DataFrame({"_table": pd.Series(names, dtype=object),
                         WIRE_ROW: pd.Series(texts, dtype=object)})


def _base64(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not a value of any column")


_DUMPS = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                          default=_base64).encode
_WIRE = pa.schema([pa.field("_table", pa.string(), nullable=False),
                   pa.field(WIRE_ROW, pa.string())])


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
