"""A column of the contract: name, Spark DDL type, nullability, meaning."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

TP = "struct<topic:string,partition:int>"


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool = True
    doc: str = ""


def struct(fields: Sequence[Column]) -> str:
    """The fields as a Spark DDL struct type (`struct<a:int,b:string>`): a nested type declared,
    like a table, as columns with their docs."""
    return "struct<" + ",".join(f"{c.name}:{c.type}" for c in fields) + ">"


def ddl(columns: Sequence[Column]) -> str:
    """The columns as a Spark DDL schema string (`a int not null, b string`)."""
    return ", ".join(f"`{c.name}` {c.type}{'' if c.nullable else ' not null'}" for c in columns)
