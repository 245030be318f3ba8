"""The narrow pipe into the fold, both directions: Spark packs each event-log row, and the
fold's side reads a group's rows back as `EventColumns` (plain Python values, times in epoch
milliseconds, integers exact).

A row of the 60-column log holds a handful of values. The columns a plain commit holds (the
fold's quiet rows, `runs.QUIET_COLUMNS`), group_id and the columns holding bytes cross as
they are, typed; every other value of a row crosses as one JSON object (`PACKED`: nulls left
out, times as epoch ms), null for a row that holds none, as ~90 % of a real log's rows (its
plain commits) do. Spark hands a JSON string to Python at a fifth of the cost of the many
Arrow columns it stands for, and a typed column costs no JSON on either side: the fold
reads a plain commit's values straight from Arrow, and hands a row it leaves to the JVM
(`fold/left.py`) back without one Python value per cell. The backfill reads them from Arrow
(`columns_from_packed`), the stream from pandas frames (`columns_from_packed_frames`), where
a null timestamp is NaT and an array a numpy array. Integers never pass through float: a
float64 holds integers exactly only up to 2^53, and pandas turns an int64 column with a null
into float64, so the stream asks Spark for nullable integer columns (`PREFER_INT_EXTENSION`,
set by the replay) and a float column that reaches `_ints` anyway is refused unless every
value is exact.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable
from functools import reduce
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StructType,
    TimestampType,
)

from pipeline.fold.events import EventColumns
from pipeline.fold.runs import QUIET_COLUMNS
from pipeline.spark.tables.contract import event_schema, holds

# Spark 4.2's switch for Int64/Int32 pandas columns in place of int64-or-float64 ones.
PREFER_INT_EXTENSION = "spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype"
_EXACT = 2**53  # beyond this a float64 no longer holds every integer


PACKED = "_packed"  # a row's other values as one JSON object (`packed_events`), or null


def packed_events(events: DataFrame, *keep: str, typed: bool = True) -> DataFrame:
    """The narrow pipe into the fold (`select_events`' rows in): the `unpacked_schema`
    columns as they are, and each row's other values as one JSON object (`PACKED`; nulls
    left out, times as epoch milliseconds), null when the row holds none of them (a plain
    commit). `columns_from_packed` (Arrow) and `columns_from_packed_frames` (pandas) read it
    back. `keep`: columns to carry as well. `typed=False` (the stream): only group_id and the
    byte columns as they are, every other value in the JSON: pandas makes a frame of each
    group's rows, at a cost per column."""
    as_is = unpacked_schema(typed).names
    packed: list[Column] = []
    for f in event_schema().fields:
        if f.name in as_is:
            continue
        if isinstance(f.dataType, TimestampType):
            packed.append(F.unix_millis(F.col(f.name)).alias(f.name))
        elif holds(f.dataType, TimestampType):
            raise TypeError(f"{f.name}: a time inside a nested column cannot be packed as ms")
        else:
            packed.append(F.col(f.name))
    held = [F.col(f.name).isNotNull() for f in event_schema().fields if f.name not in as_is]
    text = F.when(reduce(operator.or_, held), F.to_json(F.struct(*packed)))
    return events.select(*as_is, text.alias(PACKED), *keep)


def unpacked_schema(typed: bool = True) -> StructType:
    """The columns `packed_events` carries as they are: group_id, the columns a quiet row of
    the fold reads (`runs.QUIET_COLUMNS`; not with `typed=False`) and those holding bytes."""
    names = {"group_id", *(QUIET_COLUMNS if typed else ())}
    return StructType([f for f in event_schema().fields
                       if f.name in names or holds(f.dataType, BinaryType)])


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
    """`columns_from_arrow` for `packed_events`' rows (the backfill): the typed columns as
    Arrow carried them, and each packed JSON object read back (times in ms already), one
    column for each name any row holds."""
    columns = columns_from_arrow(table.drop_columns([PACKED]))
    columns.update(_unpacked(table.column(PACKED).to_pylist()))
    return columns


def columns_from_packed_frames(frames: Iterable[pd.DataFrame], schema: StructType
                               ) -> EventColumns:
    """The same from the stream's pandas frames; `schema`: the typed columns
    (`unpacked_schema()`, built on the driver)."""
    frames = [pdf for pdf in frames if len(pdf)]
    columns = columns_from_frames(frames, schema)
    columns.update(_unpacked([text for pdf in frames for text in pdf[PACKED].tolist()]))
    return columns


def _unpacked(texts: list[str | None]) -> EventColumns:
    """The packed JSON objects' values, a column for each name any of them holds (a null
    text: a row holding none)."""
    rows = [None if text is None else json.loads(text) for text in texts]
    names: dict[str, None] = {}
    for row in rows:
        if row:
            names.update(dict.fromkeys(row))
    return {name: [None if row is None else row.get(name) for row in rows] for name in names}


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
