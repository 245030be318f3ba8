"""Member lanes are group_history's membership: whoever it lists at a time is on a lane
there, nobody else is, and each span knows what its member owned (pure, no Spark)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pipeline.report.frames import group_frames
from pipeline.report.membership import Lane, Span, lanes
from tests.report.conftest import Log
from tests.report.frames import busiest, truth

Shapes = list[tuple[pd.Timestamp, dict[str, dict[str, Any]]]]


def listed(history: pd.DataFrame) -> Shapes:
    """group_history read as the as-of SQL reads it: at each event time, the members of the
    last row at or before it (by log position, then seq), by member id."""
    rows = history.sort_values(["event_time", "log_partition", "log_offset", "seq"])
    last = rows.groupby("event_time", sort=True).tail(1)
    return [(r.event_time, {m["member_id"]: m for m in r.members})
            for r in last.itertuples(index=False)]


def as_of(shapes: Shapes, t: pd.Timestamp) -> dict[str, dict[str, Any]]:
    before = [members for at, members in shapes if at <= t]
    return before[-1] if before else {}


def probes(history: pd.DataFrame) -> list[pd.Timestamp]:
    """Every time the group's shape changed, a moment before each, and one between each two."""
    times = sorted(set(history["event_time"]))
    ms = pd.Timedelta(milliseconds=1)
    between = [a + (b - a) / 2 for a, b in zip(times, times[1:], strict=False)]
    return sorted({*times, *(t - ms for t in times), *between, times[-1] + ms})


def covering(drawn: list[Lane], t: pd.Timestamp) -> dict[str, Span]:
    """The span each member is on at `t`; a member on two spans at once fails."""
    out: dict[str, Span] = {}
    for lane in drawn:
        for s in lane.spans:
            if s.covers(t):
                assert s.member_id not in out, f"{s.member_id} on two spans at {t}"
                out[s.member_id] = s
    return out


def group_lanes(tables: dict[str, pd.DataFrame], group: str
                ) -> tuple[dict[str, pd.DataFrame], list[Lane]]:
    """A group's frames and lanes, its history rows shuffled: Spark returns them unordered."""
    t = group_frames(tables, group)
    t["group_history"] = t["group_history"].sample(frac=1, random_state=5)
    return t, lanes(t, t["group_state"]["last_event_time"].max())


@pytest.fixture(params=["journal", "records"])
def either_log(request: pytest.FixtureRequest) -> Log:
    """Each of the two logs (a coordinator journal, an offsets-topic log) in turn."""
    log: Log = request.getfixturevalue(request.param)
    return log


def every_group(tables: dict[str, pd.DataFrame]
                ) -> Iterator[tuple[str, dict[str, pd.DataFrame], list[Lane]]]:
    for group in tables["group_state"]["group_id"]:
        yield group, *group_lanes(tables, group)


def test_at_any_time_the_lanes_hold_exactly_the_members_group_history_lists(
        either_log: Log) -> None:
    _, tables = either_log
    checked = 0
    for group, t, drawn in every_group(tables):
        shapes = listed(t["group_history"])
        for at in probes(t["group_history"]):
            assert set(covering(drawn, at)) == set(as_of(shapes, at)), (group, at)
            checked += 1
        keys = {m["group_instance_id"] or m["member_id"]
                for ms in t["group_history"]["members"] for m in ms}
        assert {lane.key for lane in drawn} == keys  # a static instance keeps one lane
    assert checked > 200


def test_a_replay_row_by_row_agrees_on_who_was_a_member_and_when(either_log: Log) -> None:
    """Checked without group_history: the fold, one row at a time, watched for members."""
    events, tables = either_log
    exact_ends = 0
    for group, t, drawn in every_group(tables):
        real = truth(events, group)
        spans = [s for lane in drawn for s in lane.spans]
        assert {s.member_id for s in spans} == set(real), group
        for s in spans:
            joined, left = (None if v is None else pd.Timestamp(v, unit="ms")
                            for v in real[s.member_id])
            assert s.start == joined and s.current == (left is None), (group, s)
            # A timer's removal is stamped at its deadline; the row-by-row replay sees it
            # at the row that fired it.
            assert s.current or s.end <= left, (group, s)
            exact_ends += s.end == left
        assert all(s.end == t["group_state"]["last_event_time"].max() for s in spans
                   if s.current)
    assert exact_ends > 10


def test_each_span_says_what_its_member_owned_and_when_that_changed(journal: Log) -> None:
    _, tables = journal
    t, drawn = group_lanes(tables, busiest(tables))
    for at, members in listed(t["group_history"]):
        on = covering(drawn, at)
        for member_id, m in members.items():
            owned = [n for since, n in on[member_id].assignments if since <= at][-1]
            assert owned == len(m["assignment"]), (member_id, at)
    spans = [s for lane in drawn for s in lane.spans]
    for s in spans:
        times = [at for at, _ in s.assignments]
        assert times[0] == s.start and times == sorted(times)
        assert all(a != b for a, b in zip(s.assignments, s.assignments[1:], strict=False))
    assert any(len(s.assignments) > 2 for s in spans)
    assert any(n > 0 for s in spans for _, n in s.assignments)


def test_a_removal_carries_the_cause_group_history_records_for_it(journal: Log) -> None:
    """The cause is the step's `departures` entry; where a transition names the member too
    (a removal that starts a rebalance), both say the same. Removals inside a rebalance are
    named by `departures` alone."""
    _, tables = journal
    causes: set[str] = set()
    only_departures = 0
    for group in tables["group_state"]["group_id"]:
        t, drawn = group_lanes(tables, group)
        tr, hist = t["group_transitions"], t["group_history"]
        for s in (s for lane in drawn for s in lane.spans if not s.current):
            recorded = [d["cause"] for ds in hist[hist["event_time"] == s.end]["departures"]
                        for d in ds if d["member_id"] == s.member_id]
            same_step = tr[tr["event_time"] == s.end]
            naming = same_step[[s.member_id in str(ids).split(",")
                                for ids in same_step["member_id"]]]
            assert s.end_cause == (recorded[-1] if recorded else None), s
            if len(naming):
                assert naming["cause"].iloc[-1] == s.end_cause, s
            elif s.end_cause is not None:
                only_departures += 1
            if s.end_cause is not None:
                causes.add(s.end_cause)
    assert {"MEMBER_LEFT", "SESSION_TIMEOUT"} <= causes and only_departures > 0


def test_a_member_listed_until_the_last_row_runs_to_the_pictures_end(journal: Log) -> None:
    _, tables = journal
    t = group_frames(tables, busiest(tables))
    end = t["group_state"]["last_event_time"].max() + pd.Timedelta(minutes=5)
    last = set(listed(t["group_history"])[-1][1])
    current = [s for lane in lanes(t, end) for s in lane.spans if s.current]
    assert {s.member_id for s in current} == last and last
    assert all(s.end == end for s in current)


def test_an_older_warehouse_without_group_history_has_no_lanes(journal: Log) -> None:
    _, tables = journal
    older = {name: df for name, df in tables.items() if name != "group_history"}
    t = group_frames(older, busiest(tables))
    assert t["group_history"].empty and lanes(t, pd.Timestamp("2030-01-01")) == []


def test_rows_of_one_instant_are_read_in_log_position_and_seq_order() -> None:
    t0, t1 = pd.Timestamp("2023-11-14 22:13:20"), pd.Timestamp("2023-11-14 22:13:21")

    def row(at: pd.Timestamp, offset: int, seq: int, *members: str) -> dict[str, Any]:
        return {"group_id": "g", "event_time": at, "log_partition": 3, "log_offset": offset,
                "seq": seq, "members": [{"member_id": m, "group_instance_id": None,
                                         "assignment": np.array(  # as Spark's Arrow gives
                                             [{"topic": "t", "partition": 0}] if m == "a"
                                             else [])} for m in members]}

    history = pd.DataFrame([row(t1, 9, 2, "a"), row(t1, 9, 0, "a", "b", "c"),
                            row(t0, 4, 1, "a", "b")])  # as Spark may return them
    transitions = pd.DataFrame([{"group_id": "g", "event_time": t1, "log_partition": 3,
                                 "log_offset": 9, "seq": 1, "cause": "MEMBER_LEFT",
                                 "member_id": "b", "to_state": "PreparingRebalance"}])
    t = group_frames({"group_history": history, "group_transitions": transitions}, "g")
    spans = {s.member_id: s for lane in lanes(t, t1 + pd.Timedelta(seconds=1))
             for s in lane.spans}
    assert (spans["b"].start, spans["b"].end, spans["b"].end_cause) == (t0, t1, "MEMBER_LEFT")
    assert (spans["c"].start, spans["c"].end, spans["c"].end_cause) == (t1, t1, None)
    assert spans["a"].current and spans["a"].assignments == ((t0, 1),)
    assert {m for m, s in spans.items() if s.covers(t1)} == {"a"}
    assert {m for m, s in spans.items() if s.covers(t1 - pd.Timedelta(milliseconds=1))} == {
        "a", "b"}
