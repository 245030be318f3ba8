"""Upkeep of a warehouse's tables: OPTIMIZE, an optional retention, VACUUM.

    spark-submit jobs/maintain.py --warehouse /data/wh
    spark-submit jobs/maintain.py --warehouse /data/wh --retain-days 90

Compacts each output, lag and share-state table's small files into few (rows unchanged),
the replay's working tables too, deletes the history and lag rows older than --retain-days
days of event time if asked (default: keep all), then VACUUMs the files no version younger
than --vacuum-hours reads (at least Delta's 168). Schedule it (beside a running stream, its
compaction of a table the stream rewrites can fail that stream's batch), or let the stream
run it (`jobs/replay.py --maintain-every N`), which never races the stream's own MERGEs.
docs/running.md says what it does to readers and to --as-of.
"""

from __future__ import annotations

import argparse

from pyspark.sql import SparkSession

from pipeline.errors import UsageError
from pipeline.jobs._common import (
    JobParser,
    add_profile_arg,
    add_upkeep_args,
    add_warehouse_arg,
    cli,
    job_session,
)
from pipeline.spark.stream.maintain import every_table, maintain
from pipeline.spark.tables import paths


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = JobParser(__file__, __doc__)
    add_warehouse_arg(p)
    p.add_argument("--table", action="append", choices=every_table(), metavar="TABLE",
                   help="maintain only this table (repeatable; default: every table)")
    add_upkeep_args(p)
    add_profile_arg(p)
    return p.parse_args(argv)


@cli(parse)
def main(args: argparse.Namespace, spark: SparkSession | None = None) -> None:
    """A session passed in is used and left running."""
    warehouse = paths.qualify(args.warehouse)
    with job_session("maintain", args.profile, spark, args=args) as session:
        try:
            done = maintain(session, warehouse, args.table or every_table(), args.retain_days,
                            args.vacuum_hours)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
    for d in done:
        print(f"{d.table}: {d.files_before} files -> {d.files_after}"
              + (f", {d.deleted_rows} rows older than --retain-days deleted" if d.deleted_rows
                 else ""))
    if not done:
        print(f"no table to maintain under {warehouse}")


if __name__ == "__main__":
    main()
