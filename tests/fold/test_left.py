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

from pipeline.fold import CoordinatorConfig, Event
from pipeline.fold.group_replay import replay_group
from pipeline.generator import LogSpec, generate
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
        rows = left_rows(events, left.history)
        if not group_id.startswith("g-edge"):
            left_out += len(rows)
        for table, built in (("offset_history", rows),
                             ("committed_offsets",
                              left_rows(events, left.current, "committed_offsets"))):
            if built:
                tables.setdefault(table, []).extend(built)
        assert sorted(tables) == sorted(whole), group_id
        for table, written in whole.items():
            assert canonical(tables[table]) == canonical(written), (group_id, table)
    if seed % 3 != 2:  # an offsets-topic log: much of it never comes back from the fold
        assert left_out > len(log) // 10
    else:  # every group of a journal has requests: the fold writes all of its rows
        assert left_out == 0

