"""Streaming replay: the Delta event log in, the consumer-group tables out, exactly once.

    spark-submit jobs/replay.py --events /data/events --warehouse /data/wh \
        --checkpoint /data/ckpt --trigger processing-time:30

Reads the event log (a Delta path, or a catalog table name) as a stream, folds each
group's rows the way Kafka's group coordinator does, and writes group_state and
committed_offsets (MERGE) and group_transitions, rebalances, offset_history,
rejected_events, error_responses and group_history (append) under --warehouse,
registered in the catalog database. Every 100th micro-batch it compacts and vacuums them
(--maintain-every).
Restart it on the same --checkpoint and it resumes where it stopped. With --metrics-port the
driver serves Prometheus metrics (docs/metrics.md): the groups' newest lag, status and state,
and each micro-batch's progress.
"""

from __future__ import annotations

import argparse

from pyspark.sql import SparkSession

from pipeline.jobs._common import (
    JobParser,
    add_fold_args,
    add_metrics_args,
    add_upkeep_args,
    cli,
    coordinator_config,
    default_metastore,
    job_session,
    lag_options,
    metrics_endpoint,
    positive_int,
    sets_partitions,
    trigger_arg,
    upkeep_options,
    whole_number,
)
from pipeline.spark.events.eventlog import with_recorded_partitions
from pipeline.spark.events.validate import check_event_log, check_partition_count
from pipeline.spark.stream.lines import Progress
from pipeline.spark.stream.maintain import DEFAULT_EVERY
from pipeline.spark.stream.replay import ReplayOptions, run_replay


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = JobParser(__file__, __doc__)
    add_fold_args(p, "how far event time may run back before timers fire")
    p.add_argument("--checkpoint", required=True, help="the stream's checkpoint folder")
    p.add_argument("--trigger", default="available-now", type=trigger_arg,
                   help="available-now (what is there, then stop), or processing-time:SECONDS")
    p.add_argument("--max-files-per-trigger", type=positive_int, metavar="N",
                   help="read at most N files of the log per micro-batch (default: all); a log "
                        "whose commits spread one partition over several files must be read "
                        "without it (docs/running.md)")
    p.add_argument("--maintain-every", type=whole_number, default=DEFAULT_EVERY, metavar="N",
                   help="after every N-th micro-batch, OPTIMIZE and VACUUM the tables "
                        f"(jobs/maintain.py's upkeep, run by the stream itself; default "
                        f"{DEFAULT_EVERY}, 0: never)")
    add_upkeep_args(p)
    add_metrics_args(p)
    return p.parse_args(argv)


@cli(parse)
def main(args: argparse.Namespace, spark: SparkSession | None = None) -> None:
    """A session passed in is used and left running."""
    opts = ReplayOptions(
        events=args.events, warehouse=args.warehouse, checkpoint=args.checkpoint,
        trigger=args.trigger, database=args.database or None, watermark_delay=args.watermark_delay,
        max_files_per_trigger=args.max_files_per_trigger,
        config=coordinator_config(args.coordinator_conf), upkeep=upkeep_options(args),
        share_state=args.share_state,
        partitions_from_log=not sets_partitions(args.coordinator_conf),
    )
    # No database, no names: the catalog (and embedded Derby's one-process lock) is never
    # opened, so a stream can write while jobs/serve.py holds the metastore.
    metastore = (args.metastore or default_metastore(opts.warehouse)) if opts.database else None
    # The endpoint first: a port it cannot have is refused before a JVM starts.
    with metrics_endpoint(args, args.metrics_host, "replay") as server, \
            job_session("replay", args.profile, spark, metastore=metastore, args=args) as session:
        opts.metrics = None if server is None else server.collector
        opts.lag = lag_options(session, args)
        check_event_log(session, opts.events)
        if opts.partitions_from_log:  # resolved here, for the check: not again
            opts.config = with_recorded_partitions(session, opts.events, opts.config)
            opts.partitions_from_log = False
        check_partition_count(session, opts.events, opts.config.offsets_topic_num_partitions)
        with Progress(session, "replay"):
            run_replay(session, opts)


if __name__ == "__main__":
    main()
