"""Decode real `__consumer_offsets` records into the Delta event log.

    spark-submit jobs/ingest.py --bootstrap-servers broker1:9092 --events /data/events \
        --warehouse /data/wh --checkpoint /data/ingest-ckpt --trigger processing-time:30 \
        --kafka-options-file /etc/cgr/client.properties \
        --kafka-option-env sasl.jaas.config=CGR_KAFKA_JAAS \
        --end-offsets /data/end-offsets --sample-interval '30 s'
    spark-submit jobs/ingest.py --raw /archive/consumer-offsets-dump --events /data/events \
        --warehouse /data/wh --topic-map /archive/topic-ids.csv

With --bootstrap-servers it streams the cluster's `__consumer_offsets` through Spark's Kafka
source (read_committed, checkpointed at --checkpoint); with --raw it reads a dump of raw records
(Delta or Parquet with key, value, partition, offset, timestamp) once. Either way each record
is decoded and merged into the event log at --events, inserted only if its
(log_partition, log_offset) is not there yet, so repeats are harmless. Undecodable records are
kept as MALFORMED_RECORD rows, which the replay sends to rejected_events. With --share-state,
the share coordinator's topic `__share_group_state` (live, once the cluster has it; or, with
--raw, its dump --raw-share-state) goes the same way into a log of its own, which
jobs/replay.py and jobs/backfill.py --share-state replay into share_partition_state
(docs/kafka4.md). Option values whose key names a password, secret, JAAS config or key are
never logged. The cluster's topic ids and names (or, with --raw, those of --topic-map) are
recorded with the log (`<events>_topics`), and a live cluster's `__consumer_offsets`
partition count on it (the table property kafka.offsets.topic.num.partitions):
jobs/replay.py and jobs/backfill.py take both from there (docs/contract.md §1), naming
through their warehouse's `topics` table the partitions of KIP-848 members (Kafka 4.1+ logs
their topics by id only) and of share groups. With --warehouse the names go straight to its
`topics` table too, so a stream already running names a new topic at once.

With --end-offsets (a live cluster only), a sampler runs beside the stream and merges into
that Delta table where each consumed partition's log ends (Kafka's ListOffsets: latest,
earliest and max timestamp, at --isolation-level; READ_UNCOMMITTED gives the high watermark,
the LOG-END-OFFSET `kafka-consumer-groups --describe` prints): every --sample-interval under a
processing-time trigger, at the start and at the end under available-now. It samples every
partition of the topics the log's groups commit to or subscribe to, asked with the same
--kafka-option consumer properties; a round that fails is logged and tried again at the next
interval. jobs/replay.py and jobs/backfill.py read the table to compute consumer lag.

Consumer properties come from three places, later ones winning key by key:
--kafka-options-file (a Java .properties file, as Kafka's own tools take with
--command-config), --kafka-option-env KEY=VAR (the value of environment variable VAR), and
--kafka-option KEY=VALUE. Secrets belong in the first two: a command line is visible to
every user of the machine (ps, /proc/PID/cmdline), a file or an environment is not.
"""

from __future__ import annotations

import argparse
import os

from pyspark.sql import SparkSession

from pipeline.errors import UsageError
from pipeline.jobs._common import (
    JobParser,
    add_common_args,
    cli,
    interval_arg,
    job_session,
    trigger_arg,
)
from pipeline.properties import read_properties
from pipeline.spark.ingest.ingest import IngestOptions, parse_option, run_ingest
from pipeline.spark.ingest.sampler import ISOLATION_LEVELS
from pipeline.spark.tables.paths import exists

SAMPLE_INTERVAL = "30 s"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = JobParser(__file__, __doc__)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--bootstrap-servers", help="a live cluster: host:port[,host:port...]")
    source.add_argument("--raw", help="a dump of raw records: Delta or Parquet path")
    p.add_argument("--events", required=True, help="event log: Delta path or table name")
    p.add_argument("--checkpoint", help="the stream's checkpoint folder (live cluster only)")
    p.add_argument("--starting-offsets", default="earliest",
                   help="earliest, latest, or Spark's per-partition JSON (first run only)")
    p.add_argument("--trigger", default="available-now", type=trigger_arg,
                   help="available-now, or processing-time:SECONDS")
    p.add_argument("--topic", default="__consumer_offsets", help="the topic to read")
    p.add_argument("--warehouse", help="the replay's warehouse: topic ids -> names go to its "
                                       "`topics` table too (they are always recorded with "
                                       "the log; the replay copies them when it starts)")
    p.add_argument("--topic-map", help="with --raw: a CSV (topic_id,topic_name header) or JSON "
                                       "file of the dumped cluster's topic ids and names, "
                                       "recorded with the log (and in --warehouse)")
    p.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE",
                   help="consumer property (security.protocol, sasl.mechanism, ...) or Spark "
                        "Kafka source option (failOnDataLoss, maxOffsetsPerTrigger); repeatable. "
                        "Not for secrets: a command line is visible to every user of the host")
    p.add_argument("--kafka-options-file", metavar="FILE",
                   help="consumer properties from a Java .properties file (a client.properties "
                        "as Kafka's tools take with --command-config): where secrets go")
    p.add_argument("--kafka-option-env", action="append", default=[], metavar="KEY=VAR",
                   help="consumer property KEY's value from environment variable VAR (e.g. "
                        "sasl.jaas.config=CGR_KAFKA_JAAS); repeatable")
    p.add_argument("--share-state", metavar="PATH",
                   help="the share-state log (Delta) the share coordinator's records go to: "
                        "a live cluster's __share_group_state (checkpoint "
                        "<checkpoint>/share-state), or with --raw the dump --raw-share-state "
                        "(jobs/replay.py and jobs/backfill.py --share-state read it)")
    p.add_argument("--raw-share-state", metavar="DUMP",
                   help="with --raw: a dump of __share_group_state's raw records (Delta or "
                        "Parquet, the columns of --raw)")
    add_sampling_args(p)
    add_common_args(p)
    args = p.parse_args(argv)
    try:
        args.kafka_options = kafka_options(args.kafka_options_file, args.kafka_option_env,
                                           args.kafka_option)
    except ValueError as e:  # kafka_options says which flag and why
        p.error(str(e))
    if args.bootstrap_servers and not args.checkpoint:
        p.error("--bootstrap-servers needs --checkpoint")
    if args.topic_map and not args.raw:
        p.error("--topic-map goes with --raw")
    check_sampling_args(p, args)
    return args


def kafka_options(file: str | None, from_env: list[str], given: list[str]) -> dict[str, str]:
    """The consumer properties of --kafka-options-file, then --kafka-option-env, then
    --kafka-option, later ones winning key by key."""
    options: dict[str, str] = {}
    if file is not None:
        try:
            options.update(read_properties(file))
        except OSError as e:
            raise ValueError(f"--kafka-options-file {file}: {e.strerror or e}") from None
    for text in from_env:
        key, var = parse_option(text)
        if var not in os.environ:
            raise ValueError(f"--kafka-option-env {key}: the environment has no {var}")
        options[key] = os.environ[var]
    options.update(parse_option(o) for o in given)
    return options


def add_sampling_args(p: argparse.ArgumentParser) -> None:
    # No argparse defaults: a flag given without --end-offsets is a mistake worth saying.
    p.add_argument("--end-offsets", metavar="PATH",
                   help="with --bootstrap-servers: the Delta table the end-offset samples are "
                        "merged into")
    p.add_argument("--sample-interval", type=interval_arg, metavar="INTERVAL",
                   help="with --end-offsets and a processing-time trigger: how often the end "
                        f"offsets are sampled, e.g. '30 s', '5 minutes' (default: {SAMPLE_INTERVAL})")
    p.add_argument("--isolation-level", choices=sorted(ISOLATION_LEVELS),
                   help="with --end-offsets: read_uncommitted samples the high watermark (what "
                        "kafka-consumer-groups --describe shows), read_committed the last "
                        "stable offset (default: read_uncommitted)")


def check_sampling_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.end_offsets and not args.bootstrap_servers:
        p.error("--end-offsets goes with --bootstrap-servers: end offsets are asked of a live "
                "cluster")
    if not args.end_offsets and (args.sample_interval or args.isolation_level):
        p.error("--sample-interval and --isolation-level go with --end-offsets")
    args.sample_interval = args.sample_interval or SAMPLE_INTERVAL
    args.isolation_level = args.isolation_level or "read_uncommitted"


@cli(parse)
def main(args: argparse.Namespace, spark: SparkSession | None = None) -> None:
    opts = IngestOptions(
        events=args.events, bootstrap_servers=args.bootstrap_servers, raw=args.raw,
        checkpoint=args.checkpoint, starting_offsets=args.starting_offsets,
        trigger=args.trigger, kafka_options=args.kafka_options, topic=args.topic,
        warehouse=args.warehouse, topic_map=args.topic_map, end_offsets=args.end_offsets,
        sample_interval=args.sample_interval, isolation_level=args.isolation_level,
        share_state=args.share_state, raw_share_state=args.raw_share_state,
    )
    with job_session("ingest", args.profile, spark, args=args) as session:
        for flag, dump in (("--raw", opts.raw), ("--raw-share-state", opts.raw_share_state)):
            if dump is not None and not exists(session, dump):
                raise UsageError(f"{flag} {dump}: no such path; expected a Delta or Parquet "
                                 "dump of raw records (key, value, partition, offset, "
                                 "timestamp)")
        run_ingest(session, opts)


if __name__ == "__main__":
    main()
