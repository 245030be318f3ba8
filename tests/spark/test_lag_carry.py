"""The stream's lag step over its carry (`pipeline.spark.lag.lagcarry`) writes what it writes over
the whole history, step after step; where the carry cannot tell (a commit rewound below the
carried samples, a history row written late), the step says so and reads the whole history.
(The streams of tests/spark/test_lag.py and the kill test of test_replay_guarantees.py take
the carry path too, and are held to the backfill and the oracle.)"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.spark.lag.lag import group_lag, partition_lag
from pipeline.spark.lag.lagcarry import carry_path
from pipeline.spark.lag.lagflow import LagOptions, StreamLag
from tests.benchmarks.bench_lag import SAMPLE_MS, T0
from tests.benchmarks.bench_lag_step import build_age

pytestmark = pytest.mark.spark
ROUNDS = 24


def _rows(df: DataFrame) -> Counter[str]:
    return Counter(repr(tuple(r)) for r in df.select(*sorted(df.columns)).collect())


def _step(spark: SparkSession, warehouse: str, samples: str, round_: int,
          caplog: pytest.LogCaptureFixture, paths: tuple[bool, ...] = (True, False)
          ) -> tuple[str, dict[str, Counter[str]]]:
    """The lag step of one sample round over the carry (then written, as the stream does)
    and over the whole history (`paths`: which of the two): the path the first took, and its
    tables, checked equal."""
    at = T0 + round_ * SAMPLE_MS
    table = spark.read.format("delta").load(samples)
    ready = table.where(F.unix_millis("sampled_at") == F.lit(at))
    got: list[dict[str, Counter[str]]] = []
    said = ""
    for carried in paths:
        lag = StreamLag(LagOptions(samples), warehouse, "", carried=carried)
        caplog.clear()
        history, rows, carry = lag._lag(spark, ready, table, round_)
        if carried:
            said = " ".join(r.getMessage() for r in caplog.records if "lag over" in r.getMessage())
            carry.write.format("delta").mode("overwrite").save(carry_path(warehouse))
        parts = partition_lag(rows)
        rewound = parts.where((F.col("group_id") == "group-0") & (F.col("topic") == "topic-0")
                              & (F.col("partition") == 0) & (F.col("committed_offset") == 1500))
        got.append({"partition_lag": _rows(parts), "rewound": _rows(rewound),
                    "group_lag": _rows(group_lag(rows, history, lag.opts.config))})
        lag.release()
    assert got[0]["partition_lag"] and got[0]["group_lag"]
    assert all(g == got[0] for g in got), said
    return said, got[0]


def _append_commit(spark: SparkSession, warehouse: str, offset: int, at_ms: int) -> None:
    path = f"{warehouse}/offset_history"
    table = spark.read.format("delta").load(path)
    given = {"group_id": F.lit("group-0"), "topic": F.lit("topic-0"), "partition": F.lit(0),
             "committed_offset": F.lit(offset), "event_time": F.timestamp_millis(F.lit(at_ms)),
             "log_partition": F.lit(7), "log_offset": F.lit(10**9 + at_ms % 10**6),
             "change": F.lit("COMMIT")}
    row = spark.range(1).select(*[given.get(c, F.lit(None)).cast(t).alias(c)
                                  for c, t in table.dtypes])
    row.write.format("delta").mode("append").save(path)


def _append_round(spark: SparkSession, samples: str, round_: int) -> None:
    table = spark.read.format("delta").load(samples)
    last = table.where(F.unix_millis("sampled_at") == F.lit(T0 + (round_ - 1) * SAMPLE_MS))
    (last.withColumn("sampled_at", F.timestamp_millis(F.lit(T0 + round_ * SAMPLE_MS)))
     .withColumn("log_end_offset", F.col("log_end_offset") + 1500)
     .write.format("delta").mode("append").save(samples))


def test_the_carry_gives_what_the_whole_history_gives_and_says_when_it_cannot(
        spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="pipeline.spark.lag.lagflow")
    warehouse, samples = build_age(spark, tmp_path, partitions=6, per_topic=3, rounds=ROUNDS)
    said, _ = _step(spark, warehouse, samples, ROUNDS - 1, caplog, paths=(True,))
    assert "whole history (no carry)" in said
    said, _ = _step(spark, warehouse, samples, ROUNDS, caplog)
    assert "over the carry" in said, said

    # A commit rewound to where the log end stood at the log's start: below every carried
    # sample, so the carry cannot bracket it.
    _append_commit(spark, warehouse, 1500, T0 + ROUNDS * SAMPLE_MS + 20_000)
    _append_round(spark, samples, ROUNDS + 1)
    said, tables = _step(spark, warehouse, samples, ROUNDS + 1, caplog)
    assert "whole history (a committed offset bracketed before the carried samples)" in said
    assert tables["rewound"], "the rewound commit has its row"

    # A commit written now with a time the carry has passed: the carry no longer holds.
    _append_commit(spark, warehouse, 2500, T0 + (ROUNDS - 3) * SAMPLE_MS)
    _append_round(spark, samples, ROUNDS + 2)
    said, _ = _step(spark, warehouse, samples, ROUNDS + 2, caplog, paths=(True,))
    assert "whole history (history rows at or before the carry's time" in said, said
