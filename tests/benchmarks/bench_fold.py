"""Benchmark (not a test): the pure fold's single-core throughput on a generated log.

    .venv/bin/python tests/benchmarks/bench_fold.py --events 1000000 --groups 2000

Generates the log first (not timed), then folds every group's events in one process and
prints events/s, with the state size per group as stored by the streaming job.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

from pipeline.fold import CoordinatorConfig, Event, dumps, fold
from pipeline.generator import LogSpec, generate


def fold_all(by_group: dict[str | None, list[Event]], config: CoordinatorConfig) -> tuple[float, list[int]]:
    start = time.perf_counter()
    sizes = []
    for group_id, events in by_group.items():
        if group_id is None:
            continue
        result = fold(group_id, events, config)
        sizes.append(len(dumps(result.group)))
    return time.perf_counter() - start, sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--log-kind", default="journal")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    t = time.perf_counter()
    events = generate(LogSpec(groups=args.groups, events=args.events, seed=args.seed,
                              log_kind=args.log_kind))
    print(f"generated {len(events):,} events for {args.groups:,} groups "
          f"in {time.perf_counter() - t:.1f} s")
    by_group: dict[str | None, list[Event]] = defaultdict(list)
    for e in events:
        by_group[e.group_id].append(e)
    config = CoordinatorConfig()
    times = []
    sizes: list[int] = []
    for _ in range(args.repeat):
        elapsed, sizes = fold_all(by_group, config)
        times.append(elapsed)
    median = statistics.median(times)
    print(f"fold: median {median:.2f} s of {args.repeat} runs "
          f"({', '.join(f'{x:.2f}' for x in times)}), {len(events) / median:,.0f} events/s "
          f"on one core")
    print(f"state per group: median {statistics.median(sizes):,.0f} bytes, "
          f"max {max(sizes):,} bytes")


if __name__ == "__main__":
    main()
