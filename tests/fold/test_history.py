"""group_history: the group as of any event time is its last history row at or before it,
and that equals a replay of the log up to that time."""

from __future__ import annotations

import random

import pytest

from pipeline.fold import CoordinatorConfig, Event, advance, fold
from pipeline.fold.history import group_shape_row
from pipeline.generator import LogSpec, generate
from tests.fold.records import T0
from tests.grouping import by_group

CONFIG = CoordinatorConfig()
SHAPE_TIME = ("event_time", "log_partition", "log_offset", "seq")


def as_of_replay(group_id: str, events: list[Event], t: int) -> dict[str, object] | None:
    """The group's shape from replaying only the rows up to `t`, timers due at or before it."""
    upto = [e for e in events if e.event_time is not None and e.event_time <= t]
    g = advance(fold(group_id, upto, CONFIG).group, t + 1, CONFIG).group
    return group_shape_row(g, heartbeats=False) if g.exists else None


def as_of_history(rows: list[dict[str, object]], t: int) -> dict[str, object] | None:
    before = [r for r in rows if r["event_time"] <= t]  # type: ignore[operator]
    if not before:
        return None
    last = max(before, key=lambda r: tuple(r[k] for k in SHAPE_TIME))  # type: ignore[arg-type]
    shape = {k: v for k, v in last.items() if k not in (*SHAPE_TIME, "departures")}
    return None if shape["state"] == "Dead" else shape


@pytest.mark.parametrize("kind", ["journal", "offsets-topic"])
def test_the_last_history_row_before_a_time_is_the_replay_up_to_that_time(kind: str) -> None:
    events = generate(LogSpec(groups=8, events=2000, seed=21, log_kind=kind, bad_rows=0.02))
    rng = random.Random(5)
    checked = 0
    for group_id, group_events in by_group(events).items():
        times = [e.event_time for e in group_events if e.event_time is not None]
        end = max(times) + 600_001
        result = fold(group_id, group_events, CONFIG)
        history = result.outputs.history + advance(result.group, end, CONFIG).outputs.history
        assert history, f"{group_id}: no history"
        probes = [rng.randint(min(times) - 1000, max(times) + 600_000) for _ in range(15)]
        probes += [int(r["event_time"]) for r in history[:10]]  # type: ignore[call-overload]
        for t in probes:
            assert as_of_history(history, t) == as_of_replay(group_id, group_events, t), (
                f"{group_id} as of {t}")
            checked += 1
    assert checked >= 8 * 15


def test_heartbeats_and_commits_write_no_history() -> None:
    from tests.fold.records import Log
    log = Log().stable_group("a-1", "b-2")
    shaped = len(log.replay().outputs.history)
    log.heartbeat("a-1", generation=1)
    log.commit("orders", 0, 10, member="a-1", generation=1)
    assert len(log.replay().outputs.history) == shaped


def test_a_shape_row_names_the_members_its_step_removed_and_why() -> None:
    """The case no transition names: a-1 rejoins (PreparingRebalance), b-2's session runs out
    while the group waits, which completes the join (a transition caused ALL_MEMBERS_JOINED)."""
    from tests.fold.records import Log
    log = Log().stable_group("a-1", "b-2", session=10_000)  # synced at 9 s
    log.at(12_000).join("a-1")
    log.at(20_000).sync("a-1", 2, {"a-1": [("orders", p) for p in range(4)]})
    r = log.replay()
    gone = [(row["event_time"], d) for row in r.outputs.history for d in row["departures"]]
    assert gone == [(T0 + 19_000,  # b-2's last word at 9 s, plus its 10 s session
                     {"member_id": "b-2", "cause": "SESSION_TIMEOUT"})]
    ends = [t for t in r.outputs.transitions if t["event_time"] == gone[0][0]]
    assert [t["cause"] for t in ends] == ["ALL_MEMBERS_JOINED"] and ends[0]["member_id"] is None
    log.at(21_000).leave("a-1")
    r = log.replay()
    assert r.outputs.history[-1]["departures"] == [{"member_id": "a-1", "cause": "MEMBER_LEFT"}]
    assert all(row["departures"] == [] for row in r.outputs.history[:-1]
               if row["event_time"] != gone[0][0])
