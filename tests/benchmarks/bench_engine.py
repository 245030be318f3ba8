"""Benchmark (not a test): the lag engine from no state over one topic partition's whole
history, as the backfill runs it per key (`pipeline.lag.engine.partition_step`), pure Python.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_engine.py --samples 500,2000

One partition sampled every 30 s (its end offset rising each time), three groups each
committing every 5 s (one falling behind). For each `--samples`, the step's seconds and
microseconds a candidate row, then the largest over the smallest: a step linear in its
history keeps the per-row cost flat (the ratio of seconds near the ratio of samples).
"""

from __future__ import annotations

import argparse
import time

from pipeline.lag import LagConfig
from pipeline.lag.engine import partition_step

COMMITS_A_SAMPLE = 6
GROUPS = 3


def history(samples: int) -> tuple[list[dict[str, int]], list[dict[str, object]]]:
    points = [{"t": i * 30_000, "log_end_offset": 1000 + i * 1200, "log_start_offset": 0}
              for i in range(samples)]
    changes: list[dict[str, object]] = [
        {"group_id": f"g{g}", "t": j * 5_000 + 1, "log_partition": 0, "log_offset": j * 3 + g,
         "change": "COMMIT", "committed_offset": 1000 + j * 200 - g * j}
        for j in range(samples * COMMITS_A_SAMPLE) for g in range(GROUPS)]
    return points, changes


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--samples", default="500,2000", help="history lengths, comma-separated")
    args = p.parse_args()
    took: dict[int, float] = {}
    for n in (int(s) for s in args.samples.split(",")):
        points, changes = history(n)
        start = time.perf_counter()
        r = partition_step(None, "topic", 0, points, changes, [], LagConfig(), None)
        took[n] = time.perf_counter() - start
        print(f"{n:,} samples, {len(changes):,} commits: {took[n]:.2f} s, "
              f"{took[n] / len(r.candidates) * 1e6:.0f} us a row", flush=True)
    low, high = min(took), max(took)
    print(f"{high:,} / {low:,} samples: {high / low:.1f}x the history, "
          f"{took[high] / took[low]:.1f}x the seconds")


if __name__ == "__main__":
    main()
