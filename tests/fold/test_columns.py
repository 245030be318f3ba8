"""The fold given a group's rows as `EventColumns` (as the Spark side hands them) gives exactly
what it gives for the same rows as `Event`s: every output row and the final state, whether its
plain commits go in bulk or one by one."""

from __future__ import annotations

from functools import cache

import pytest

from pipeline.fold import CoordinatorConfig, Event, FoldResult, fold
from pipeline.fold.events import EVENT_COLUMNS, EventColumns
from pipeline.generator import LogSpec, generate
from tests.fold.records import T0, Log
from tests.grouping import by_group

CONFIG = CoordinatorConfig()


def columns_of(events: list[Event]) -> EventColumns:
    """`events` as `EventColumns`, every column present (`events_of`' inverse)."""
    rows = [e.to_row() for e in events]
    return {name: [r[name] for r in rows] for name in EVENT_COLUMNS}


SEEDS = [3, 7]  # 7: transactions, committed and aborted, in both kinds


@cache
def _groups(kind: str, seed: int = 3) -> dict[str, list[Event]]:
    spec = LogSpec(groups=8, events=2_000, seed=seed, log_kind=kind, bad_rows=0.05,
                   out_of_order=0.02)
    return by_group(generate(spec))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ["offsets-topic", "journal"])
def test_columns_fold_exactly_like_events(kind: str, seed: int) -> None:
    for group_id, events in _groups(kind, seed).items():
        # Halves: the second fold starts from a stored state, as a stream's next batch does.
        half = len(events) // 2
        by_events = fold(group_id, events[:half], CONFIG, watermark=T0)
        by_columns = fold(group_id, columns_of(events[:half]), CONFIG, watermark=T0)
        assert by_columns == by_events, group_id
        rest = fold(by_events.group, events[half:], CONFIG)
        assert fold(by_columns.group, columns_of(events[half:]), CONFIG) == rest, group_id


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ["offsets-topic", "journal"])
def test_quiet_runs_give_what_one_by_one_gives(kind: str, seed: int) -> None:
    # records=True takes every row through its handler: the general path, one at a time.
    for group_id, events in _groups(kind, seed).items():
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


def _one_by_one(log: Log) -> FoldResult:
    single = fold(log.group, log.events, CONFIG, records=True)
    single.outputs.records.clear()
    return single


def test_a_quiet_run_stops_where_a_silent_members_session_ends() -> None:
    # a-1 heartbeats and commits every 2 s; b-2 goes silent and its 10 s session ends
    # between two of a-1's rows: the run must stop there, the timer fire, a new run go on.
    log = Log().stable_group("a-1", "b-2")
    for i in range(12):
        log.at(log.now - T0 + 2_000).heartbeat("a-1", 1)
        log.commit("orders", 0, i, member="a-1", generation=1)
    r = fold(log.group, columns_of(log.events), CONFIG)
    assert r == _one_by_one(log)
    removed = [t for t in r.outputs.transitions if t["cause"] == "SESSION_TIMEOUT"]
    assert [t["member_id"] for t in removed] == ["b-2"]
    assert len(r.outputs.offset_history) == 12
    assert r.group.member("a-1") is not None and r.group.member("a-1").last_heartbeat == (
        log.now)


def test_a_run_takes_transactions_and_markers_of_a_records_only_group() -> None:
    log = Log()
    log.snapshot(1, {"a-1": [("orders", 0), ("orders", 1)]})
    log.commit("orders", 0, 5, generation=None)
    log.commit("orders", 0, 9, generation=None, producer_id=7)
    log.commit("orders", 1, 3, generation=None, producer_id=8)
    log.commit("orders", 0, 6, generation=None)  # a newer record than producer 7's
    log.marker(8, "ABORT")
    log.marker(7, "COMMIT")  # older than offset 6's record: not put, no COMMIT row
    log.marker(9, "COMMIT")  # nothing pending for producer 9
    r = fold(log.group, columns_of(log.events), CONFIG)
    assert r == _one_by_one(log)
    assert [(h["committed_offset"], h["change"]) for h in r.outputs.offset_history] == [
        (5, "COMMIT"), (6, "COMMIT"), (3, "TXN_ABORTED")]
    assert r.group.offsets[("orders", 0)].committed_offset == 6 and not r.group.pending_txns
