"""The streaming replay: Delta event log in, the contract's Delta tables out, exactly once.

A warehouse a batch backfill built is continued from (see `handoff.py`): the log is read
from the version after the backfill's, every group starting from the state it left.

Source rows get a watermark on `event_time`, are grouped by their bucket of groups (a hash of
`group_id`, `fold.folding.BUCKET`) and folded by `applyInPandasWithState` with an event-time
timeout, group by group; `BatchWriter` writes each micro-batch.

Late rows: with an event-time timeout Spark silently drops rows behind the watermark
before the function sees them. The contract forbids silent drops, so the watermark's
metadata is moved from `event_time` to a constant far-future guard column: Spark still
computes the watermark from `event_time` (and fires timeouts by it) but finds no row late;
the fold applies late rows in log order and counts them on the group (`late_count`).
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.listener import StreamingQueryListener
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.state import GroupStateTimeout

from pipeline.errors import UsageError
from pipeline.fold import CoordinatorConfig
from pipeline.metrics import RowsCollector
from pipeline.spark.events.eventlog import select_events, with_recorded_partitions
from pipeline.spark.events.packing import PREFER_INT_EXTENSION, packed_events
from pipeline.spark.fold.folding import BUCKET, BUCKETS, GUARD, STATE_SCHEMA, bucket_fold
from pipeline.spark.fold.handoff import (
    Manifest,
    after_backfill,
    ensure_seed_table,
    read_manifest,
    seed_path,
    seed_rows,
)
from pipeline.spark.fold.wire import wire_schema
from pipeline.spark.lag.lagflow import (
    LagOptions,
    StreamLag,
    check_lag_checkpoint,
    ensure_pending,
    sample_stream,
)
from pipeline.spark.lag.samples import with_change_feed
from pipeline.spark.newest_rows import WarehouseRows
from pipeline.spark.runtime.stopping import stoppable
from pipeline.spark.share.replay import check_share_log
from pipeline.spark.stream.lines import ProgressLine
from pipeline.spark.stream.maintain import Upkeep
from pipeline.spark.stream.publish import ReplayMetrics
from pipeline.spark.stream.share import start_share_replay
from pipeline.spark.stream.sinks import BatchWriter
from pipeline.spark.tables import paths
from pipeline.spark.tables.contract import SEED, arrow_schema
from pipeline.spark.tables.errors import at_startup
from pipeline.spark.tables.options import (
    await_all,
    check_trigger,
    interval_ms,
    spark_interval,
    stream_delta,
    with_trigger,
)
from pipeline.spark.tables.paths import is_path
from pipeline.spark.tables.topics import copy_log_topics
from pipeline.spark.tables.warehouse import ensure_tables

log = logging.getLogger("replay")
WATERMARK_KEY = "spark.watermarkDelayMs"  # Spark's EventTimeWatermark.delayKey
CHECKPOINT_TODO = ("Check that folder (a stream's checkpoint, of this replay's sources), or "
                   "start on a new --checkpoint and a new --warehouse.")
HANDOFF_TODO = ("That table is written by jobs/backfill.py: run the backfill again, or use a new "
                "--warehouse.")
HELD_TODO = ("their lag is written once the event log holds records past them and the delay "
             "(an ingest and a replay that keep running), or by a backfill with a shorter "
             "--watermark-delay")  # how often a stream waiting on its hand-off looks for a new version


@dataclass
class ReplayOptions:
    events: str
    warehouse: str
    checkpoint: str
    trigger: str = "available-now"
    database: str | None = "consumer_groups"
    watermark_delay: str = "10 minutes"
    max_files_per_trigger: int | None = None
    config: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    # take offsets.topic.num.partitions from the log where the ingest recorded it (False: the
    # user set it, `config` says it)
    partitions_from_log: bool = True
    app_id: str | None = None
    lag: LagOptions | None = None  # --end-offsets: the samples stream and the lag tables
    upkeep: Upkeep | None = None  # --maintain-every: the stream maintains its tables
    # --metrics-port: the endpoint's collector, given each batch's progress and new rows
    metrics: RowsCollector | None = None
    share_state: str | None = None  # --share-state: a second query replays that log
    delay_ms: int = field(init=False)  # `watermark_delay`, parsed once

    def __post_init__(self) -> None:
        # Delta takes a relative LOCATION for a table name: make every folder absolute.
        self.warehouse = paths.qualify(self.warehouse)
        self.checkpoint = paths.qualify(self.checkpoint)
        if is_path(self.events):
            self.events = paths.qualify(self.events)
        if self.share_state is not None and is_path(self.share_state):
            self.share_state = paths.qualify(self.share_state)
        check_trigger(self.trigger)
        self.delay_ms = interval_ms(self.watermark_delay)


def read_events(spark: SparkSession, opts: ReplayOptions, manifest: Manifest | None
                ) -> DataFrame:
    """The event log as a stream, after the version of the warehouse's backfill (`manifest`,
    `read_manifest`'s) if it had one, with the backfill's group states as a second source
    (empty without a backfill)."""
    ensure_seed_table(spark, opts.warehouse)
    options: dict[str, str | int] = {}
    if opts.max_files_per_trigger:
        options["maxFilesPerTrigger"] = opts.max_files_per_trigger
    if manifest is not None:
        options["startingVersion"] = manifest.version + 1
    events = select_events(stream_delta(spark, opts.events, **options))
    events = events.withColumn(SEED, F.lit(None).cast("binary"))
    return events.unionByName(seed_rows(spark, opts.warehouse, manifest))


def _check_handoff(manifest: Manifest, opts: ReplayOptions) -> None:
    if not manifest.streamable:
        raise UsageError(
            f"{opts.warehouse} was backfilled up to an event time ({manifest.until_ms} ms), "
            "which no stream can continue from without re-reading rows; backfill without "
            "--until (or with --version) to hand off to a stream, or use a new --warehouse")
    if manifest.events != opts.events:
        raise UsageError(f"{opts.warehouse} was backfilled from {manifest.events}, "
                         f"not from {opts.events}")
    samples = None if opts.lag is None else opts.lag.end_offsets
    if manifest.samples is not None and samples is not None and manifest.samples != samples:
        raise UsageError(f"{opts.warehouse} was backfilled with --end-offsets "
                         f"{manifest.samples}, not {samples}")
    if manifest.samples is not None and samples is None:
        log.warning("%s was backfilled with --end-offsets %s; without it the stream leaves "
                    "the lag tables as the backfill wrote them", opts.warehouse, manifest.samples)


def stream_input(events: DataFrame, opts: ReplayOptions) -> DataFrame:
    """The stateful operator's input: the rows with the watermark moved to the guard column
    (see the module docstring), packed (`packed_events`) with the seed, and each row's
    bucket of groups (`folding.BUCKET`), the operator's key."""
    delay = opts.delay_ms
    marked = events.withWatermark("event_time", spark_interval(delay))
    unguarded = marked.select(
        *[F.col(c) for c in events.columns if c != "event_time"],
        F.col("event_time").alias("event_time", metadata={}),
        F.lit("2200-01-01 00:00:00").cast("timestamp").alias(GUARD, metadata={WATERMARK_KEY: delay}),
    )
    return packed_events(unguarded, SEED, GUARD).withColumn(
        BUCKET, F.pmod(F.xxhash64("group_id"), F.lit(BUCKETS)).cast("int"))


# The fold operator's key schema as Spark records it in a checkpoint (operator 0, partition 0):
# a binary header, then the key's schema as JSON, its first field the key.
_STATE_SCHEMA_FILE = ("state", "0", "0", "_metadata", "schema")
_KEY_FIELD = re.compile(rb'"fields":\[\{"name":"([^"]*)"')


def check_state_key(spark: SparkSession, checkpoint: str) -> None:
    """A checkpoint's fold state is keyed by the bucket of groups (`BUCKET`). One a stream
    keyed by group wrote (releases before the buckets) cannot go on: say so in one line
    before Spark fails its first batch with STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE and a plan."""
    data = paths.read_bytes(spark, paths.join(checkpoint, *_STATE_SCHEMA_FILE))
    found = _KEY_FIELD.search(data) if data else None
    if found is None or found.group(1).decode() == BUCKET:
        return
    raise UsageError(
        f"--checkpoint {checkpoint} holds fold state keyed by {found.group(1).decode()!r}, "
        f"an earlier release's layout (this one keys it by a bucket of groups, {BUCKET!r}): it "
        f"cannot be continued. Replay into a new --checkpoint and a new --warehouse, or run "
        f"jobs/backfill.py into a new --warehouse and stream on from its hand-off.")


def folded_stream(events: DataFrame, opts: ReplayOptions) -> DataFrame:
    packed = stream_input(events, opts)
    arrow = arrow_schema(packed.schema)
    return packed.groupBy(BUCKET).applyInPandasWithState(
        bucket_fold(opts.config, arrow), wire_schema(typed=True), STATE_SCHEMA, "append",
        GroupStateTimeout.EventTimeTimeout,
    )


@dataclass
class Replay:
    """A running replay: its query (and with --share-state the share-state log's) and the
    listeners that log its progress and publish its metrics (no query: an available-now
    replay with nothing to read yet after a backfill, `handoff.after_backfill`)."""

    spark: SparkSession
    query: StreamingQuery | None
    listener: ProgressLine
    metrics: ReplayMetrics | None = None
    share_query: StreamingQuery | None = None

    @property
    def writer(self) -> BatchWriter:
        """The query's foreachBatch writer: its `progress` holds each recent batch's figures."""
        return self.listener.writer

    def remove_listeners(self) -> None:
        for listener in listeners(self.listener, self.metrics):
            self.spark.streams.removeListener(listener)

    @property
    def queries(self) -> list[StreamingQuery]:
        return [q for q in (self.query, self.share_query) if q is not None]

    def wait(self, timeout_s: float | None = None) -> None:
        """Until every query ended (or `timeout_s` passed); a query that failed stops the
        other and raises its error."""
        queries = self.queries
        if not queries:
            return
        try:
            if len(queries) == 1:
                if timeout_s is None:
                    queries[0].awaitTermination()
                else:
                    queries[0].awaitTermination(math.ceil(timeout_s))  # whole seconds, at least
                return
            await_all(lambda: queries, timeout_s)
        finally:
            if not any(q.isActive for q in queries):
                self.remove_listeners()

    def stop(self) -> None:
        if not self.queries:
            return
        for q in self.queries:
            q.stop()
        self.remove_listeners()


def listeners(*maybe: StreamingQueryListener | None) -> list[StreamingQueryListener]:
    return [listener for listener in maybe if listener is not None]


def backfill_read(opts: ReplayOptions, manifest: Manifest) -> dict[str, int]:
    """The sources a stream over a backfilled warehouse reads (the event log, the samples),
    each with the version the backfill read."""
    read = {opts.events: manifest.version}
    if opts.lag is not None and manifest.samples_version is not None:
        read[opts.lag.end_offsets] = manifest.samples_version
    return read


def _with_share(replay: Replay, opts: ReplayOptions, app_id: str) -> Replay:
    """`replay` with its share-state query started, when `opts` asks for one."""
    if opts.share_state is not None:
        replay.share_query, replay.listener.share = start_share_replay(
            replay.spark, opts.share_state, opts.warehouse, opts.checkpoint, opts.trigger,
            app_id, opts.max_files_per_trigger,
            None if opts.lag is None else opts.lag.end_offsets, opts.delay_ms,
            opts.upkeep)
    return replay


def run_replay(spark: SparkSession, opts: ReplayOptions) -> None:
    """Start the replay and block until it ends (available-now) or fails; then say what
    samples its lag still waits for."""
    replay = start_replay(spark, opts)
    replay.wait()
    lag = replay.writer.lag
    if lag is not None and lag.held is not None and lag.held.count:
        log.info("%s", lag.held.line(lag.watermark_ms, opts.watermark_delay, HELD_TODO))


def start_replay(spark: SparkSession, opts: ReplayOptions) -> Replay:
    # Nullable integer columns in the fold's pandas frames: without it an int64 column with
    # a null arrives as float64, and an offset past 2^53 is no longer itself.
    spark.conf.set(PREFER_INT_EXTENSION, "true")
    with at_startup(f"--checkpoint {opts.checkpoint}", CHECKPOINT_TODO):
        check_lag_checkpoint(spark, opts.checkpoint, opts.lag is not None)
        check_state_key(spark, opts.checkpoint)
    if opts.share_state is not None:
        check_share_log(spark, opts.share_state)
    ensure_tables(spark, opts.warehouse, opts.database, lag=opts.lag is not None,
                  share=opts.share_state is not None)
    if opts.partitions_from_log:
        opts.config = with_recorded_partitions(spark, opts.events, opts.config)
    copy_log_topics(spark, opts.events, opts.warehouse)  # what the ingest recorded with the log
    app_id = opts.app_id or f"replay:{opts.checkpoint}"
    writer = BatchWriter(opts.warehouse, app_id, upkeep=opts.upkeep)
    with at_startup(f"the backfill's hand-off {seed_path(opts.warehouse)}", HANDOFF_TODO):
        manifest = read_manifest(spark, opts.warehouse)
    if manifest is not None and paths.is_empty(spark, paths.join(opts.checkpoint, "offsets")):
        _check_handoff(manifest, opts)  # a hand-off no stream can take is refused first
        if not after_backfill(spark, backfill_read(opts, manifest), opts.trigger, "of the log"):
            return _with_share(Replay(spark, None, ProgressLine(writer)), opts, app_id)
        log.info("continuing from the backfill of %s at version %d (%d groups)",
                 manifest.events, manifest.version, manifest.groups)
    wire = folded_stream(read_events(spark, opts, manifest), opts)
    if opts.lag is not None:
        ensure_pending(spark, opts.warehouse)
        with_change_feed(spark, opts.lag.end_offsets)
        wire = wire.unionByName(sample_stream(
            spark, opts.lag, None if manifest is None else manifest.samples_version,
            opts.max_files_per_trigger), allowMissingColumns=True)
        writer.lag = StreamLag(opts.lag, opts.warehouse, opts.delay_ms,
                               after_version=None if manifest is None
                               else manifest.samples_version)
    stream = (wire.writeStream
              .outputMode("append").foreachBatch(stoppable(writer, log))
              .option("checkpointLocation", opts.checkpoint)
              .queryName("consumer-group-replay"))
    stream = with_trigger(stream, opts.trigger)
    replay = Replay(spark, None, ProgressLine(writer), None if opts.metrics is None else ReplayMetrics(
        writer, opts.metrics, WarehouseRows(spark, opts.warehouse, opts.metrics.per_partition)))
    for listener in listeners(replay.listener, replay.metrics):
        spark.streams.addListener(listener)
    try:
        with at_startup(f"starting the stream on --checkpoint {opts.checkpoint}", CHECKPOINT_TODO):
            replay.query = stream.start()
            return _with_share(replay, opts, app_id)
    except Exception:
        replay.stop()
        replay.remove_listeners()
        raise
