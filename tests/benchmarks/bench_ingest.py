"""Benchmark (not a test): `jobs/ingest.py --raw` throughput, decode and Delta write included.

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_ingest.py --records 200000

Writes a Parquet dump of raw records (bench_decode's realistic mix: 94% offset commits, 3%
group snapshots, 2% tombstones, 1% KIP-848), ingests it into a fresh event log (timed: the
decode in mapInArrow plus the append of what the log lacks), then ingests it again into the now full
log (timed: every position is present, nothing is written) and prints records/s for both.
Set the session with --profile (default `local`: every core of this machine).

    PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_ingest.py --records 2000 --batches 20 [--by-spark]

The live ingest's shape: `--batches` dumps of `--records` each, positions following on,
ingested one after the other into one log (the first makes it); prints the median seconds
of a batch after the first. `--by-spark`: every commit by Spark's writer (small writes off).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from pipeline.spark.ingest.ingest import IngestOptions, ingest_raw
from pipeline.spark.runtime.session import build_session
from pipeline.spark.tables.writes import SMALL_CONF
from tests.benchmarks.bench_decode import T0, records


def write_dump(path: Path, n: int, seed: int, files: int, first: int = 0) -> None:
    """`n` records in `files` Parquet files, at positions `first`, `first` + 1, ..."""
    data = records(n, seed)
    path.mkdir(parents=True)
    per = -(-n // files)
    for i, start in enumerate(range(0, n, per)):
        chunk = data[start:start + per]
        pq.write_table(pa.table({
            "key": pa.array([k for k, _ in chunk], pa.binary()),
            "value": pa.array([v for _, v in chunk], pa.binary()),
            "partition": pa.array([(first + start + j) % 50 for j in range(len(chunk))],
                                  pa.int32()),
            "offset": pa.array([first + start + j for j in range(len(chunk))], pa.int64()),
            "timestamp": pa.array([T0 + first + start + j for j in range(len(chunk))],
                                  pa.int64()),
        }), path / f"part-{i:03d}.parquet")


def batches(spark: SparkSession, n: int, count: int, seed: int, files: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        events = str(Path(tmp) / "events")
        took = []
        for b in range(count):
            dump = Path(tmp) / f"dump-{b}"
            write_dump(dump, n, seed + b, files, first=b * n)
            start = time.perf_counter()
            ingest_raw(spark, IngestOptions(events=events, raw=str(dump)))
            took.append(time.perf_counter() - start)
        later = took[1:]
        print(f"{count} batches of {n:,} records: the first {took[0]:.2f} s, the others median "
              f"{statistics.median(later):.2f} s (min {min(later):.2f}, max {max(later):.2f})")
        rows = spark.read.format("delta").load(events).count()
        print(f"event log holds {rows:,} rows")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--files", type=int, default=4, help="Parquet files in the dump")
    p.add_argument("--profile", default="local")
    p.add_argument("--batches", type=int, default=1, help="dumps ingested one after another")
    p.add_argument("--by-spark", action="store_true", help="every commit by Spark's writer")
    args = p.parse_args()
    spark = build_session("bench-ingest", args.profile)
    spark.conf.set(SMALL_CONF, str(not args.by_spark).lower())
    if args.batches > 1:
        batches(spark, args.records, args.batches, args.seed, args.files)
        spark.stop()
        return
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        dump, events = Path(tmp) / "dump", str(Path(tmp) / "events")
        t = time.perf_counter()
        write_dump(dump, args.records, args.seed, args.files)
        print(f"dump of {args.records:,} raw records written in {time.perf_counter() - t:.1f}s")
        opts = IngestOptions(events=events, raw=str(dump))
        for label in ("into an empty log", "again (all present)"):
            start = time.perf_counter()
            n = ingest_raw(spark, opts)
            took = time.perf_counter() - start
            print(f"ingest {label}: {n:,} records in {took:.1f}s = {n / took:,.0f} records/s "
                  f"({spark.sparkContext.defaultParallelism} cores)")
        rows = spark.read.format("delta").load(events).count()
        print(f"event log holds {rows:,} rows")
    spark.stop()


if __name__ == "__main__":
    main()
