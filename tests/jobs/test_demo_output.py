"""A job prints only the project's own lines; with --log-level Spark's come back. The demo's
own output, as a new user runs it, is checked on the run the docs' examples use
(tests/spark/test_readme_examples.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]


# A job that ran a stateful stream, then left `job_session`: is the driver's state-store
# maintenance still scheduled? `spark.stop()` alone leaves it so, and when it fires after the
# stop it prints a WARN and a Java stack trace on a job that ended well. The job runs at
# --log-level INFO (one JVM for both checks: a process costs a minute of the suite).
AFTER_A_STREAM = """
import sys
from pipeline.jobs._common import JobParser, job_session
args = JobParser("probe.py", "a probe").parse_args(["--log-level", "INFO"])
with job_session("maintenance", "local", args=args) as spark:
    table, checkpoint = sys.argv[1] + "/t", sys.argv[1] + "/c"
    spark.range(10).selectExpr("id % 3 AS k").write.format("delta").save(table)
    (spark.readStream.format("delta").load(table).groupBy("k").count().writeStream
     .format("noop").outputMode("complete").option("checkpointLocation", checkpoint)
     .trigger(availableNow=True).start().awaitTermination())
    store = spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore
    print("maintenance while running:", store.isMaintenanceRunning())
print("maintenance after the job:", store.isMaintenanceRunning())
"""


def test_a_job_stops_its_state_store_maintenance_and_a_log_level_brings_sparks_lines(
        tmp_path: Path) -> None:
    """After a job with a stream, no state-store maintenance is left scheduled; and a job
    started with --log-level INFO shows what the quiet default keeps back: Spark's INFO
    lines and the JVM's incubator-module warning."""
    done = subprocess.run([sys.executable, "-c", AFTER_A_STREAM, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "maintenance while running: True" in done.stdout, done.stdout
    assert "maintenance after the job: False" in done.stdout, done.stdout
    assert "WARNING: Using incubator modules" in done.stderr
    assert re.search(r"^\S+ \S+ INFO SparkContext: ", done.stderr, re.M), done.stderr[-2000:]
