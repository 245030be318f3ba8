"""Checks the consumer, share and streams group tests make alike, so that each law is asserted
the same way for the three record-backed types."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pipeline.fold import CoordinatorConfig, Event, FoldResult, Group, dumps, fold, loads
from tests.fold.records import T0, Log, ModernLog, reasons

CONFIG = CoordinatorConfig()
CHUNK_SIZES = (1, 2, 3, 5, 8)
# What applying a row changes even when the row is refused: the log position and its traces.
BOOKKEEPING: dict[str, Any] = dict(position=None, recent=(), seq=0, clock=None,
                                   last_event_time=None, rejected_count=0)
MEMBER_RECORDS = ("CURRENT_MEMBER_ASSIGNMENT", "TARGET_ASSIGNMENT_MEMBER", "MEMBER_METADATA")


def assert_ghost_tombstones_ignored(log: ModernLog, group_records: tuple[str, ...],
                                    member_records: tuple[str, ...] = MEMBER_RECORDS) -> None:
    """Tombstones of a group and of a member ("ghost") never written are ignored, as Kafka's
    loader ignores them: no row refused, no transition, no group created."""
    for record in group_records:
        log.tombstone(record)
    for record in member_records:
        log.tombstone(record, "ghost")
    r = log.replay()
    assert (r.outputs.rejected, r.outputs.transitions, r.group.exists) == ([], [], False)


def refused_as_malformed(log: Log, values: dict[str, object]) -> FoldResult:
    """Folds one row with `values` onto the group `log` replays to, and checks it is refused
    as MALFORMED and changes nothing but the bookkeeping: a hostile row cannot corrupt a
    group's state."""
    before = log.replay().group
    row = {"log_partition": log.partition, "log_offset": 99, "event_time": T0 + 1,
           "group_id": log.group, **values}
    r = fold(before, [Event.from_row(row)], CONFIG)
    (reason,) = reasons(r)
    assert reason.startswith("MALFORMED: ")
    assert replace(r.group, **BOOKKEEPING) == replace(before, **BOOKKEEPING)
    return r


def assert_chunking_law(events: list[Event], whole: FoldResult, tables: tuple[str, ...]) -> None:
    """The chunking law: `events` folded in chunks of any size, the state going through its
    bytes between chunks, give `whole`'s state and the same rows of `tables`: folding a
    group batch after batch, its state stored between, is folding it at once."""
    for size in CHUNK_SIZES:
        g: Group | str = whole.group.group_id
        outputs = []
        for lo in range(0, len(events), size):
            r = fold(g, events[lo:lo + size], CONFIG)
            g = loads(dumps(r.group))
            outputs.append(r.outputs)
        assert g == whole.group
        for table in tables:
            assert [row for o in outputs for row in getattr(o, table)] == getattr(
                whole.outputs, table), (size, table)
