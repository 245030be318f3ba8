"""Benchmark (not a test): the fold's output rows into Arrow (backfill) and pandas (stream),
today's converter against main's, on one golden log's per-group calls.

    PYTHONPATH=$PWD .venv/bin/python tests/benchmarks/bench_convert.py --case offsets-topic-bad-rows

Folds every group of the stored log in one call (not timed), as the backfill does, then
times converting every call's rows, medians of `--repeat`, and checks both converters give
the same wire rows. `--baseline`: the git revision whose `pipeline/spark/convert.py` is
the old converter (it took (table, row) pairs).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from pipeline.fold import Event
from pipeline.fold.tables import Tables, replay_group
from pipeline.spark import convert
from pipeline.spark.tables import wire_schema
from schemas import OUTPUT_TABLES
from tests.golden.files import read_case


def old_converter(revision: str) -> ModuleType:
    source = subprocess.run(["git", "show", f"{revision}:pipeline/spark/convert.py"],
                            check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "old_convert.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_convert", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def calls(name: str) -> list[Tables]:
    case = read_case(name, OUTPUT_TABLES)
    by_group: dict[str | None, list[Event]] = defaultdict(list)
    for e in case.events:
        by_group[e.group_id].append(e)
    until = max(e.event_time for e in case.events if e.event_time is not None) - case.delay_ms
    return [replay_group(g, None, events, until, case.config, seed=True)[1]
            for g, events in by_group.items()]


def timed(convert_all: Callable[[], list[Any]], repeat: int) -> tuple[float, list[Any]]:
    times, out = [], []
    for _ in range(repeat):
        start = time.process_time()
        out = convert_all()
        times.append(time.process_time() - start)
    return statistics.median(times), out


def rows_of(outputs: list[Any]) -> list[str]:
    """Every wire row of every call, as sortable text (the two order rows differently)."""
    rows = (r for o in outputs for r in (o.to_pylist() if isinstance(o, pa.Table)
                                         else o.to_dict("records")))
    return sorted(repr(sorted(r.items())) for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", default="offsets-topic-bad-rows")
    # The last revision with the hand-coded converter (it took (table, row) pairs).
    parser.add_argument("--baseline", default="7c5f109")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = SparkSession.builder.master("local[1]").getOrCreate()  # DDL parsing only
    wire, arrow = wire_schema(), to_arrow_schema(wire_schema(), timezone="UTC")
    spark.stop()
    old, per_call = old_converter(args.baseline), calls(args.case)
    tagged = [[(t, r) for t, rows in tables.items() for r in rows] for tables in per_call]
    n = sum(len(t) for t in tagged)
    print(f"{args.case}: {len(per_call)} calls, {n} rows, CPU seconds, median of {args.repeat}")
    for kind, new_fn, old_fn, schema in (("arrow", convert.wire_table, old.wire_table, arrow),
                                        ("pandas", convert.wire_frame, old.wire_frame, wire)):
        t_new, new_out = timed(lambda f=new_fn, s=schema: [f(c, s) for c in per_call], args.repeat)
        t_old, old_out = timed(lambda f=old_fn, s=schema: [f(c, s) for c in tagged], args.repeat)
        if rows_of(new_out) != rows_of(old_out):
            sys.exit(f"the converters disagree on the {kind} wire rows")
        print(f"  {kind:6} before {t_old:.3f} s ({n / t_old:,.0f} rows/s), after {t_new:.3f} s "
              f"({n / t_new:,.0f} rows/s): {t_old / t_new:.2f}x")


if __name__ == "__main__":
    main()
