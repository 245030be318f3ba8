"""A query stopped while its `foreachBatch` runs a Spark job ends as a stop, as Spark itself
judges one, and hands Spark a text short enough for that judgement (a traceback with a Java
stack trace made Spark's stream thread die of a StackOverflowError at every such stop)."""

from __future__ import annotations

import logging
import re
import time
import traceback
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from pipeline.spark.runtime.stopping import StoppedMidBatch, stoppable, stopped

LOG = logging.getLogger("test")


def chained(outer: str, inner: str) -> BaseException:
    try:
        try:
            raise RuntimeError(inner)
        except RuntimeError as e:
            raise ValueError(outer) from e
    except ValueError as e:
        return e


def test_what_a_stop_raises_is_told_from_a_failure() -> None:
    cancelled = ("An error occurred while calling o81.collectToPython.\n: "
                 "org.apache.spark.SparkException: [SPARK_JOB_CANCELLED] Job 3 cancelled Query "
                 "[id = 1, runId = 2] was stopped SQLSTATE: XXKDA")
    assert stopped(RuntimeError(cancelled))
    assert stopped(chained("the write failed", "Caused by: java.lang.InterruptedException"))
    assert stopped(RuntimeError("java.nio.channels.ClosedByInterruptException"))
    assert not stopped(RuntimeError("[SPARK_JOB_CANCELLED] Job 3 cancelled by the user"))
    assert not stopped(chained("the write failed", "java.io.FileNotFoundException: gone"))


def test_every_foreach_batch_of_the_jobs_is_stoppable() -> None:
    package = Path(__file__).resolve().parents[2] / "pipeline"
    calls = [f"{path.relative_to(package)}: {call}"
             for path in sorted(package.rglob("*.py"))
             for call in re.findall(r"\.foreachBatch\(([^)]*\)?)", path.read_text())]
    assert len(calls) == 4, calls  # the replay, the share-state replay, both ingests
    assert all(": stoppable(" in call for call in calls), calls


def test_a_failure_passes_through_unchanged() -> None:
    def failing(df: DataFrame, batch_id: int) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        stoppable(failing, LOG)(None, 3)  # type: ignore[arg-type]


@pytest.mark.spark
def test_a_query_stopped_mid_batch_ends_as_a_stop_by_sparks_own_test(
        spark: SparkSession, tmp_path: Path) -> None:
    raised: list[BaseException] = []  # what the batch's Spark job raised, then what Spark got

    def endless(df: DataFrame, batch_id: int) -> None:
        try:
            df.sparkSession.range(10**13).selectExpr("sum(id % 7)").collect()
        except Exception as e:
            raised.append(e)
            raise

    def batch(df: DataFrame, batch_id: int) -> None:
        try:
            stoppable(endless, LOG)(df, batch_id)
        except Exception as e:
            raised.append(e)
            raise

    tracker = spark.sparkContext.statusTracker()
    query = (spark.readStream.format("rate").option("rowsPerSecond", 1).load()
             .writeStream.foreachBatch(batch).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="1 second").start())
    deadline = time.monotonic() + 300
    while not tracker.getActiveJobsIds():  # the batch's job is running
        assert time.monotonic() < deadline and query.isActive, "the batch never started a job"
        time.sleep(0.1)
    query.stop()

    assert query.exception() is None
    assert len(raised) == 2, raised
    cause, handed = raised
    assert stopped(cause) and isinstance(handed, StoppedMidBatch)
    # What PySpark hands the stream's thread: the traceback's text, without the cause's.
    text = "".join(traceback.format_exception(handed))
    assert len(text) < 2_000 < len(str(cause)), (len(text), len(str(cause)))
    runtime = spark._jvm.org.apache.spark.sql.execution.streaming.runtime  # type: ignore[union-attr]
    assert runtime.StreamExecution.PROXY_ERROR().findFirstIn(text).isDefined()
