"""Benchmark (not a test): the backfill in processes of their own, paired A B A B.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_processes.py --commit 4067a3a \\
        --log /tmp/bench-backfill/offsets-topic-2000000-20000
    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_processes.py --scale-out \\
        --log /tmp/bench-backfill/offsets-topic-2000000-20000

--commit: this tree's backfill against an earlier commit's (--stream: the streaming
replay's, available-now). The commit is checked out as a git worktree (under --worktrees,
kept for the next run; it borrows this tree's JARs), and each run imports its `pipeline`
package from its own tree, with this venv's interpreter.
--scale-out: this tree's backfill on one core (the process tree pinned to one CPU with
`taskset`, Spark's master local[1]) against two (local[2]): local[1] alone would still run
the JVM and its Python worker side by side on two CPUs.
Each backfill runs in a process of its own (`--child`), after a warm-up run in that
process; the two kinds are paired A B A B (`--repeat` pairs). Printed: each run's seconds,
events/s and CPU seconds in the driver, the JVM and the Python workers, and the medians'
ratios (with --commit, the workers' CPU per event). The log is a Delta event log, such as
bench_backfill.py writes under its --log-dir.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("driver", "jvm", "workers")
_TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu() -> dict[str, float]:
    """CPU seconds (user + system, reaped children included) of this process (the driver),
    the JVM under it and the processes the JVM started (the Python workers)."""
    parts = dict.fromkeys(PARTS, 0.0)
    todo = [(str(os.getpid()), "driver")]
    while todo:
        pid, part = todo.pop()
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                part = "jvm"
            elif part == "jvm":
                part = "workers"
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            parts[part] += sum(int(f) for f in fields[11:15]) / _TICK
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [(child, part) for child in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return parts


def child(log: str, out: str, runs: int, master: str | None, stream: bool) -> None:
    """In a process of its own: the backfill of `log` into a fresh `out` (with `stream`, the
    streaming replay, available-now, on a fresh checkpoint), a warm-up run then `runs`
    measured ones, each as one JSON line on stdout."""
    from pipeline.fold import CoordinatorConfig
    from pipeline.spark.backfill import BackfillOptions, run_backfill
    from pipeline.spark.runtime.session import build_session
    from pipeline.spark.stream.replay import ReplayOptions, run_replay

    spark = build_session("bench-processes", "local",
                          None if master is None else {"spark.master": master})
    spark.sparkContext.setLogLevel("ERROR")
    events = spark.read.format("delta").load(log).count()
    for k in range(runs + 1):
        shutil.rmtree(out, ignore_errors=True)
        before, start = tree_cpu(), time.perf_counter()
        if stream:
            run_replay(spark, ReplayOptions(events=log, warehouse=f"{out}/wh",
                                            checkpoint=f"{out}/ck", database=None,
                                            config=CoordinatorConfig()))
        else:
            run_backfill(spark, BackfillOptions(events=log, warehouse=out, database=None,
                                                config=CoordinatorConfig()))
        seconds = time.perf_counter() - start
        after = tree_cpu()
        if k:  # the first run warms the JVM and the workers up
            print(json.dumps({"seconds": seconds, "events": events,
                              **{p: after[p] - before[p] for p in PARTS}}), flush=True)
    spark.stop()


def worktree(commit: str, under: Path) -> Path:
    """`commit` checked out under `under` (once), with this tree's JAR cache beside it."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", commit],
                         check=True, capture_output=True, text=True).stdout.strip()
    path = under / sha
    if not (path / "pipeline").is_dir():
        under.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), sha],
                       check=True, capture_output=True)
    cache = path / ".cache"
    if not cache.exists() and (ROOT / ".cache").is_dir():
        cache.symlink_to(ROOT / ".cache")
    return path


def measure(tree: Path, log: str, out: Path, master: str | None = None,
            cpus: str | None = None, stream: bool = False) -> dict[str, float]:
    """One child's measured run: `tree`'s backfill (or stream), on `master`, pinned to
    `cpus`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, __file__, "--child", "--log", log, "--out", str(out)]
    if stream:
        command.append("--stream")
    if master:
        command += ["--master", master]
    if cpus:
        command = ["taskset", "-c", cpus, *command]
    done = subprocess.run(command, env=env, cwd=tree, check=True, capture_output=True, text=True)
    line = [x for x in done.stdout.splitlines() if x.startswith("{")][-1]
    return dict(json.loads(line))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--commit", help="the earlier commit (git rev) to pair this tree with")
    p.add_argument("--scale-out", action="store_true", help="one core against two")
    p.add_argument("--stream", action="store_true",
                   help="the streaming replay (available-now) in place of the backfill")
    p.add_argument("--log", required=True, help="a Delta event log")
    p.add_argument("--repeat", type=int, default=2, help="pairs")
    p.add_argument("--worktrees", default=str(Path(tempfile.gettempdir()) / "bench-worktrees"))
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--master", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.log, args.out, 1, args.master, args.stream)
        return
    if bool(args.commit) == args.scale_out:
        p.error("give --commit REV or --scale-out")
    out = Path(tempfile.mkdtemp(prefix="bench-processes-"))
    kinds: dict[str, Callable[[], dict[str, float]]]
    if args.commit:
        old = worktree(args.commit, Path(args.worktrees))
        kinds = {args.commit: lambda: measure(old, args.log, out / "a", stream=args.stream),
                 "this tree": lambda: measure(ROOT, args.log, out / "b", stream=args.stream)}
    else:
        kinds = {"1 core": lambda: measure(ROOT, args.log, out / "a", "local[1]", "0",
                                           args.stream),
                 "2 cores": lambda: measure(ROOT, args.log, out / "b", "local[2]", None,
                                            args.stream)}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in kinds}
    try:
        for _ in range(args.repeat):
            for name, run in kinds.items():
                runs[name].append(run())
    finally:
        shutil.rmtree(out, ignore_errors=True)
    first, second = list(kinds)
    n = runs[second][0]["events"]
    job = "streaming replay (available-now)" if args.stream else "backfill"
    print(f"\n{n:,.0f} events, {args.log}; {job}, every table written, medians of "
          f"{args.repeat} (each after a warm-up run in its own process)")
    med = {name: {k: statistics.median(r[k] for r in rs) for k in ("seconds", *PARTS)}
           for name, rs in runs.items()}
    for name, m in med.items():
        listed = ", ".join(f"{r['seconds']:.1f}" for r in runs[name])
        print(f"  {name:<12} {m['seconds']:7.1f} s {n / m['seconds']:>9,.0f} events/s  [{listed}]"
              f"  CPU s: " + ", ".join(f"{p} {m[p]:.1f}" for p in PARTS)
              + f"; workers {m['workers'] / n * 1e6:.1f} us/event")
    a, b = med[first], med[second]
    print(f"  {second}: {a['seconds'] / b['seconds']:.2f}x {first}'s throughput; "
          f"workers' CPU per event {a['workers'] / max(b['workers'], 1e-9):.2f}x lower; "
          f"JVM CPU {b['jvm'] / a['jvm']:.2f}x")


if __name__ == "__main__":
    main()
