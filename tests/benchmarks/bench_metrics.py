"""Benchmark (not a test): what the Prometheus exporter costs, run as
`PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_metrics.py --groups 2000 --partitions 50`.
It builds the newest rows of group_lag, partition_lag and group_state for that many groups
and partitions per group (not timed), then times `publish` (keeping the newest row per key)
and one scrape's rendering to text, with per-partition series off and on, and prints the
medians of `--repeat` runs in milliseconds with the series count. A stream publishes once
per batch; Prometheus scrapes on its own clock, in the endpoint's thread."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from prometheus_client.exposition import generate_latest
from prometheus_client.registry import CollectorRegistry

from pipeline.metrics import RowsCollector
from tests.metrics.rows import row

AT = datetime(2026, 1, 1)


def tables(groups: int, partitions: int) -> dict[str, list[dict[str, Any]]]:
    names = [f"group-{g:05d}" for g in range(groups)]
    return {
        "group_lag": [row("group_lag", sampled_at=AT, group_id=g, total_lag=i * 10, max_lag=i,
                          max_lag_ms=i * 7, status="OK", cause="NONE", partitions=partitions,
                          partitions_unknown=0, complete=1.0) for i, g in enumerate(names)],
        "partition_lag": [row("partition_lag", sampled_at=AT, group_id=g, topic="orders",
                              partition=p, log_end_offset=10**6, committed_offset=10**6 - p,
                              lag=p, lag_ms=p * 11, status="OK", offset_status="COMMITTED")
                          for g in names for p in range(partitions)],
        "group_state": [row("group_state", group_id=g, state="Stable", generation_id=3,
                            member_count=4, rebalance_count=9, members=[]) for g in names],
    }


def median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = tables(args.groups, args.partitions)
    for per_partition in (False, True):
        collector = RowsCollector(per_partition)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(collector)
        publish = median_ms(lambda c=collector: c.publish(**rows), args.repeat)
        text = generate_latest(registry)
        scrape = median_ms(lambda r=registry: generate_latest(r), args.repeat)
        series = sum(1 for line in text.splitlines() if not line.startswith(b"#"))
        print(f"per_partition={per_partition}: {args.groups} groups x {args.partitions} "
              f"partitions, {series:,} series, {len(text) / 1e6:.1f} MB: publish "
              f"{publish:,.0f} ms, scrape {scrape:,.0f} ms (medians of {args.repeat})")


if __name__ == "__main__":
    main()
