"""The contract's Spark types, built from `schemas/`: the event log's, each output table's,
what a column holds at any depth (`holds`), whether a type casts to the contract's without
loss (`mismatch`), rows shaped as a table's (`as_table`), and a Spark schema as the Arrow
schema its rows cross into Python with (`arrow_schema`)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

import pyarrow as pa
from pyspark.sql import Column as SqlColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from schemas import EVENT_COLUMNS, WAREHOUSE_TABLES, Column, ddl
from schemas.share_state import SHARE_STATE_LOG

SEED = "_seed"  # a hand-off row's column: the group's state as the backfill left it
__all__ = ["SEED", "arrow_schema", "arrow_type", "as_table", "event_schema", "holds",
           "mismatch", "share_log_schema", "struct_of", "table_schema"]
TIME_ZONE = "UTC"  # the session's (conf/spark-defaults.conf): Arrow's timestamps carry it
_ARROW: dict[type[DataType], pa.DataType] = {
    BooleanType: pa.bool_(), ByteType: pa.int8(), ShortType: pa.int16(),
    IntegerType: pa.int32(), LongType: pa.int64(), FloatType: pa.float32(),
    DoubleType: pa.float64(), StringType: pa.string(), BinaryType: pa.binary(),
    DateType: pa.date32(), TimestampType: pa.timestamp("us", tz=TIME_ZONE),
    TimestampNTZType: pa.timestamp("us"),
}

_INTEGRAL: dict[type[DataType], tuple[int, int]] = {
    ByteType: (1, 2), ShortType: (2, 4), IntegerType: (3, 9), LongType: (4, 18)}


def mismatch(source: DataType, target: DataType, where: str) -> tuple[str, DataType, DataType] | None:
    """The first place (`where`, a dotted column path) where `source` does not cast to
    `target` without loss, with the two types there; None if it does."""
    if source == target or isinstance(source, NullType):
        return None
    if isinstance(target, ArrayType):
        if isinstance(source, ArrayType):
            return mismatch(source.elementType, target.elementType, f"{where}[]")
    elif isinstance(target, StructType):
        if isinstance(source, StructType):
            return _struct_mismatch(source, target, where)
    elif _scalar_fits(source, target):
        return None
    return where, source, target


def _struct_mismatch(source: StructType, target: StructType, where: str
                     ) -> tuple[str, DataType, DataType] | None:
    # Spark casts a struct field by position: the names must line up, not only exist.
    if [f.name.lower() for f in source.fields] != [f.name.lower() for f in target.fields]:
        return where, source, target
    for s, t in zip(source.fields, target.fields, strict=True):
        found = mismatch(s.dataType, t.dataType, f"{where}.{t.name}")
        if found:
            return found
    return None


def _scalar_fits(source: DataType, target: DataType) -> bool:
    if type(target) in _INTEGRAL:
        rank, digits = _INTEGRAL[type(target)]
        if type(source) in _INTEGRAL:
            return _INTEGRAL[type(source)][0] <= rank
        return (isinstance(source, DecimalType) and source.scale == 0
                and source.precision <= digits)
    if isinstance(target, TimestampType):
        return isinstance(source, TimestampNTZType | DateType)
    if isinstance(target, StringType):  # any plain value prints as a string
        return not isinstance(source, BinaryType | ArrayType | StructType) and \
            source.typeName() != "map"
    if isinstance(target, BinaryType):
        return isinstance(source, StringType)
    return isinstance(target, BooleanType) and isinstance(source, BooleanType)


def holds(t: DataType, kinds: type[DataType] | tuple[type[DataType], ...]) -> bool:
    """Whether type `t` is, or holds at any depth, a value of one of `kinds`."""
    if isinstance(t, kinds):
        return True
    if isinstance(t, ArrayType):
        return holds(t.elementType, kinds)
    if isinstance(t, StructType):
        return any(holds(f.dataType, kinds) for f in t.fields)
    return False


def arrow_type(t: DataType) -> pa.DataType:
    """A Spark type as the Arrow type Spark hands Python its values in (what PySpark's own
    conversion gives, with timestamps in the session's time zone); raises on a type the
    contract does not use."""
    if isinstance(t, ArrayType):
        return pa.list_(pa.field("element", arrow_type(t.elementType), t.containsNull))
    if isinstance(t, MapType):
        return pa.map_(pa.field("key", arrow_type(t.keyType), False),
                       pa.field("value", arrow_type(t.valueType), t.valueContainsNull))
    if isinstance(t, StructType):
        return pa.struct([pa.field(f.name, arrow_type(f.dataType), f.nullable) for f in t.fields])
    found = _ARROW.get(type(t))
    if found is None:
        raise TypeError(f"no Arrow type for {t.simpleString()}")
    return found


def arrow_schema(schema: StructType) -> pa.Schema:
    """`schema` as the Arrow schema of its rows in Python (`arrow_type` of each field)."""
    return pa.schema([pa.field(f.name, arrow_type(f.dataType), f.nullable) for f in schema.fields])


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
