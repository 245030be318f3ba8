"""Batch backfill: rebuild every output table from a historical event log, with the same fold.

    spark-submit jobs/backfill.py --events /data/events --warehouse /data/wh [--replace]
    spark-submit jobs/backfill.py --events /data/events --warehouse /data/wh-then \
        --until 2026-11-17T03:12:00

Folds each group's whole history once, in log order (mapInArrow over rows sorted by group), and replaces
each table in one Delta commit. Without --until it reads one version of the log (the
latest, or --log-version) and leaves the hand-off for jobs/replay.py: a stream started on a
new checkpoint over the same --warehouse continues from the next version of the log.
With --until it rebuilds the tables as of that event time (UTC unless an offset is given).
"""

from __future__ import annotations

import argparse

from pyspark.sql import SparkSession

from pipeline.errors import UsageError
from pipeline.jobs._common import (
    JobParser,
    add_fold_args,
    cli,
    coordinator_config,
    default_metastore,
    event_time_arg,
    job_session,
    lag_options,
    sets_partitions,
)
from pipeline.spark.backfill import BackfillOptions, run_backfill
from pipeline.spark.events.eventlog import with_recorded_partitions
from pipeline.spark.events.validate import check_event_log, check_partition_count
from pipeline.spark.stream.lines import Progress
from pipeline.spark.tables.catalog import comment_columns, persistent_catalog
from pipeline.spark.tables.options import check_cut


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = JobParser(__file__, __doc__, version_value="version")
    add_fold_args(p, "as the stream's: timers run up to the latest event time minus this")
    cut = p.add_mutually_exclusive_group()
    cut.add_argument("--until", type=event_time_arg, metavar="TIMESTAMP",
                     help="rebuild as of this event time (no stream hand-off)")
    cut.add_argument("--log-version", dest="version", type=int, metavar="N",
                     help="the event log's Delta version to read (default: the latest)")
    p.add_argument("--replace", action="store_true",
                   help="replace tables that already hold rows")
    args = p.parse_args(argv)
    try:  # --version N (an old spelling of --log-version) is outside the exclusive group
        check_cut(args.until, args.version)
    except UsageError as exc:
        p.error(str(exc))
    return args


@cli(parse)
def main(args: argparse.Namespace, spark: SparkSession | None = None) -> None:
    """A session passed in is used and left running."""
    config = coordinator_config(args.coordinator_conf)
    opts = BackfillOptions(
        events=args.events, warehouse=args.warehouse, until_ms=args.until, version=args.version,
        database=args.database or None, watermark_delay=args.watermark_delay,
        replace=args.replace, config=config, share_state=args.share_state,
        partitions_from_log=not sets_partitions(args.coordinator_conf))
    # No database, no names: the catalog (and embedded Derby's one-process lock) is never
    # opened, so a stream can write while jobs/serve.py holds the metastore.
    metastore = (args.metastore or default_metastore(opts.warehouse)) if opts.database else None
    with job_session("backfill", args.profile, spark, metastore=metastore, args=args) as session:
        opts.lag = lag_options(session, args)
        check_event_log(session, opts.events)
        if opts.partitions_from_log:  # resolved here, for the check: not again
            opts.config = config = with_recorded_partitions(session, opts.events, config)
            opts.partitions_from_log = False
        check_partition_count(session, opts.events, config.offsets_topic_num_partitions)
        with Progress(session, "backfill"):
            manifest = run_backfill(session, opts)
        if opts.database and persistent_catalog(session, opts.database):
            comment_columns(session, opts.warehouse)  # the rewrite replaced each schema
    print(f"backfilled {manifest.groups} groups from version {manifest.version} of "
          f"{manifest.events} into {opts.warehouse}")


if __name__ == "__main__":
    main()
