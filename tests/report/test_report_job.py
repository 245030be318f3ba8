"""jobs/report.py against a warehouse the streaming replay wrote: the same picture as the pure
fold's, and member lanes that hold the members the as-of SQL reads from group_history."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from matplotlib import image
from pyspark.sql import SparkSession

from pipeline.fold.partitioning import partition_for
from pipeline.generator import LogSpec, generate
from pipeline.report import lanes, render
from pipeline.report.frames import group_frames
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.tables.catalog import as_of, register_views
from tests.jobs.jobs import load_job
from tests.report.frames import pure_frames
from tests.spark.backends import streaming_tables

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "'; DROP TABLE group_state; -- `x` \"y\""


def assert_lanes_are_the_members_sql_lists(spark: SparkSession, warehouse: str,
                                           frames: dict[str, pd.DataFrame]) -> None:
    """At every moment the group changed, the members on a lane are the members
    `group_members_as_of` finds in the Delta group_history table."""
    t = group_frames(frames, HOSTILE)
    drawn = [s for lane in lanes(t, t["group_state"]["last_event_time"].max()) for s in lane.spans]
    times = sorted(set(t["group_history"]["event_time"]))
    assert len(times) >= 6 and len(drawn) >= 3
    register_views(spark, warehouse)
    for at in times:  # every change: a span one row too long or short shows at one of them
        at_ms = (at - pd.Timestamp(0)) // pd.Timedelta(milliseconds=1)
        sql = {r["member_id"] for r in as_of(spark, "group_members_as_of", at_ms, HOSTILE)
               .select("member_id").collect()}
        assert {s.member_id for s in drawn if s.covers(at)} == sql, at


def test_the_report_job_draws_a_group_from_a_replayed_warehouse(
        spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = generate(LogSpec(groups=3, events=700, seed=4, bad_rows=0.02))
    busy = max({e.group_id for e in events if e.group_id},  # the one with most members
               key=lambda g: sum(e.group_id == g and e.event_type == "JOIN" for e in events))
    home = partition_for(HOSTILE)  # a renamed group's records move to its own partition
    events = [replace(e, group_id=HOSTILE, log_partition=home) if e.group_id == busy else e
              for e in events]
    write_event_log(spark, events, str(tmp_path / "events"))
    streaming_tables(spark, str(tmp_path / "events"), tmp_path)
    warehouse = str(tmp_path / "warehouse")
    job = load_job("report")

    out = job.main(["--warehouse", warehouse, "--group", HOSTILE, "--output",
                    str(tmp_path / "g.png")], spark=spark)
    expected = render(pure_frames(events), HOSTILE, path=tmp_path / "pure.png")
    assert (image.imread(out) == image.imread(expected.path)).all()

    frames = job.load_group(spark, warehouse, HOSTILE)
    assert {len(f) for f in frames.values()} != {0}
    assert all(set(f["group_id"]) == {HOSTILE} for f in frames.values() if len(f))
    assert_lanes_are_the_members_sql_lists(spark, warehouse, frames)

    times = frames["offset_history"]["event_time"].sort_values()
    start = times.iloc[len(times) // 2]
    windowed = job.load_group(spark, warehouse, HOSTILE, job.utc_time(start.isoformat()))
    assert len(windowed["offset_history"]) < len(frames["offset_history"])
    assert windowed["offset_history"]["event_time"].min() >= start

    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        job.main(["--warehouse", warehouse, "--group", "' OR '1'='1", "--output",
                  str(tmp_path / "none.png")], spark=spark)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("report.py: error: --group ' OR '1'='1: no such group")
    assert not (tmp_path / "none.png").exists()
    groups = {e.group_id for e in events if e.group_id is not None}
    assert spark.read.format("delta").load(f"{warehouse}/group_state").count() == len(groups)
