"""Benchmark (not a test): the fold's output rows into Arrow (backfill) and pandas (stream),
today's converter (JSON rows on the two-column wire, `pipeline/spark/wire.py`) against an
older one, on one golden log's per-group calls.

    PYTHONPATH=$PWD .venv/bin/python tests/benchmarks/bench_convert.py --case offsets-topic-bad-rows

Folds every group of the stored log in one call (not timed), as the backfill does, then
times converting every call's rows, medians of `--repeat`, and checks both give as many
rows (what each row holds is the Spark tests' business: the wire formats differ).
`--baseline`: the git revision whose `pipeline/spark/convert.py` is the old converter
(by default 04e76d7, the last with the 89-column Arrow wire; it takes tables and a schema).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from pipeline.fold.group_replay import Tables, replay_group
from pipeline.spark import wire
from schemas import OUTPUT_TABLES
from tests.golden.files import read_case
from tests.grouping import by_group


def old_converter(revision: str) -> tuple[ModuleType, ModuleType]:
    """`revision`'s convert.py, importing `revision`'s tables.py as pipeline.spark.tables;
    both modules."""
    folder = Path(tempfile.mkdtemp())
    modules = {}
    for name in ("tables", "convert"):
        source = subprocess.run(["git", "show", f"{revision}:pipeline/spark/{name}.py"],
                                check=True, capture_output=True, text=True).stdout
        path = folder / f"old_{name}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(f"old_{name}", path)
        assert spec is not None and spec.loader is not None
        modules[name] = importlib.util.module_from_spec(spec)
    # The old convert.py imports pipeline.spark.tables, which no longer exists: give it the old.
    sys.modules["pipeline.spark.tables"] = modules["tables"]
    try:
        for module in modules.values():
            assert module.__spec__ is not None and module.__spec__.loader is not None
            module.__spec__.loader.exec_module(module)
    finally:
        del sys.modules["pipeline.spark.tables"]
    return modules["convert"], modules["tables"]


def calls(name: str) -> list[Tables]:
    case = read_case(name, OUTPUT_TABLES)
    until = max(e.event_time for e in case.events if e.event_time is not None) - case.delay_ms
    return [replay_group(g, None, events, until, case.config, seed=True)[1]
            for g, events in by_group(case.events).items()]


def timed(convert_all: Callable[[], list[Any]], repeat: int) -> tuple[float, list[Any]]:
    times, out = [], []
    for _ in range(repeat):
        start = time.process_time()
        out = convert_all()
        times.append(time.process_time() - start)
    return statistics.median(times), out


def rows_of(outputs: list[Any]) -> int:
    return sum(o.num_rows if isinstance(o, pa.Table) else len(o) for o in outputs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", default="offsets-topic-bad-rows")
    # The last revision with the 89-column Arrow wire (a schema-driven converter of tables).
    parser.add_argument("--baseline", default="04e76d7")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = SparkSession.builder.master("local[1]").getOrCreate()  # DDL parsing only
    old, old_tables = old_converter(args.baseline)
    old_wire = old_tables.wire_schema()
    arrow = to_arrow_schema(old_wire, timezone="UTC")
    checks = wire.wire_checks()
    spark.stop()
    per_call = calls(args.case)
    n = sum(len(rows) for tables in per_call for rows in tables.values())
    print(f"{args.case}: {len(per_call)} calls, {n} rows, CPU seconds, median of {args.repeat}")
    for kind, new_fn, old_fn, schema in (("arrow", wire.wire_table, old.wire_table, arrow),
                                        ("pandas", wire.wire_frame, old.wire_frame, old_wire)):
        t_new, new_out = timed(lambda f=new_fn: [f(c, checks) for c in per_call], args.repeat)
        t_old, old_out = timed(lambda f=old_fn, s=schema: [f(c, s) for c in per_call],
                               args.repeat)
        if rows_of(new_out) != rows_of(old_out):
            sys.exit(f"the converters give different numbers of {kind} wire rows")
        print(f"  {kind:6} before {t_old:.3f} s ({n / t_old:,.0f} rows/s), after {t_new:.3f} s "
              f"({n / t_new:,.0f} rows/s): {t_old / t_new:.2f}x")


if __name__ == "__main__":
    main()
