"""Benchmark (not a test): the streaming replay end to end, and a warm stream's latency.

    .venv/bin/python tests/benchmarks/bench_stream.py --events 30000 --groups 40 --small 200

Writes a generated log, replays it with a processing-time trigger (the catch-up batch:
events/s), then appends small commits one by one to the warm stream and prints each
micro-batch's duration and where it went (Spark's durationMs per phase).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from pipeline.generator import LogSpec, generate
from pipeline.spark.eventlog import write_event_log
from pipeline.spark.replay import ReplayOptions, start_replay
from pipeline.spark.session import build_session


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--events", type=int, default=30_000)
    p.add_argument("--groups", type=int, default=40)
    p.add_argument("--small", type=int, default=200, help="events per incremental commit")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    events = generate(LogSpec(groups=args.groups, events=args.events + args.small * args.rounds,
                              seed=3))
    head, tail = events[:args.events], events[args.events:]
    spark = build_session("bench-stream", "local")
    root = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    log = str(root / "events")
    write_event_log(spark, head, log)
    start = time.monotonic()
    replay = start_replay(spark, ReplayOptions(
        events=log, warehouse=str(root / "wh"), checkpoint=str(root / "ck"),
        trigger="processing-time:1", database=None))
    replay.query.processAllAvailable()
    catch_up = time.monotonic() - start
    print(f"catch-up: {len(head):,} events, {args.groups} groups, {catch_up:.1f} s, "
          f"{len(head) / catch_up:,.0f} events/s (includes query start)")
    latencies = []
    for i in range(args.rounds):
        chunk = tail[i * args.small:(i + 1) * args.small]
        write_event_log(spark, chunk, log, mode="append")
        seen = replay.query.lastProgress["batchId"] if replay.query.lastProgress else -1
        replay.query.processAllAvailable()
        batches = [b for b in replay.query.recentProgress
                   if b["batchId"] > seen and b["numInputRows"] > 0]
        for b in batches:
            latencies.append(b["batchDuration"])
            phases = {k: v for k, v in b["durationMs"].items() if v > 50}
            print(f"incremental batch {b['batchId']}: {b['numInputRows']} rows, "
                  f"{b['batchDuration']} ms; phases {phases}")
    if latencies:
        print(f"warm micro-batch latency: median {statistics.median(latencies):.0f} ms "
              f"for ~{args.small} events")
    replay.stop()
    spark.stop()


if __name__ == "__main__":
    main()
