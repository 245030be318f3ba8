"""Benchmark (not a test): the Py4J round trips the driver makes to the JVM for one warm
replay and one warm backfill, and where in the pipeline they come from.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_py4j.py --events 400 --groups 4

Every DataFrame the jobs build is built on the JVM through Py4J, one round trip per call,
each costing the driver's Python and the gateway's threads (a lookup of each PySpark
function's name among the packages the gateway imports). Writes a generated log (with
`--end-offsets`, its samples, and the runs take `--end-offsets`), runs a replay and a
backfill once to warm the JVM, then counts the calls of one more of each: the total, the
seconds of the run, and the pipeline's call sites that made the most (innermost two frames
of the `pipeline` package).
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import py4j.clientserver

from pipeline.generator import LogSpec, end_offset_samples, generate, last_event_ms
from pipeline.spark.backfill import BackfillOptions, run_backfill
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.lag.lagflow import LagOptions
from pipeline.spark.lag.samples import write_samples
from pipeline.spark.runtime.session import build_session, stop_session
from pipeline.spark.stream.replay import ReplayOptions, run_replay

PACKAGE = str(Path(__file__).resolve().parents[2] / "pipeline")


class Counter:
    """Counts the Py4J commands sent while `on`, by the pipeline's innermost call sites."""

    def __init__(self) -> None:
        self.on = False
        self.sites: collections.Counter[str] = collections.Counter()
        send = py4j.clientserver.ClientServerConnection.send_command

        def counted(connection: Any, command: str) -> Any:
            if self.on:
                self.sites[self._site()] += 1
            return send(connection, command)

        py4j.clientserver.ClientServerConnection.send_command = counted

    @staticmethod
    def _site() -> str:
        frame: FrameType | None = sys._getframe(2)
        found: list[str] = []
        while frame is not None and len(found) < 2:
            if frame.f_code.co_filename.startswith(PACKAGE):
                where = frame.f_code.co_filename[len(PACKAGE) - len("pipeline"):]
                found.append(f"{where}:{frame.f_code.co_name}")
            frame = frame.f_back
        return " < ".join(found) or "(outside the pipeline)"

    def run(self, what: Callable[[], None]) -> float:
        self.sites.clear()
        self.on, start = True, time.monotonic()
        try:
            what()
        finally:
            self.on = False
        return time.monotonic() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=400)
    p.add_argument("--groups", type=int, default=4)
    p.add_argument("--end-offsets", action="store_true", help="with lag from samples")
    p.add_argument("--top", type=int, default=12)
    args = p.parse_args()
    counter = Counter()
    spark = build_session("bench-py4j", profile="test")
    root = Path(tempfile.mkdtemp(prefix="bench-py4j-"))
    try:
        spec = LogSpec(groups=args.groups, events=args.events, seed=5)
        events = generate(spec)
        write_event_log(spark, events, str(root / "events"))
        lag = None
        if args.end_offsets:
            write_samples(spark, end_offset_samples(spec, last_event_ms(events)),
                          str(root / "samples"))
            lag = LagOptions(str(root / "samples"))

        def replay(n: int) -> None:
            run_replay(spark, ReplayOptions(events=str(root / "events"), database=None,
                                            warehouse=str(root / f"replay-{n}"),
                                            checkpoint=str(root / f"checkpoint-{n}"), lag=lag))

        def backfill(n: int) -> None:
            run_backfill(spark, BackfillOptions(events=str(root / "events"), database=None,
                                                warehouse=str(root / f"backfill-{n}"), lag=lag))

        replay(0)
        backfill(0)
        for name, run in (("replay", replay), ("backfill", backfill)):
            seconds = counter.run(lambda run=run: run(1))  # type: ignore[misc]
            print(f"{name}: {sum(counter.sites.values()):,} Py4J calls in {seconds:.2f} s")
            for site, calls in counter.sites.most_common(args.top):
                print(f"  {calls:6,}  {site}")
    finally:
        stop_session(spark)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
