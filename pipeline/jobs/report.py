"""A picture of one consumer group's history; a warehouse replayed or backfilled with
--end-offsets adds a lag panel (its consumer lag in messages and in time).

    spark-submit jobs/report.py --warehouse /data/wh --group orders --output orders.png

Reads that group's rows of the output tables under --warehouse (group_state,
group_history, group_transitions and rebalances whole; offset_history and rejected_events
between --from and --to) and draws them with `pipeline.report.render`: member lanes (from
group_history) with what each member owned, generations and rebalances, state, assignment
changes, consumer lag, committed offsets, refused rows. The lag panels (lag in messages and in
time, with the group's rebalances and Empty stretches shaded and Burrow's WARN/ERR samples
marked) appear for a warehouse replayed or backfilled with --end-offsets: they draw its
partition_lag and group_lag rows sampled between --from and --to. An --output ending in .html
gets a page with the picture and tables of the rebalances, refused rows and newest lag
samples. KIP-848 members' partitions are named through the warehouse's `topics` table where
the ingest recorded one. Writes only --output.
"""

from __future__ import annotations

import argparse
import logging
from datetime import datetime
from pathlib import Path

import pandas as pd
from delta.tables import DeltaTable
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from pipeline.errors import UsageError
from pipeline.jobs._common import JobParser, add_profile_arg, add_warehouse_arg, cli, job_session
from pipeline.report import render
from pipeline.spark.events.validate import warehouse_tables
from pipeline.spark.tables import paths
from pipeline.spark.tables.options import read_delta
from pipeline.spark.tables.topics import topic_names, with_topic_names
from pipeline.times import clamp_ms, event_time_ms, utc_datetime

log = logging.getLogger("report")

# What the picture reads, and which columns: rejected_events' raw bytes and protocols stay on disk.
COLUMNS: dict[str, tuple[str, ...] | None] = {
    "group_state": None,
    "group_history": None,  # member lanes; whole, to know who was in before --from
    "group_transitions": None,
    "rebalances": None,
    "offset_history": None,
    "committed_offsets": None,  # the page's offsets-now table
    "rejected_events": ("group_id", "event_time", "log_partition", "log_offset", "event_type",
                        "member_id", "group_instance_id", "generation_id", "topic",
                        "partition", "reason", "group_state"),
    # With --end-offsets only. A row per partition per sample: only what the picture draws.
    "partition_lag": ("group_id", "sampled_at", "topic", "partition", "lag", "lag_ms",
                      "status"),
    "group_lag": None,  # the page's table shows most of it
}
# Long tables, by the column that times their rows: only the asked window is read.
WINDOWED = {"offset_history": "event_time", "rejected_events": "event_time",
            "partition_lag": "sampled_at", "group_lag": "sampled_at"}


def utc_time(text: str) -> datetime:
    """An ISO time (`2024-05-01T12:00`, `2024-05-01 12:00:00+02:00`); naive means UTC.
    A time before 1677 or after 2262 is taken as that end of the range: the tables hold no
    time outside it, and the picture's pandas times cannot."""
    try:
        ms = event_time_ms(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e
    return utc_datetime(clamp_ms(ms))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = JobParser(__file__, __doc__)
    add_warehouse_arg(p)
    p.add_argument("--group", required=True, help="the group id, taken literally")
    p.add_argument("--output", required=True, help="FILE.png, or FILE.html for a page")
    p.add_argument("--from", dest="start", type=utc_time,
                   help="draw from this event time (lag samples: sampled_at)")
    p.add_argument("--to", dest="end", type=utc_time,
                   help="draw up to this event time (lag samples: sampled_at)")
    add_profile_arg(p)
    args = p.parse_args(argv)
    if args.start and args.end and args.end <= args.start:
        p.error(f"--to ({args.end}) must be after --from ({args.start})")
    return args


def _within(start: datetime | None, end: datetime | None, column: str = "event_time") -> Column:
    # Aware datetimes: PySpark turns a naive one into a timestamp in the driver's local zone.
    cond = F.lit(True)
    if start is not None:
        cond = cond & (F.col(column) >= F.lit(start))
    if end is not None:
        cond = cond & (F.col(column) <= F.lit(end))
    return cond


def load_group(spark: SparkSession, warehouse: str, group_id: str,
               start: datetime | None = None, end: datetime | None = None
               ) -> dict[str, pd.DataFrame]:
    """`group_id`'s rows of each output table under `warehouse`, and of the lag tables where
    the replay wrote them (--end-offsets), as pandas frames; a table not there is left out."""
    frames = {}
    names = topic_names(spark, warehouse)
    for table, columns in COLUMNS.items():
        path = paths.join(paths.qualify(warehouse), table)
        if not DeltaTable.isDeltaTable(spark, path):
            continue
        df = read_delta(spark, path).filter(F.col("group_id") == F.lit(group_id))
        df = with_topic_names(df, names, table)  # KIP-848 members' partitions by name
        if table in WINDOWED:
            df = df.filter(_within(start, end, WINDOWED[table]))
        if columns is not None:
            df = df.select(*columns)
        frames[table] = df.toPandas()
    if not frames:
        raise UsageError(f"--warehouse {warehouse}: no output tables; run jobs/replay.py first")
    return frames


@cli(parse)
def main(args: argparse.Namespace, spark: SparkSession | None = None) -> Path:
    """Returns the file written. A session passed in is used and left running."""
    with job_session("report", args.profile, spark, args=args) as session:
        warehouse_tables(session, args.warehouse)
        frames = load_group(session, args.warehouse, args.group, args.start, args.end)
    if not any(len(frames.get(t, ())) for t in ("group_state", "group_transitions", "rebalances")):
        raise UsageError(f"--group {args.group}: no such group in {args.warehouse} (no "
                         "group_state, group_transitions or rebalances rows); group ids are "
                         "matched exactly")
    bounds = [None if t is None else pd.Timestamp(t).tz_convert("UTC").tz_localize(None)
              for t in (args.start, args.end)]
    picture = render(frames, args.group, bounds[0], bounds[1], path=args.output)
    log.info("wrote %s (%dx%d px): %d member lanes, %d rebalances, %d partitions, "
             "%d lag samples", picture.path, *picture.size_px, len(picture.lanes),
             picture.rebalances, len(picture.partitions), picture.lag_samples)
    return picture.path


if __name__ == "__main__":
    main()
