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
(`fold/left.py`) back without one Python value per cell. Both the backfill and the stream
read them from Arrow (`columns_from_packed`; the stream's pandas frames become Arrow first,
`folding.arrow_of`). Integers never pass through float: a float64 holds integers exactly
only up to 2^53, and pandas turns an int64 column with a null into float64, so the stream
asks Spark for nullable integer columns (`PREFER_INT_EXTENSION`, set by the replay).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql.types import (
    BinaryType,
    StructType,
    TimestampType,
)

from pipeline.fold.events import EventColumns
from pipeline.fold.runs import QUIET_COLUMNS
from pipeline.spark.tables import sqltext
from pipeline.spark.tables.contract import event_schema, holds
from schemas.events import EVENT_COLUMNS

# Spark 4.2's switch for Int64/Int32 pandas columns in place of int64-or-float64 ones.
PREFER_INT_EXTENSION = "spark.sql.execution.pythonUDF.pandas.preferIntExtensionDtype"
_EXACT = 2**53  # beyond this a float64 no longer holds every integer


PACKED = "_packed"  # a row's other values as one JSON object (`packed_events`), or null


def packed_events(events: DataFrame, *keep: str) -> DataFrame:
    """The narrow pipe into the fold (`select_events`' rows in): the `unpacked_schema`
    columns as they are, and each row's other values as one JSON object (`PACKED`; nulls
    left out, times as epoch milliseconds), null when the row holds none of them (a plain
    commit). `columns_from_packed` reads it back. `keep`: columns to carry as well."""
    as_is = unpacked_schema().names
    packed: list[str] = []
    for f in event_schema().fields:
        if f.name in as_is:
            continue
        name = sqltext.ident(f.name)
        if isinstance(f.dataType, TimestampType):
            packed.append(f"{sqltext.string(f.name)}, unix_millis({name})")
        elif holds(f.dataType, TimestampType):
            raise TypeError(f"{f.name}: a time inside a nested column cannot be packed as ms")
        else:
            packed.append(f"{sqltext.string(f.name)}, {name}")
    held = " OR ".join(f"{sqltext.ident(f.name)} IS NOT NULL" for f in event_schema().fields
                       if f.name not in as_is)
    text = f"CASE WHEN {held} THEN to_json(named_struct({', '.join(packed)})) END"
    return events.selectExpr(*map(sqltext.ident, as_is), sqltext.named(text, PACKED),
                             *map(sqltext.ident, keep))


def unpacked_schema() -> StructType:
    """The columns `packed_events` carries as they are: group_id, the columns a quiet row of
    the fold reads (`runs.QUIET_COLUMNS`) and the byte columns (bytes inside a nested column
    go in the JSON as base64, `_NESTED_BYTES`: a list column that is null on nearly every row
    costs Arrow's writer in the JVM more than all the others, per row)."""
    names = {"group_id", *QUIET_COLUMNS}
    return StructType([f for f in event_schema().fields
                       if f.name in names or isinstance(f.dataType, BinaryType)])


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
    """`columns_from_arrow` for `packed_events`' rows: the typed columns as
    Arrow carried them, and each packed JSON object read back (times in ms already), one
    column for each name any row holds."""
    columns = columns_from_arrow(table.drop_columns([PACKED]))
    columns.update(_unpacked(table.column(PACKED).to_pylist()))
    return columns


def _unpacked(texts: list[str | None]) -> EventColumns:
    """The packed JSON objects' values, a column for each name any of them holds (a null
    text: a row holding none), bytes inside a nested column restored from base64."""
    rows = [None if text is None else json.loads(text) for text in texts]
    names: dict[str, None] = {}
    for row in rows:
        if row:
            names.update(dict.fromkeys(row))
    columns = {name: [None if row is None else row.get(name) for row in rows] for name in names}
    for name in names & _NESTED_BYTES.keys():
        columns[name] = [_with_bytes(v, _NESTED_BYTES[name]) for v in columns[name]]
    return columns


# Bytes inside a packed column (its array's structs' fields of type binary), which the JSON
# holds as base64, as Spark's to_json writes them.
_NESTED_BYTES = {c.name: tuple(re.findall(r"(\w+):binary", c.type)) for c in EVENT_COLUMNS
                 if c.type.startswith("array<struct<") and ":binary" in c.type}


def _with_bytes(value: Any, fields: tuple[str, ...]) -> Any:
    if not isinstance(value, list):
        return value
    return [{**item, **{f: None if item.get(f) is None else base64.b64decode(item[f])
                        for f in fields}} if isinstance(item, dict) else item
            for item in value]


_PER_MS = {"s": 1, "ms": 1, "us": 1000, "ns": 1_000_000}  # seconds never occur: Spark sends us


