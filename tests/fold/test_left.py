"""The fold that leaves the rows of plain commit records to the caller (`leave=True`, what
the Spark jobs ask for) names records whose rows, built from the records alone
(`tests/left.py`), are exactly the offset_history and committed_offsets rows the fold over
every row writes; every other table and the final state are the same. On many
random logs of both kinds: refused requests, bad and out-of-order rows, duplicates,
transactions, expiry and timers in journal groups, and the rows meant to end or split a run."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import Any

import pytest

from pipeline.fold import CoordinatorConfig, Event, Group
from pipeline.fold.group_replay import replay_group
from pipeline.generator import LogSpec, generate
from tests.fold.consumer_records import ConsumerLog
from tests.grouping import by_group
from tests.left import edge_rows, left_rows

CFG = CoordinatorConfig()
DELAY_MS = 600_000


def random_log(seed: int) -> list[Event]:
    rng = random.Random(seed)
    kind = ("offsets-topic", "offsets-topic", "journal")[seed % 3]
    spec = LogSpec(groups=3, events=rng.randrange(200, 700), seed=seed, log_kind=kind,
                   bad_rows=rng.choice((0.0, 0.02, 0.08)),
                   out_of_order=rng.choice((0.0, 0.0, 0.05)))
    log = generate(spec) + edge_rows(f"g-edge-{seed}", rng)
    # Some rows delivered twice, anywhere in the log.
    return log + [replace(e) for e in rng.sample(log, len(log) // 50)]


def canonical(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=repr) for r in rows)


@pytest.mark.parametrize("seed", range(24))
def test_the_left_records_rows_are_the_rows_the_fold_leaves_out(seed: int) -> None:
    log = random_log(seed)
    until = max(e.event_time for e in log if e.event_time is not None) - DELAY_MS
    left_out = 0
    for group_id, events in by_group(log).items():
        whole_state, whole, nothing = replay_group(group_id, None, events, until, CFG, seed=True)
        assert not nothing.history, group_id  # asked for nothing, it leaves nothing
        state, tables, left = replay_group(group_id, None, events, until, CFG, seed=True,
                                           leave=True)
        assert state == whole_state, group_id
        assert len(set(left.history)) == len(left.history), group_id  # no row named twice
        assert set(left.current) <= set(left.history), group_id
        rows = left_rows(events, left.history, left.types_of(left.history))
        if not group_id.startswith("g-edge"):
            left_out += len(rows)
        for table, built in (("offset_history", rows),
                             ("committed_offsets",
                              left_rows(events, left.current, left.types_of(left.current),
                                        "committed_offsets"))):
            if built:
                tables.setdefault(table, []).extend(built)
        assert sorted(tables) == sorted(whole), group_id
        for table, written in whole.items():
            assert canonical(tables[table]) == canonical(written), (group_id, table)
    if seed % 3 != 2:  # an offsets-topic log: much of it never comes back from the fold
        assert left_out > len(log) // 10
    else:  # every group of a journal has requests: the fold writes all of its rows
        assert left_out == 0



def test_a_group_converted_between_left_records_types_each_row_as_kafka_holds_it() -> None:
    """A simple classic group's plain commit records, the consumer records that replace it,
    then more plain commits, all left to the caller: each left record's offset_history row says
    the type the group had when it was written; every committed_offsets row says the type it
    has now, a partition last committed before the conversion too (its row written again). The
    rows equal those of the fold that leaves nothing, and a fold cut into batches at each
    record ends with the same committed_offsets rows."""
    log = ConsumerLog()
    log.record_commit("orders", 0, 5)
    log.record_commit("orders", 1, 7)
    log.stable_with("a-1")
    log.record_commit("orders", 0, 9)
    events = log.events
    _, whole, _ = replay_group("cg", None, events, None, CFG)
    _, tables, left = replay_group("cg", None, events, None, CFG, leave=True)
    # The first commit makes the group (the general path's); the next two are left.
    assert left.types_of(left.history) == ["classic", "consumer"]
    assert [events[i].committed_offset for i in left.current] == [9]  # (orders, 1): classic then
    tables["offset_history"] = tables.get("offset_history", []) + left_rows(
        events, left.history, left.types_of(left.history))
    tables["committed_offsets"] = tables.get("committed_offsets", []) + left_rows(
        events, left.current, left.types_of(left.current), "committed_offsets")
    for table in ("offset_history", "committed_offsets"):
        assert canonical(tables[table]) == canonical(whole[table]), table
    assert [(r["committed_offset"], r["group_type"]) for r in whole["offset_history"]] == [
        (5, "classic"), (7, "classic"), (9, "consumer")]
    assert sorted((r["partition"], r["group_type"]) for r in whole["committed_offsets"]) == [
        (0, "consumer"), (1, "consumer")]
    # In batches: the partition the last batch did not touch is written again at the
    # conversion, never left saying classic.
    state: bytes | Group | None = None
    current: dict[tuple[str, int], dict[str, Any]] = {}
    for e in events:
        state, batch, one = replay_group("cg", state, [e], None, CFG, leave=True)
        for row in batch.get("committed_offsets", []) + left_rows(
                [e], one.current, one.types_of(one.current), "committed_offsets"):
            current[(row["topic"], row["partition"])] = row
    assert {tp: r["group_type"] for tp, r in current.items()} == {
        ("orders", 0): "consumer", ("orders", 1): "consumer"}
