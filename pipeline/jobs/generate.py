"""Write a synthetic, seeded consumer-group event log to a Delta table, and with --end-offsets
the end offsets of the producers simulated behind its topics, sampled, to another.

    spark-submit jobs/generate.py --output /data/events --groups 200 --events 100000 --seed 1

Simulated Kafka consumers drive the coordinator fold, so the log is realistic: joins,
two-phase member ids, static members, crashes, leaves, cooperative rebalances,
auto-commits, standalone and transactional committers. `--log-kind offsets-topic` keeps
only what a real `__consumer_offsets` would hold; `--bad-rows` mixes in malformed
and duplicated rows. Simulated producers run behind the topics (steady, bursty, and one
that stops partway), so no commit passes a partition's log end; most groups keep up, some
fall behind, a rare one seeks back. Reads nothing; writes the Delta table at --output and,
with `--end-offsets`, the end-offset samples there (every partition every
`--sample-interval` from the log's start to its last event; columns: schemas/lag.py) for
replay and backfill's `--end-offsets`.
"""

from __future__ import annotations

import argparse
import logging
import time

from pyspark.sql import SparkSession

from pipeline.errors import UsageError
from pipeline.generator import LogSpec, end_offset_samples, generate, last_event_ms
from pipeline.generator.log import LOG_KINDS
from pipeline.jobs._common import (
    JobParser,
    add_common_args,
    cli,
    coordinator_config,
    fraction,
    interval_arg,
    job_session,
    positive_int,
)
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.lag.samples import write_samples
from pipeline.spark.tables.options import interval_ms

log = logging.getLogger("generate")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = JobParser(__file__, __doc__)
    p.add_argument("--output", required=True, help="Delta table path for the event log")
    p.add_argument("--groups", type=positive_int, default=50, help="consumer groups")
    p.add_argument("--events", type=positive_int, default=20_000, help="rows in the log")
    p.add_argument("--seed", type=int, default=1, help="the same seed gives the same log")
    p.add_argument("--log-kind", choices=LOG_KINDS, default="journal",
                   help="journal: requests and records; offsets-topic: only what a real "
                        "__consumer_offsets holds")
    p.add_argument("--bad-rows", type=fraction, default=0.0,
                   help="fraction of malformed and duplicated rows, 0..1")
    p.add_argument("--out-of-order", type=fraction, default=0.0,
                   help="fraction of rows delivered at the end of the log, positions kept")
    p.add_argument("--commits", type=positive_int, default=1,
                   help="Delta commits (one file each)")
    p.add_argument("--end-offsets", metavar="PATH",
                   help="also write the simulated producers' end-offset samples, a Delta "
                        "table, here (merged: a sample already there is kept once)")
    p.add_argument("--sample-interval", type=interval_arg, default="30 s",
                   help="time between two end-offset samples, e.g. '30 s', '1 minute'")
    add_common_args(p)
    return p.parse_args(argv)


@cli(parse)
def main(args: argparse.Namespace, spark: SparkSession | None = None) -> None:
    """A session passed in is used and left running."""
    interval = interval_ms(args.sample_interval)
    if interval < 1:
        raise UsageError(f"--sample-interval {args.sample_interval!r}: expected a positive "
                         "interval, e.g. '30 s'")
    spec = LogSpec(groups=args.groups, events=args.events, seed=args.seed,
                   log_kind=args.log_kind, bad_rows=args.bad_rows, out_of_order=args.out_of_order,
                   config=coordinator_config(args.coordinator_conf), sample_interval_ms=interval)
    start = time.monotonic()
    events = generate(spec)
    log.info("generated %d events for %d groups in %.1f s", len(events), args.groups,
             time.monotonic() - start)
    with job_session("generate", args.profile, spark, args=args) as session:
        write_event_log(session, events, args.output, args.commits)
        log.info("wrote %s", args.output)
        if args.end_offsets:
            samples = end_offset_samples(spec, last_event_ms(events))
            write_samples(session, samples, args.end_offsets)
            log.info("wrote %d end-offset samples to %s", len(samples), args.end_offsets)


if __name__ == "__main__":
    main()
