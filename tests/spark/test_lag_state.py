"""The stream's lag step over its state (`pipeline.spark.lag.lagstate`) writes what the same step
from no state writes over the whole history, step after step: built from every row at its first step,
then over the batch's rows alone; where the state cannot answer (a commit rewound below the
samples it kept, a commit written with a time it has passed), it reads that key's history
again and says so. (The streams of tests/spark/test_lag.py and the kill test of
test_replay_guarantees.py run it too, held to the backfill and the oracle.)"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.lag import LagConfig
from pipeline.spark.lag.lagstate import (
    Tables,
    ensure_state,
    local_step,
    read_states,
    save_states,
    step,
)
from pipeline.spark.lag.samples import samples_schema
from pipeline.spark.tables.options import latest_version
from tests.benchmarks.bench_lag import SAMPLE_MS, T0
from tests.benchmarks.bench_lag_step import build_age

pytestmark = pytest.mark.spark
ROUNDS = 24
CFG = LagConfig()


def _rows(df: DataFrame) -> Counter[str]:
    return Counter(repr(tuple(r)) for r in df.select(*sorted(df.columns)).collect())


def _step(spark: SparkSession, warehouse: str, samples: str, round_: int,
          caplog: pytest.LogCaptureFixture, new: DataFrame | None = None
          ) -> tuple[str, dict[str, Counter[str]]]:
    """The lag step of one sample round over the state (then written, as the stream does),
    `new` the batch's offset_history rows, checked equal to the same step from no state over
    every row (the backfill's, held to the oracle by tests/spark/test_lag.py): what it
    logged, and its tables."""
    at = T0 + round_ * SAMPLE_MS
    table = spark.read.format("delta").load(samples)
    ready = table.where(F.unix_millis("sampled_at") == F.lit(at))
    waiting = table.where(F.unix_millis("sampled_at") > F.lit(at))
    tables = Tables(spark, warehouse, samples, latest_version(spark, samples), at + 1,
                    waiting.toArrow())
    caplog.clear()
    got = step(spark, warehouse, tables, {} if new is None else {"offset_history": new},
               ready, CFG, at + 1, read_states(spark, warehouse))
    said = " ".join(r.getMessage() for r in caplog.records)
    whole = step(spark, warehouse, tables, {}, ready, CFG, at + 1, None)
    want = {"partition_lag": _rows(whole.partition_lag), "group_lag": _rows(whole.group_lag)}
    mine = {"partition_lag": _rows(got.partition_lag), "group_lag": _rows(got.group_lag)}
    assert want["partition_lag"] and want["group_lag"]
    for name in want:
        extra, missing = mine[name] - want[name], want[name] - mine[name]
        assert not extra and not missing, (name, said, list(extra)[:2], list(missing)[:2])
    states = read_states(spark, warehouse)
    if states is not None:  # a small batch's step on the driver: the same rows, the same redo
        local = local_step(spark, warehouse, tables, {} if new is None else {
            "offset_history": new}, _samples(ready), CFG, at + 1)
        assert local is not None
        assert local.rebuilt == got.rebuilt
        for name, data in (("partition_lag", local.partition_lag),
                           ("group_lag", local.group_lag)):
            assert _rows(spark.createDataFrame(data)) == mine[name], name
    rewound = got.partition_lag.where(
        (F.col("group_id") == "group-0") & (F.col("topic") == "topic-0")
        & (F.col("partition") == 0) & (F.col("committed_offset") == 1500))
    found = _rows(rewound)
    save_states(spark, warehouse, got)
    got.release()
    whole.release()
    return said, {**mine, "rewound": found}


def _samples(df: DataFrame) -> pa.Table:
    """Samples as the stream holds them on the driver: the contract's columns, as Arrow."""
    return df.select(*[F.col(f.name).cast(f.dataType) if f.name in df.columns
                       else F.lit(None).cast(f.dataType).alias(f.name)
                       for f in samples_schema().fields]).toArrow()


def _append_commit(spark: SparkSession, warehouse: str, offset: int, at_ms: int) -> DataFrame:
    """A commit of group-0 on topic-0/0 written to offset_history: the batch's row."""
    path = f"{warehouse}/offset_history"
    table = spark.read.format("delta").load(path)
    given = {"group_id": F.lit("group-0"), "topic": F.lit("topic-0"), "partition": F.lit(0),
             "committed_offset": F.lit(offset), "event_time": F.timestamp_millis(F.lit(at_ms)),
             "log_partition": F.lit(7), "log_offset": F.lit(10**9 + at_ms % 10**6),
             "change": F.lit("COMMIT")}
    row = spark.range(1).select(*[given.get(c, F.lit(None)).cast(t).alias(c)
                                  for c, t in table.dtypes])
    row.write.format("delta").mode("append").save(path)
    return spark.read.format("delta").load(path).where(
        F.col("log_offset") == 10**9 + at_ms % 10**6)


def _append_round(spark: SparkSession, samples: str, round_: int) -> None:
    table = spark.read.format("delta").load(samples)
    last = table.where(F.unix_millis("sampled_at") == F.lit(T0 + (round_ - 1) * SAMPLE_MS))
    (last.withColumn("sampled_at", F.timestamp_millis(F.lit(T0 + round_ * SAMPLE_MS)))
     .withColumn("log_end_offset", F.col("log_end_offset") + 1500)
     .write.format("delta").mode("append").save(samples))


def test_the_state_gives_what_the_whole_history_gives_and_says_when_it_cannot(
        spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="pipeline.spark.lag.lagstate")
    warehouse, samples = build_age(spark, tmp_path, partitions=6, per_topic=3, rounds=ROUNDS)
    ensure_state(spark, warehouse)
    said, _ = _step(spark, warehouse, samples, ROUNDS - 1, caplog)
    assert "building the lag state from every history row" in said
    said, _ = _step(spark, warehouse, samples, ROUNDS, caplog)
    assert "lag:" not in said, said  # the state answered alone

    # A commit rewound to where the log end stood at the log's start: below every sample
    # the state kept, so it cannot bracket it.
    new = _append_commit(spark, warehouse, 1500, T0 + ROUNDS * SAMPLE_MS + 20_000)
    _append_round(spark, samples, ROUNDS + 1)
    said, tables = _step(spark, warehouse, samples, ROUNDS + 1, caplog, new)
    assert "read the history again for partition topic-0-0" in said, said
    assert "bracketed before the samples kept" in said, said
    assert tables["rewound"], "the rewound commit has its row"

    # A commit written now with a time the state has passed.
    new = _append_commit(spark, warehouse, 2500, T0 + (ROUNDS - 3) * SAMPLE_MS)
    _append_round(spark, samples, ROUNDS + 2)
    said, _ = _step(spark, warehouse, samples, ROUNDS + 2, caplog, new)
    assert "read the history again for partition topic-0-0: an offset change at" in said, said
