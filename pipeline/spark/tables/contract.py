"""The contract's Spark types, built from `schemas/`: the event log's, each output table's,
what a column holds at any depth (`holds`), and rows shaped as a table's (`as_table`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from pyspark.sql import Column as SqlColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    StructField,
    StructType,
)

from schemas import EVENT_COLUMNS, WAREHOUSE_TABLES, Column, ddl
from schemas.share_state import SHARE_STATE_LOG

SEED = "_seed"  # a hand-off row's column: the group's state as the backfill left it
__all__ = ["SEED", "as_table", "event_schema", "holds", "share_log_schema", "struct_of",
           "table_schema"]


def holds(t: DataType, kinds: type[DataType] | tuple[type[DataType], ...]) -> bool:
    """Whether type `t` is, or holds at any depth, a value of one of `kinds`."""
    if isinstance(t, kinds):
        return True
    if isinstance(t, ArrayType):
        return holds(t.elementType, kinds)
    if isinstance(t, StructType):
        return any(holds(f.dataType, kinds) for f in t.fields)
    return False


def struct_of(columns: tuple[Column, ...]) -> StructType:
    """Columns of `schemas/` as a StructType, every column nullable (as stored)."""
    parsed = DataType.fromDDL(ddl(columns))
    assert isinstance(parsed, StructType)
    # Every column is nullable on disk: a malformed row must be storable to be rejected.
    return StructType([StructField(f.name, f.dataType, True) for f in parsed.fields])


@cache
def event_schema() -> StructType:
    return struct_of(EVENT_COLUMNS)


@cache
def share_log_schema() -> StructType:
    """The share-state log's (`__share_group_state` decoded, `schemas.share_state`)."""
    return struct_of(SHARE_STATE_LOG)


@cache
def table_schema(table: str) -> StructType:
    return struct_of(WAREHOUSE_TABLES[table])


def as_table(rows: DataFrame, columns: tuple[Column, ...], values: Mapping[str, SqlColumn]
             ) -> DataFrame:
    """`rows` as a table of `columns`, typed by the contract: each column from `values`,
    else the row's own, else null."""
    have = set(rows.columns)
    return rows.select(*[
        values.get(c.name, F.col(c.name) if c.name in have else F.lit(None))
        .cast(c.type).alias(c.name) for c in columns])
