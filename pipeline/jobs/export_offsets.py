"""A group's committed offsets as of a past event time, as the CSV that
`kafka-consumer-groups --reset-offsets --from-file` reads (topic,partition,offset).

    .venv/bin/python jobs/export_offsets.py --warehouse /data/wh --group orders \
        --as-of 2026-11-17T03:00:00 --output orders.csv
    kafka-consumer-groups --bootstrap-server ... --group orders --reset-offsets \
        --from-file orders.csv --dry-run        # then --execute, with the group stopped

The time is parsed before it reaches SQL (a literal built from the parsed value); the group
id is only a Column value. A group with no committed offset at that time is an error.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from pipeline.errors import UsageError
from pipeline.jobs._common import (
    JobParser,
    add_profile_arg,
    add_warehouse_arg,
    cli,
    event_time_arg,
    job_session,
    open_warehouse,
)
from pipeline.spark.tables.catalog import as_of


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = JobParser(__file__, __doc__)
    add_warehouse_arg(p)
    p.add_argument("--group", required=True, help="the group id, taken literally")
    p.add_argument("--as-of", type=event_time_arg, required=True, metavar="TIMESTAMP",
                   help="the event time whose offsets to export (ISO; UTC unless an offset)")
    p.add_argument("--output", required=True, help="CSV file to write ('-' for stdout)")
    add_profile_arg(p)
    return p.parse_args(argv)


def offsets_csv(rows: list[tuple[str, int, int]], out: object) -> None:
    writer = csv.writer(out, lineterminator="\n")  # type: ignore[arg-type]
    for topic, partition, offset in sorted(rows):
        writer.writerow([topic, partition, offset])


@cli(parse)
def main(args: argparse.Namespace, spark: SparkSession | None = None) -> int:
    """Returns the exit status. A session passed in is used and left running."""
    with job_session("export-offsets", args.profile, spark, args=args) as session:
        open_warehouse(session, args.warehouse, args.group)
        rows = [(r["topic"], r["partition"], r["committed_offset"]) for r in
                as_of(session, "committed_offsets_as_of", args.as_of, args.group)
                .select("topic", "partition", "committed_offset").collect()]
    if not rows:
        raise UsageError(f"--group {args.group}: no committed offset at --as-of; expected a "
                         "time after the group's first commit")
    if args.output == "-":
        offsets_csv(rows, sys.stdout)
    else:
        with Path(args.output).open("w", newline="") as out:
            offsets_csv(rows, out)
        print(f"wrote {len(rows)} offsets of {args.group!r} to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
