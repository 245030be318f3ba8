"""Every row the golden logs produce fits its table's schema in `schemas/`: exactly the
table's columns, each value of the column's type (at any depth: ints in range, times as
integer milliseconds, structs with only their fields) and no null in a non-null column."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from pipeline.fold.context import Row
from schemas import OUTPUT_TABLES
from tests.golden.files import case_names, read_case
from tests.golden.tables import Replayed, parse_type, replay

_RANGES = {"smallint": 2**15, "int": 2**31, "bigint": 2**63, "timestamp": 2**63}
_PYTHON = {"string": str, "boolean": bool, "binary": bytes}


@cache
def _replayed(name: str) -> Replayed:
    case = read_case(name, OUTPUT_TABLES)
    return replay(case.events, case.batches, case.config, case.delay_ms)


def value_problems(value: Any, kind: Any, where: str) -> list[str]:
    """What is wrong with `value` as a value of the parsed DDL type `kind` (null is fine)."""
    if value is None:
        return []
    if isinstance(kind, tuple) and kind[0] == "array":
        if not isinstance(value, list):
            return [f"{where}: array holds {value!r}"]
        return [p for i, v in enumerate(value) for p in value_problems(v, kind[1], f"{where}[{i}]")]
    if isinstance(kind, tuple):
        fields = dict(kind[1])
        if not isinstance(value, dict) or set(value) - set(fields):
            return [f"{where}: struct of {sorted(fields)} holds {value!r}"]
        return [p for name, t in fields.items()
                for p in value_problems(value.get(name), t, f"{where}.{name}")]
    if kind in _RANGES:
        bound = _RANGES[kind]
        fits = isinstance(value, int) and not isinstance(value, bool) and -bound <= value < bound
        return [] if fits else [f"{where}: {kind} holds {value!r}"]
    return [] if isinstance(value, _PYTHON[kind]) else [f"{where}: {kind} holds {value!r}"]


def row_problems(table: str, row: Row) -> list[str]:
    columns = OUTPUT_TABLES[table]
    names = {c.name for c in columns}
    if set(row) != names:  # order is free: a row is a dict
        return [f"{table}: lacks {sorted(names - set(row))}, has no {sorted(set(row) - names)}"]
    problems = [f"{table}.{c.name}: null in a non-null column"
                for c in columns if not c.nullable and row[c.name] is None]
    return problems + [p for c in columns
                       for p in value_problems(row[c.name], parse_type(c.type), f"{table}.{c.name}")]


@pytest.mark.parametrize("name", case_names())
def test_every_row_fits_its_tables_schema(name: str) -> None:
    tables = _replayed(name).tables
    assert sum(map(len, tables.values())) > 0
    problems = [p for table, rows in tables.items() for row in rows for p in row_problems(table, row)]
    assert problems[:5] == [], f"{len(problems)} problems"


def test_the_check_finds_a_wrong_type_a_null_and_a_stray_field() -> None:
    row = next(r for name in case_names() for r in _replayed(name).tables["group_state"]
               if r["members"])
    assert row_problems("group_state", row) == []
    members = [{**row["members"][0], "last_heartbeat": 1.5}, {**row["members"][0], "extra": 1}]
    bad = {**row, "generation_id": 2**31, "state": None, "members": members}
    problems = row_problems("group_state", bad)
    assert any("generation_id: int holds 2147483648" in p for p in problems), problems
    assert any("state: null in a non-null column" in p for p in problems), problems
    assert any("members[0].last_heartbeat: timestamp holds 1.5" in p for p in problems), problems
    assert any("members[1]: struct of" in p for p in problems), problems
    assert row_problems("group_state", {**row, "stray": 1}) != []
