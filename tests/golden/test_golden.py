"""The engine against its frozen output: each stored log under `tests/data/golden/` replayed
by the pure fold must give every table, whole, and every group's final state as stored.

A change here is a change of the engine's output. If it is meant, regenerate
(`python -m tests.golden.regenerate`) in a commit of its own whose message says why, with
Kafka's source as the witness; if not, the diff below says where the output moved.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter, defaultdict
from functools import cache
from typing import Any

import pytest

from pipeline.fold import dumps
from schemas import OUTPUT_TABLES
from tests.golden.coverage import REQUIRED, features, summary
from tests.golden.files import StoredCase, case_names, read_case
from tests.golden.tables import encode_tables, line, replay, sort_key

SHOWN = 3  # differing rows shown per table


@cache
def _read(name: str) -> StoredCase:
    return read_case(name, OUTPUT_TABLES)


@pytest.fixture(params=case_names())
def stored(request: pytest.FixtureRequest) -> StoredCase:
    return _read(request.param)


def test_there_are_at_least_six_golden_cases() -> None:
    assert len(case_names()) >= 6, case_names()


def test_every_table_and_every_final_state_is_as_stored(stored: StoredCase) -> None:
    replayed = replay(stored.events, stored.batches, stored.config, stored.delay_ms)
    actual = encode_tables(replayed.tables)
    problems = [d for t in OUTPUT_TABLES
                if (d := table_diff(t, actual[t], stored.tables[t])) is not None]
    states = {g: _parsed(dumps(group)) for g, group in replayed.groups.items()}
    if (d := state_diff(states, stored.groups)) is not None:
        problems.append(d)
    if problems:
        pytest.fail(f"{stored.name}: the output differs from the golden files\n"
                    + "\n".join(problems), pytrace=False)


def test_the_cases_together_cover_every_feature() -> None:
    covered: dict[str, list[str]] = defaultdict(list)
    for name in case_names():
        case = _read(name)
        for feature in features(case.events, case.tables):
            covered[feature].append(name)
    assert sorted(REQUIRED - set(covered)) == []


def test_each_case_still_shows_what_it_was_frozen_to_cover(stored: StoredCase) -> None:
    found = features(stored.events, stored.tables)
    assert stored.meta["covers"], f"{stored.name}: case.json names no feature it covers"
    assert sorted(set(stored.meta["covers"]) - found) == []


def test_each_case_summary_describes_its_stored_files(stored: StoredCase) -> None:
    assert stored.meta["summary"] == summary(stored.events, stored.tables)


def _parsed(data: bytes) -> Any:
    return json.loads(zlib.decompress(data))


def _short(value: Any, width: int = 240) -> str:
    text = line(value)
    return text if len(text) <= width else text[:width] + f"... ({len(text)} chars)"


def _differences(expected: dict[str, Any], actual: dict[str, Any]) -> str:
    """Each differing column, down to the first differing nested value."""
    shown = []
    for column in {**expected, **actual}:
        if expected.get(column) != actual.get(column):
            path, e, a = _first_difference(expected.get(column), actual.get(column), column)
            shown.append(f"{path}: expected {_short(e, 160)}, got {_short(a, 160)}")
    return "; ".join(shown)


def _first_difference(e: Any, a: Any, path: str) -> tuple[str, Any, Any]:
    if isinstance(e, dict) and isinstance(a, dict):
        for k in {**e, **a}:
            if e.get(k) != a.get(k):
                return _first_difference(e.get(k), a.get(k), f"{path}.{k}")
    if isinstance(e, list) and isinstance(a, list) and len(e) == len(a):
        for i, (x, y) in enumerate(zip(e, a, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return path, e, a


def table_diff(table: str, actual: list[dict[str, Any]], expected: list[dict[str, Any]]
               ) -> str | None:
    """None when the tables hold the same rows; else the first few differences, column by
    column where a missing and an unexpected row share their sort key."""
    have, want = Counter(map(line, actual)), Counter(map(line, expected))
    if have == want:
        return None
    missing = [r for r in expected if want[line(r)] > have[line(r)]]
    extra = [r for r in actual if have[line(r)] > want[line(r)]]
    out = [f"-- {table}: {len(actual)} rows, {len(expected)} expected; "
           f"{len(missing)} expected rows not produced, {len(extra)} produced not expected"]
    unmatched = {id(r): r for r in extra}
    by_key: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in extra:
        by_key[sort_key(table, r)].append(r)
    for want_row in missing[:SHOWN]:
        key = sort_key(table, want_row)
        if by_key[key]:
            got = by_key[key].pop(0)
            unmatched.pop(id(got), None)
            out.append(f"   row {_short([v for _, v in key])}: {_differences(want_row, got)}")
        else:
            out.append(f"   not produced: {_short(want_row)}")
    for got in list(unmatched.values())[:SHOWN]:
        out.append(f"   not expected: {_short(got)}")
    return "\n".join(out)


def state_diff(actual: dict[str, Any], expected: dict[str, Any]) -> str | None:
    if actual == expected:
        return None
    out = [f"-- final states: {len(actual)} groups, {len(expected)} expected"]
    for g in sorted(set(expected) - set(actual))[:SHOWN]:
        out.append(f"   group {g!r}: no state produced")
    for g in sorted(set(actual) - set(expected))[:SHOWN]:
        out.append(f"   group {g!r}: state produced, none expected")
    differing = [g for g in sorted(set(actual) & set(expected)) if actual[g] != expected[g]]
    for g in differing[:SHOWN]:
        out.append(f"   group {g!r}: {_differences(expected[g], actual[g])}")
    if len(differing) > SHOWN:
        out.append(f"   ... and {len(differing) - SHOWN} more groups")
    return "\n".join(out)
