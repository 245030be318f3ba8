"""Benchmark (not a test): the stream under a busy cluster's load, open loop, stage by stage.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_scale.py --groups 20000 \\
        --partitions 5 --commit-every 5 --trigger 30 --minutes 10

A feeder process (`scale_log.py`: numpy and Arrow; 12 M events in ~20 s) makes the log of
`--groups` classic groups, each committing its `--partitions` partitions every
`--commit-every` seconds and rebalancing once an hour on average, with end-offset samples of
every partition every `--sample-every` seconds of event time; then it appends it as a cluster's
log grows, one Delta commit (by delta-rs) every `--chunk` seconds on its own clock (open
loop), the samples taken in that stretch first. Event time runs with the wall clock. The
replay (`jobs/replay.py` with `--end-offsets`, `--trigger processing-time:N`, the default
watermark delay unless `--delay`) runs in this process meanwhile.

Printed, over the micro-batches with input: the events/s offered and taken; busy (the share
of the run spent in batches; <= 80 % is the target); freshness (an append's commit to the end
of the first batch that read it: median, and the last fifth's median over the first's, <= 1.2x
when the stream keeps up); then the median batch split by stage: Spark's own phases
(latestOffset, getBatch, queryPlanning, walCommit, commitOffsets, and addBatch, the writer's
call), within it the fold's job (read and shuffle: its map stage; the stateful operator: its
result stage, fold, state store and the count), each table's write and the lag step, and the
state store's own figures (update and commit ms, rows, memory); the cost per group a batch
touched and per partition the lag step wrote.

`--sweep R1,R2,...` runs once per offered rate (events/s; `--commit-every` set to give it) on
a fresh warehouse each, and prints one line per rate: whether it kept up (busy <= 80 %,
freshness last/first <= 1.2x).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_log import ScaleLog, ScaleSpec  # noqa: E402 - this folder, run as a script

if TYPE_CHECKING:
    from pipeline.spark.stream.sinks import BatchProgress

TIMES = ("event_time", "commit_timestamp", "current_state_timestamp", "sampled_at")
PHASES = ("latestOffset", "getBatch", "queryPlanning", "addBatch", "walCommit", "commitOffsets")


def _shifted(table: pa.Table, by_ms: int) -> pa.Table:
    """`table` with its times moved `by_ms` later (the feeder makes them from 0)."""
    for name in TIMES:
        i = table.schema.get_field_index(name)
        if i < 0:
            continue
        column = table.column(i)
        moved = pc.add(column.cast(pa.int64()), by_ms * 1000).cast(column.type)
        table = table.set_column(i, table.schema.field(i), moved)
    return table


def feed(spec: ScaleSpec, schemas: tuple[pa.Schema, pa.Schema], chunk_s: float, count: int,
         log: str, samples: str, queue: Any) -> None:
    """The feeder process: make every chunk, then append chunk k at start + k * chunk_s
    (at once when late), telling `queue` (k, the log's version, when, rows) after each."""
    from deltalake import DeltaTable, write_deltalake

    made = time.perf_counter()
    chunks = list(ScaleLog(replace(spec, start_ms=0), *schemas).chunks(chunk_s, count))
    queue.put(("made", sum(c.num_rows for c, _ in chunks), time.perf_counter() - made))
    start_ms = int(time.time() * 1000) + 1000
    events = DeltaTable(log)
    for k, (chunk, sampled) in enumerate(chunks):
        wait = start_ms / 1000 + k * chunk_s - time.time()
        if wait > 0:
            time.sleep(wait)  # the load's clock, not a wait for the stream
        if sampled is not None:
            write_deltalake(samples, _shifted(sampled, start_ms), mode="append")
        write_deltalake(events, _shifted(chunk, start_ms), mode="append")
        events.update_incremental()
        queue.put(("appended", k, events.version(), time.time(), chunk.num_rows))
    queue.put(("done",))


@dataclass
class Batch:
    """One micro-batch with input: Spark's progress and the writer's."""

    id: int
    rows: int
    seconds: float
    ended: float  # wall clock
    read_through: int  # the log's last version it read whole
    phases: dict[str, float]
    writer: BatchProgress
    state: dict[str, Any]
    stages: dict[str, float] = field(default_factory=dict)


def read_through(progress: dict[str, Any], log: str) -> int:
    for source in progress["sources"]:
        if log in source["description"]:
            end = source["endOffset"]
            end = json.loads(end) if isinstance(end, str) else end
            version = int(end["reservoirVersion"])
            return version - 1 if int(end.get("index", -1)) < 0 else version
    return -1


def _rest(spark: Any, what: str) -> Any:
    url = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{spark.sparkContext.applicationId}"
    with urllib.request.urlopen(f"{url}/{what}", timeout=30) as r:
        return json.load(r)


def _ms(stamp: str) -> float:
    return datetime.strptime(stamp.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def fold_stages(spark: Any, batch_id: int) -> dict[str, float]:
    """The fold job's stages in batch `batch_id`, by Spark's REST API, in wall seconds: its
    map stage (the log's rows read and shuffled by group), the stateful operator's stage (the
    shuffle read, the fold in Python, the state store; it shuffles its count on) and the
    count's. The fold job is the batch's first job with a stage that reads a shuffle and
    writes one."""
    jobs = sorted((j for j in _rest(spark, "jobs")
                   if f"batch = {batch_id}" in (j.get("description") or "")),
                  key=lambda j: j["jobId"])
    for job in jobs:
        stages: dict[str, float] = {}
        for stage_id in job["stageIds"]:
            for data in _rest(spark, f"stages/{stage_id}"):
                if data.get("status") != "COMPLETE":
                    continue
                took = _ms(data["completionTime"]) - _ms(data["submissionTime"])
                read, write = data.get("shuffleReadBytes"), data.get("shuffleWriteBytes")
                kind = ("stateful operator" if read and write else
                        "read, shuffle" if write else "count")
                stages[kind] = stages.get(kind, 0.0) + took
        if "stateful operator" in stages:
            return stages
    return {}


def run(args: argparse.Namespace, spec: ScaleSpec, root: Path) -> dict[str, Any]:

    from pipeline.spark.lag.lagflow import LagOptions
    from pipeline.spark.lag.samples import ensure_samples_table, samples_schema
    from pipeline.spark.runtime.session import build_session
    from pipeline.spark.stream.maintain import Upkeep
    from pipeline.spark.stream.replay import ReplayOptions, start_replay
    from pipeline.spark.stream.sinks import BatchProgress
    from pipeline.spark.tables.contract import arrow_schema, event_schema
    from pipeline.spark.tables.creation import create_table

    spark = build_session("bench-scale", "local", dict(c.split("=", 1) for c in args.conf))
    spark.sparkContext.setLogLevel("ERROR")
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "1000")
    log, samples, wh = str(root / "events"), str(root / "samples"), str(root / "wh")
    create_table(spark, log, event_schema())
    ensure_samples_table(spark, samples)  # with its change data feed, as the sampler makes it
    schemas = (arrow_schema(event_schema()),
               arrow_schema(samples_schema()))
    count = int(args.minutes * 60 / args.chunk)
    queue = mp.get_context("spawn").Queue()
    feeder = mp.get_context("spawn").Process(
        target=feed, args=(spec, schemas, args.chunk, count, log, samples, queue), daemon=True)
    replay = start_replay(spark, ReplayOptions(
        events=log, warehouse=wh, checkpoint=str(root / "ck"),
        trigger=f"processing-time:{args.trigger}", database=None,
        watermark_delay=args.delay, lag=LagOptions(samples),
        upkeep=Upkeep(args.maintain_every) if args.maintain_every else None))
    query = replay.query
    assert query is not None
    feeder.start()
    message = queue.get()
    print(f"feeder made {message[1]:,} events ({spec.groups:,} groups, {spec.rate:,.0f} "
          f"events/s for {args.minutes} min) in {message[2]:.0f} s", flush=True)
    appended: list[tuple[int, float, int]] = []  # version, when, rows
    batches: list[Batch] = []
    seen: set[int] = set()
    began = None
    done = False
    busy = 0.0
    while not done or any(b.read_through < appended[-1][0] for b in batches[-1:]) \
            or not batches:
        while not queue.empty():
            m = queue.get()
            if m[0] == "appended":
                appended.append((m[2], m[3], m[4]))
                began = began or m[3]
            elif m[0] == "done":
                done = True
        for p in query.recentProgress:
            if p["batchId"] in seen:
                continue
            seen.add(p["batchId"])
            busy += p["batchDuration"] / 1000 if began else 0.0
            if p["numInputRows"] == 0:
                continue
            stages = fold_stages(spark, p["batchId"])
            started = datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
            ops = p["stateOperators"][0] if p["stateOperators"] else {}
            rows = sum(int(src["numInputRows"]) for src in p["sources"]
                       if log in src["description"])
            batches.append(Batch(
                p["batchId"], rows, p["batchDuration"] / 1000,
                started + p["batchDuration"] / 1000, read_through(p, log),
                {k: v / 1000 for k, v in p["durationMs"].items()},
                replay.writer.progress.get(p["batchId"], BatchProgress()),
                {k: ops.get(k) for k in ("numRowsTotal", "numRowsUpdated", "allUpdatesTimeMs",
                                         "commitTimeMs", "memoryUsedBytes")}, stages))
            b = batches[-1]
            print(f"  batch {b.id}: {b.rows:,} rows, {b.seconds:.1f} s "
                  f"(fold job {b.writer.fold_s:.1f} s: "
                  + ", ".join(f"{k} {v:.1f} s" for k, v in stages.items())
                  + f"; writes {b.writer.write_s:.1f} s), "
                  f"{b.writer.groups:,} groups", flush=True)
        if feeder.exitcode not in (None, 0):
            raise RuntimeError(f"the feeder failed ({feeder.exitcode})")
        time.sleep(0.5)
    took = batches[-1].ended - (began or batches[0].ended)
    replay.stop()
    spark.stop()
    return summary(args, spec, batches, appended, took, busy)


def fifths(values: list[float]) -> tuple[float, float]:
    n = max(1, len(values) // 5)
    return statistics.median(values[:n]), statistics.median(values[-n:])


def summary(args: argparse.Namespace, spec: ScaleSpec, batches: list[Batch],
            appended: list[tuple[int, float, int]], took: float, busy_s: float
            ) -> dict[str, Any]:
    fresh: list[float] = []
    pending = list(appended)
    for b in batches:
        while pending and pending[0][0] <= b.read_through:
            fresh.append(b.ended - pending.pop(0)[1])
    offered = sum(rows for _, _, rows in appended)
    first, last = fifths(fresh)
    busy = busy_s / took
    print(f"\n{spec.groups:,} groups ({spec.committing:,} committing after the first append) x "
          f"{spec.partitions} partitions, a commit each every {spec.commit_every_s:g} s: offered "
          f"{spec.rate:,.0f} events/s ({offered:,} events in {len(appended)} appends of "
          f"{args.chunk:g} s); trigger {args.trigger} s, watermark delay {args.delay}")
    print(f"  taken: {sum(b.rows for b in batches) / took:,.0f} events/s over {took:.0f} s; "
          f"busy {busy:.0%} (target <= 80%)")
    print(f"  freshness: median {statistics.median(fresh):.1f} s, max {max(fresh):.1f} s; "
          f"first fifth {first:.1f} s, last fifth {last:.1f} s -> {last / first:.2f}x "
          "(target <= 1.2x)")
    warm = batches[1:] or batches
    med = statistics.median
    print(f"  the median batch ({len(warm)} after the first): {med(b.seconds for b in warm):.1f} s,"
          f" {med(b.rows for b in warm):,.0f} rows, "
          f"{med(b.writer.groups for b in warm):,.0f} groups")
    for phase in PHASES:
        print(f"    {phase:<14} {med(b.phases.get(phase, 0.0) for b in warm):6.2f} s")
    print(f"      fold job   {med(b.writer.fold_s for b in warm):6.2f} s")
    for kind in ("read, shuffle", "stateful operator", "count"):
        print(f"        {kind:<18} {med(b.stages.get(kind, 0.0) for b in warm):6.2f} s")
    tables = sorted({t for b in warm for t in b.writer.tables})
    for t in tables:
        print(f"      write {t:<20} {med(b.writer.tables.get(t, 0.0) for b in warm):6.2f} s")
    for k in ("allUpdatesTimeMs", "commitTimeMs"):
        print(f"    state store {k:<18} {med((b.state.get(k) or 0) for b in warm) / 1000:6.2f} s")
    rows_total = med((b.state.get("numRowsTotal") or 0) for b in warm)
    memory = med((b.state.get("memoryUsedBytes") or 0) for b in warm)
    print(f"    state store rows {rows_total:,.0f} (buckets of {spec.groups:,} groups), memory "
          f"{memory / 2**20:.0f} MiB ({memory / spec.groups:,.0f} bytes a group, every "
          f"version the store holds in memory)")
    per_group = [b.writer.fold_s / b.writer.groups for b in warm if b.writer.groups]
    if per_group:
        print(f"    fold job per group touched: {med(per_group) * 1000:.2f} ms")
    return {"rate": spec.rate, "busy": busy, "fresh_ratio": last / first,
            "fresh_median": statistics.median(fresh)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=20_000)
    p.add_argument("--partitions", type=int, default=5)
    p.add_argument("--commit-every", type=float, default=5.0, help="seconds")
    p.add_argument("--sample-every", type=float, default=30.0, help="seconds of event time")
    p.add_argument("--trigger", type=int, default=30, help="processing-time trigger, seconds")
    p.add_argument("--minutes", type=float, default=10.0, help="of load")
    p.add_argument("--chunk", type=float, default=5.0, help="seconds of event time an append")
    p.add_argument("--delay", default="10 minutes", help="the watermark delay")
    p.add_argument("--maintain-every", type=int, default=0, help="0: no upkeep")
    p.add_argument("--active", type=int, help="after the first append, only this many groups "
                   "commit; the others stay in the state, idle (default: every group)")
    p.add_argument("--sweep", help="offered rates (events/s), comma-separated")
    p.add_argument("--conf", action="append", default=[], help="a Spark setting, key=value")
    args = p.parse_args()
    spec = ScaleSpec(groups=args.groups, partitions=args.partitions,
                     commit_every_s=args.commit_every, sample_every_s=args.sample_every,
                     active=args.active)
    rates = [float(r) for r in args.sweep.split(",")] if args.sweep else [spec.rate]
    results = []
    for rate in rates:
        every = spec.committing * spec.partitions / rate
        root = Path(tempfile.mkdtemp(prefix="bench-scale-"))
        results.append(run(args, replace(spec, commit_every_s=every), root))
    if len(results) > 1:
        print("\nsweep:")
        for r in results:
            kept = r["busy"] <= 0.8 and r["fresh_ratio"] <= 1.2
            print(f"  {r['rate']:>9,.0f} events/s: busy {r['busy']:.0%}, freshness median "
                  f"{r['fresh_median']:.0f} s, last/first {r['fresh_ratio']:.2f}x -> "
                  f"{'kept up' if kept else 'fell behind'}")


if __name__ == "__main__":
    main()
