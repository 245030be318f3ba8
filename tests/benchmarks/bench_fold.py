"""Benchmark (not a test): the pure fold's single-core speed from Arrow, against a touch floor.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_fold.py --events 1000000 \
        --groups 2000 --log-kind offsets-topic     # or journal; --profile for where time goes

Generates the log (not timed) and cuts it into one Arrow table per group, times as
timestamp[us], as Spark hands a group to applyInArrow. Then, in CPU seconds of this process,
median of `--repeat` runs: the touch floor (each group's columns to Python lists and a plain
loop reading every value of every row, nothing else), and the fold from Arrow (the same
conversion, then `fold` over `EventColumns`). Prints both, their ratio and events/s, and the
state size per group (`dumps`) against the bytes of the group's own GROUP_METADATA record
(`pipeline.decode` encoders), alone and with its OFFSET_COMMIT records. The targets:
ratio <= 3 (offsets-topic) / <= 6 (journal); >= 250 k / 80 k events/s; state <= 2x the record.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from hashlib import sha256
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc

from pipeline.decode.encode import encode_record
from pipeline.fold import CoordinatorConfig, Group, dumps, fold
from pipeline.fold.context import Step
from pipeline.fold.events import EVENT_COLUMNS, EventColumns
from pipeline.generator import LogSpec, generate

TIMES = ("event_time", "commit_timestamp", "expire_timestamp", "current_state_timestamp")
Batches = list[tuple[str, pa.Table]]
TARGETS = {"offsets-topic": (3, 250_000), "journal": (6, 80_000)}  # ratio, events/s


def arrow_batches(spec: LogSpec) -> tuple[int, Batches]:
    """The generated log as one Arrow table per group, in the log's order."""
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    n = 0
    for e in generate(spec):
        if e.group_id is not None:
            rows[e.group_id].append(e.to_row())
            n += 1
    schema = pa.Table.from_pylist([r for group in rows.values() for r in group]).schema
    for name in TIMES:
        schema = schema.set(schema.get_field_index(name), pa.field(name, pa.timestamp("us")))
    us = {name: 1000 for name in TIMES}

    def table(group: list[dict[str, Any]]) -> pa.Table:
        micro = [{**r, **{k: None if r[k] is None else r[k] * us[k] for k in TIMES}}
                 for r in group]
        return pa.Table.from_pylist(micro, schema=schema)

    return n, [(g, table(group)) for g, group in rows.items()]


def cached_batches(spec: LogSpec, cache: str | None) -> tuple[int, Batches]:
    """`arrow_batches`, kept in `cache` (a folder) as one Arrow IPC file per log spec: a
    1 M-event journal takes the generator longer than the benchmark itself."""
    if cache is None:
        return arrow_batches(spec)
    path = Path(cache) / (f"{spec.log_kind}-{spec.events}-{spec.groups}-{spec.seed}"
                          f"-{sha256(repr(spec).encode()).hexdigest()[:12]}.arrow")
    if not path.exists():
        n, batches = arrow_batches(spec)
        path.parent.mkdir(parents=True, exist_ok=True)
        whole = pa.concat_tables([t for _, t in batches])
        with pa.OSFile(str(path) + ".tmp", "wb") as sink, pa.ipc.new_file(
                sink, whole.schema) as writer:
            writer.write_table(whole)
        Path(str(path) + ".tmp").rename(path)
        return n, batches
    whole = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    starts: dict[str, int] = {}
    ids = whole.column("group_id").to_pylist()
    for i, g in enumerate(ids):  # each group's rows are contiguous, in the log's order
        starts.setdefault(g, i)
    order = list(starts.items())
    ends = [s for _, s in order[1:]] + [len(ids)]
    return len(ids), [(g, whole.slice(s, e - s)) for (g, s), e in zip(order, ends, strict=True)]


def columns(table: pa.Table) -> EventColumns:
    """A group's Arrow table as `EventColumns`: times in integer ms, nested values as lists;
    a column of nulls only is left out (the fold reads a missing column as nulls)."""
    out: EventColumns = {}
    for name in table.column_names:
        column = table.column(name)
        if column.null_count == len(column):
            continue
        if pa.types.is_timestamp(column.type):
            column = pc.divide(column.cast(pa.int64()), 1000)
        out[name] = column.to_pylist()
    return out


def touch(batches: Batches, _: CoordinatorConfig) -> None:
    needed = [name for name in EVENT_COLUMNS if name in batches[0][1].column_names]
    for _, table in batches:
        cols = columns(table.select(needed))
        for row in zip(*cols.values(), strict=True):
            for _value in row:
                pass  # reading is the whole floor


def fold_all(batches: Batches, config: CoordinatorConfig, leave: bool = False) -> list[Group]:
    return [fold(group_id, columns(table), config, leave=leave).group
            for group_id, table in batches]


def cpu_seconds(run: Callable[[Batches, CoordinatorConfig], Any], batches: Batches,
                config: CoordinatorConfig, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run(batches, config)
        times.append(time.process_time() - start)
    return statistics.median(times)


def record_bytes(g: Group, config: CoordinatorConfig) -> tuple[int, int]:
    """Bytes of the GROUP_METADATA record Kafka would write for `g` now, and of its
    OFFSET_COMMIT records (key and value each)."""
    step = Step(config, g.clock or 0, None, keep_records=True)
    step.snapshot_record(g)
    key, value = encode_record(step.out.records[0].to_row())
    offsets = 0
    for (topic, partition), o in g.offsets.items():
        k, v = encode_record({"event_type": "OFFSET_COMMIT", "group_id": g.group_id,
                              "topic": topic, "partition": partition,
                              "committed_offset": o.committed_offset,
                              "leader_epoch": o.leader_epoch, "commit_metadata": o.metadata,
                              "commit_timestamp": o.commit_timestamp,
                              "expire_timestamp": o.expire_timestamp})
        offsets += len(k) + len(v or b"")
    return len(key) + len(value or b""), offsets


def report_state(groups: list[Group], config: CoordinatorConfig) -> None:
    live = [g for g in groups if g.exists and g.consumer is None]
    state = [len(dumps(g)) for g in live]
    meta, offsets = zip(*(record_bytes(g, config) for g in live), strict=True)
    with_offsets = [m + o for m, o in zip(meta, offsets, strict=True)]
    med = statistics.median
    print(f"state per group ({len(live):,} live classic groups): median {med(state):,.0f} B, "
          f"max {max(state):,} B")
    print(f"  its GROUP_METADATA record: median {med(meta):,.0f} B -> state/record "
          f"{med(s / m for s, m in zip(state, meta, strict=True)):.1f}x (median of ratios; "
          "target <= 2x)")
    print(f"  with its OFFSET_COMMIT records: median {med(with_offsets):,.0f} B -> "
          f"{med(s / m for s, m in zip(state, with_offsets, strict=True)):.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--log-kind", default="offsets-topic")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", help="folder to keep the generated log in (Arrow IPC)")
    parser.add_argument("--profile", action="store_true", help="profile one fold run")
    parser.add_argument("--leave", action="store_true",
                        help="the fold as the Spark jobs run it: plain commits' rows left to them")
    args = parser.parse_args()
    config = CoordinatorConfig()
    t = time.perf_counter()
    n, batches = cached_batches(LogSpec(groups=args.groups, events=args.events,
                                        seed=args.seed, log_kind=args.log_kind, config=config),
                                args.cache)
    print(f"{args.log_kind}: {n:,} events, {len(batches):,} groups, generated and cut into "
          f"Arrow tables in {time.perf_counter() - t:.0f} s")
    touch(batches, config)  # warm: the first read of a mapped file pays its page faults
    floor = cpu_seconds(touch, batches, config, args.repeat)
    folded = cpu_seconds(partial(fold_all, leave=args.leave), batches, config, args.repeat)
    ratio_target, rate_target = TARGETS.get(args.log_kind, (None, None))
    print(f"touch floor: {floor:.2f} s CPU; fold from Arrow: {folded:.2f} s CPU "
          f"(medians of {args.repeat}) -> fold/floor {folded / floor:.1f}x "
          f"(target <= {ratio_target}x)")
    print(f"fold from Arrow: {n / folded:,.0f} events/s on one core "
          f"({1e6 * folded / n:.1f} us an event; target >= {rate_target:,}); touch floor "
          f"{n / floor:,.0f} events/s")
    report_state(fold_all(batches, config), config)
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(fold_all, batches, config)
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)


if __name__ == "__main__":
    main()
