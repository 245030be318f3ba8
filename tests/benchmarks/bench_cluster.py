"""Benchmark (not a test): the backfill and the stream on a real Spark standalone cluster, one
worker of one core against two, and their tables against a local-mode backfill's.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_cluster.py --events 1000000 \\
        --groups 10000 --workers 1,2 --repeat 2

The log is made once and kept in `--root`: with `--shape generated` (the default)
`jobs/generate.py`'s offsets-topic log, clients simulated through the fold (~1,600 events/s
to make); with `--shape busy` a busy cluster's log as the scale benchmark's feeder makes it
(`scale_log.py`: `--groups` groups of 5 partitions each committing every 5 s, a rebalance an
hour; millions of events in seconds), written by delta-rs; both in `--commits` Delta
commits. Each round starts a master and N workers of one core each on 127.0.0.1
(`tests/deploy/standalone.py`, Spark's own launcher), then `spark-submit`s, as
docs/deploying.md's recipe does (the wheel as `--py-files`, a Python without the project),
`jobs/backfill.py` and then `jobs/replay.py` (available-now, a fresh checkpoint) with
`--profile cluster`, `spark.executor.cores=1` and `spark.cores.max=N`; rounds alternate the
worker counts (1, 2, 1, 2, ...). The driver runs in spark-submit's process on the same two
cores.

Printed: each run's whole-process seconds and events/s, the medians per worker count, and
the ratio of events/s with the most workers to one worker (the target: >= 1.6x), for the
backfill and the stream; then whether every output table of each cluster run holds the same
rows as a local-mode backfill of the same log.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from pipeline.spark.runtime import jars
from schemas import OUTPUT_TABLES
from tests.deploy.standalone import BIN, ROOT, build_wheel, clean_env, executor_env, standalone

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_log import ScaleLog, ScaleSpec  # noqa: E402 - this folder, run as a script

JOBS = ("backfill", "replay")
BUSY_CHUNK_S = 60.0  # seconds of event time the busy log's feeder makes at a time


def make_log(args: argparse.Namespace, events: Path) -> int:
    """The log's event count, made unless kept."""
    if (events / "_delta_log").is_dir():
        print(f"the log: {events} (kept)")
        return len(DeltaTable(str(events)).to_pyarrow_dataset().to_table(columns=[]))
    if args.shape == "busy":
        return make_busy_log(args, events)
    started = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "jobs" / "generate.py"), "--output", str(events),
                    "--events", str(args.events), "--groups", str(args.groups),
                    "--log-kind", "offsets-topic", "--commits", str(args.commits)],
                   check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    print(f"the log: {args.events:,} events of {args.groups:,} groups, made in "
          f"{time.perf_counter() - started:.0f} s")
    return int(args.events)


def make_busy_log(args: argparse.Namespace, events: Path) -> int:
    from pipeline.spark.lag.samples import samples_schema
    from pipeline.spark.runtime.session import build_session, stop_session
    from pipeline.spark.tables.contract import arrow_schema, event_schema

    started = time.perf_counter()
    spark = build_session("bench-cluster-log", "local")  # the schemas' DDL is Spark's to parse
    try:
        schemas = arrow_schema(event_schema()), arrow_schema(samples_schema())
    finally:
        stop_session(spark)
    spec = ScaleSpec(groups=args.groups)
    count = max(1, round(args.events / spec.rate / BUSY_CHUNK_S))
    chunks = [chunk for chunk, _ in ScaleLog(spec, *schemas).chunks(BUSY_CHUNK_S, count)]
    per = -(-len(chunks) // args.commits)
    for i in range(0, len(chunks), per):
        write_deltalake(str(events), pa.concat_tables(chunks[i:i + per]),
                        mode="overwrite" if i == 0 else "append")
    made = sum(c.num_rows for c in chunks)
    print(f"the log: {made:,} events of {args.groups:,} groups (a busy cluster's, "
          f"{spec.rate:,.0f} commits/s for {count * BUSY_CHUNK_S:,.0f} s of event time), made "
          f"in {time.perf_counter() - started:.0f} s")
    return made


def submit(master: str, python: Path, wheel: Path, workers: int, job: str, args: list[str],
           log: Path, cwd: Path) -> float:
    words = [str(BIN / "spark-submit"), "--master", master,
             "--jars", ",".join(str(p) for p in jars.jar_paths()),
             "--py-files", str(wheel),
             "--conf", f"spark.pyspark.python={python}",
             "--conf", f"spark.pyspark.driver.python={python}",
             "--conf", "spark.executor.cores=1", "--conf", f"spark.cores.max={workers}",
             "--conf", "spark.executor.memory=5g", "--driver-memory", "4g",
             str(ROOT / "jobs" / f"{job}.py"), *args, "--profile", "cluster", "--database", ""]
    started = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(words, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                              env=clean_env())
    took = time.perf_counter() - started
    if done.returncode:
        sys.exit(f"{job} on {workers} worker(s) failed:\n{log.read_text()[-4000:]}")
    return took


def rows(warehouse: Path) -> dict[str, list[str]]:
    """Each output table's rows as sorted JSON lines (delta-rs reads them: no Spark here)."""
    out = {}
    for name in OUTPUT_TABLES:
        path = warehouse / name
        if not (path / "_delta_log").is_dir():
            out[name] = []
            continue
        table = DeltaTable(str(path)).to_pyarrow_table()
        out[name] = sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--groups", type=int, default=10_000)
    p.add_argument("--commits", type=int, default=8, help="Delta commits of the log")
    p.add_argument("--shape", choices=("generated", "busy"), default="generated",
                   help="the log: jobs/generate.py's, or a busy cluster's (scale_log.py)")
    p.add_argument("--workers", default="1,2", help="worker counts, one core each")
    p.add_argument("--repeat", type=int, default=1, help="rounds per worker count")
    p.add_argument("--root", type=Path, help="kept between runs: the log, the wheel")
    p.add_argument("--no-compare", action="store_true", help="skip the tables' comparison")
    args = p.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    root.mkdir(parents=True, exist_ok=True)
    events = root / "events"
    args.events = make_log(args, events)
    python = executor_env(root / "executor-env") if not (root / "executor-env").is_dir() \
        else root / "executor-env" / "bin" / "python"
    wheel = build_wheel(root / "dist")
    counts = [int(w) for w in args.workers.split(",")]
    seconds: dict[tuple[str, int], list[float]] = {}
    runs = []
    for r in range(args.repeat):
        for workers in counts:
            run = root / f"run-{r}-{workers}"
            logs = run / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            with standalone(run, logs, workers=workers, cores=1, memory="6g") as master:
                for job in JOBS:
                    extra = ["--checkpoint", str(run / "checkpoint")] if job == "replay" else []
                    took = submit(master, python, wheel, workers, job,
                                  ["--events", str(events), "--warehouse", str(run / job),
                                   *extra], logs / f"{job}.log", run)
                    seconds.setdefault((job, workers), []).append(took)
                    print(f"  round {r + 1}, {workers} worker(s): {job} {took:.1f} s, "
                          f"{args.events / took:,.0f} events/s", flush=True)
            runs.append(run)
    print(f"\n{args.events:,} events of {args.groups:,} groups, whole processes "
          f"(spark-submit to exit), medians of {args.repeat}:")
    for job in JOBS:
        med = {w: statistics.median(seconds[(job, w)]) for w in counts}
        line = ", ".join(f"{w} worker(s) {med[w]:.1f} s ({args.events / med[w]:,.0f} events/s)"
                         for w in counts)
        ratio = med[counts[0]] / med[counts[-1]]
        print(f"  {job}: {line}; {counts[-1]} / {counts[0]}: {ratio:.2f}x (target >= 1.6x)")
    if args.no_compare:
        return
    local = root / "local"
    if not (local / "group_state" / "_delta_log").is_dir():
        subprocess.run([sys.executable, str(ROOT / "jobs" / "backfill.py"), "--events",
                        str(events), "--warehouse", str(local), "--database", ""],
                       check=True, cwd=root, stdout=subprocess.DEVNULL)
    expected = rows(local)
    for run in runs:
        for job in JOBS:
            got = rows(run / job)
            differ = [t for t in OUTPUT_TABLES if got[t] != expected[t]]
            print(f"  {run.name} {job}: "
                  + (f"differs from local mode in {', '.join(differ)}" if differ else
                     f"every table as local mode ({sum(map(len, got.values())):,} rows)"))


if __name__ == "__main__":
    main()
