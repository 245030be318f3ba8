"""The demo as a new user runs it prints only the project's own lines: its jobs' progress and
answers, never a line from Spark, Hive, Derby, the JVM or pip that nobody can act on; with
--log-level they come back."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]

# What the demo may print: a job's log line (time, logger, message), a table of answers,
# a title, a blank line, and the demo's last line.
OURS = re.compile(
    r"\d\d:\d\d:\d\d (generate|replay|query|backfill|progress|catalog) .*"  # our loggers
    r"|[|+].*"  # DataFrame.show's grid
    r"|== .*"  # a question's title
    r"|demo finished in \d+ s; tables under .*"
    r"|Prometheus metrics of them: .* --metrics-port \d+, then http://\S+/metrics .*"
    r"|")


def test_the_demo_prints_only_the_projects_lines(tmp_path: Path) -> None:
    env = dict(os.environ, DEMO_OUT=str(tmp_path / "demo"), DEMO_GROUPS="5",
               DEMO_EVENTS="2000")
    done = subprocess.run(["bash", str(ROOT / "jobs" / "demo.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    foreign = [line for line in output.splitlines() if not OURS.fullmatch(line)]
    assert not foreign, "\n".join(foreign[:20])
    assert "== groups furthest behind now, with the cause" in done.stdout
    assert "jobs/serve.py --warehouse" in done.stdout.splitlines()[-1]  # where the metrics are


def test_a_log_level_brings_sparks_lines_back(tmp_path: Path) -> None:
    """A job started with --log-level INFO shows what the quiet default keeps back: Spark's
    INFO lines and the JVM's incubator-module warning."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "jobs" / "generate.py"), "--output",
         str(tmp_path / "events"), "--groups", "2", "--events", "50", "--log-level", "INFO"],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "WARNING: Using incubator modules" in done.stderr
    assert re.search(r"^\S+ \S+ INFO SparkContext: ", done.stderr, re.M), done.stderr[-2000:]


# A job that ran a stateful stream, then left `job_session`: is the driver's state-store
# maintenance still scheduled? `spark.stop()` alone leaves it so, and when it fires after the
# stop it prints a WARN and a Java stack trace on a job that ended well.
AFTER_A_STREAM = """
import sys
from pipeline.jobs._common import job_session
with job_session("maintenance", "local") as spark:
    table, checkpoint = sys.argv[1] + "/t", sys.argv[1] + "/c"
    spark.range(10).selectExpr("id % 3 AS k").write.format("delta").save(table)
    (spark.readStream.format("delta").load(table).groupBy("k").count().writeStream
     .format("noop").outputMode("complete").option("checkpointLocation", checkpoint)
     .trigger(availableNow=True).start().awaitTermination())
    store = spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore
    print("maintenance while running:", store.isMaintenanceRunning())
print("maintenance after the job:", store.isMaintenanceRunning())
"""


def test_a_job_that_ran_a_stream_stops_its_state_store_maintenance(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", AFTER_A_STREAM, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "maintenance while running: True" in done.stdout, done.stdout
    assert "maintenance after the job: False" in done.stdout, done.stdout
