"""Burrow's verdict as a Spark column expression (`pipeline.spark.lag.lag.burrow`) equals the pure
rule (`pipeline.lag.rules.partition_status`) on thousands of random windows: drops that
recover or not, stalls, nulls, stops, allowed lag and completeness thresholds."""

from __future__ import annotations

import random

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.lag import Commit, LagConfig, partition_status
from pipeline.spark.lag.lag import burrow

pytestmark = pytest.mark.spark

CONFIGS = (LagConfig(), LagConfig(intervals=4, allowed_lag=3, minimum_complete=0.5))


def random_case(rng: random.Random, cfg: LagConfig) -> dict[str, object]:
    n = rng.randint(0, cfg.intervals)
    offset, t, commits = rng.randint(0, 50), rng.randint(0, 10_000), []
    for _ in range(n):
        offset = max(0, offset + rng.choice((0, 0, 1, 5, 20, -30, -2)))
        t += rng.choice((0, 1_000, 5_000, 30_000))
        lag = None if rng.random() < 0.15 else rng.choice((0, 1, 3, rng.randint(0, 500)))
        commits.append({"offset": offset, "t": t, "lag": lag})
    now = t + rng.choice((0, 1, 10_000, 200_000))
    last = commits[-1]["offset"] if commits else 0
    return {"w": commits, "lag": rng.choice((0, 2, 3, rng.randint(0, 500))), "t": now,
            "broker_min": last + rng.choice((-5, 0, 1, 100))}


def test_the_spark_expression_and_the_pure_rule_agree(spark: SparkSession) -> None:
    rng = random.Random(848)
    for cfg in CONFIGS:
        cases = [random_case(rng, cfg) for _ in range(3000)]
        df = spark.createDataFrame(
            cases, "w array<struct<offset:bigint,t:bigint,lag:bigint>>, lag bigint, t bigint, "
                   "broker_min bigint")
        got = [(r["v"]["status"], r["v"]["rule"])
               for r in df.select(burrow(cfg).alias("v"), F.monotonically_increasing_id().alias("i"))
               .orderBy("i").collect()]
        want = [partition_status([Commit(c["offset"], c["t"], c["lag"]) for c in case["w"]],
                                 [case["broker_min"]], case["lag"], case["t"], cfg)
                for case in cases]
        assert got == [(v.status, v.rule) for v in want]
        assert {v.rule for v in want} >= {"NO_COMMITS", "CAUGHT_UP", "STOPPED", "REWOUND",
                                          "LAG_ZERO_IN_WINDOW", "STALLED", "LAG_NOT_DECREASING",
                                          "PROGRESSING"}
