"""Benchmark (not a test): the lag step at scale, against a plain Spark range join of the same
two tables.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_lag.py --partitions 10000 --samples 100

Builds, with Spark alone (no fold), a warehouse whose history tables look like a busy
cluster's: `--partitions` topic partitions (`--per-topic` to a topic), one consumer group a
topic (a Stable group of one member owning its topic), a commit of each partition every
`--commit-every` seconds, and an end-offset sample of each partition every 30 s for
`--samples` samples; every fifth group falls behind (its commits lag further each time).
After a warm-up round of each, times them alternating `--repeat` times, to Spark's noop sink:

- the lag step: partition_lag and group_lag of every sample, as the backfill computes them
  (`pipeline.spark.lag.lagstate.step` from no state);
- a plain range join of the same two tables: each sample with every change of its partition
  at or before it (`c.event_time <= s.sampled_at`), the newest kept per group: the committed
  offset as of each sample, as one would write it in SQL (the lag issue's reference);
- a band join: each change with the one sample interval it falls in, the least any join of
  the two tables does (a floor, not a target).

Prints each run's seconds, the medians, lag / range join (target <= 1.5x), lag / band join,
and the lag step's partition_lag rows per second.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from pipeline.lag import LagConfig
from pipeline.spark.lag.lagstate import Tables, step
from pipeline.spark.runtime.session import build_session
from pipeline.spark.tables.warehouse import ensure_tables

T0 = 1_700_000_000_000
SAMPLE_MS = 30_000


def build(spark: SparkSession, root: Path, partitions: int, per_topic: int, samples: int,
          commit_every_s: int) -> tuple[str, str]:
    """The warehouse's history tables and the samples table; returns their paths."""
    warehouse, samples_path = str(root / "warehouse"), str(root / "samples")
    ensure_tables(spark, warehouse, None, lag=True)
    tps = (spark.range(partitions).select(
        F.concat(F.lit("topic-"), (F.col("id") / per_topic).cast("int")).alias("topic"),
        (F.col("id") % per_topic).cast("int").alias("partition"),
        (F.col("id") / per_topic).cast("int").alias("g")))
    # The log end grows ~40 messages a second a partition, with some noise.
    ticks = spark.range(samples).select(F.col("id").alias("k"))
    rate = 40 + (F.hash("topic", "partition") % 20)
    sampled = tps.crossJoin(ticks).select(
        "topic", "partition",
        F.timestamp_millis(F.lit(T0) + F.col("k") * SAMPLE_MS).alias("sampled_at"),
        (F.col("k") * 30 * rate + 1000).cast("bigint").alias("log_end_offset"),
        F.lit(0).cast("bigint").alias("log_start_offset"))
    sampled.write.format("delta").mode("overwrite").save(samples_path)
    n = samples * SAMPLE_MS // (commit_every_s * 1000)
    commits = tps.crossJoin(spark.range(n).select(F.col("id").alias("c"))).select(
        F.concat(F.lit("group-"), F.col("g")).alias("group_id"), "topic", "partition",
        (F.col("c") * commit_every_s * rate + 1000
         - F.when(F.col("g") % 5 == 0, F.col("c") * 7).otherwise(F.col("c") % 3 * 11))
        .cast("bigint").alias("committed_offset"),
        F.timestamp_millis(F.lit(T0) + F.col("c") * commit_every_s * 1000 + 500)
        .alias("event_time"),
        F.lit(7).alias("log_partition"),
        (F.col("c") * partitions + F.col("g")).alias("log_offset"),
        F.lit("COMMIT").alias("change"))
    history = spark.read.format("delta").load(f"{warehouse}/offset_history")
    commits.select(*[F.col(c) if c in commits.columns else F.lit(None).cast(t).alias(c)
                     for c, t in history.dtypes]).write.format("delta").mode("append") \
        .save(f"{warehouse}/offset_history")
    shapes(spark, warehouse, tps)
    return warehouse, samples_path


def shapes(spark: SparkSession, warehouse: str, tps: DataFrame) -> None:
    """One Stable shape per group at the start: one member owning its topic."""
    members = tps.groupBy("g").agg(F.collect_list(F.struct("topic", "partition")).alias("a"))
    table = spark.read.format("delta").load(f"{warehouse}/group_history")
    types = dict(table.dtypes)
    member = F.struct(F.concat(F.lit("m-"), F.col("g")).alias("member_id"),
                      F.concat(F.lit("client-"), F.col("g")).alias("client_id"),
                      F.col("a").alias("assignment"))
    given = {
        "group_id": F.concat(F.lit("group-"), F.col("g")),
        "event_time": F.timestamp_millis(F.lit(T0)), "log_partition": F.lit(7),
        "log_offset": F.col("g"), "seq": F.lit(0), "state": F.lit("Stable"),
        "generation_id": F.lit(1), "member_count": F.lit(1), "rebalance_count": F.lit(0),
        "group_type": F.lit("classic"), "departures": F.array(),
        "members": F.from_json(F.to_json(F.array(member)), types["members"]),
    }
    rows = members.select(*[given.get(c, F.lit(None)).cast(t).alias(c) for c, t in table.dtypes])
    rows.write.format("delta").mode("append").save(f"{warehouse}/group_history")


def timed(label: str, df: DataFrame) -> float:
    start = time.monotonic()
    df.write.format("noop").mode("overwrite").save()
    took = time.monotonic() - start
    print(f"  {label}: {took:.1f} s", flush=True)
    return took


def lag_step(spark: SparkSession, warehouse: str, samples_path: str) -> float:
    """The backfill's lag step (`lagstate.step` from no state, every sample ready)."""
    samples = spark.read.format("delta").load(samples_path)
    tables = Tables(spark, warehouse, samples_path, None, 0, pa.table({}))
    start = time.monotonic()
    got = step(spark, warehouse, tables, {}, samples, LagConfig(), None, None)
    for rows in (got.partition_lag, got.group_lag, got.states):
        rows.write.format("noop").mode("overwrite").save()
    took = time.monotonic() - start
    got.release()
    print(f"  lag step: {took:.1f} s", flush=True)
    return took


def range_join(spark: SparkSession, warehouse: str, samples_path: str) -> float:
    """The committed offset of every group at every sample, as a plain range join computes
    it: every change at or before the sample, the newest kept."""
    samples = spark.read.format("delta").load(samples_path)
    changes = spark.read.format("delta").load(f"{warehouse}/offset_history")
    s, c = samples.alias("s"), changes.alias("c")
    joined = s.join(c, (F.col("s.topic") == F.col("c.topic"))
                    & (F.col("s.partition") == F.col("c.partition"))
                    & (F.col("c.event_time") <= F.col("s.sampled_at")))
    newest = joined.groupBy("c.group_id", "s.topic", "s.partition", "s.sampled_at").agg(
        F.max_by("c.committed_offset", F.struct("c.event_time", "c.log_offset")).alias("committed"),
        F.first("s.log_end_offset").alias("end"))
    return timed("range join", newest.select("*", (F.col("end") - F.col("committed")).alias("lag")))


def band_join(spark: SparkSession, warehouse: str, samples_path: str) -> float:
    """The least join of the two tables: each change matched once, to the sample interval it
    falls in."""
    samples = spark.read.format("delta").load(samples_path).withColumn(
        "prev", F.lag("sampled_at").over(Window.partitionBy("topic", "partition")
                                         .orderBy("sampled_at")))
    changes = spark.read.format("delta").load(f"{warehouse}/offset_history")
    s, c = samples.alias("s"), changes.alias("c")
    joined = s.join(c, (F.col("s.topic") == F.col("c.topic"))
                    & (F.col("s.partition") == F.col("c.partition"))
                    & (F.col("c.event_time") > F.col("s.prev"))
                    & (F.col("c.event_time") <= F.col("s.sampled_at")))
    return timed("band join", joined.select("s.sampled_at", "c.group_id", "c.committed_offset"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--partitions", type=int, default=10_000)
    p.add_argument("--per-topic", type=int, default=10)
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--commit-every", type=int, default=15, help="seconds between commits")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    spark = build_session("bench-lag", "local")
    root = Path(tempfile.mkdtemp(prefix="bench-lag-"))
    start = time.monotonic()
    warehouse, samples_path = build(spark, root, args.partitions, args.per_topic, args.samples,
                                    args.commit_every)
    changes = spark.read.format("delta").load(f"{warehouse}/offset_history").count()
    print(f"built {args.partitions:,} partitions x {args.samples} samples, {changes:,} commits "
          f"in {time.monotonic() - start:.0f} s ({root})", flush=True)
    lags, joins, bands = [], [], []
    print("warm-up (not counted): each once, so neither pays the JVM's first compile")
    lag_step(spark, warehouse, samples_path)
    range_join(spark, warehouse, samples_path)
    band_join(spark, warehouse, samples_path)
    for i in range(args.repeat):
        print(f"round {i + 1}", flush=True)
        lags.append(lag_step(spark, warehouse, samples_path))
        joins.append(range_join(spark, warehouse, samples_path))
        bands.append(band_join(spark, warehouse, samples_path))
    rows = args.partitions * args.samples
    lag, join, band = (statistics.median(x) for x in (lags, joins, bands))
    print(f"medians: lag step {lag:.1f} s, range join {join:.1f} s, band join {band:.1f} s")
    print(f"lag / range join = {lag / join:.2f}x (target <= 1.5x); lag / band join = "
          f"{lag / band:.2f}x; lag step {rows / lag:,.0f} partition_lag rows/s")


if __name__ == "__main__":
    main()
