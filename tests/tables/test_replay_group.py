"""`replay_group`, the one call every backend makes: a group's state in, its state and its
rows per table out. Split anywhere, from bytes or from a Group, it gives what one call gives;
the caller's state is never changed; no group means every row rejected; a fold that cannot
run keeps the state it started from and says why."""

from __future__ import annotations

from collections import defaultdict
from functools import cache

import pytest

from pipeline.fold import CoordinatorConfig, Event, dumps, loads
from pipeline.fold.group_replay import DELETES_KEY, FAILED, INTERNAL, Tables, replay_group
from schemas import OUTPUT_TABLES, TABLE_KEYS
from schemas.internal import BACKFILL_STATE
from tests.golden.files import read_case
from tests.grouping import by_group

CONFIG = CoordinatorConfig()


@cache
def _groups(name: str) -> dict[str | None, list[Event]]:
    return by_group(read_case(name, OUTPUT_TABLES).events, unkeyed=True)


def _end(events: list[Event]) -> int:
    return max(e.event_time for e in events if e.event_time is not None)


def _appended(*calls: Tables) -> dict[str, object]:
    """Rows of several calls, with the current tables as the last call left each key."""
    out: Tables = defaultdict(list)
    for tables in calls:
        for table, rows in tables.items():
            out[table] += rows
    merged: dict[str, object] = dict(out)
    for table, key in TABLE_KEYS.items():
        merged[table] = {tuple(r[k] for k in key): r for r in out[table]}
    return merged


@pytest.mark.parametrize("name", ["classic-by-hand", "offsets-topic-bad-rows", "kip848-by-hand"])
def test_two_calls_from_bytes_or_from_a_group_give_what_one_call_gives(name: str) -> None:
    for group_id, events in _groups(name).items():
        if group_id is None:
            continue
        half, until = len(events) // 2, _end(events)
        whole, whole_rows, _ = replay_group(group_id, None, events, until, CONFIG)
        first, first_rows, _ = replay_group(group_id, None, events[:half], None, CONFIG)
        assert first is not None and whole is not None
        kept = dumps(first)
        for start in (kept, first):
            last, last_rows, _ = replay_group(group_id, start, events[half:], until, CONFIG)
            assert last is not None and dumps(last) == dumps(whole), group_id
            assert _appended(first_rows, last_rows) == _appended(whole_rows), group_id
        assert dumps(first) == kept, f"{group_id}: the caller's Group changed"


def test_every_offset_the_call_touched_has_a_current_row_deleted_or_not() -> None:
    for group_id, events in _groups("classic-by-hand").items():
        state, tables, _ = replay_group(group_id, None, events, _end(events), CONFIG)
        assert state is not None
        touched = {(r["topic"], r["partition"]) for r in tables.get("offset_history", [])}
        current = {(r["topic"], r["partition"]): r for r in tables.get("committed_offsets", [])}
        assert set(current) == touched, group_id
        for tp, row in current.items():
            assert bool(row.get(DELETES_KEY)) == (tp not in state.offsets), (group_id, tp)


def test_rows_of_no_group_are_rejected_and_leave_no_state() -> None:
    events = _groups("offsets-topic-bad-rows")[None]
    assert events
    state, tables, _ = replay_group(None, None, events, None, CONFIG)
    assert state is None and list(tables) == ["rejected_events"]
    assert len(tables["rejected_events"]) == len(events)
    assert all(r["reason"].startswith("MALFORMED") for r in tables["rejected_events"])


def test_seed_is_the_final_state_as_stored() -> None:
    group_id, events = next((g, e) for g, e in _groups("classic-by-hand").items() if g)
    state, tables, _ = replay_group(group_id, None, events, _end(events), CONFIG, seed=True)
    assert state is not None and tables[BACKFILL_STATE] == [{"group_id": group_id,
                                                         "_state": dumps(state)}]
    assert dumps(loads(tables[BACKFILL_STATE][0]["_state"])) == dumps(state)


def test_a_state_that_cannot_be_read_keeps_nothing_and_rejects_every_row_as_internal() -> None:
    group_id, events = next((g, e) for g, e in _groups("classic-by-hand").items() if g)
    state, tables, _ = replay_group(group_id, b"{not json", events, None, CONFIG)
    assert state is None
    assert [r["reason"].split(":")[0] for r in tables["rejected_events"]] == [INTERNAL] * len(events)
    assert tables[FAILED][0]["group_id"] == group_id
    assert "Traceback" in tables[FAILED][0]["reason"]


def test_another_groups_state_is_refused_and_not_kept() -> None:
    (a, a_events), (b, b_events) = [(g, e) for g, e in _groups("classic-by-hand").items() if g][:2]
    other, _, _ = replay_group(a, None, a_events, None, CONFIG)
    state, tables, _ = replay_group(b, other, b_events, None, CONFIG)
    assert state is None
    assert f"not {b!r}'s" in tables[FAILED][0]["reason"]
    assert len(tables["rejected_events"]) == len(b_events)
