"""Benchmark (not a test): one stream lag step, over the whole history and over the engine's
state, as the history grows (a micro-batch's cost must not grow with the stream's
age).

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_lag_step.py --partitions 1000 \\
        --ages 20,200

For each age (a number of 30 s sample rounds already in the warehouse), builds with Spark
alone what a stream of that age has written (`bench_lag`'s busy cluster: every partition
committed every 15 s, every fifth group falling behind; the commits and samples appended in
time order, ten rounds a commit, as a stream's batches append them), then times, alternately
`--repeat` times, the lag step of one new sample round:

- full: the step from no state over every history row and sample (`lagstate.step` without
  states: the backfill's path, and a stream's first step), to Spark's noop sink;
- state: the stream's step (the round's samples over the state as of the round before),
  with no new history rows, its rows and next states to the noop sink.

Prints each time, the medians, and the ratios: each path at the oldest age over the
youngest (the state's should stay near 1), and state / full at each age.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.lag import LagConfig
from pipeline.spark.lag.lagflow import ensure_pending
from pipeline.spark.lag.lagstate import Step, Tables, read_states, save_states
from pipeline.spark.lag.lagstate import step as state_step
from pipeline.spark.runtime.session import build_session
from pipeline.spark.tables.options import latest_version
from pipeline.spark.tables.warehouse import ensure_tables
from tests.benchmarks.bench_lag import SAMPLE_MS, T0, shapes

ROUNDS_A_COMMIT = 10


def build_age(spark: SparkSession, root: Path, partitions: int, per_topic: int,
              rounds: int) -> tuple[str, str]:
    """A warehouse and samples table as a stream `rounds` sample rounds old has left them."""
    warehouse, samples_path = str(root / "warehouse"), str(root / "samples")
    ensure_tables(spark, warehouse, None, lag=True)
    ensure_pending(spark, warehouse)
    tps = (spark.range(partitions).select(
        F.concat(F.lit("topic-"), (F.col("id") / per_topic).cast("int")).alias("topic"),
        (F.col("id") % per_topic).cast("int").alias("partition"),
        (F.col("id") / per_topic).cast("int").alias("g")))
    rate = 40 + (F.hash("topic", "partition") % 20)
    history = spark.read.format("delta").load(f"{warehouse}/offset_history")
    for lo in range(0, rounds + 1, ROUNDS_A_COMMIT):
        hi = min(lo + ROUNDS_A_COMMIT, rounds + 1)
        ticks = spark.range(lo, hi).select(F.col("id").alias("k"))
        (tps.crossJoin(ticks).select(
            "topic", "partition",
            F.timestamp_millis(F.lit(T0) + F.col("k") * SAMPLE_MS).alias("sampled_at"),
            (F.col("k") * 30 * rate + 1000).cast("bigint").alias("log_end_offset"),
            F.lit(0).cast("bigint").alias("log_start_offset"))
         .coalesce(1).write.format("delta").mode("append").save(samples_path))
        commits = tps.crossJoin(spark.range(2 * lo, 2 * hi).select(F.col("id").alias("c"))).select(
            F.concat(F.lit("group-"), F.col("g")).alias("group_id"), "topic", "partition",
            (F.col("c") * 15 * rate + 1000
             - F.when(F.col("g") % 5 == 0, F.col("c") * 7).otherwise(F.col("c") % 3 * 11))
            .cast("bigint").alias("committed_offset"),
            F.timestamp_millis(F.lit(T0) + F.col("c") * 15_000 + 500).alias("event_time"),
            F.lit(7).alias("log_partition"),
            (F.col("c") * partitions + F.col("g")).alias("log_offset"),
            F.lit("COMMIT").alias("change"))
        (commits.select(*[F.col(c) if c in commits.columns else F.lit(None).cast(t).alias(c)
                          for c, t in history.dtypes])
         .coalesce(1).write.format("delta").mode("append").save(f"{warehouse}/offset_history"))
    shapes(spark, warehouse, tps)
    return warehouse, samples_path


def step(spark: SparkSession, warehouse: str, samples_path: str, at_ms: int,
         incremental: bool) -> float:
    """One lag step of the round at `at_ms`, over the state or from no state over every row."""
    start = time.monotonic()
    got = _step(spark, warehouse, samples_path, at_ms, incremental)
    for rows in (got.partition_lag, got.group_lag, got.states):
        rows.write.format("noop").mode("overwrite").save()
    got.release()
    took = time.monotonic() - start
    print(f"  {'state' if incremental else 'full'}: {took:.1f} s", flush=True)
    return took


def _step(spark: SparkSession, warehouse: str, samples_path: str, at_ms: int,
          incremental: bool) -> Step:
    samples = spark.read.format("delta").load(samples_path)
    tables = Tables(spark, warehouse, samples_path, latest_version(spark, samples_path),
                    at_ms + 1,
                    samples.where(F.unix_millis("sampled_at") > F.lit(at_ms)).toArrow())
    ready = samples.where(F.unix_millis("sampled_at") == F.lit(at_ms))
    states = read_states(spark, warehouse) if incremental else None
    return state_step(spark, warehouse, tables, {}, ready, LagConfig(), at_ms + 1, states)


def seed_state(spark: SparkSession, warehouse: str, samples_path: str, at_ms: int) -> None:
    """The state as of `at_ms`, as the stream's step of that round wrote it (built from
    every row: the first step's path)."""
    got = _step(spark, warehouse, samples_path, at_ms, False)
    save_states(spark, warehouse, got)
    got.release()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--partitions", type=int, default=1000)
    p.add_argument("--per-topic", type=int, default=10)
    p.add_argument("--ages", default="20,200", help="sample rounds already written, comma-separated")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    said = logging.StreamHandler(sys.stdout)  # a key the state could not answer
    logging.getLogger("pipeline.spark.lag.lagstate").addHandler(said)
    logging.getLogger("pipeline.spark.lag.lagstate").setLevel(logging.INFO)
    spark = build_session("bench-lag-step", "local")
    medians: dict[int, dict[str, float]] = {}
    for age in (int(a) for a in args.ages.split(",")):
        root = Path(tempfile.mkdtemp(prefix=f"bench-lag-step-{age}-"))
        start = time.monotonic()
        warehouse, samples_path = build_age(spark, root, args.partitions, args.per_topic, age)
        last, before = T0 + age * SAMPLE_MS, T0 + (age - 1) * SAMPLE_MS
        seed_state(spark, warehouse, samples_path, before)
        print(f"age {age} rounds: {args.partitions:,} partitions, built in "
              f"{time.monotonic() - start:.0f} s ({root})", flush=True)
        step(spark, warehouse, samples_path, last, False)  # warm-up, not counted
        step(spark, warehouse, samples_path, last, True)
        times: dict[str, list[float]] = {"full": [], "state": []}
        for _ in range(args.repeat):
            times["full"].append(step(spark, warehouse, samples_path, last, False))
            times["state"].append(step(spark, warehouse, samples_path, last, True))
        medians[age] = {k: statistics.median(v) for k, v in times.items()}
        print(f"age {age}: medians full {medians[age]['full']:.1f} s, state "
              f"{medians[age]['state']:.1f} s, state / full = "
              f"{medians[age]['state'] / medians[age]['full']:.2f}", flush=True)
    young, old = min(medians), max(medians)
    for path in ("full", "state"):
        print(f"{path}: age {old} / age {young} = {medians[old][path] / medians[young][path]:.2f}")


if __name__ == "__main__":
    main()
