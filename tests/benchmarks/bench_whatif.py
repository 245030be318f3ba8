"""Benchmark (not a test): what a what-if costs per group, and how close its baseline comes.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_whatif.py --groups 40 --events 30000

Generates a journal log (the demo's shape by default: seed 7, 1 % bad rows; not timed), folds
each group (not timed), then times `what_if` for each group with at least `--min-rebalances`
recorded rebalances under each change asked (`--change`, the job's printed form, repeatable;
default cooperative-sticky, static membership and the consumer protocol). Prints, per change,
the groups, seconds per group (median and max, one core), the share of groups whose simulated
run gets the recorded rebalance count back exactly, and the median of simulated/recorded
unowned partition-time (the baseline's fidelity), and the what-if's unowned time against the
baseline's (median ratio).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

from pipeline.fold import CoordinatorConfig, fold
from pipeline.generator import LogSpec, generate
from pipeline.whatif import Change, WhatIfError, what_if

CHANGES = ("assignor=cooperative-sticky", "static_membership=true", "protocol=consumer")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=40)
    p.add_argument("--events", type=int, default=30_000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--min-rebalances", type=int, default=3)
    p.add_argument("--change", action="append", help="as the job prints it; repeatable")
    args = p.parse_args()
    config = CoordinatorConfig()
    events = generate(LogSpec(groups=args.groups, events=args.events, seed=args.seed,
                              bad_rows=0.01))
    by_group = defaultdict(list)
    for e in events:
        if e.group_id:
            by_group[e.group_id].append(e)
    folded = {}
    for group_id, group_events in sorted(by_group.items()):
        group_events.sort(key=lambda e: (e.log_partition or 0, e.log_offset or 0))
        out = fold(group_id, group_events, config).outputs
        if len(out.rebalances) >= args.min_rebalances:
            folded[group_id] = out
    for text in args.change or CHANGES:
        change = Change.parse(text)
        seconds, same, fidelity, saved = [], 0, [], []
        for group_id, out in folded.items():
            start = time.process_time()
            try:
                w = what_if(group_id, out.history, out.rebalance_cost, change, config, True)
            except WhatIfError:
                continue
            seconds.append(time.process_time() - start)
            runs = {s["run"]: s for s in w.summary}
            same += runs["simulated"]["rebalances"] == runs["recorded"]["rebalances"]
            recorded = runs["recorded"]["unowned_partition_ms"]
            baseline = runs["simulated"]["unowned_partition_ms"]
            if recorded:
                fidelity.append(baseline / recorded)
            if baseline:
                saved.append(runs["what-if"]["unowned_partition_ms"] / baseline)
        print(f"{text}: {len(seconds)} groups, {statistics.median(seconds):.3f} s a group "
              f"(max {max(seconds):.3f}); simulated rebalance count exact for {same} of "
              f"{len(seconds)}; simulated/recorded unowned time median "
              f"{statistics.median(fidelity):.2f}; what-if/simulated median "
              f"{statistics.median(saved):.2f}")


if __name__ == "__main__":
    main()
