"""Streaming replay: the Delta event log in, the consumer-group tables out, exactly once.

    spark-submit jobs/replay.py --events /data/events --warehouse /data/wh \
        --checkpoint /data/ckpt --trigger processing-time:30

Reads the event log (a Delta path, or a catalog table name) as a stream, folds each
group's rows the way Kafka's group coordinator does, and writes group_state and
committed_offsets (MERGE) and group_transitions, rebalances, offset_history,
rejected_events, error_responses and group_history (append) under --warehouse,
registered in the catalog database.
Restart it on the same --checkpoint and it resumes where it stopped.
"""

from __future__ import annotations

import argparse

from pipeline.spark.replay import ReplayOptions, run_replay

from _common import add_common_args, coordinator_config, job_session, setup_logging


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", required=True, help="event log: Delta path or table name")
    p.add_argument("--warehouse", required=True, help="where the output tables live")
    p.add_argument("--checkpoint", required=True, help="the stream's checkpoint folder")
    p.add_argument("--trigger", default="available-now",
                   help="available-now, or processing-time:SECONDS")
    p.add_argument("--database", default="consumer_groups",
                   help="catalog database to register the tables in ('' for none)")
    p.add_argument("--watermark-delay", default="10 minutes")
    p.add_argument("--max-files-per-trigger", type=int)
    add_common_args(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    setup_logging()
    args = parse(argv)
    opts = ReplayOptions(
        events=args.events, warehouse=args.warehouse, checkpoint=args.checkpoint,
        trigger=args.trigger, database=args.database or None, watermark_delay=args.watermark_delay,
        max_files_per_trigger=args.max_files_per_trigger,
        config=coordinator_config(args.coordinator_conf),
    )
    with job_session("replay", args.profile) as spark:
        run_replay(spark, opts)


if __name__ == "__main__":
    main()
