"""Benchmark (not a test): backfill and streaming replay against Spark's own floor, one run.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_backfill.py --events 2000000 --groups 20000

On one generated log (written once as a Delta table, reused from --log-dir if it is there),
after a warm-up (JVM, and the Python workers, whose first start costs ~20 s), each measured
`--repeat` times (median printed):
  floor       scan of the Delta log + shuffle by group + a trivial aggregate (noop sink);
              Spark prunes the scan to the two columns the aggregate reads
  floor-all   the same with every column read and shuffled by group, then hashed
  backfill    jobs/backfill.py's run_backfill, every table written
  fold-only   the backfill's applyInArrow fold to a noop sink (what the writes cost)
  stream      the streaming replay, available-now, one micro-batch, every table written
  stream-noop the streaming fold to a noop sink (what the writes cost)
  trivial     applyInPandasWithState counting rows per group, the log's columns, noop sink
  trivial-packed  the same over the replay's own packed input (its stateful operator alone)
  pure        the fold in this one Python process (one core)
Also: linear cost (the backfill on a 10x smaller log of the same shape), state bytes per
group, the peak resident memory of the whole process tree (driver, JVM, workers), each run's
CPU seconds in each of them, and from those the least time a backfill could take on this
machine's cores (floor-all's CPU and the pure fold's, spread over every core).
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import pstats
import shutil
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout
from pyspark.sql.types import StructType

from pipeline.fold import CoordinatorConfig, Event, dumps, fold
from pipeline.fold.events import events_of
from pipeline.generator import LogSpec, generate
from pipeline.spark.backfill import BackfillOptions, arrow_batches, folded_history, run_backfill
from pipeline.spark.events.eventlog import events_to_arrow, select_events, write_event_log
from pipeline.spark.events.packing import columns_from_arrow, packed_events
from pipeline.spark.runtime.session import build_session
from pipeline.spark.stream.replay import (
    ReplayOptions,
    folded_stream,
    read_events,
    run_replay,
    stream_input,
)
from pipeline.spark.tables.contract import event_schema
from tests.grouping import by_group


class PeakMemory:
    """Samples the proportional set size (PSS: a page shared by n processes counts 1/n, so
    shared pages are counted once in a sum) of this process and all its descendants, apart:
    the driver (this Python), the JVM, and Spark's Python workers (the daemon and its forks,
    summed). Keeps each part's peak and the peak of the sum.

    A sample walks every process's page tables (~13 ms with an idle JVM, ~45 ms with a 2 M
    event run's), in this process: every 0.2 s that took a quarter of a core from the runs it
    measured. It now waits 20 times its last sample's time, at least 0.2 s, so it costs at
    most 5 % of one core."""

    PARTS = ("driver", "jvm", "workers")

    def __init__(self) -> None:
        self.peak: dict[str, int] = dict.fromkeys((*self.PARTS, "total"), 0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        pause = 0.2
        while not self._stop.wait(pause):
            start = time.perf_counter()
            parts = _tree_pss()
            pause = max(0.2, 20 * (time.perf_counter() - start))
            for name, value in (*parts.items(), ("total", sum(parts.values()))):
                self.peak[name] = max(self.peak[name], value)

    def reset(self) -> None:
        self.peak = dict.fromkeys(self.peak, 0)

    def report(self) -> str:
        return ", ".join(f"{name} {self.peak[name] / 2**30:.2f} GiB" for name in self.peak)


def _tree() -> Iterator[tuple[str, str]]:
    """Each process of the tree under this one (pids), with its part: the driver (this
    Python), the JVM, or Spark's Python workers (the daemon and its forks)."""
    todo = [(str(os.getpid()), "driver")]
    while todo:
        pid, part = todo.pop()
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            if name == "java":
                part = "jvm"
            elif part == "jvm":
                part = "workers"  # a process the JVM started: pyspark's daemon and workers
            yield pid, part
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [(child, part) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue


def _tree_pss() -> dict[str, int]:
    parts = dict.fromkeys(PeakMemory.PARTS, 0)
    for pid, part in _tree():
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    parts[part] += int(line.split()[1]) * 1024
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return parts


_TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu() -> dict[str, float]:
    """CPU seconds (user + system) used so far by the driver, the JVM and the workers, each
    process's reaped children included (a worker that exited counts in its daemon's)."""
    parts = dict.fromkeys(PeakMemory.PARTS, 0.0)
    for pid, part in _tree():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        parts[part] += sum(int(f) for f in fields[11:15]) / _TICK  # utime stime cutime cstime
    return parts


def timed(runs: int, setup: Callable[[], Any], work: Callable[[Any], Any],
          cpu: list[dict[str, float]] | None = None) -> list[float]:
    """The wall time of each of `runs` runs of `work`; with `cpu`, each run's CPU seconds
    per part of the process tree are appended to it."""
    times = []
    for _ in range(runs):
        arg = setup()
        before = tree_cpu() if cpu is not None else {}
        start = time.perf_counter()
        work(arg)
        times.append(time.perf_counter() - start)
        if cpu is not None:
            after = tree_cpu()
            cpu.append({part: after[part] - before[part] for part in after})
    return times


def floor(spark: SparkSession, log: str) -> None:
    (select_events(spark.read.format("delta").load(log)).groupBy("group_id")
     .agg(F.count("*"), F.max("log_offset")).write.format("noop").mode("overwrite").save())


def floor_all(spark: SparkSession, log: str) -> None:
    """The floor without column pruning: every column read and shuffled by group (as the
    fold's input is), then hashed per group."""
    events = select_events(spark.read.format("delta").load(log))
    (events.repartition("group_id").groupBy("group_id")
     .agg(F.max(F.hash(*events.columns)), F.count("*"))
     .write.format("noop").mode("overwrite").save())


def fold_only(spark: SparkSession, log: str, cfg: CoordinatorConfig) -> None:
    """The backfill's own fold (run_backfill's), to a noop sink."""
    with arrow_batches(spark):
        (folded_history(packed_events(select_events(spark.read.format("delta").load(log))), cfg,
                        None, seed=True)
         .write.format("noop").mode("overwrite").save())


def count_rows(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
               state: Any) -> Iterator[pd.DataFrame]:
    n = (state.get[0] if state.exists else 0) + sum(len(f) for f in frames)
    state.update((n,))
    yield pd.DataFrame({"group_id": [key[0]], "n": [n]})


def stream_to_noop(spark: SparkSession, frame: DataFrame, checkpoint: str) -> None:
    (frame.writeStream.format("noop").outputMode("append")
     .option("checkpointLocation", checkpoint).trigger(availableNow=True).start()
     .awaitTermination())


def trivial(spark: SparkSession, opts: ReplayOptions) -> None:
    events = read_events(spark, opts, None).withWatermark("event_time", opts.watermark_delay)
    counted = events.groupBy("group_id").applyInPandasWithState(
        count_rows, "group_id string, n long", "n long", "append", GroupStateTimeout.NoTimeout)
    stream_to_noop(spark, counted, opts.checkpoint)


def trivial_packed(spark: SparkSession, opts: ReplayOptions) -> None:
    """`trivial` over the replay's own input (packed, with the seed and the watermark's
    guard): the stateful operator's cost with nothing to fold."""
    counted = stream_input(read_events(spark, opts, None), opts).groupBy("group_id") \
        .applyInPandasWithState(count_rows, "group_id string, n long", "n long", "append",
                                GroupStateTimeout.NoTimeout)
    stream_to_noop(spark, counted, opts.checkpoint)


def profiled(spark: SparkSession, name: str, work: Callable[[], Any], top: int = 14) -> None:
    """`work` once under Spark's Python UDF profiler (cProfile in each worker, around our
    function: the Arrow/pandas conversion into it is Spark's and not inside); the top
    functions by own time, summed over the workers."""
    spark.profile.clear()
    spark.conf.set("spark.sql.pyspark.udf.profiler", "perf")
    start = time.perf_counter()
    try:
        work()
    finally:
        spark.conf.unset("spark.sql.pyspark.udf.profiler")
    wall = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as out:
        spark.profile.dump(out, type="perf")
        files = sorted(str(f) for f in Path(out).glob("*.pstats"))
        print(f"\nprofile: {name} ({wall:.1f} s wall, under the profiler)")
        if not files:
            print("  (no profile collected)")
            return
        stream = io.StringIO()
        stats = pstats.Stats(*files, stream=stream)
        stats.sort_stats("tottime").print_stats(top)
        lines = stream.getvalue().splitlines()
        start_at = next(i for i, line in enumerate(lines) if "ncalls" in line)
        total = next(line for line in lines if "function calls" in line)
        print("  " + total.strip())
        for line in lines[start_at:start_at + top + 1]:
            print("  " + line.replace(str(Path.cwd()) + "/", "")[:150])


def fresh(root: Path, name: str) -> Path:
    path = root / name
    shutil.rmtree(path, ignore_errors=True)
    return path


def pure_fold(events: list[Event], cfg: CoordinatorConfig) -> list[int]:
    return [len(dumps(fold(g, evs, cfg).group)) for g, evs in by_group(events).items()]


def log_spec(events: int, groups: int, kind: str) -> LogSpec:
    return LogSpec(groups=groups, events=events, seed=7, bad_rows=0.01, log_kind=kind)


def make_log(spark: SparkSession, path: Path, events: int, groups: int,
             kind: str, parts: int = 1, read_back: bool = True) -> list[Event]:
    """The log's events; generated and written once, then read back from the Delta table
    (unless not `read_back`: then none)."""
    t = time.perf_counter()
    if not (path / "_delta_log").is_dir():
        if parts > 1:
            write_log_in_parts(spark, path, log_spec(events, groups, kind), parts)
        else:
            log = generate(log_spec(events, groups, kind))
            print(f"generated {len(log):,} events, {groups:,} groups in "
                  f"{time.perf_counter() - t:.0f} s")
            write_event_log(spark, log, str(path), commits=8)
            return log
    if not read_back:
        return []
    log = events_of(columns_from_arrow(
        select_events(spark.read.format("delta").load(str(path))).toArrow()))
    print(f"read {len(log):,} events back from {path} in {time.perf_counter() - t:.0f} s")
    return log


def _write_part(spec: LogSpec, part: int, parts: int, out: str, schema: StructType) -> int:
    """In a process of the pool: part `part` of the log, as one Parquet file (no Spark)."""
    events = generate(spec, part, parts)
    pq.write_table(events_to_arrow(events, schema), out)
    return len(events)


def write_log_in_parts(spark: SparkSession, path: Path, spec: LogSpec, parts: int) -> None:
    """A log too big for this process's memory: its `parts`, generated side by side in a
    process each (as many at once as cores), written as Parquet, then as one Delta commit."""
    t = time.perf_counter()
    staging = fresh(path.parent, f"{path.name}.parts")
    staging.mkdir(parents=True)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(os.cpu_count() or 1, mp_context=context) as pool:
        counts = list(pool.map(_write_part, [spec] * parts, range(parts), [parts] * parts,
                               [str(staging / f"part-{k:04d}.parquet") for k in range(parts)],
                               [event_schema()] * parts))
    print(f"generated {sum(counts):,} events, {spec.groups:,} groups in {parts} parts in "
          f"{time.perf_counter() - t:.0f} s")
    (spark.read.schema(event_schema()).parquet(str(staging))
     .write.format("delta").mode("overwrite").save(str(path)))
    shutil.rmtree(staging)


def memory_run(spark: SparkSession, root: Path, log_path: Path, args: argparse.Namespace,
               cfg: CoordinatorConfig) -> None:
    """The backfill alone on one log, with the peak memory of the process tree (this driver
    holds no events: what is measured is Spark's and the fold's)."""
    make_log(spark, log_path, args.events, args.groups, args.log_kind, args.parts, False)
    log = str(log_path)
    n = spark.read.format("delta").load(log).count()
    groups = spark.read.format("delta").load(log).select("group_id").distinct().count()
    with PeakMemory() as warm_up:
        floor(spark, log)  # JVM, Delta log, Python workers' first imports
    with PeakMemory() as memory:
        times = timed(args.repeat, lambda: fresh(root, "wh-memory"), lambda w: run_backfill(
            spark, BackfillOptions(events=log, warehouse=str(w), database=None, config=cfg)))
    spark.stop()
    med = statistics.median(times)
    runs = ", ".join(f"{x:.1f}" for x in times)
    print(f"\n{n:,} events (log rows), {groups:,} group ids, 2 cores (local[*])")
    print(f"  backfill {med:8.1f} s {n / med:>10,.0f} events/s   [{runs}]")
    print(f"peak memory (PSS) of the warm-up (floor): {warm_up.report()}")
    print(f"peak memory (PSS) of the backfill: {memory.report()}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=2_000_000)
    p.add_argument("--groups", type=int, default=20_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--stream-repeat", type=int, default=1, help="the stream is the slow one")
    p.add_argument("--log-kind", default="journal", help="journal or offsets-topic")
    p.add_argument("--log-dir", default=str(Path(tempfile.gettempdir()) / "bench-backfill"))
    p.add_argument("--skip-small", action="store_true", help="no linearity run")
    p.add_argument("--only-log", action="store_true", help="write the logs, measure nothing")
    p.add_argument("--profile", action="store_true",
                   help="also profile the backfill's and the stream's fold on the 10x smaller log")
    p.add_argument("--parts", type=int, default=1,
                   help="generate a new log in this many parts, side by side (a log too big "
                        "for one process: ~2.2 GiB a million events in each)")
    p.add_argument("--backfill-only", action="store_true",
                   help="the memory run: only the backfill (after a warm-up), its time and the "
                        "peak memory of the process tree; the events are not loaded here")
    p.add_argument("--master", default=None,
                   help="Spark master (default: the local profile's local[*]); local[1] against "
                        "local[2] is the scale-out figure")
    args = p.parse_args()
    cfg = CoordinatorConfig()
    root = Path(args.log_dir)
    root.mkdir(parents=True, exist_ok=True)
    spark = build_session("bench-backfill", "local",
                          None if args.master is None else {"spark.master": args.master})
    spark.sparkContext.setLogLevel("ERROR")
    log_path = root / f"{args.log_kind}-{args.events}-{args.groups}"
    small_path = root / f"{args.log_kind}-{args.events // 10}-{args.groups // 10}"
    if args.only_log:
        make_log(spark, log_path, args.events, args.groups, args.log_kind, args.parts, False)
        if not args.skip_small:
            make_log(spark, small_path, args.events // 10, args.groups // 10, args.log_kind,
                     args.parts, False)
        spark.stop()
        return
    if args.backfill_only:
        memory_run(spark, root, log_path, args, cfg)
        return
    events = make_log(spark, log_path, args.events, args.groups, args.log_kind)
    n = len(events)
    log = str(log_path)
    results: dict[str, list[float]] = {}
    cpu_use: dict[str, list[dict[str, float]]] = defaultdict(list)

    def measure(name: str, setup: Callable[[], Any], work: Callable[[Any], Any],
                runs: int = args.repeat) -> None:
        results[name] = timed(runs, setup, work, cpu_use[name])

    with PeakMemory() as memory:
        floor(spark, log)  # warm-up: JVM, Delta log, and the Python workers' first imports
        fold_only(spark, log, cfg)
        measure("floor", lambda: None, lambda _: floor(spark, log))
        measure("floor-all", lambda: None, lambda _: floor_all(spark, log))
        measure("fold-only", lambda: None, lambda _: fold_only(spark, log, cfg))

        def backfill(warehouse: Path) -> None:
            run_backfill(spark, BackfillOptions(events=log, warehouse=str(warehouse),
                                                database=None, config=cfg))

        measure("backfill", lambda: fresh(root, "wh-backfill"), backfill)
        seeds = spark.read.format("delta").load(str(root / "wh-backfill" / "_backfill_state"))
        size = seeds.select(F.length("_state").alias("b")).agg(
            F.expr("percentile(b, 0.5)"), F.max("b")).first()

        def options(tag: str) -> ReplayOptions:
            return ReplayOptions(events=log, warehouse=str(fresh(root, f"wh-{tag}")),
                                 checkpoint=str(fresh(root, f"ck-{tag}")), database=None,
                                 config=cfg)

        measure("trivial", lambda: options("trivial"), lambda o: trivial(spark, o),
                args.stream_repeat)
        measure("trivial-packed", lambda: options("trivial-packed"),
                lambda o: trivial_packed(spark, o), args.stream_repeat)
        measure("stream-noop", lambda: options("noop"), lambda o: stream_to_noop(
            spark, folded_stream(read_events(spark, o, None), o), o.checkpoint), args.stream_repeat)
        measure("stream", lambda: options("stream"), lambda o: run_replay(spark, o),
                args.stream_repeat)
        spark_peak = memory.report()
    measure("pure", lambda: None, lambda _: pure_fold(events, cfg))
    small: list[float] = []
    small_peak = None
    if not args.skip_small:
        make_log(spark, small_path, args.events // 10, args.groups // 10, args.log_kind)
        small_log = str(small_path)
        run_backfill(spark, BackfillOptions(events=small_log, database=None, config=cfg,
                                            warehouse=str(fresh(root, "wh-small"))))
        with PeakMemory() as small_memory:
            small = timed(args.repeat, lambda: fresh(root, "wh-small"), lambda w: run_backfill(
                spark, BackfillOptions(events=small_log, warehouse=str(w), database=None,
                                       config=cfg)))
        small_peak = small_memory.report()
        if args.profile:
            profiled(spark, f"backfill fold-only, {args.events // 10:,} events",
                     lambda: fold_only(spark, small_log, cfg))
            o = ReplayOptions(events=small_log, warehouse=str(fresh(root, "wh-profile")),
                              checkpoint=str(fresh(root, "ck-profile")), database=None, config=cfg)
            profiled(spark, f"stream fold to noop, {args.events // 10:,} events", lambda: stream_to_noop(
                spark, folded_stream(read_events(spark, o, None), o), o.checkpoint))
    spark.stop()

    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"\n{n:,} events, {args.groups:,} groups, 2 cores (local[*]); median of "
          f"{args.repeat} (streams: {args.stream_repeat})")
    cpu = {name: {part: statistics.median(run[part] for run in runs) for part in runs[0]}
           for name, runs in cpu_use.items()}
    for name, value in med.items():
        runs = ", ".join(f"{x:.1f}" for x in results[name])
        used = ", ".join(f"{part} {cpu[name][part]:.1f}" for part in cpu[name])
        print(f"  {name:<12} {value:8.1f} s {n / value:>10,.0f} events/s   [{runs}]   "
              f"CPU s: {used}")
    workers = cpu["backfill"]["workers"] / n * 1e6
    print("targets in brackets (offsets-topic log; the journal's backfill rate: >= 25 k):")
    print(f"  backfill events/s                      {n / med['backfill']:,.0f}   (>= 50,000)")
    print(f"  backfill throughput / floor-all's      {med['floor-all'] / med['backfill']:.2f}"
          "   (>= 0.35; floor-all: every column read and shuffled)")
    print(f"  stream throughput / backfill's         {med['backfill'] / med['stream']:.2f}"
          "   (>= 0.8)")
    print(f"  backfill's Python workers, us/event    {workers:.1f}   (3x lower than 4067a3a's: "
          "bench_processes.py --commit 4067a3a prints both)")
    print(f"  backfill time / its fold-only time     {med['backfill'] / med['fold-only']:.2f}"
          "   (what the writes cost)")
    print(f"  backfill on 2 cores / pure fold on one {med['pure'] / med['backfill']:.2f}")
    print(f"  stream time / trivial stateful fold's  {med['stream'] / med['trivial']:.2f}")
    print(f"  stream-noop time / trivial's           {med['stream-noop'] / med['trivial']:.2f}")
    print(f"  stream-noop time / trivial-packed's    "
          f"{med['stream-noop'] / med['trivial-packed']:.2f}   (the stateful operator's share)")
    # What limits the first and third: a backfill reads and shuffles every column (at least
    # floor-all's CPU) and folds every event (at least the pure fold's), on this many cores.
    cores = os.cpu_count() or 1
    total = {name: sum(parts.values()) for name, parts in cpu.items()}
    total["pure"] = cpu["pure"]["driver"]  # the fold runs here; the JVM idles meanwhile
    bound = (total["floor-all"] + total["pure"]) / cores
    print(f"the least a backfill can take here: (floor-all's CPU {total['floor-all']:.1f} s + the "
          f"pure fold's {total['pure']:.1f} s) / {cores} cores = {bound:.1f} s, so at best:")
    print(f"  backfill throughput / floor-all's      {med['floor-all'] / bound:.2f}")
    print(f"  backfill on 2 cores / pure fold on one {med['pure'] / bound:.2f}")
    print(f"  backfill's CPU / that least CPU        {total['backfill'] / (bound * cores):.2f}"
          "   (what Spark's pipes into the fold and the writes add)")
    if small:
        ratio = med["backfill"] / statistics.median(small)
        print(f"  backfill 10x events / 1x events time   {ratio:.2f}   (target <= 11)")
    if size is not None:
        print(f"state per group (serialized): median {size[0]:,.0f} B, max {size[1]:,} B")
    print(f"peak memory (PSS) of the Spark runs: {spark_peak}")
    if small_peak is not None:
        print(f"peak memory (PSS) of the 10x smaller backfills: {small_peak} (should grow "
              "with groups, not events)")


if __name__ == "__main__":
    main()
