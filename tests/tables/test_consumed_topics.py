"""The one rule for the topics a cluster's groups consume (`schemas/consumed.py`): every event
type of both logs says what it names, or that it names nothing, and every path it gives
reaches a string in the log's own columns. The sampler's Spark reading of it is tested in
tests/kafka/test_end_offsets.py."""

from __future__ import annotations

from schemas.consumed import (
    CONSUMED_TOPICS,
    NAMES_NO_TOPIC,
    SHARE_STATE_CONSUMED_TOPICS,
    TopicsNamed,
)
from schemas.events import EVENT_COLUMNS, EVENT_TYPES
from schemas.share_state import SHARE_STATE_EVENT_TYPES, SHARE_STATE_LOG


def test_every_event_type_says_which_topics_it_names_or_that_it_names_none() -> None:
    assert set(CONSUMED_TOPICS) == set(EVENT_TYPES)
    naming = {t for t, named in CONSUMED_TOPICS.items() if named}
    assert not naming & set(NAMES_NO_TOPIC)  # said once, one way
    assert len(NAMES_NO_TOPIC) == len(set(NAMES_NO_TOPIC))
    assert set(SHARE_STATE_CONSUMED_TOPICS) == set(SHARE_STATE_EVENT_TYPES)


def test_every_group_type_names_its_topics() -> None:
    kinds = {r.group_type for named in CONSUMED_TOPICS.values() for r in named}
    assert kinds == {"any", "classic", "consumer", "share", "streams"}
    share_state = [r for named in SHARE_STATE_CONSUMED_TOPICS.values() for r in named]
    assert share_state and all(r.by_id and r.group_type == "share" for r in share_state)


Type = str | tuple[str, object]  # a primitive; ("array", T); ("struct", {name: T})


def _parse(ddl: str) -> Type:
    """A Spark DDL type as nested tuples."""
    def read(at: int) -> tuple[Type, int]:
        for kind in ("array<", "struct<"):
            if ddl.startswith(kind, at):
                at += len(kind)
                if kind == "array<":
                    element, at = read(at)
                    return ("array", element), at + 1
                fields: dict[str, Type] = {}
                while ddl[at] != ">":
                    name, _, _ = ddl[at:].partition(":")
                    fields[name], at = read(at + len(name) + 1)
                    at += ddl[at] == ","
                return ("struct", fields), at + 1
        end = at
        while end < len(ddl) and ddl[end] not in ",>":
            end += 1
        return ddl[at:end], end
    parsed, _ = read(0)
    return parsed


def _reaches_a_string(rule: TopicsNamed, columns: dict[str, str]) -> bool:
    """Each step of the path is a field of the struct the step before reached (the first a
    column), `[]` steps into an array, and the last reaches a string."""
    kind: Type = ("struct", {name: _parse(t) for name, t in columns.items()})
    for name, each in rule.steps:
        if not isinstance(kind, tuple) or kind[0] != "struct":
            return False
        fields = kind[1]
        assert isinstance(fields, dict)
        if name not in fields:
            return False
        kind = fields[name]
        if each:
            if not isinstance(kind, tuple) or kind[0] != "array":
                return False
            kind = kind[1]  # type: ignore[assignment]
    return kind == "string"


def test_every_path_reaches_a_string_column_of_its_log() -> None:
    for rules, columns in ((CONSUMED_TOPICS, EVENT_COLUMNS),
                           (SHARE_STATE_CONSUMED_TOPICS, SHARE_STATE_LOG)):
        types = {c.name: c.type for c in columns}
        for event_type, named in rules.items():
            for rule in named:
                assert _reaches_a_string(rule, types), (event_type, rule.path)


def test_a_path_that_misses_is_caught() -> None:
    types = {c.name: c.type for c in EVENT_COLUMNS}
    assert not _reaches_a_string(TopicsNamed("members[].subscriptions[]", "classic", "x"), types)
    assert not _reaches_a_string(TopicsNamed("members[].assignment[]", "classic", "x"), types)
