"""pandas at the edge of the fold: Spark's rows in as Events, the fold's rows out as wire rows.

Spark hands a group's rows over as pandas frames, where a null timestamp is NaT and an array
is a numpy array; the fold wants plain Python values and integer milliseconds. Times are UTC
(the session time zone is pinned to UTC).

Integers never pass through float: a float64 holds integers exactly only up to 2^53, and
pandas turns an int64 column with a null into float64. The stream asks Spark for nullable
integer columns (`PREFER_INT_EXTENSION`, set by `replay.py`), and a float column that
reaches `_ints` anyway is refused unless every value is exact; going out, integer wire
columns are object columns of Python ints, which Arrow converts exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import ArrayType, IntegerType, LongType, StructType, TimestampType

from pipeline.fold import Event
from pipeline.fold.context import Row
from pipeline.spark.tables import wire_name
from pipeline.times import PANDAS_MS_RANGE

Tagged = tuple[str, Row]  # (table, row)
# Spark 4.2's switch for Int64/Int32 pandas columns in place of int64-or-float64 ones.
PREFER_INT_EXTENSION = "spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype"
_EXACT = 2**53  # beyond this a float64 no longer holds every integer


def events_from_frames(frames: Iterable[pd.DataFrame], schema: StructType) -> list[Event]:
    """`schema` is `event_schema()`, built on the driver: workers have no JVM to parse DDL."""
    events: list[Event] = []
    for pdf in frames:
        if len(pdf):
            events.extend(events_from_frame(pdf, schema))
    return events


def events_from_frame(pdf: pd.DataFrame, schema: StructType) -> list[Event]:
    columns = []
    for f in schema.fields:
        if f.name not in pdf.columns:
            columns.append([None] * len(pdf))
        elif isinstance(f.dataType, TimestampType):
            columns.append(_millis(pdf[f.name]))
        elif isinstance(f.dataType, IntegerType | LongType):
            columns.append(_ints(pdf[f.name]))
        elif isinstance(f.dataType, ArrayType):
            columns.append([_plain(v) for v in pdf[f.name]])
        else:
            s = pdf[f.name]
            columns.append([None if v is None or v is pd.NA or (isinstance(v, float) and v != v)
                            else v for v in s.tolist()])
    names = [f.name for f in schema.fields]
    return [Event.from_row(dict(zip(names, values, strict=True))) for values in zip(*columns, strict=True)]


def events_from_arrow(table: pa.Table) -> list[Event]:
    """The batch path: Spark's Arrow table of a group's rows (timestamps in microseconds)."""
    columns: dict[str, list[Any]] = {}
    for name in table.column_names:
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            column = pc.divide(column.cast(pa.int64()), _PER_MS[column.type.unit])
        columns[name] = column.to_pylist()
    names = list(columns)
    return [Event.from_row(dict(zip(names, values, strict=True)))
            for values in zip(*columns.values(), strict=True)]


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


def _ts(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)


_NAT = np.iinfo(np.int64).min  # numpy's NaT


def _datetimes(values: list[Any]) -> pd.Series:
    ms = np.array([_NAT if v is None else v for v in values], dtype=np.int64)
    return pd.Series(ms.view("datetime64[ms]").astype("datetime64[ns]"))


def _wire_columns(tagged: list[Tagged], names: list[str]) -> dict[str, list[Any]]:
    """The wire rows column by column: each row's values under its wire names, else None."""
    data: dict[str, list[Any]] = {name: [None] * len(tagged) for name in names}
    for i, (table, row) in enumerate(tagged):
        data["_table"][i] = table
        for column, value in row.items():
            data[wire_name(table, column)][i] = value
    return data


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


def _kind(data_type: Any) -> str | None:
    """"timestamp", "int" or "bigint" for a Spark or an Arrow type of those; else None."""
    if isinstance(data_type, pa.DataType):
        if pa.types.is_timestamp(data_type):
            return "timestamp"
        return {pa.int32(): "int", pa.int64(): "bigint"}.get(data_type)
    if isinstance(data_type, TimestampType):
        return "timestamp"
    if isinstance(data_type, IntegerType):
        return "int"
    return "bigint" if isinstance(data_type, LongType) else None


def wire_frame(tagged: list[Tagged], schema: StructType) -> pd.DataFrame:
    """One wide frame holding rows of every table, typed for `schema` (`wire_schema()`)."""
    data = _wire_columns(tagged, [f.name for f in schema.fields])
    for f in schema.fields:
        kind = _kind(f.dataType)
        if kind is not None:
            _check_fits(f.name, kind, data[f.name])
        if isinstance(f.dataType, TimestampType):
            data[f.name] = _datetimes(data[f.name])

    data["state_members"] = [
        None if ms is None else [
            {**m, "last_heartbeat": _ts(m["last_heartbeat"]), "joined_at": _ts(m["joined_at"])}
            for m in ms]
        for ms in data["state_members"]
    ]
    # Every other column an object column: left to pandas, [2**63 - 1, None] becomes float64
    # and 2**63, and a column of nulls float64, which Arrow cannot make a list or struct of.
    return pd.DataFrame({f.name: data[f.name] if isinstance(f.dataType, TimestampType)
                         else pd.Series(data[f.name], dtype=object) for f in schema.fields})


def wire_table(tagged: list[Tagged], schema: pa.Schema) -> pa.Table:
    """`wire_frame` for the batch path: the wire rows as Arrow (`schema`: the wire schema's
    Arrow form, timestamps in microseconds), no pandas in between."""
    data = _wire_columns(tagged, schema.names)
    arrays = []
    for f in schema:
        values = data[f.name]
        kind = _kind(f.type)
        if kind is not None:
            _check_fits(f.name, kind, values)
        if pa.types.is_timestamp(f.type):
            values = [None if v is None else v * 1000 for v in values]
        elif f.name == "state_members":
            values = [None if ms is None else [
                {**m, "last_heartbeat": _us(m["last_heartbeat"]), "joined_at": _us(m["joined_at"])}
                for m in ms] for ms in values]
        arrays.append(pa.array(values, type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _us(ms: int | None) -> int | None:
    return None if ms is None else ms * 1000
