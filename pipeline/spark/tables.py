"""Spark schemas of the contract, built from `schemas/`, and the wire row the fold emits.

The fold can return only one row type, so every output row travels as one narrow "wire"
row: `_table` names the table it belongs to and `_row` holds the row as one JSON object
under that table's column names (times in epoch milliseconds, bytes in base64; written by
`convert.packed_tables`, parsed back in the JVM by `sinks.table_rows`). The backfill's seed
rows (`SEED_TABLE`: group_id and `_state`, the group's serialized fold state a stream
continues from) and a failed group's row (`FAILED`: group_id and the traceback) travel the
same way.
"""

from __future__ import annotations

from functools import cache

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    StringType,
    StructField,
    StructType,
)

from pipeline.fold.tables import DELETED, FAILED, SEED_TABLE, STATE
from schemas import EVENT_COLUMNS, OUTPUT_TABLES, Column, ddl
from schemas.lag import LAG_TABLES, LOG_END_OFFSETS

APPEND_TABLES = ("group_transitions", "rebalances", "offset_history", "rejected_events",
                 "error_responses", "group_history")
STATE_SCHEMA = "state binary"
SEED = "_seed"  # a hand-off row's column: the group's state as the backfill left it
WIRE_ROW = "_row"  # the wire's column holding a row as JSON
SAMPLE_WIRE = "_sample"  # an end-offset sample, the stream's second source (lagflow.py)
# SEED_TABLE (pipeline.fold.tables) is the wire's tag and the folder under the warehouse.
__all__ = ["APPEND_TABLES", "EXTRA_COLUMNS", "SAMPLE_WIRE", "SEED", "SEED_TABLE", "STATE_SCHEMA",
           "WIRE_ROW", "event_schema", "holds", "row_schema", "table_schema", "wire_schema"]
# Wire columns a table's rows carry beyond its schemas/ columns.
EXTRA_COLUMNS = {"committed_offsets": (DELETED,)}


def holds(t: DataType, kinds: type[DataType] | tuple[type[DataType], ...]) -> bool:
    """Whether type `t` is, or holds at any depth, a value of one of `kinds`."""
    if isinstance(t, kinds):
        return True
    if isinstance(t, ArrayType):
        return holds(t.elementType, kinds)
    if isinstance(t, StructType):
        return any(holds(f.dataType, kinds) for f in t.fields)
    return False


def _struct(columns: tuple[Column, ...]) -> StructType:
    parsed = DataType.fromDDL(ddl(columns))
    assert isinstance(parsed, StructType)
    # Every column is nullable on disk: a malformed row must be storable to be rejected.
    return StructType([StructField(f.name, f.dataType, True) for f in parsed.fields])


@cache
def event_schema() -> StructType:
    return _struct(EVENT_COLUMNS)


@cache
def table_schema(table: str) -> StructType:
    return _struct(OUTPUT_TABLES[table] if table in OUTPUT_TABLES else LAG_TABLES[table])


@cache
def wire_schema() -> StructType:
    return StructType([StructField("_table", StringType(), False),
                       StructField(WIRE_ROW, StringType(), True)])


@cache
def row_schema(table: str) -> StructType:
    """What a wire row of `table` holds: the table's columns, and the extra ones its rows
    carry (committed_offsets' `_deleted`); for the seed and FAILED rows, theirs."""
    if table == SEED_TABLE:
        return StructType([StructField("group_id", StringType()),
                           StructField(STATE, BinaryType())])
    if table == FAILED:
        return StructType([StructField("group_id", StringType()),
                           StructField("reason", StringType())])
    if table == SAMPLE_WIRE:
        return _struct(LOG_END_OFFSETS)
    extra = [StructField(name, BooleanType()) for name in EXTRA_COLUMNS.get(table, ())]
    return StructType([*table_schema(table).fields, *extra])
