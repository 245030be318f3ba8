"""The fold given a group's rows as `EventColumns` (as the Spark side hands them) gives exactly
what it gives for the same rows as `Event`s: every output row and the final state, whether its
plain commits go in bulk or one by one."""

from __future__ import annotations

from collections import defaultdict
from functools import cache

import pytest

from pipeline.fold import CoordinatorConfig, Event, fold
from pipeline.fold.events import columns_of
from pipeline.generator import LogSpec, generate
from tests.fold.records import T0, Log

CONFIG = CoordinatorConfig()


@cache
def _groups(kind: str) -> dict[str, list[Event]]:
    spec = LogSpec(groups=8, events=2_000, seed=3, log_kind=kind, bad_rows=0.05,
                   out_of_order=0.02)
    by_group: dict[str, list[Event]] = defaultdict(list)
    for e in generate(spec):
        if e.group_id is not None:
            by_group[e.group_id].append(e)
    return by_group


@pytest.mark.parametrize("kind", ["offsets-topic", "journal"])
def test_columns_fold_exactly_like_events(kind: str) -> None:
    for group_id, events in _groups(kind).items():
        # Halves: the second fold starts from a stored state, as a stream's next batch does.
        half = len(events) // 2
        by_events = fold(group_id, events[:half], CONFIG, watermark=T0)
        by_columns = fold(group_id, columns_of(events[:half]), CONFIG, watermark=T0)
        assert by_columns == by_events, group_id
        rest = fold(by_events.group, events[half:], CONFIG)
        assert fold(by_columns.group, columns_of(events[half:]), CONFIG) == rest, group_id


@pytest.mark.parametrize("kind", ["offsets-topic", "journal"])
def test_quiet_runs_give_what_one_by_one_gives(kind: str) -> None:
    # records=True takes every row through its handler: the general path, one at a time.
    for group_id, events in _groups(kind).items():
        bulk, single = fold(group_id, events, CONFIG), fold(group_id, events, CONFIG,
                                                             records=True)
        single.outputs.records.clear()
        assert bulk == single, group_id


def _records_only() -> Log:
    """A group known from a snapshot, then plain commits (records, no generation)."""
    log = Log()
    log.snapshot(1, {"a-1": [("orders", 0)]})
    for offset in (5, 6, 7):
        log.commit("orders", 0, offset, generation=None)
    return log


def test_a_commit_row_with_an_unreadable_nested_column_is_malformed_not_plain() -> None:
    log = _records_only()
    columns = columns_of(log.events)
    columns["members"][2] = [{"member_id": None}]
    r = fold(log.group, columns, CONFIG)
    assert [(x["committed_offset"], x["reason"]) for x in r.outputs.rejected] == [
        (6, "MALFORMED: members cannot be read (TypeError)")]
    assert [h["committed_offset"] for h in r.outputs.offset_history] == [5, 7]
    assert r.group.offsets[("orders", 0)].committed_offset == 7


def test_a_plain_commit_delivered_twice_is_a_duplicate_in_either_form() -> None:
    log = _records_only()
    events = [*log.events, log.events[2]]
    r = fold(log.group, columns_of(events), CONFIG)
    assert [x["reason"] for x in r.outputs.rejected] == ["DUPLICATE"]
    assert r == fold(log.group, events, CONFIG)
    assert [h["committed_offset"] for h in r.outputs.offset_history] == [5, 6, 7]


def test_columns_without_a_column_read_it_as_nulls() -> None:
    log = Log().stable_group("a-1")
    columns = columns_of(log.events)
    del columns["raw_key"]
    assert fold(log.group, columns, CONFIG) == fold(log.group, log.events, CONFIG)
