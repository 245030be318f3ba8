"""Batch backfill: rebuild every output table from a historical event log, with the same fold.

    spark-submit jobs/backfill.py --events /data/events --warehouse /data/wh [--replace]
    spark-submit jobs/backfill.py --events /data/events --warehouse /data/wh-then \
        --until 2026-11-17T03:12:00

Folds each group's whole history once, in log order (batch applyInArrow), and replaces
each table in one Delta commit. Without --until it reads one version of the log (the
latest, or --version) and leaves the hand-off for jobs/replay.py: a stream started on a
new checkpoint over the same --warehouse continues from the next version of the log.
With --until it rebuilds the tables as of that event time (UTC unless an offset is given).
"""

from __future__ import annotations

import argparse

from pipeline.spark.backfill import BackfillOptions, run_backfill

from _common import add_common_args, coordinator_config, event_time_arg, job_session, setup_logging


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", required=True, help="event log: Delta path or table name")
    p.add_argument("--warehouse", required=True, help="where the output tables live")
    cut = p.add_mutually_exclusive_group()
    cut.add_argument("--until", type=event_time_arg, metavar="TIMESTAMP",
                     help="rebuild as of this event time (no stream hand-off)")
    cut.add_argument("--version", type=int, help="the event log's Delta version to read")
    p.add_argument("--replace", action="store_true",
                   help="replace tables that already hold rows")
    p.add_argument("--database", default="consumer_groups",
                   help="catalog database to register the tables in ('' for none)")
    p.add_argument("--watermark-delay", default="10 minutes",
                   help="as the stream's: timers run up to the latest event time minus this")
    add_common_args(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    setup_logging()
    args = parse(argv)
    opts = BackfillOptions(
        events=args.events, warehouse=args.warehouse, until_ms=args.until, version=args.version,
        database=args.database or None, watermark_delay=args.watermark_delay,
        replace=args.replace, config=coordinator_config(args.coordinator_conf))
    with job_session("backfill", args.profile) as spark:
        manifest = run_backfill(spark, opts)
    print(f"backfilled {manifest.groups} groups from version {manifest.version} of "
          f"{manifest.events} into {opts.warehouse}")


if __name__ == "__main__":
    main()
