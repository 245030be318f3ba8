"""Column expressions written as Spark SQL text, a projection one `DataFrame.selectExpr`.

A column built from PySpark's functions costs a Py4J round trip per function, per column
reference and per alias, and each function's first step (finding it on the JVM's
`functions` object) makes the gateway look its name up in every package PySpark imports.
A projection of the contract's 60 columns built that way is thousands of calls, paid
again at every micro-batch for the wire's tables. The same expression as SQL text is one
Py4J call for the whole projection (and one to hand each string over), and Spark's parser
builds the same expression tree from it.
"""

from __future__ import annotations

from pyspark.sql.types import ArrayType, DataType, MapType, StructType


def ident(name: str) -> str:
    """`name` as a quoted SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def string(text: str) -> str:
    """`text` as a SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def type_sql(t: DataType) -> str:
    """`t` as SQL names a type (struct field names quoted, at any depth)."""
    if isinstance(t, StructType):
        return "struct<" + ",".join(f"{ident(f.name)}:{type_sql(f.dataType)}"
                                     for f in t.fields) + ">"
    if isinstance(t, ArrayType):
        return f"array<{type_sql(t.elementType)}>"
    if isinstance(t, MapType):
        return f"map<{type_sql(t.keyType)},{type_sql(t.valueType)}>"
    return t.simpleString()


def cast(text: str, t: DataType) -> str:
    """The SQL expression `text` cast to type `t`."""
    return f"CAST({text} AS {type_sql(t)})"


def null(t: DataType) -> str:
    """A null of type `t`."""
    return cast("NULL", t)


def named(text: str, name: str) -> str:
    """The column `text` computes, named `name`: an item of a `selectExpr`."""
    return f"{text} AS {ident(name)}"
