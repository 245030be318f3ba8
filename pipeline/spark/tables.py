"""Spark schemas of the contract, built from `schemas/`, and the wire row the fold emits.

The streaming fold can return only one row type, so every output row travels as one wide
"wire" row: `_table` names the table it belongs to and the other columns are the union of
all tables' columns (`members` of group_state and group_history becomes `state_members`,
the only name clash, with rejected_events' event `members`).
`_state` carries a group's serialized fold state out of the batch backfill (the seed a
stream continues from); streaming leaves it null.
"""

from __future__ import annotations

from functools import cache

from pyspark.sql.types import DataType, StructField, StructType

from pipeline.fold.tables import DELETED, SEED_TABLE
from schemas import EVENT_COLUMNS, OUTPUT_TABLES, Column, ddl

APPEND_TABLES = ("group_transitions", "rebalances", "offset_history", "rejected_events",
                 "error_responses", "group_history")
STATE_SCHEMA = "state binary"
SEED = "_seed"  # a hand-off row's column: the group's state as the backfill left it
# SEED_TABLE (pipeline.fold.tables) is the wire's tag and the folder under the warehouse.
__all__ = ["APPEND_TABLES", "EXTRA_COLUMNS", "SEED", "SEED_TABLE", "STATE_SCHEMA",
           "event_schema", "table_schema", "wire_name", "wire_schema"]
# Wire columns a table's rows carry beyond its schemas/ columns.
EXTRA_COLUMNS = {"committed_offsets": (DELETED,)}


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
    return _struct(OUTPUT_TABLES[table])


def wire_name(table: str, column: str) -> str:
    return "state_members" if column == "members" and table in _STATE_SHAPED else column


_STATE_SHAPED = frozenset({"group_state", "group_history"})


@cache
def wire_schema() -> StructType:
    fields: dict[str, StructField] = {"_table": StructField("_table", DataType.fromDDL(
        "string"), False), "_deleted": StructField("_deleted", DataType.fromDDL("boolean")),
        "_state": StructField("_state", DataType.fromDDL("binary"))}
    for table in OUTPUT_TABLES:
        for f in table_schema(table).fields:
            name = wire_name(table, f.name)
            if name in fields and fields[name].dataType != f.dataType:
                raise TypeError(f"wire column {name!r} has two types: {table} disagrees")
            fields.setdefault(name, StructField(name, f.dataType, True))
    return StructType(list(fields.values()))
