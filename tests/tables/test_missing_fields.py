"""`missing_fields`: what a table written by an older release lacks of the contract, down to
a field inside an array's struct, so that the jobs add it before writing (the Spark side, a
stream continuing on such a table, is in tests/spark/test_backfill.py)."""

from __future__ import annotations

from pyspark.sql import types as T

from pipeline.spark.tables.warehouse import missing_fields


def _struct(*fields: tuple[str, T.DataType]) -> T.StructType:
    return T.StructType([T.StructField(name, t) for name, t in fields])


MEMBER = _struct(("member_id", T.StringType()), ("assignment", T.ArrayType(T.StringType())))
WIDER_MEMBER = _struct(*((f.name, f.dataType) for f in MEMBER.fields),
                       ("assigned_tasks", _struct(("active", T.ArrayType(T.StringType())))))
OLD = _struct(("group_id", T.StringType()), ("members", T.ArrayType(MEMBER)))
NEW = _struct(("group_id", T.StringType()), ("members", T.ArrayType(WIDER_MEMBER)),
              ("topology", _struct(("epoch", T.IntegerType()))))


def test_a_table_with_every_column_lacks_nothing() -> None:
    assert missing_fields(NEW, NEW) == []
    assert missing_fields(OLD, OLD) == []


def test_a_missing_column_and_a_missing_member_field_are_named_by_their_path() -> None:
    assert missing_fields(OLD, NEW) == ["members.element.assigned_tasks", "topology"]
    # A column the table has and the contract does not is no concern of this check.
    assert missing_fields(NEW, OLD) == []


def test_maps_are_looked_into_by_their_values() -> None:
    have = _struct(("m", T.MapType(T.StringType(), MEMBER)))
    want = _struct(("m", T.MapType(T.StringType(), WIDER_MEMBER)))
    assert missing_fields(have, want) == ["m.value.assigned_tasks"]
