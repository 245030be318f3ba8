"""pandas at the edge of the fold: Spark's rows in as Events, the fold's rows out as wire rows.

Spark hands a group's rows over as pandas frames, where a null int is a float NaN, a null
timestamp is NaT and an array is a numpy array; the fold wants plain Python values and
integer milliseconds. Times are UTC (the session time zone is pinned to UTC).
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

Tagged = tuple[str, Row]  # (table, row)


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
    ms = s.to_numpy(dtype="datetime64[ns]").astype("datetime64[ms]").astype(np.int64)
    nulls = s.isna().to_numpy()
    return [None if null else int(v) for v, null in zip(ms.tolist(), nulls.tolist(), strict=True)]


def _ints(s: pd.Series) -> list[int | None]:
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


def wire_frame(tagged: list[Tagged], schema: StructType) -> pd.DataFrame:
    """One wide frame holding rows of every table, typed for `schema` (`wire_schema()`)."""
    data: dict[str, list[Any]] = {f.name: [None] * len(tagged) for f in schema.fields}
    for i, (table, row) in enumerate(tagged):
        data["_table"][i] = table
        for column, value in row.items():
            data[wire_name(table, column)][i] = value
    for f in schema.fields:
        if isinstance(f.dataType, TimestampType):
            data[f.name] = _datetimes(data[f.name])
    data["state_members"] = [
        None if ms is None else [
            {**m, "last_heartbeat": _ts(m["last_heartbeat"]), "joined_at": _ts(m["joined_at"])}
            for m in ms]
        for ms in data["state_members"]
    ]
    return pd.DataFrame(data, columns=[f.name for f in schema.fields])


def wire_table(tagged: list[Tagged], schema: pa.Schema) -> pa.Table:
    """`wire_frame` for the batch path: the wire rows as Arrow (`schema`: the wire schema's
    Arrow form, timestamps in microseconds), no pandas in between."""
    data: dict[str, list[Any]] = {name: [None] * len(tagged) for name in schema.names}
    for i, (table, row) in enumerate(tagged):
        data["_table"][i] = table
        for column, value in row.items():
            data[wire_name(table, column)][i] = value
    arrays = []
    for f in schema:
        values = data[f.name]
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
