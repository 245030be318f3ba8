"""Benchmark (not a test): a long-running stream, batch after batch, with lag (a
micro-batch on day 90 must cost what one on day 1 costs).

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_soak.py --batches 300 --chunk 500

Generates an offsets-topic log and its end-offset samples, then starts the replay with
`--end-offsets`, a processing-time trigger and (`--maintain-every`) its own upkeep, and feeds
it as a cluster would: `--batches` times, appends the next `--chunk` events (one Delta commit)
and the samples taken in their stretch of event time, and waits for the stream to take them.
The generated log's event time is dense (a few minutes for 150 k events), so the watermark
delay (`--delay`) and the sample interval (`--sample-interval`) are scaled down with it: a
sample round passes the watermark in nearly every batch, as on a cluster with the defaults.

Prints each batch's seconds; the median of the first and the last fifth and their ratio
(target <= 1.2x); per output table its files (active and on disk) and log commits; the state
store's rows and bytes against the live groups (target: rows == live groups); the peak PSS of
the process tree (driver, JVM, workers) in the first and the last fifth (target: flat) and
the JVM's live heap after a full GC every 25 batches (a leak shows there); and
freshness, the time from an append's commit to the end of the micro-batch that wrote its rows
(median; the target, <= 30 s at 2,000 events/s with a 10 s trigger, is for `--trigger 10
--chunk 20000`).

`--metrics on` serves the Prometheus metrics as `jobs/replay.py --metrics-port 0
--metrics-per-partition` does, scraped every second by a thread here (as Prometheus would),
and prints the seconds each batch's publish took (it runs beside the next batch);
`--metrics both` runs the soak twice on one log, without then with, one after the other, and
prints the two runs' batch seconds side by side: what the metrics cost a batch.

`--rate N` feeds the stream as a cluster's log grows, whatever the stream does: the appends
come every `--chunk`/N seconds from a thread of their own (open loop), not after the stream
took the last one. Freshness is then each append's commit to the end of the first batch that
read its version, and its median in the first and the last fifth of the appends show whether
the stream keeps up (a stream that falls behind sees it grow batch after batch); it prints the
events/s offered and the events/s taken. The target, a median <= 30 s at 2,000 events/s with
a 10 s trigger, is `--trigger 10 --chunk 20000 --rate 2000`.

`--ahead` writes the whole log first, in `--batches` commits (each with its samples' commit),
and reads it one commit a batch (`maxFilesPerTrigger` 1 on both sources, available-now), the
batches back to back: the same micro-batches without the appends' wait, in about a third of
the time; it measures no freshness.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import bench_backfill  # run as a script: this folder is on sys.path
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.fold.states import DEAD
from pipeline.generator import LogSpec, end_offset_samples, generate, last_event_ms
from pipeline.metrics import MetricsServer, serve
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.lag.lagflow import LagOptions
from pipeline.spark.lag.samples import samples_frame
from pipeline.spark.runtime.session import build_session
from pipeline.spark.stream.maintain import Upkeep
from pipeline.spark.stream.replay import Replay, ReplayOptions, start_replay
from pipeline.spark.tables.options import interval_ms
from schemas import OUTPUT_TABLES
from schemas.lag import LAG_TABLES

PeakMemory = bench_backfill.PeakMemory


def table_files(spark: SparkSession, path: Path) -> tuple[int, int, int]:
    """(active files, parquet files on disk, log commits) of the Delta table at `path`."""
    active = DeltaTable.forPath(spark, str(path)).detail().select("numFiles").first()
    on_disk = sum(1 for p in path.rglob("*.parquet") if "_delta_log" not in p.parts)
    commits = sum(1 for _ in (path / "_delta_log").glob("*.json"))
    return (0 if active is None else int(active[0])), on_disk, commits


def live_heap(spark: SparkSession) -> int:
    """The driver JVM's heap in use just after a full collection (`System.gc()`): what it
    holds live. Its PSS grows towards the heap's maximum (a quarter of the RAM by default)
    whether anything leaks or not; this grows only if something does."""
    jvm: Any = spark.sparkContext._jvm
    jvm.java.lang.System.gc()
    usage = jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage()
    return int(usage.getUsed())


def fifths(values: list[float]) -> tuple[float, float]:
    n = max(1, len(values) // 5)
    return statistics.median(values[:n]), statistics.median(values[-n:])


@contextmanager
def scraped(on: bool) -> Iterator[MetricsServer | None]:
    """With `on`, the endpoint (per-partition series on) and a thread scraping it every
    second until the run ends."""
    if not on:
        yield None
        return
    stop = threading.Event()
    with serve(0, per_partition=True) as server:
        def scrape() -> None:
            while not stop.wait(1.0):
                with urllib.request.urlopen(server.url, timeout=60) as r:
                    r.read()
        scraper = threading.Thread(target=scrape, daemon=True)
        scraper.start()
        try:
            yield server
        finally:
            stop.set()
            scraper.join()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--batches", type=int, default=300)
    p.add_argument("--chunk", type=int, default=500, help="events appended a batch")
    p.add_argument("--groups", type=int, default=200)
    p.add_argument("--trigger", type=int, default=1, help="processing-time trigger, seconds")
    p.add_argument("--delay", default="5 seconds", help="the watermark delay")
    p.add_argument("--sample-interval", default="1 second")
    p.add_argument("--maintain-every", type=int, default=50, help="0: no upkeep")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--ahead", action="store_true",
                   help="write the log first in --batches commits (its samples with it) and "
                        "read it one commit a batch, back to back: a third of the time, no "
                        "freshness")
    p.add_argument("--metrics", choices=("off", "on", "both"), default="off",
                   help="serve and scrape the Prometheus metrics; both: a run without, then with")
    p.add_argument("--rate", type=float, default=None,
                   help="events/s appended on a clock of their own (open loop); default: "
                        "each append after the stream took the last one")
    args = p.parse_args()
    # the lag step's reads of history (`lag: read the history again for ...`) are the
    # expensive path a soak must not take batch after batch: shown as they happen
    logging.basicConfig(format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("pipeline.spark.lag.lagstate").setLevel(logging.INFO)
    root = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    spec = LogSpec(groups=args.groups, events=args.chunk * args.batches, seed=args.seed,
                   log_kind="offsets-topic", sample_interval_ms=interval_ms(args.sample_interval))
    t = time.perf_counter()
    events = generate(spec)
    samples = sorted(end_offset_samples(spec, last_event_ms(events)),
                     key=lambda s: s["sampled_at"])
    print(f"generated {len(events):,} events, {args.groups} groups, {len(samples):,} samples "
          f"in {time.perf_counter() - t:.0f} s; log spans "
          f"{(last_event_ms(events) - spec.start_ms) / 60_000:.1f} min of event time")
    spark = build_session("bench-soak", "local")
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", str(args.batches * 4 + 100))
    runs = {"off": [False], "on": [True], "both": [False, True]}[args.metrics]
    seconds = {on: soak(spark, args, root / ("metrics" if on else "plain"), events, samples, on)
               for on in runs}
    if len(seconds) == 2:
        off, on = (statistics.median(seconds[m]) for m in (False, True))
        print(f"\nbatch seconds, median: without metrics {off:.2f}, with {on:.2f} -> "
              f"{on / off:.2f}x ({on - off:+.2f} s a batch)")
    spark.stop()


def soak(spark: SparkSession, args: argparse.Namespace, root: Path, events: list[Any],
         samples: list[dict[str, Any]], metrics: bool) -> list[float]:
    """One soak run under `root`, its figures printed; returns each batch's seconds."""
    log, ends, wh = root / "events", root / "end_offsets", root / "wh"
    write_event_log(spark, events[:1], str(log))
    samples_frame(spark, samples[:1]).coalesce(1).write.format("delta").save(str(ends))
    with scraped(metrics) as server:
        return run(spark, args, events, samples, log, ends, wh, root, server)


def appends(args: argparse.Namespace, events: list[Any], samples: list[dict[str, Any]]
            ) -> Iterator[tuple[list[Any], list[dict[str, Any]]]]:
    """The `--batches` appends after the first event: each `--chunk` events (the last takes
    the rest) and the samples taken in their stretch of event time."""
    taken, sampled = 1, 1
    for i in range(args.batches):
        chunk = events[taken:taken + args.chunk] if i < args.batches - 1 else events[taken:]
        taken += len(chunk)
        until = max((e.event_time for e in chunk if e.event_time is not None), default=0)
        rows = []
        while sampled < len(samples) and samples[sampled]["sampled_at"] <= until:
            rows.append(samples[sampled])
            sampled += 1
        yield chunk, rows


def append(spark: SparkSession, log: Path, ends: Path, chunk: list[Any],
           rows: list[dict[str, Any]]) -> None:
    """One append: the samples first (a commit of one file, if any), then the events (a
    commit of one file)."""
    if rows:
        samples_frame(spark, rows).coalesce(1).write.format("delta").mode("append").save(
            str(ends))
    write_event_log(spark, chunk, str(log), mode="append")


def feed(spark: SparkSession, args: argparse.Namespace, events: list[Any],
         samples: list[dict[str, Any]], log: Path, ends: Path,
         made: list[tuple[int, float]]) -> None:
    """The open loop: append `i` at `i * chunk / rate` seconds from now (at once when late),
    recording the log's version it made (the log's first commit is version 0) and when."""
    began = time.time()
    for i, (chunk, rows) in enumerate(appends(args, events, samples)):
        wait = began + i * args.chunk / args.rate - time.time()
        if wait > 0:
            time.sleep(wait)  # the load's clock, not a wait for the stream
        append(spark, log, ends, chunk, rows)
        made.append((i + 1, time.time()))


def read_through(progress: dict[str, Any], log: str) -> int:
    """The event log's last version a batch read whole (a Delta source's end offset names
    the next file to read: `index` -1 at the start of `reservoirVersion`)."""
    for source in progress["sources"]:
        if log in source["description"]:
            end = source["endOffset"]
            if isinstance(end, str):
                end = json.loads(end)
            version = int(end["reservoirVersion"])
            return version - 1 if int(end.get("index", -1)) < 0 else version
    return -1


def run(spark: SparkSession, args: argparse.Namespace, events: list[Any],
        samples: list[dict[str, Any]], log: Path, ends: Path, wh: Path, root: Path,
        server: MetricsServer | None) -> list[float]:
    def start(trigger: str, one: int | None) -> Replay:
        return start_replay(spark, ReplayOptions(
            events=str(log), warehouse=str(wh), checkpoint=str(root / "ck"), trigger=trigger,
            database=None, watermark_delay=args.delay, max_files_per_trigger=one,
            lag=LagOptions(str(ends)),
            upkeep=Upkeep(args.maintain_every) if args.maintain_every else None,
            metrics=None if server is None else server.collector))

    if args.ahead:
        # the first batch reads the tables' first commits; the rest is written after it, so
        # that each later batch reads one commit of each (a samples' version read whole is
        # the version the lag step reads the samples at: never a part of a first snapshot)
        start("available-now", None).wait()
        t = time.perf_counter()
        for chunk, rows in appends(args, events, samples):
            append(spark, log, ends, chunk, rows)
        print(f"wrote the log ahead in {args.batches} commits in "
              f"{time.perf_counter() - t:.0f} s", flush=True)
        replay = start("available-now", 1)
    else:
        replay = start(f"processing-time:{args.trigger}", None)
    assert replay.query is not None
    query = replay.query
    seconds: list[float] = []
    fresh: list[float] = []
    memory: list[dict[str, int]] = []
    state: list[dict[str, Any]] = []
    seen: set[tuple[int, str]] = set()
    appended = 0.0
    made: list[tuple[int, float]] = []  # open loop: each append's log version and time
    busy: list[float] = []  # every batch's seconds, with input or not
    took = 0.0

    def taken() -> None:
        """The progress of the batches with input not yet counted."""
        for b in query.recentProgress:
            if (b["batchId"], b["timestamp"]) in seen:
                continue
            seen.add((b["batchId"], b["timestamp"]))
            busy.append(b["batchDuration"] / 1000)
            if b["numInputRows"] == 0:  # the watermark moved: the lag rows, the timers
                print(f"  micro-batch {b['batchId']}: no input, "
                      f"{b['batchDuration'] / 1000:.1f} s", flush=True)
                continue
            seconds.append(b["batchDuration"] / 1000)
            started = datetime.fromisoformat(b["timestamp"].replace("Z", "+00:00"))
            ended = started.timestamp() + b["batchDuration"] / 1000
            if args.rate:
                read = read_through(b, str(log))
                while made and made[0][0] <= read:  # the appends this batch read
                    fresh.append(ended - made.pop(0)[1])
            else:
                fresh.append(ended - appended)
            print(f"  micro-batch {b['batchId']}: {b['numInputRows']:,} rows, "
                  f"{seconds[-1]:.1f} s", flush=True)
            state.append({op["operatorName"]: (op["numRowsTotal"], op["memoryUsedBytes"])
                          for op in b["stateOperators"]})

    heap: list[int] = []  # the JVM's live heap every 25 batches

    def report(i: int) -> None:
        if (i + 1) % 25 == 0 and seconds:
            heap.append(live_heap(spark))
            print(f"batch {i + 1}: last {seconds[-1]:.1f} s, median so far "
                  f"{statistics.median(seconds):.1f} s, JVM heap live {heap[-1] / 2**30:.2f} "
                  "GiB", flush=True)

    def watch(running: Callable[[], bool], wait: Callable[[], object]) -> None:
        """Each batch's progress and memory as it ends, while `running`."""
        last = None
        while running():
            wait()
            progress = query.lastProgress
            if progress is not None and progress["batchId"] != last:
                last = progress["batchId"]
                memory.append(dict(peak.peak))
                peak.reset()
                taken()
                report(len(memory) - 1)

    with PeakMemory() as peak:
        if args.ahead:  # one batch per commit, back to back, until the log's end
            watch(lambda: query.isActive, lambda: query.awaitTermination(1))
            taken()
        elif args.rate:  # appends on their own clock; each batch's progress as it ends
            query.processAllAvailable()
            seen.update((b["batchId"], b["timestamp"]) for b in query.recentProgress)
            feeder = threading.Thread(target=feed, args=(spark, args, events, samples, log,
                                                         ends, made), daemon=True)
            began = time.time()
            feeder.start()
            watch(feeder.is_alive, lambda: feeder.join(1.0))
            query.processAllAvailable()
            taken()
            took = time.time() - began
        else:
            query.processAllAvailable()
            seen.update((b["batchId"], b["timestamp"]) for b in query.recentProgress)
            for i, (chunk, rows) in enumerate(appends(args, events, samples)):
                append(spark, log, ends, chunk, rows)
                appended = time.time()
                query.processAllAvailable()
                taken()
                memory.append(dict(peak.peak))
                peak.reset()
                report(i)
    published = list(replay.metrics.took_s) if replay.metrics else []
    replay.stop()
    first, last = fifths(seconds)
    print(f"\n{len(seconds)} micro-batches of ~{args.chunk} events with lag, trigger "
          f"{args.trigger} s, watermark delay {args.delay}, upkeep every "
          f"{args.maintain_every or 'never'}, metrics {'on' if server else 'off'}")
    if published:
        print(f"  metrics publish seconds (last {len(published)} batches): median "
              f"{statistics.median(published):.2f}, max {max(published):.2f}")
    print(f"  batch seconds: first fifth median {first:.2f}, last fifth {last:.2f} -> "
          f"{last / first:.2f}x (target <= 1.2x)")
    if args.rate:
        f_first, f_last = fifths(fresh)
        print(f"  offered {args.rate:,.0f} events/s: {len(events) - 1:,} events; the stream "
              f"ran batches {sum(busy):.0f} s of the {took:.0f} s from the first append to the "
              f"last batch: busy {sum(busy) / took:.0%}")
        print(f"  freshness (append -> the batch that read it): median "
              f"{statistics.median(fresh):.1f} s, max {max(fresh):.1f} s; first fifth "
              f"{f_first:.1f} s, last fifth {f_last:.1f} s -> {f_last / f_first:.2f}x")
    elif not args.ahead:
        print(f"  freshness (append -> batch done): median {statistics.median(fresh):.1f} s, "
              f"max {max(fresh):.1f} s")
    for part in ("total", *PeakMemory.PARTS):
        m_first, m_last = fifths([float(m[part]) for m in memory])
        print(f"  peak PSS, {part}: first fifth {m_first / 2**30:.2f} GiB, last fifth "
              f"{m_last / 2**30:.2f} GiB -> {m_last / m_first:.2f}x")
    print("  JVM heap live after a full GC, every 25 batches: "
          + ", ".join(f"{h / 2**30:.2f}" for h in heap) + " GiB")
    live = spark.read.format("delta").load(str(wh / "group_state")).where(
        F.col("state") != DEAD).count()
    for name, (rows_total, used) in (state[-1] if state else {}).items():
        print(f"  state store {name}: {rows_total:,} rows, {used / 2**20:.1f} MiB; live groups "
              f"{live:,}")
    for table in (*OUTPUT_TABLES, *LAG_TABLES):
        path = wh / table
        if (path / "_delta_log").is_dir():
            active, on_disk, commits = table_files(spark, path)
            print(f"  {table}: {active} active files, {on_disk} on disk, {commits} log commits")
    return seconds


if __name__ == "__main__":
    main()
