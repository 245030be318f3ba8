"""The session builder, its profiles, and what the replay job relies on from Spark and Delta:
Delta round trips and path-registered tables, an event-time stateful stream run with the
available-now trigger, and idempotent appends and MERGEs keyed by (txnAppId, txnVersion)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from pipeline.properties import read_properties
from pipeline.spark.runtime import jars
from pipeline.spark.runtime.keep import kept
from pipeline.spark.runtime.session import profile_path, session_conf

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


# --- configuration files (no JVM) -------------------------------------------------------

def test_properties_files_parse_like_spark(tmp_path: Path) -> None:
    f = tmp_path / "p.conf"
    f.write_text("# comment\n! also a comment\n\n"
                 "spark.a   1\n"
                 "spark.b=two words\n"
                 "spark.c: x=y\n"
                 "spark.d\t-Dk=v -Dk2=v2  \n"
                 "spark.e one,\\\n  two\n"
                 "spark.f\n")
    assert read_properties(f) == {"spark.a": "1", "spark.b": "two words", "spark.c": "x=y",
                                  "spark.d": "-Dk=v -Dk2=v2", "spark.e": "one,two",
                                  "spark.f": ""}


def test_profiles_layer_over_the_shared_defaults() -> None:
    test = session_conf("test")
    assert test["spark.master"] == "local[2]"
    assert test["spark.ui.enabled"] == "false"
    assert 2 <= int(test["spark.sql.shuffle.partitions"]) <= 4
    assert test["spark.sql.streaming.stateStore.providerClass"] == ROCKSDB
    assert test["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert test["spark.pyspark.python"] == sys.executable
    assert session_conf("local")["spark.master"] == "local[*]"
    assert session_conf("test", {"spark.sql.shuffle.partitions": "3"})[
        "spark.sql.shuffle.partitions"] == "3"


def test_the_cluster_profile_leaves_master_to_spark_submit() -> None:
    assert "spark.master" not in read_properties(profile_path("cluster"))
    assert "spark.master" not in session_conf("cluster")


def test_unknown_profiles_are_named() -> None:
    with pytest.raises(ValueError, match="unknown Spark profile 'prod'.*cluster, local, test"):
        session_conf("prod")


def test_jars_are_cached_files() -> None:
    paths = jars.spark_conf()["spark.jars"].split(",")
    names = {Path(p).name for p in paths}
    assert all(Path(p).is_file() for p in paths)
    assert f"delta-spark_4.2_2.13-{jars.DELTA_VERSION}.jar" in names
    assert "spark-sql-kafka-0-10_2.13-4.2.0.jar" in names
    assert any(n.startswith("own-") for n in names)  # the sampler's class, compiled here
    assert not any(n.startswith(("scala-library", "hadoop-client")) for n in names)


# --- the live session -------------------------------------------------------------------

def _class_loads(spark: SparkSession, name: str) -> bool:
    jvm: Any = spark._jvm
    return jvm.org.apache.spark.util.Utils.classForName(name, True, False) is not None


@pytest.mark.spark
def test_session_has_the_test_profile(spark: SparkSession) -> None:
    sc = spark.sparkContext
    assert sc.master == "local[2]"
    assert sc.getConf().get("spark.ui.enabled") == "false"
    assert sc.uiWebUrl is None
    assert sc.pythonExec == sys.executable
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark.conf.get("spark.sql.streaming.stateStore.providerClass") == ROCKSDB
    assert spark.conf.get(
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled") == "true"
    assert spark.conf.get("spark.sql.catalogImplementation") == "in-memory"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert _class_loads(spark, "org.apache.spark.sql.kafka010.KafkaSourceProvider")
    assert _class_loads(spark, "cgr.ingest.EndOffsetsRound")  # the project's own jar
    # Launch-time settings reached the JVM: the profile's 2g heap, not spark-submit's 1g.
    jvm: Any = spark._jvm
    assert jvm.java.lang.Runtime.getRuntime().maxMemory() > 1.5 * 2**30


@pytest.mark.spark
def test_delta_round_trip_and_a_table_registered_by_location(
        spark: SparkSession, tmp_path: Path) -> None:
    path = str(tmp_path / "events")
    df = spark.createDataFrame([("g1", 1, 10), ("g2", 2, 20)], "group_id string, n int, v long")
    df.write.format("delta").save(path)
    spark.createDataFrame([("g3", 3, 30)], df.schema).write.format("delta").mode(
        "append").save(path)

    back = spark.read.format("delta").load(path)
    assert back.schema == df.schema
    assert sorted(map(tuple, back.collect())) == [("g1", 1, 10), ("g2", 2, 20), ("g3", 3, 30)]
    assert DeltaTable.forPath(spark, path).history().count() == 2
    assert spark.read.format("delta").option("versionAsOf", 0).load(path).count() == 2

    spark.sql("CREATE DATABASE IF NOT EXISTS consumer_groups")
    spark.sql(f"CREATE TABLE IF NOT EXISTS consumer_groups.events USING DELTA LOCATION '{path}'")
    try:
        assert spark.table("consumer_groups.events").schema == df.schema
        assert spark.sql("SELECT sum(v) FROM consumer_groups.events").first()[0] == 60
    finally:
        spark.sql("DROP TABLE consumer_groups.events")  # unmanaged: the files stay
    assert spark.read.format("delta").load(path).count() == 3


# --- an event-time stateful stream ------------------------------------------------------

OUTPUT = "key string, n long, total long"
STATE = "n long, total long, last_ms long"
QUIET_MS = 5_000  # a key is emitted once no event for it came in 5 s of event time
T0 = 1_700_000_000  # event times are seconds after this


def count_until_quiet(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                      state: GroupState) -> Iterator[pd.DataFrame]:
    if state.hasTimedOut:
        n, total, _ = state.get
        state.remove()
        yield pd.DataFrame({"key": [key[0]], "n": [n], "total": [total]})
        return
    n, total, last_ms = state.get if state.exists else (0, 0, 0)
    for pdf in frames:
        n += len(pdf)
        total += int(pdf["value"].sum())
        last_ms = max(last_ms, int(pdf["ts"].max().value) // 1_000_000)
    state.update((n, total, last_ms))
    state.setTimeoutTimestamp(last_ms + QUIET_MS)
    yield from ()


def _events(spark: SparkSession, rows: list[tuple[str, int, int]]) -> DataFrame:
    return spark.createDataFrame(rows, "key string, sec long, value long").select(
        "key", F.timestamp_seconds(F.col("sec") + T0).alias("ts"), "value")


def _run_available_now(spark: SparkSession, source: str, out: str, checkpoint: str) -> list[int]:
    batches: list[int] = []

    def write(batch: DataFrame, batch_id: int) -> None:
        batches.append(batch_id)
        batch.persist()
        try:
            for _ in range(2):  # a retried batch: Delta skips the repeated (appId, version)
                (batch.write.format("delta").mode("append")
                 .option("txnAppId", "count-until-quiet").option("txnVersion", batch_id)
                 .save(out))
        finally:
            batch.unpersist()

    query = (spark.readStream.format("delta").load(source)
             .withWatermark("ts", "10 seconds")
             .groupBy("key")
             .applyInPandasWithState(count_until_quiet, OUTPUT, STATE, "append",
                                     GroupStateTimeout.EventTimeTimeout)
             .writeStream.outputMode("append")
             .foreachBatch(write)
             .option("checkpointLocation", checkpoint)
             .trigger(availableNow=True)
             .start())
    query.awaitTermination()
    assert query.exception() is None
    return batches


@pytest.mark.spark
def test_event_time_timeouts_emit_quiet_keys_once_each(spark: SparkSession,
                                                       tmp_path: Path) -> None:
    source, out, checkpoint = (str(tmp_path / d) for d in ("events", "out", "checkpoint"))
    # Seconds after T0, not after the epoch: the late-row filter drops rows at or before the
    # watermark, and the first batch's watermark is 0, so an event at the epoch itself is lost.
    _events(spark, [("a", 0, 1), ("a", 1, 2), ("a", 2, 3), ("b", 3, 10), ("b", 4, 20),
                    ("c", 100, 7)]).write.format("delta").save(source)

    # One data batch (watermark 0 while it runs, then max event time - 10 s = T0 + 90 s), then
    # the no-data batch that fires the timeouts before T0 + 90 s: a (+7 s) and b (+9 s);
    # c waits (+105 s).
    first = _run_available_now(spark, source, out, checkpoint)
    assert first == [0, 1]
    result = spark.read.format("delta").load(out)
    assert sorted(map(tuple, result.collect())) == [("a", 3, 6), ("b", 2, 30)]

    # Restart from the checkpoint (RocksDB state with changelog): d at +200 s moves the
    # watermark to +190 s, which times c out.
    _events(spark, [("d", 200, 1)]).write.format("delta").mode("append").save(source)
    second = _run_available_now(spark, source, out, checkpoint)
    assert second == [2, 3]
    result = spark.read.format("delta").load(out)
    assert sorted(map(tuple, result.collect())) == [("a", 3, 6), ("b", 2, 30), ("c", 1, 7)]

    # Every batch was written twice and committed once: one commit per batch id.
    writes = DeltaTable.forPath(spark, out).history().where("operation = 'WRITE'")
    assert writes.count() == len(first) + len(second)


@pytest.mark.spark
def test_merge_is_idempotent_under_the_session_txn_confs(spark: SparkSession,
                                                         tmp_path: Path) -> None:
    path = str(tmp_path / "counts")
    spark.createDataFrame([("a", 0)], "key string, n long").write.format("delta").save(path)
    updates = spark.createDataFrame([("a", 1), ("b", 1)], "key string, n long")

    def merge(version: int) -> None:
        spark.conf.set("spark.databricks.delta.write.txnAppId", "merge-test")
        spark.conf.set("spark.databricks.delta.write.txnVersion", str(version))
        try:
            (DeltaTable.forPath(spark, path).alias("t")
             .merge(updates.alias("s"), "t.key = s.key")
             .whenMatchedUpdate(set={"n": "t.n + s.n"})
             .whenNotMatchedInsertAll()
             .execute())
        finally:
            spark.conf.unset("spark.databricks.delta.write.txnAppId")
            spark.conf.unset("spark.databricks.delta.write.txnVersion")

    def counts() -> list[tuple[str, int]]:
        return sorted(map(tuple, spark.read.format("delta").load(path).collect()))

    merge(1)
    assert counts() == [("a", 1), ("b", 1)]
    merge(1)  # the same (appId, version) again: skipped
    assert counts() == [("a", 1), ("b", 1)]
    merge(2)
    assert counts() == [("a", 2), ("b", 2)]
    assert DeltaTable.forPath(spark, path).history().where(
        "operation = 'MERGE'").count() == 2


@pytest.mark.spark
def test_a_kept_frame_is_computed_once_outside_sparks_cache_and_released(
        spark: SparkSession) -> None:
    """`runtime.keep` on a local master: every partition computed by the first job (a Python
    UDF counts its calls), read by the next jobs, never through Spark's cache (whose
    accumulator races the heartbeat), and its blocks freed by `release`."""
    calls = spark.sparkContext.accumulator(0)

    counted = F.udf(lambda x: calls.add(1) or x, "long")  # add returns None

    def stored() -> int:
        return int(spark.sparkContext._jsc.sc().getPersistentRDDs().size())

    before = stored()
    df = spark.range(200).repartition(3).select(counted("id").alias("id"))
    with kept(df) as held:
        assert held.where("id % 2 = 0").limit(1).count() == 1  # one partition, then the rest
        assert held.count() == 200 and held.agg(F.sum("id")).first()[0] == 199 * 100
        assert calls.value == 200
        assert stored() == before + 1
        plan = held._jdf.queryExecution().analyzed().getClass().getSimpleName()
        assert plan == "LogicalRDD", plan  # not an InMemoryRelation: Spark's cache unused
    assert stored() == before
