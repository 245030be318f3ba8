"""SQL over a replayed warehouse: the as-of table functions equal a replay of the log up to
that time, the analytics answer, and user input reaches SQL only as parameters."""

from __future__ import annotations

import argparse
import importlib
import io
import random
import sys
from collections import defaultdict
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.fold import CoordinatorConfig, Event, advance, fold
from pipeline.fold.rows import committed_offset_rows
from pipeline.generator import LogSpec, generate
from pipeline.jobs._common import event_time_arg
from pipeline.jobs.whatif import ask
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.tables.catalog import as_of, register_views, timestamp_sql
from pipeline.whatif import Change, what_if
from tests.grouping import by_group
from tests.spark.backends import backfill_tables

pytestmark = pytest.mark.spark
CONFIG = CoordinatorConfig()


@pytest.fixture(scope="module")
def warehouse(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[Path, list[Event]]:
    root = tmp_path_factory.mktemp("queries")
    events = generate(LogSpec(groups=6, events=2500, seed=17, bad_rows=0.02))
    write_event_log(spark, events, str(root / "events"))
    end = max(e.event_time for e in events if e.event_time is not None) + 1
    backfill_tables(spark, str(root / "events"), root, until_ms=end)  # every timer up to it
    register_views(spark, str(root / "warehouse"))
    return root / "warehouse", events


def _replayed(events: list[Event], t: int) -> dict[str, Any]:
    groups = {}
    for group_id, group_events in by_group(
            e for e in events if e.event_time is not None and e.event_time <= t).items():
        g = advance(fold(group_id, group_events, CONFIG).group, t + 1, CONFIG).group
        if g.exists:
            groups[group_id] = g
    return groups


def _ms(moment: Any) -> int:
    """A naive UTC datetime from Spark (the session time zone is UTC) as epoch ms."""
    return round(moment.replace(tzinfo=UTC).timestamp() * 1000)


def test_state_members_and_offsets_as_of_any_time_equal_a_replay_up_to_it(
        spark: SparkSession, warehouse: tuple[Path, list[Event]]) -> None:
    _, events = warehouse
    times = sorted(e.event_time for e in events if e.event_time is not None)
    cut = times[-1]  # the warehouse's timers ran up to just after the last event
    rng = random.Random(3)
    # A random moment in each eighth of the log's time (each probe is three queries).
    span = (cut - times[0] + 1) / 8
    probes = [rng.randint(times[0] - 1 + round(i * span), times[0] - 1 + round((i + 1) * span))
              for i in range(8)]
    checked = 0
    for t in probes:
        truth = _replayed(events, t)
        at = timestamp_sql(t)
        states = {r["group_id"]: r for r in spark.sql(
            f"SELECT * FROM group_state_as_of({at})").collect()}
        assert set(states) == set(truth), f"groups as of {t}"
        members = defaultdict(set)
        for r in spark.sql(f"SELECT * FROM group_members_as_of({at})").collect():
            members[r["group_id"]].add(
                (r["member_id"], tuple((a["topic"], a["partition"]) for a in r["assignment"])))
        offsets = {(r["group_id"], r["topic"], r["partition"]): (r["committed_offset"],
                                                                  r["group_type"])
                   for r in spark.sql(f"SELECT * FROM committed_offsets_as_of({at})").collect()}
        expected_offsets = {}
        for group_id, g in truth.items():
            row = states[group_id]
            assert (row["state"], row["generation_id"], row["leader_id"], row["protocol"],
                    row["member_count"]) == (g.state, g.generation_id, g.leader_id, g.protocol,
                                             len(g.member_ids)), f"{group_id} as of {t}"
            assert members[group_id] == {(m.member_id, m.assignment) for m in g.members}
            expected_offsets |= {(group_id, o["topic"], o["partition"]): (o["committed_offset"],
                                                                          o["group_type"])
                                 for o in committed_offset_rows(g)}
            checked += 1
        assert offsets == expected_offsets, f"offsets as of {t}"
    assert checked >= 24


def test_rebalance_analytics_and_member_sessions_agree_with_the_tables(
        spark: SparkSession, warehouse: tuple[Path, list[Event]]) -> None:
    summary = spark.sql("SELECT * FROM rebalance_summary(TIMESTAMP'2000-01-01', "
                        "TIMESTAMP'2100-01-01')").collect()
    counts = {r["group_id"]: r["n"] for r in spark.sql(
        "SELECT group_id, count(*) AS n FROM rebalances GROUP BY group_id").collect()}
    assert {r["group_id"]: r["rebalances"] for r in summary} == counts
    for r in summary:
        assert sum(r["causes"].values()) == r["rebalances"]
        assert r["p50_ms"] <= r["p99_ms"] <= r["max_ms"]
    storms = spark.sql("SELECT * FROM rebalance_storms(1, 3)").collect()
    assert storms
    rebalances = spark.table("rebalances")
    for r in storms:
        inside = rebalances.filter((F.col("group_id") == r["group_id"])
                                   & (F.col("completed_at") > r["window_start"])
                                   & (F.col("completed_at") <= r["window_end"])).count()
        assert inside == r["rebalances"] >= 3
    sessions = spark.sql("SELECT * FROM member_sessions()").collect()
    assert sessions
    for s in sessions:
        assert s["left_at"] is None or s["left_at"] >= s["joined_at"]
        assert (s["left_at"] is None) == (s["left_why"] is None)
    now = {(r["group_id"], r["m"]) for r in spark.sql(
        "SELECT group_id, m.member_id AS m FROM group_state LATERAL VIEW explode(members) AS m"
    ).collect()}
    open_stays = {(s["group_id"], s["member_id"]) for s in sessions if s["left_at"] is None}
    assert open_stays == now
    # Every removal the fold made ends a stay, with the fold's reason (a session that runs
    # out inside a rebalance included, which no transition names).
    _, events = warehouse
    end = max(e.event_time for e in events if e.event_time is not None) + 1
    departures = set()
    for group_id, group_events in by_group(events).items():
        result = fold(group_id, group_events, CONFIG)
        history = result.outputs.history + advance(result.group, end, CONFIG).outputs.history
        departures |= {(group_id, d["member_id"], row["event_time"], d["cause"])
                       for row in history for d in row["departures"]}
    ended = {(s["group_id"], s["member_id"], _ms(s["left_at"]), s["left_why"])
             for s in sessions if s["left_at"] is not None}
    assert departures and departures <= ended
    assert {d[3] for d in departures} >= {"SESSION_TIMEOUT", "MEMBER_LEFT"}


def test_the_what_if_in_sql_answers_as_the_pure_what_if_and_refuses_group_by_group(
        spark: SparkSession, warehouse: tuple[Path, list[Event]]) -> None:
    _, events = warehouse
    change = "assignor=cooperative-sticky, static_membership=true"
    rows = spark.sql(f"SELECT * FROM whatif('{change}', TABLE(whatif_input) "
                     "PARTITION BY group_id)").collect()
    answered = {(r["group_id"], r["run"]): r.asDict() for r in rows if r["run"] != "refused"}
    refused = {r["group_id"]: r["note"] for r in rows if r["run"] == "refused"}
    assert answered and set(refused) | {g for g, _ in answered} == {
        r["group_id"] for r in spark.table("group_state").collect()}
    assert all(note for note in refused.values())
    for group_id, group_events in by_group(events).items():
        if group_id in refused:
            continue
        r = fold(group_id, group_events, CONFIG)
        w = what_if(group_id, r.outputs.history, [], Change.parse(change), CONFIG,
                    heartbeats=True)
        for s in w.summary[1:]:  # simulated, what-if: the recorded run is rebalance_cost's
            got = answered[(group_id, s["run"])]
            assert {k: got[k] for k in s} == s, (group_id, s["run"])


def _job(name: str) -> Any:
    jobs = str(Path(__file__).resolve().parents[2] / "jobs")
    if jobs not in sys.path:
        sys.path.insert(0, jobs)
    return importlib.import_module(name)


HOSTILE = ["x' OR '1'='1", "'; DROP TABLE group_state; --", "a`b\\'c", "${spark.app.name}"]


def test_hostile_group_ids_and_times_never_reach_sql_as_text(
        spark: SparkSession, warehouse: tuple[Path, list[Event]]) -> None:
    _, events = warehouse
    t = max(e.event_time for e in events if e.event_time is not None)
    everyone = as_of(spark, "committed_offsets_as_of", t).count()
    assert everyone > 0
    for group in HOSTILE:
        assert as_of(spark, "committed_offsets_as_of", t, group).count() == 0
    assert spark.table("group_state").count() == len({e.group_id for e in events if e.group_id})
    for text in ["2026-11-17'; DROP TABLE x; --", "now()", "TIMESTAMP'2020-01-01'"]:
        with pytest.raises(argparse.ArgumentTypeError, match="not an ISO-8601 time"):
            event_time_arg(text)
    with pytest.raises(ValueError, match="unknown as-of function"):
        as_of(spark, "group_state; DROP TABLE x", t)
    # The what-if job's group ids are values too: hostile ones are groups that are not there.
    warehouse_path, _ = warehouse
    asked = ask(spark, str(warehouse_path), HOSTILE, Change(), CONFIG)
    assert not asked.answers and set(asked.refused) == set(HOSTILE)
    assert all("is not in" in why for why in asked.refused.values())
    assert spark.table("group_state").count() == len({e.group_id for e in events if e.group_id})


def test_the_offset_export_is_what_kafka_consumer_groups_reads(
        spark: SparkSession, warehouse: tuple[Path, list[Event]]) -> None:
    _, events = warehouse
    times = sorted(e.event_time for e in events if e.event_time is not None)
    t = times[len(times) // 2]
    truth = _replayed(events, t)
    group_id = max(truth, key=lambda g: len(truth[g].offsets))
    rows = [(r["topic"], r["partition"], r["committed_offset"]) for r in
            as_of(spark, "committed_offsets_as_of", t, group_id).collect()]
    out = io.StringIO()
    _job("export_offsets").offsets_csv(rows, out)
    lines = out.getvalue().splitlines()
    expected = sorted((o["topic"], o["partition"], o["committed_offset"])
                      for o in committed_offset_rows(truth[group_id]))
    assert lines == [f"{tp},{p},{o}" for tp, p, o in expected] and lines
