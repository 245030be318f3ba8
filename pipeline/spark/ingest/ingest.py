"""Real `__consumer_offsets` records into the Delta event log: from a live cluster through Spark's
Kafka source (streaming, checkpointed), or from an archived dump of raw records (batch).

Both paths decode with `pipeline.spark.events.records` in `mapInArrow` and write with one append
per micro-batch of the rows whose `(log_partition, log_offset)` is not in the log yet
(`tables.warehouse.append_missing`), each log partition's rows of the commit in one file, in
offset order: a replay that caps its micro-batches splits a commit between batches by files,
and must never read a group's later record before an earlier one. That makes every write
idempotent on the contract's unique key, whatever repeats it: Spark re-running a micro-batch
after a failure (the sink is not transactional with the checkpoint), a restart with a fresh
checkpoint or an earlier `startingOffsets`, the same dump ingested twice, or a dump overlapping
what the live path already wrote. (A Delta `txnAppId`/`txnVersion` append would cover only the
first case.) Rows that repeat a position within one batch are dropped first. The append evolves
the table's schema, so a log written before the event schema grew a column takes the new column
on its next write. One writer a log at a time: two writing the same records at the same moment
could both add them (a MERGE would refuse the second, but it writes the rows in its join's
order, one partition's records spread over every file).

The live source reads with `isolation.level=read_committed`: commits of aborted transactions
and transaction markers never arrive, and committed transactional commits arrive as plain
commits (docs/contract.md §1).

Given a warehouse, the live path also records the cluster's topic ids and names in its `topics`
table at the start and after every batch, and the dump path those of a map file
(`pipeline.spark.tables.topics`): Kafka 4.1+ logs KIP-848 groups' topics by id only.

Given an end-offsets table, the live path runs `pipeline.spark.ingest.sampler` beside the stream: it
samples the end offsets of the partitions the log's groups commit to or subscribe to (every
interval under a processing-time trigger; at the start and at the end under available-now),
and learns new topics from each micro-batch's decoded rows.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import (
    IntegralType,
    StructType,
    TimestampType,
)

from pipeline.decode.share_state import decode_share_state
from pipeline.errors import UsageError
from pipeline.spark.events.eventlog import record_partitions
from pipeline.spark.events.records import RAW_COLUMNS, decode_batches
from pipeline.spark.ingest.sampler import ISOLATION_LEVELS, EndOffsetSampler
from pipeline.spark.lag.samples import check_samples
from pipeline.spark.runtime.keep import kept
from pipeline.spark.runtime.stopping import stoppable
from pipeline.spark.tables import paths
from pipeline.spark.tables.contract import arrow_schema, event_schema, share_log_schema
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.options import (
    await_all,
    check_trigger,
    delta_table,
    interval_ms,
    read_delta,
    with_trigger,
)
from pipeline.spark.tables.topics import (
    CLUSTER,
    COMMITTED,
    cluster_topics,
    log_topics_path,
    read_topic_map,
    record_topics,
    record_topics_at,
)
from pipeline.spark.tables.warehouse import append_missing
from pipeline.times import PANDAS_MS_RANGE
from schemas.share_state import SHARE_STATE_TOPIC

log = logging.getLogger("ingest")
OFFSETS_TOPIC = "__consumer_offsets"
KEY = ("log_partition", "log_offset")
_SECRET = re.compile(r"password|secret|jaas|key", re.IGNORECASE)
# Spark Kafka source options that are not consumer properties (no `kafka.` prefix added).
_SOURCE_OPTION = re.compile(r"^[A-Za-z]+$")
# Set by this module; a user option may not change them.
_FIXED = ("subscribe", "subscribePattern", "assign", "kafka.bootstrap.servers",
          "kafka.isolation.level", "startingOffsets", "includeHeaders")


def redacted(options: Mapping[str, str]) -> dict[str, str]:
    """Options fit for a log line: values of keys naming a password, secret, JAAS or key hidden."""
    return {k: "*****" if _SECRET.search(k) else v for k, v in options.items()}


def kafka_source_options(pairs: Mapping[str, str]) -> dict[str, str]:
    """User options as Spark Kafka source options: consumer properties (`security.protocol`,
    `sasl.jaas.config`, ...) get the `kafka.` prefix, source options (`failOnDataLoss`,
    `maxOffsetsPerTrigger`, ...) and already prefixed keys pass as given."""
    out: dict[str, str] = {}
    for key, value in pairs.items():
        name = key if key.startswith("kafka.") or _SOURCE_OPTION.match(key) else f"kafka.{key}"
        if name in _FIXED:
            raise UsageError(f"--kafka-option {key} is set by the ingest job itself")
        out[name] = value
    return out


def parse_option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--kafka-option must look like key=value, got {text.split('=')[0]!r}")
    return key.strip(), value


@dataclass
class IngestOptions:
    events: str
    bootstrap_servers: str | None = None
    raw: str | None = None
    checkpoint: str | None = None
    starting_offsets: str = "earliest"
    trigger: str = "available-now"
    kafka_options: dict[str, str] = field(default_factory=dict)
    topic: str = OFFSETS_TOPIC
    warehouse: str | None = None  # where the `topics` table (topic id -> name) goes
    topic_map: str | None = None  # a raw dump's map file (CSV or JSON) of topic ids to names
    end_offsets: str | None = None  # the end-offset samples' Delta path (live cluster only)
    sample_interval: str = "30 s"  # how often the sampler asks, under a processing-time trigger
    isolation_level: str = "read_uncommitted"  # the samples' ListOffsets isolation level
    share_state: str | None = None  # the share-state log's Delta path (__share_group_state)
    raw_share_state: str | None = None  # with raw: a dump of __share_group_state's records

    def __post_init__(self) -> None:
        if (self.bootstrap_servers is None) == (self.raw is None):
            raise UsageError("give exactly one of bootstrap_servers (a live cluster) or raw (a dump)")
        if self.bootstrap_servers is not None and not self.checkpoint:
            raise UsageError("reading a live cluster needs a checkpoint folder")
        try:
            check_trigger(self.trigger)
        except ValueError as exc:
            raise UsageError(f"trigger {exc}") from None
        if paths.is_path(self.events):
            self.events = paths.qualify(self.events)
        if self.checkpoint:
            self.checkpoint = paths.qualify(self.checkpoint)
        if self.topic_map is not None and self.raw is None:
            raise UsageError("--topic-map goes with --raw (a dump)")
        if self.topic_map is not None and self.warehouse is None and not paths.is_path(self.events):
            raise UsageError("--topic-map with a catalog table as the event log needs "
                             "--warehouse (where to record it)")
        if self.warehouse:
            self.warehouse = paths.qualify(self.warehouse)
        self.kafka_options = kafka_source_options(self.kafka_options)
        self._check_sampling()
        self._check_share_state()

    def _check_share_state(self) -> None:
        if self.raw_share_state is not None and (self.raw is None or self.share_state is None):
            raise UsageError("--raw-share-state goes with --raw and --share-state (where its "
                             "records go)")
        if self.share_state is None:
            return
        if self.raw is not None and self.raw_share_state is None:
            raise UsageError("--share-state with --raw needs --raw-share-state, the dump of "
                             "__share_group_state to read")
        if not paths.is_path(self.share_state):
            raise UsageError(f"--share-state {self.share_state}: expected a path (the "
                             "share-state log's Delta table), not a table name")
        self.share_state = paths.qualify(self.share_state)

    def _check_sampling(self) -> None:
        if self.end_offsets is not None:
            if self.bootstrap_servers is None:
                raise UsageError("--end-offsets goes with --bootstrap-servers: end offsets are "
                                 "asked of a live cluster")
            if not paths.is_path(self.end_offsets):
                raise UsageError(f"--end-offsets {self.end_offsets}: expected a path (the "
                                 "samples' Delta table), not a table name")
            self.end_offsets = paths.qualify(self.end_offsets)
        if self.isolation_level.lower() not in ISOLATION_LEVELS:
            raise UsageError(f"--isolation-level {self.isolation_level}: expected "
                             f"{' or '.join(ISOLATION_LEVELS)}")
        try:
            ok = interval_ms(self.sample_interval) > 0
        except ValueError:
            ok = False
        if not ok:
            raise UsageError(f"--sample-interval {self.sample_interval!r}: expected a whole "
                             "number above 0 and a unit, e.g. '30 s', '5 minutes'")

    @property
    def sample_interval_ms(self) -> int:
        return interval_ms(self.sample_interval)


def decode_records(raw: DataFrame) -> DataFrame:
    """Raw records (key, value, partition, offset, timestamp) decoded into event-log rows."""
    schema = event_schema()
    arrow = arrow_schema(schema)
    return normalized(raw).mapInArrow(decode_batches(arrow), schema)


def decode_share_records(raw: DataFrame) -> DataFrame:
    """Raw `__share_group_state` records decoded into share-state log rows."""
    schema = share_log_schema()
    arrow = arrow_schema(schema)
    return normalized(raw).mapInArrow(decode_batches(arrow, decode_share_state), schema)


def normalized(raw: DataFrame) -> DataFrame:
    """The five record columns with the types the decoder expects; a dump may hold the timestamp
    as epoch milliseconds and the partition and offset as any integer type."""
    missing = [c for c in RAW_COLUMNS if c not in raw.columns]
    if missing:
        raise UsageError(f"raw records need columns {', '.join(RAW_COLUMNS)}; "
                         f"missing {', '.join(missing)} (have {', '.join(raw.columns)})")
    ts = raw.schema["timestamp"].dataType
    millis = (F.col("timestamp") if isinstance(ts, IntegralType)
              else F.unix_millis(F.col("timestamp").cast(TimestampType())))
    low, high = PANDAS_MS_RANGE  # beyond it the fold could not read the row: null, rejected
    timestamp = F.when(millis.between(low, high), F.timestamp_millis(millis))
    return raw.select(F.col("key").cast("binary").alias("key"),
                      F.col("value").cast("binary").alias("value"),
                      F.col("partition").cast("int").alias("partition"),
                      F.col("offset").cast("bigint").alias("offset"),
                      timestamp.alias("timestamp"))


def ensure_event_log(spark: SparkSession, events: str, schema: StructType | None = None
                     ) -> DeltaTable:
    """The event log (or, given its `schema`, the share-state log) to write into, created
    empty at a path where there is none yet."""
    if paths.is_path(events):
        create_table(spark, events, schema or event_schema())
    return delta_table(spark, events)


def merge_into_log(spark: SparkSession, events: str, rows: DataFrame,
                   schema: StructType | None = None) -> int:
    """Append the rows whose (log_partition, log_offset) the log lacks, each log partition's
    in one file, in order (`append_missing`: what a replay's capped micro-batches need); how
    many were offered. `schema`: the log's when it is not the event log's (the share-state
    log's)."""
    return append_missing(lambda: ensure_event_log(spark, events, schema), events, rows, KEY,
                          "log_offset", cluster="log_partition")


def read_raw(spark: SparkSession, path: str) -> DataFrame:
    """A dump of raw records: a Delta table, or Parquet files or folders."""
    if DeltaTable.isDeltaTable(spark, path):
        return read_delta(spark, path)
    return spark.read.parquet(path)


def committed_topic_ids(rows: DataFrame) -> dict[str, str]:
    """The topic ids Kafka 4.3+'s offset commits carry beside their topic's name: a dump
    without a map file still names the topics KIP-848 groups' assignments give by id."""
    pairs = (rows.where((F.col("event_type") == "OFFSET_COMMIT") & F.col("topic_id").isNotNull()
                        & F.col("topic").isNotNull())
             .select("topic_id", "topic").distinct().collect())
    return {r["topic_id"]: r["topic"] for r in pairs}


def ingest_raw(spark: SparkSession, opts: IngestOptions) -> int:
    """Batch: decode a dump and merge it into the event log; the number of distinct records."""
    assert opts.raw is not None
    with kept(decode_records(read_raw(spark, opts.raw))) as rows:
        n = merge_into_log(spark, opts.events, rows)
        log.info("ingested %d records from %s into %s", n, opts.raw, opts.events)
        if opts.warehouse is not None or log_topics_path(opts.events) is not None:
            _record_names(spark, opts, committed_topic_ids(rows), COMMITTED)
    if opts.raw_share_state is not None and opts.share_state is not None:
        shared = merge_into_log(spark, opts.share_state,
                                decode_share_records(read_raw(spark, opts.raw_share_state)),
                                share_log_schema())
        log.info("ingested %d records from %s into %s", shared, opts.raw_share_state,
                 opts.share_state)
    if opts.topic_map is not None:
        _record_names(spark, opts, read_topic_map(opts.topic_map), opts.topic_map)
    return n


DEPRECATED_OFFSET_FETCHING = "spark.sql.streaming.kafka.useDeprecatedOffsetFetching"


def consumer_properties(opts: IngestOptions) -> dict[str, str]:
    """The user's consumer properties (security, SASL, SSL), without the source's prefix."""
    return {k.removeprefix("kafka."): v for k, v in opts.kafka_options.items()
            if k.startswith("kafka.")}


def record_cluster_topics(spark: SparkSession, opts: IngestOptions) -> None:
    """The cluster's topic ids and names with the event log (`<events>_topics`), and into
    the warehouse's `topics` table, if it has one.

    Asked at the start and after every micro-batch, so a topic created while the stream runs
    is named by the batch that first carries its id; a topic deleted before the ingest ever
    saw it stays unnamed (a map file can name it: `--topic-map`)."""
    with_log = log_topics_path(opts.events)
    if opts.bootstrap_servers is None or (with_log is None and opts.warehouse is None):
        return
    _record_names(spark, opts,
                  cluster_topics(spark, opts.bootstrap_servers, consumer_properties(opts)), CLUSTER)


def _record_names(spark: SparkSession, opts: IngestOptions, names: dict[str, str],
                  source: str) -> None:
    """Topic ids and names with the log (a path's: `<events>_topics`) and in the warehouse."""
    if not names:
        return
    with_log = log_topics_path(opts.events)
    if with_log is not None:
        record_topics_at(spark, with_log, names, source)
    if opts.warehouse is not None:
        record_topics(spark, opts.warehouse, names, source)


def topic_partitions(spark: SparkSession, opts: IngestOptions, topic: str | None = None,
                     missing_ok: bool = False) -> list[int]:
    """The partitions of `topic` (default: the job's), asked of the cluster with the job's own
    consumer properties; `missing_ok`: none, when the cluster has no such topic yet.

    Spark's Kafka source cannot be told them by `subscribe`: its admin-based offset reader drops
    internal topics (`ConsumerStrategy.retrieveAllPartitions` filters `isInternal`), so
    `subscribe=__consumer_offsets` reads nothing. The job assigns the partitions itself and uses
    the consumer-based offset reader, which takes an assignment as given (and, unlike
    `subscribe` with that reader, joins no consumer group, so it writes nothing to the topic).
    """
    jvm: Any = spark._jvm
    props = jvm.java.util.Properties()
    props.put("bootstrap.servers", opts.bootstrap_servers)
    for key, value in consumer_properties(opts).items():
        props.put(key, value)
    name = topic or opts.topic
    admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
    try:
        if missing_ok and not admin.listTopics(
                jvm.org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(True)
        ).names().get(120, jvm.java.util.concurrent.TimeUnit.SECONDS).contains(name):
            return []
        topics = admin.describeTopics(jvm.java.util.List.of(name)).allTopicNames().get(
            120, jvm.java.util.concurrent.TimeUnit.SECONDS)
        partitions = topics.get(name).partitions()
        return sorted(partitions.get(i).partition() for i in range(partitions.size()))
    finally:
        admin.close()


def kafka_reader_options(spark: SparkSession, opts: IngestOptions,
                         partitions: dict[str, list[int]] | None = None) -> dict[str, str]:
    """Spark's Kafka source options for the topic of `opts` (the stream's; a batch read with
    them gives the committed records now, what a raw dump should hold), or for `partitions`
    of another (then from its earliest offsets, or its latest if the job's start is that)."""
    spark.conf.set(DEPRECATED_OFFSET_FETCHING, "true")  # see topic_partitions
    start = opts.starting_offsets
    if partitions is not None and start != "latest":
        start = "earliest"  # per-partition JSON names the job's own topic
    return {"kafka.bootstrap.servers": opts.bootstrap_servers or "",
            "assign": json.dumps(partitions or {opts.topic: topic_partitions(spark, opts)}),
            "startingOffsets": start,
            "kafka.isolation.level": "read_committed",
            "includeHeaders": "false", **opts.kafka_options}


def kafka_stream(spark: SparkSession, opts: IngestOptions) -> DataFrame:
    return spark.readStream.format("kafka").options(**kafka_reader_options(spark, opts)).load()


SHARE_STATE_QUERY = "share-state-ingest"
SHARE_STATE_CHECKPOINT = "share-state"


@dataclass
class ShareStateIngest:
    """With --share-state on a live cluster: `__share_group_state` into the share-state log
    by a second query (checkpoint `<checkpoint>/share-state`), one append a batch as for the
    event log. The topic exists once the cluster's first share group has state: until then
    the ingest asks again after each of its own micro-batches and starts the query then."""

    opts: IngestOptions
    sampler: EndOffsetSampler | None = None  # shown each batch's decoded records
    query: StreamingQuery | None = None
    said: bool = False

    def maybe_start(self, spark: SparkSession) -> None:
        opts = self.opts
        if self.query is not None or opts.share_state is None or opts.checkpoint is None:
            return
        partitions = topic_partitions(spark, opts, SHARE_STATE_TOPIC, missing_ok=True)
        if not partitions:
            if not self.said:
                log.info("no %s on the cluster yet (no share group has state): read once it "
                         "exists", SHARE_STATE_TOPIC)
                self.said = True
            return
        ensure_event_log(spark, opts.share_state, share_log_schema())
        target = opts.share_state
        sampler = self.sampler

        def write(batch: DataFrame, batch_id: int) -> None:
            with observed(decode_share_records(batch), sampler, share_state=True) as rows:
                n = merge_into_log(batch.sparkSession, target, rows, share_log_schema())
            log.info("share-state batch %d: %d records written to %s", batch_id, n, target)

        reader = spark.readStream.format("kafka").options(**kafka_reader_options(
            spark, opts, {SHARE_STATE_TOPIC: partitions}))
        stream = (reader.load().writeStream.foreachBatch(stoppable(write, log))
                  .option("checkpointLocation", paths.join(opts.checkpoint,
                                                           SHARE_STATE_CHECKPOINT))
                  .queryName(SHARE_STATE_QUERY))
        self.query = with_trigger(stream, opts.trigger).start()
        log.info("reading %s into %s", SHARE_STATE_TOPIC, target)

    def stop(self) -> None:
        if self.query is not None:
            self.query.stop()


@contextmanager
def observed(rows: DataFrame, sampler: EndOffsetSampler | None, share_state: bool = False
             ) -> Iterator[DataFrame]:
    """A batch's decoded `rows`, their topics shown to the `sampler` first (so a run's first
    round, waiting for them, samples while the batch is written), decoded once for both."""
    if sampler is None:
        yield rows
        return
    with kept(rows) as held:
        sampler.observe(held, share_state)
        yield held


def end_offset_sampler(spark: SparkSession, opts: IngestOptions) -> EndOffsetSampler | None:
    """The end-offset sampler `start_ingest` runs beside the stream, when `opts` has a samples
    table: every `sample_interval` under a processing-time trigger; under available-now once
    at the start, then only its last round (`stop`)."""
    if opts.end_offsets is None or opts.bootstrap_servers is None:
        return None
    if paths.exists(spark, opts.end_offsets):
        check_samples(spark, opts.end_offsets)  # a wrong table fails now, not every round
    sampler = EndOffsetSampler(
        spark, opts.bootstrap_servers, consumer_properties(opts), opts.end_offsets,
        events=opts.events, share_state=opts.share_state, isolation_level=opts.isolation_level,
        interval_ms=None if opts.trigger == "available-now" else opts.sample_interval_ms)
    sampler.helper()  # its JVM class missing (no JDK built it) fails now, not every round
    return sampler


def start_ingest(spark: SparkSession, opts: IngestOptions,
                 sampler: EndOffsetSampler | None = None,
                 share: ShareStateIngest | None = None) -> StreamingQuery:
    """Streaming: the cluster's `__consumer_offsets` into the event log, one append per batch.
    A `sampler` given is started once the log exists (it reads the log's topics) and shown
    each batch's decoded rows; stopping it is the caller's once the stream started (if it
    cannot start, the sampler is stopped here). A `share` given is started now if the
    cluster has its topic, else after the first batch that finds it."""
    assert opts.checkpoint is not None
    log.info("reading %s from %s (startingOffsets %s, trigger %s, options %s)", opts.topic,
             opts.bootstrap_servers, opts.starting_offsets, opts.trigger,
             redacted(opts.kafka_options))
    ensure_event_log(spark, opts.events)
    if opts.topic == OFFSETS_TOPIC:  # the count the replay's fold needs, with the log
        record_partitions(spark, opts.events, len(topic_partitions(spark, opts)))
    if opts.warehouse is None and log_topics_path(opts.events) is None:
        log.warning("no warehouse given: topic ids are not recorded, so KIP-848 members' "
                    "partitions will be named only where the log names them")
    record_cluster_topics(spark, opts)
    if sampler is not None:
        sampler.start()
    if share is not None:
        share.maybe_start(spark)

    def write(batch: DataFrame, batch_id: int) -> None:
        with observed(decode_records(batch), sampler) as rows:
            n = merge_into_log(batch.sparkSession, opts.events, rows)
        log.info("batch %d: %d records written to %s", batch_id, n, opts.events)
        record_cluster_topics(batch.sparkSession, opts)
        if share is not None:
            share.maybe_start(batch.sparkSession)

    try:  # the topic's partitions are asked of the cluster here: it may refuse
        stream = (kafka_stream(spark, opts).writeStream.foreachBatch(stoppable(write, log))
                  .option("checkpointLocation", opts.checkpoint)
                  .queryName("consumer-offsets-ingest"))
        return with_trigger(stream, opts.trigger).start()
    except BaseException:
        if sampler is not None:  # no stream to sample beside: the caller gets no handle
            sampler.stop(final_round=False)
        raise


def run_ingest(spark: SparkSession, opts: IngestOptions) -> None:
    """Ingest from the dump or the cluster; with a cluster, block until the stream ends, the
    end-offset sampler (given `end_offsets`) running beside it and, when the stream ended
    without an error, taking a last round."""
    if opts.raw is not None:
        ingest_raw(spark, opts)
        return
    sampler = end_offset_sampler(spark, opts)
    share = None if opts.share_state is None else ShareStateIngest(opts, sampler)
    ended = False
    try:
        main = start_ingest(spark, opts, sampler, share)
        await_all(lambda: [main] if share is None or share.query is None
                  else [main, share.query])
        ended = True
    finally:
        if share is not None and not ended:
            share.stop()
        if sampler is not None:
            # A failing or interrupted job exits now, not after one more round's time-outs.
            sampler.stop(final_round=ended)
    if sampler is not None and sampler.sampled and opts.trigger == "available-now":
        log.info("this run's end-offset samples are later than every record it wrote: a "
                 "replay writes their lag once the event log holds records past them and its "
                 "--watermark-delay; for lag as the cluster moves, keep the ingest running "
                 "(--trigger processing-time:SECONDS)")
