"""Benchmark (not a test): the streaming replay end to end, and a warm stream's latency.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_stream.py --events 30000 --groups 40 --small 200

Writes a generated log (twice: one copy per stream), replays it with a processing-time
trigger (the catch-up batch: events/s), and starts beside it a trivial stateful stream over
the other copy: applyInPandasWithState counting rows per group, its output appended to one
Delta table. Then, `--rounds` times, appends `--small` events to both logs and lets each
stream take them; prints each replay micro-batch's duration and where it went (Spark's
durationMs per phase), and the median latency of both streams with their ratio (the
target: the replay <= 1.5x the trivial stream's), and each table's median write time: with
`--writers 1` the tables are written one after another, so each figure is that table's own
cost.

`--end-offsets` runs the replay with lag (a warm batch of ~500 events with
lag <= 2x the trivial stream's): the log is an offsets-topic log with end-offset samples, the
watermark delay and the sample interval scaled down to its dense event time (as in
bench_soak), and each round appends, before its events, the samples taken in their stretch of
event time. It prints the median of the replay's batches with input, then of those Spark
runs with no input when the watermark moves and which write the lag rows, and per round the
replay's batches together against the trivial stream's (the figure that counts both).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_backfill  # run as a script: this folder is on sys.path
from pyspark import cloudpickle
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.streaming.state import GroupStateTimeout

from pipeline.generator import LogSpec, end_offset_samples, generate, last_event_ms
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.lag.lagflow import LagOptions
from pipeline.spark.lag.samples import samples_frame
from pipeline.spark.runtime.session import build_session, stop_session
from pipeline.spark.stream.replay import ReplayOptions, start_replay
from pipeline.spark.tables.parallel import WRITERS

# The trivial stream's function is bench_backfill's: shipped by value, as the workers cannot
# import this folder.
cloudpickle.register_pickle_by_value(bench_backfill)
count_rows = bench_backfill.count_rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--events", type=int, default=30_000)
    p.add_argument("--groups", type=int, default=40)
    p.add_argument("--small", type=int, default=200, help="events per incremental commit")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--writers", type=int, default=WRITERS,
                   help="tables the replay writes side by side (1: one after another, each "
                        "table's own cost)")
    p.add_argument("--end-offsets", action="store_true", help="the replay with lag")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting for the session, over the local profile's "
                        "(repeatable): an experiment's")
    args = p.parse_args()
    spec = LogSpec(groups=args.groups, events=args.events + args.small * args.rounds, seed=3,
                   **({"log_kind": "offsets-topic", "sample_interval_ms": 1000}
                      if args.end_offsets else {}))
    events = generate(spec)
    samples = sorted(end_offset_samples(spec, last_event_ms(events)),
                     key=lambda s: s["sampled_at"]) if args.end_offsets else []
    head, tail = events[:args.events], events[args.events:]
    spark = build_session("bench-stream", "local",
                          extra_conf=dict(c.split("=", 1) for c in args.conf))
    root = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    log, other = str(root / "events"), str(root / "events-trivial")
    write_event_log(spark, head, log)
    write_event_log(spark, head, other)
    ends = str(root / "end_offsets")
    taken = 0  # the samples appended so far
    if args.end_offsets:
        taken = until(samples, max(e.event_time or 0 for e in head))
        samples_frame(spark, samples[:taken]).write.format("delta").save(ends)
    start = time.monotonic()
    replay = start_replay(spark, ReplayOptions(
        events=log, warehouse=str(root / "wh"), checkpoint=str(root / "ck"),
        trigger="processing-time:1", database=None,
        **({"lag": LagOptions(ends), "watermark_delay": "5 seconds"}
           if args.end_offsets else {})))
    replay.writer.writers = args.writers
    replay.query.processAllAvailable()
    catch_up = time.monotonic() - start
    print(f"catch-up: {len(head):,} events, {args.groups} groups, {catch_up:.1f} s, "
          f"{len(head) / catch_up:,.0f} events/s (includes query start)")
    trivial = start_trivial(spark, other, root)
    trivial.processAllAvailable()
    latencies: list[int] = []
    trivial_latencies: list[int] = []
    lag_only: list[int] = []  # batches with no input that wrote lag rows (the watermark moved)
    rounds: list[tuple[int, int]] = []  # per round: the replay's batches, the trivial's, in ms

    def wrote_lag(batch_id: int) -> bool:
        seen = replay.writer.progress.get(batch_id)
        return seen is not None and bool(seen.rows.get("partition_lag")
                                         or seen.rows.get("group_lag"))
    writes: dict[str, list[float]] = {}  # each table's write seconds in the warm batches
    for i in range(args.rounds):
        chunk = tail[i * args.small:(i + 1) * args.small]
        seen = reported(replay.query)
        if args.end_offsets:
            upto = until(samples, max(e.event_time or 0 for e in chunk))
            if upto > taken:
                samples_frame(spark, samples[taken:upto]).write.format("delta").mode(
                    "append").save(ends)
            taken = upto
        write_event_log(spark, chunk, log, mode="append")
        mine_ms = 0
        for b in new_batches(replay.query, seen, wrote_lag):
            mine_ms += b["batchDuration"]
            (latencies if b["numInputRows"] > 0 else lag_only).append(b["batchDuration"])
            seen = replay.writer.progress.get(b["batchId"])
            for table, seconds in (seen.tables if seen is not None else {}).items():
                writes.setdefault(table, []).append(seconds)
            phases = {k: v for k, v in b["durationMs"].items() if v > 50}
            lag = " (lag rows)" if wrote_lag(b["batchId"]) else ""
            print(f"incremental batch {b['batchId']}: {b['numInputRows']} rows{lag}, "
                  f"{b['batchDuration']} ms; phases {phases}")
        seen = reported(trivial)
        write_event_log(spark, chunk, other, mode="append")
        floor_ms = 0
        for b in new_batches(trivial, seen):
            trivial_latencies.append(b["batchDuration"])
            floor_ms += b["batchDuration"]
            print(f"  trivial batch {b['batchId']}: {b['numInputRows']} rows, "
                  f"{b['batchDuration']} ms")
        rounds.append((mine_ms, floor_ms))
    if latencies and trivial_latencies:
        mine, floor = statistics.median(latencies), statistics.median(trivial_latencies)
        print(f"warm micro-batch latency, median of {len(latencies)}: replay {mine:.0f} ms; "
              f"trivial stateful stream with one Delta append {floor:.0f} ms (median of "
              f"{len(trivial_latencies)}) -> {mine / floor:.2f}x (target <= "
              f"{'2x, with lag' if args.end_offsets else '1.5x'}), ~{args.small} events a "
              "batch")
        if lag_only:
            print(f"batches with no input that wrote lag rows (the watermark moved): median "
                  f"{statistics.median(lag_only):.0f} ms over {len(lag_only)} "
                  f"({statistics.median(lag_only) / floor:.2f}x the trivial batch)")
        per_round = [m / f for m, f in rounds if f]
        if per_round:
            print(f"per round ({args.small} events{' and their samples' if args.end_offsets else ''}"
                  f"): the replay's batches together / the trivial stream's, median "
                  f"{statistics.median(per_round):.2f}x over {len(per_round)} rounds")
        # Where a warm batch goes: each table is its own Delta commit, side by side with the
        # others on the writer threads; the slowest bounds the batch.
        for table, seconds in sorted(writes.items(), key=lambda kv: -statistics.median(kv[1])):
            median = statistics.median(seconds) * 1000
            print(f"  {table}: median {median:.0f} ms over {len(seconds)} batches "
                  f"({median / floor:.2f}x the trivial stream's whole batch)")
    replay.stop()
    trivial.stop()
    stop_session(spark)  # the state stores' maintenance too: no warning after the stop


def until(samples: list[dict[str, Any]], moment: int) -> int:
    """How many of `samples` (by time) were taken at or before `moment` (epoch ms)."""
    return sum(1 for s in samples if s["sampled_at"] <= moment)


def reported(query: StreamingQuery) -> set[tuple[int, str]]:
    """The progress reports the query has made so far, by batch id and time (before an
    append: a trigger may take the appended rows before the caller looks). Not the last batch
    id alone: a query idle for 10 s reports progress under the id of its next batch, which
    would hide that batch."""
    return {(b["batchId"], b["timestamp"]) for b in query.recentProgress}


def new_batches(query: StreamingQuery, seen: set[tuple[int, str]],
                also: Callable[[int], bool] = lambda _: False) -> list[dict[str, Any]]:
    """Let `query` take what was appended; the progress of the batches since `seen` that
    read rows, or that `also` keeps (by batch id: the replay's no-input batches that wrote
    lag rows when the watermark moved)."""
    query.processAllAvailable()
    return [b for b in query.recentProgress
            if (b["batchId"], b["timestamp"]) not in seen
            and (b["numInputRows"] > 0 or also(b["batchId"]))]


def start_trivial(spark: SparkSession, log: str, root: Path) -> StreamingQuery:
    """The floor of a warm micro-batch: the same source, watermark and stateful operator,
    a function that only counts, one Delta append."""
    events = spark.readStream.format("delta").load(log).withWatermark(
        "event_time", "10 minutes")
    counted = events.groupBy("group_id").applyInPandasWithState(
        count_rows, "group_id string, n long", "n long", "append", GroupStateTimeout.NoTimeout)
    return (counted.writeStream.format("delta").outputMode("append")
            .option("checkpointLocation", str(root / "ck-trivial"))
            .trigger(processingTime="1 second").start(str(root / "trivial")))


if __name__ == "__main__":
    main()
