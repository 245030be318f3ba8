"""The fold with stretches of plain commit records summarised (`runs.QuietRun.take_stretch`,
the rows `pipeline/spark/bulk.py` keeps in the JVM) leaves every group exactly as the fold
over every row, on many random logs of both kinds: refused requests, bad and out-of-order
rows, transactions, expiry and timers in journal groups (never on the path), and the rows
meant to end or split a stretch. The JVM path's rules come from `tests/stretches.py`, the
oracle the Spark side is held to as well."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from pipeline.fold import CoordinatorConfig, Event
from pipeline.fold.group_replay import SEED_TABLE, replay_group
from pipeline.generator import LogSpec, generate
from tests.grouping import by_group
from tests.stretches import classify, edge_rows, fold_input, projected

CFG = CoordinatorConfig()
DELAY_MS = 600_000


def random_log(seed: int) -> list[Event]:
    rng = random.Random(seed)
    kind = ("offsets-topic", "offsets-topic", "journal")[seed % 3]
    spec = LogSpec(groups=3, events=rng.randrange(200, 700), seed=seed, log_kind=kind,
                   bad_rows=rng.choice((0.0, 0.02, 0.08)),
                   out_of_order=rng.choice((0.0, 0.0, 0.05)))
    return generate(spec) + edge_rows(f"g-edge-{seed}", rng)


def canonical(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=repr) for r in rows)


@pytest.mark.parametrize("seed", range(24))
def test_stretch_summaries_fold_to_the_same_tables(seed: int) -> None:
    log = random_log(seed)
    times = [e.event_time for e in log if e.event_time is not None]
    until = max(times) - DELAY_MS
    kept_out = 0
    for group_id, events in by_group(log).items():
        rows = classify(events, CFG)
        beside = projected(rows)
        if not group_id.startswith("g-edge"):
            kept_out += len(beside)
        plain_state, plain = replay_group(group_id, None, events, until, CFG, seed=True)
        bulk_state, bulk = replay_group(group_id, None, fold_input(rows, CFG), until, CFG,
                                        seed=True)
        assert bulk_state == plain_state, group_id
        if beside:
            bulk.setdefault("offset_history", []).extend(beside)
        assert sorted(bulk) == sorted(plain), group_id
        for table, written in plain.items():
            if table == SEED_TABLE:
                continue
            assert canonical(bulk[table]) == canonical(written), (group_id, table)
    if seed % 3 != 2:  # an offsets-topic log: much of it never reaches the fold
        assert kept_out > len(log) // 10
    else:  # every group of a journal has requests: none of its rows is on the path
        assert kept_out == 0


def test_a_journal_group_is_never_on_the_path() -> None:
    """A group with one request anywhere in its log keeps every row on the general path:
    its timers run there (a stretch could not say when one fires)."""
    rng = random.Random(7)
    rows = edge_rows("g-mixed", rng)
    last = rows[-3]
    rows.append(Event(last.log_partition, 10**6, last.event_time, "g-mixed", "HEARTBEAT",
                      member_id="m", generation_id=1))
    assert not any(c.bulk for c in classify(rows, CFG))
    assert sum(c.bulk for c in classify(rows[:-1], CFG)) > 10
