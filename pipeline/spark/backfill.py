"""The batch backfill: a historical event log in, every output table rebuilt, in one pass.

Each group's whole history is folded once, in log order, by a batch `mapInArrow` with
the streaming job's own fold; the timers then run up to the cut (the event time asked for,
or the log's watermark, where a stream over the same rows would stand). Every table is then
replaced in one Delta commit of its own.

Hand-off: a backfill of a whole log version (no `until`) also writes each group's final
fold state to `<warehouse>/_backfill_state`, and in that commit's `userMetadata` a
manifest (events source, version read, watermark). A stream started on a fresh checkpoint
over that warehouse reads the events from the next version on and seeds every group from
that table (see `replay.py`), so no record is applied twice or skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.errors import UsageError
from pipeline.fold import CoordinatorConfig
from pipeline.fold.group_replay import DELETES_KEY
from pipeline.spark.events.eventlog import select_events, with_recorded_partitions
from pipeline.spark.events.packing import packed_events
from pipeline.spark.fold.folding import batch_fold
from pipeline.spark.fold.handoff import Manifest, ensure_seed_table, seed_path
from pipeline.spark.fold.wire import BACKFILL_STATE, folded, table_count, table_rows, wire_schema
from pipeline.spark.lag.lagflow import BackfillLag, LagOptions, ensure_pending
from pipeline.spark.runtime.keep import kept
from pipeline.spark.runtime.session import temporary_conf
from pipeline.spark.share.lag import (
    LAG_WRITES,
    ensure_lag_state,
    lag_state_path,
    lag_state_schema,
    release_step,
    share_lag_step,
)
from pipeline.spark.share.replay import HISTORY as SHARE_HISTORY
from pipeline.spark.share.replay import (
    ShareHandoff,
    check_share_log,
    current_path,
    ensure_current,
    history_rows,
    last_rows,
    rejected_rows,
    replayed,
)
from pipeline.spark.tables import paths, writes
from pipeline.spark.tables.contract import table_schema
from pipeline.spark.tables.options import check_cut, interval_ms, latest_version, read_delta
from pipeline.spark.tables.parallel import run_all
from pipeline.spark.tables.paths import is_path
from pipeline.spark.tables.topics import copy_log_topics
from pipeline.spark.tables.warehouse import ensure_tables, open_for_rewrite
from schemas import APPEND_TABLES, OUTPUT_TABLES
from schemas.lag import LAG_TABLES
from schemas.share_state import SHARE_TABLES

ARROW_BATCH_ROWS = "spark.sql.execution.arrow.maxRecordsPerBatch"
FOLD_BATCH_ROWS = 1000
log = logging.getLogger("backfill")


@dataclass
class BackfillOptions:
    events: str
    warehouse: str
    until_ms: int | None = None  # rows with event_time <= until; timers due before it
    version: int | None = None  # the event log's Delta version to read; None: the latest
    database: str | None = "consumer_groups"
    watermark_delay: str = "10 minutes"
    replace: bool = False  # replace tables that already hold rows
    config: CoordinatorConfig | None = None
    # take offsets.topic.num.partitions from the log where the ingest recorded it (False: the
    # user set it, `config` says it)
    partitions_from_log: bool = True
    lag: LagOptions | None = None  # --end-offsets: write the lag tables too
    share_state: str | None = None  # --share-state: the share-state log, replayed too
    delay_ms: int = field(init=False)  # `watermark_delay`, parsed once

    def __post_init__(self) -> None:
        self.warehouse = paths.qualify(self.warehouse)
        if is_path(self.events):
            self.events = paths.qualify(self.events)
        if self.share_state is not None and is_path(self.share_state):
            self.share_state = paths.qualify(self.share_state)
        self.delay_ms = interval_ms(self.watermark_delay)
        check_cut(self.until_ms, self.version)


def run_backfill(spark: SparkSession, opts: BackfillOptions) -> Manifest:
    cfg = opts.config or CoordinatorConfig()
    if opts.partitions_from_log:
        cfg = with_recorded_partitions(spark, opts.events, cfg)
    version = opts.version if opts.version is not None else latest_version(spark, opts.events)
    events = select_events(read_delta(spark, opts.events, version))
    if opts.until_ms is not None:
        events = events.filter(F.col("event_time").isNull()
                               | (F.col("event_time") <= F.timestamp_millis(F.lit(opts.until_ms))))
    # MAX over a Delta table is answered from the log's file statistics when it can be.
    top = events.agg(F.max(F.unix_millis("event_time"))).first()
    max_ms = None if top is None or top[0] is None else int(top[0])
    if opts.until_ms is not None:
        cut: int | None = opts.until_ms
    else:
        cut = None if max_ms is None else max_ms - opts.delay_ms
    if opts.share_state is not None:
        check_share_log(spark, opts.share_state)
    filled = _filled_tables(spark, opts)
    ensure_tables(spark, opts.warehouse, opts.database, lag=opts.lag is not None,
                  share=opts.share_state is not None)
    copy_log_topics(spark, opts.events, opts.warehouse)  # what the ingest recorded with the log
    # Created empty first, like every table: a kill inside a first commit that writes data
    # could leave files with no _delta_log, which no create recognises as its own.
    ensure_seed_table(spark, opts.warehouse)
    if opts.lag is not None and opts.until_ms is None:
        ensure_pending(spark, opts.warehouse)
    lag = None if opts.lag is None else BackfillLag.read(spark, opts.lag)
    try:
        with arrow_batches(spark), folded(folded_history(
                packed_events(events), cfg, cut, seed=opts.until_ms is None),
                "backfill") as (wire, counts):
            log.info("folded %s groups from version %d of %s: %s",
                     counts.get("group_state", 0), version, opts.events, counts)
            manifest = _write(spark, opts, wire, counts,
                              Manifest(events=opts.events, version=version,
                                       until_ms=opts.until_ms, watermark_ms=cut,
                                       max_event_time_ms=max_ms,
                                       groups=counts.get("group_state", 0),
                                       samples=None if lag is None else lag.opts.end_offsets,
                                       samples_version=None if lag is None else lag.version),
                              filled, lag)
    finally:
        if lag is not None:
            lag.release()
    log.info("backfill done: %s", manifest.to_json())
    return manifest


def _write(spark: SparkSession, opts: BackfillOptions, wire: DataFrame, counts: dict[str, int],
           manifest: Manifest, filled: set[str], lag: BackfillLag | None) -> Manifest:
    """Every table replaced from the folded wire, the lag tables after them, the hand-off
    last (a manifest exists only when every table was replaced)."""
    # A table that was empty and gets no rows stays as it is: no commit, no Spark job.
    run_all([partial(_replace, spark, paths.join(opts.warehouse, table),
                     _final_rows(wire, table, table_count(counts, table)),
                     table in APPEND_TABLES, table in filled)
             for table in OUTPUT_TABLES if table in filled or table_count(counts, table)])
    if lag is not None:  # over the history tables just written
        run_all([partial(_replace, spark, paths.join(opts.warehouse, table), lag_rows, True,
                         table in filled)
                 for table, lag_rows in lag.tables(spark, opts.warehouse,
                                                   manifest.watermark_ms).items()])
        if opts.until_ms is None:
            held = lag.write_pending(opts.warehouse, manifest.watermark_ms)
            if held.count:
                log.info(held.line(manifest.watermark_ms, opts.watermark_delay,
                                   "a stream continuing from this backfill writes their lag, "
                                   "or a backfill with a shorter --watermark-delay writes it now"))
    if opts.share_state is not None:
        _write_share(spark, opts, "share_partition_state" in filled, lag)
    # Last, so a manifest exists only when every table was replaced.
    seeds = table_rows(wire, BACKFILL_STATE, count=counts.get(BACKFILL_STATE, 0))
    # The manifest is this commit's (made even over an empty table with no seeds).
    writes.overwrite(spark, seeds, seed_path(opts.warehouse), new_schema=True,
                     metadata=manifest.to_json())
    return manifest


def _write_share(spark: SparkSession, opts: BackfillOptions, filled: bool,
                 lag: BackfillLag | None) -> None:
    """The share-state log replayed whole (up to `until_ms`): share_partition_state replaced,
    the refused records added to rejected_events (replaced just before), and each key's last
    row into `_share_state` with the hand-off (the log's version read) a stream continues
    from."""
    assert opts.share_state is not None
    version = latest_version(spark, opts.share_state)
    rows = read_delta(spark, opts.share_state, version)
    if opts.until_ms is not None:
        rows = rows.filter(F.col("event_time").isNull()
                           | (F.col("event_time") <= F.timestamp_millis(F.lit(opts.until_ms))))
    ensure_current(spark, opts.warehouse)
    nothing = spark.createDataFrame([], table_schema(SHARE_HISTORY))
    with kept(replayed(rows, nothing)) as out:
        _replace(spark, paths.join(opts.warehouse, SHARE_HISTORY), history_rows(out), True,
                 filled)
        writes.append(spark, rejected_rows(out), paths.join(opts.warehouse, "rejected_events"))
        # a cut by event time is no state a stream can continue
        handoff = None if opts.until_ms is not None \
            else ShareHandoff(opts.share_state, version).to_json()
        _write_share_lag(spark, opts, lag)  # over share_partition_state just written
        writes.overwrite(spark, last_rows(out), current_path(opts.warehouse), metadata=handoff)
    log.info("replayed version %d of the share-state log %s", version, opts.share_state)


def _write_share_lag(spark: SparkSession, opts: BackfillOptions, lag: BackfillLag | None
                     ) -> None:
    """The share lag of the samples (the version the backfill read) the share-state log's
    watermark passed, appended to the lag tables the backfill has just replaced;
    `_share_lag` for a stream to continue, emptied when there is none (no samples, or no
    record applied), so a stream never continues from an earlier backfill's."""
    ensure_lag_state(spark, opts.warehouse)
    step = None if lag is None else share_lag_step(
        spark, opts.warehouse, lag.opts.end_offsets, opts.delay_ms,
        opts.until_ms, fresh=True, samples_version=lag.version)
    if step is None:
        writes.overwrite(spark, spark.createDataFrame([], lag_state_schema()),
                         lag_state_path(opts.warehouse))
        return
    try:
        if step.rows.limit(1).count():
            for table, make in LAG_WRITES:
                writes.append(spark, make(step.rows), paths.join(opts.warehouse, table))
        writes.overwrite(spark, step.state, lag_state_path(opts.warehouse))
    finally:
        release_step(step)


def _final_rows(wire: DataFrame, table: str, count: int) -> DataFrame:
    if table != "committed_offsets":
        return table_rows(wire, table, count=count)
    rows = table_rows(wire, table, extra=True, count=count)  # an offset gone by the end is no row
    return rows.filter(~F.coalesce(F.col(DELETES_KEY), F.lit(False))).drop(DELETES_KEY)


def folded_history(packed: DataFrame, cfg: CoordinatorConfig, cut: int | None,
                   seed: bool) -> DataFrame:
    """Every group's whole history folded, its timers run up to `cut`: the wire rows. The
    rows cross into Python packed (`packing.packed_events`), shuffled by group and sorted so
    that each group's rows come together, many groups an Arrow batch (`folding.batch_fold`);
    the records whose rows the JVM builds come back as they came in (`fold/left.py`). Run it
    under `arrow_batches`."""
    return (packed.repartition("group_id").sortWithinPartitions("group_id")
            .mapInArrow(batch_fold(cfg, cut, seed=seed),
                        wire_schema(typed=True)))


@contextmanager
def arrow_batches(spark: SparkSession, rows: int = FOLD_BATCH_ROWS) -> Iterator[None]:
    """Spark's Arrow batches into Python at most `rows` long while the block runs: the JVM's
    cost per row grows with a batch's length (docs/performance.md, How the rows travel)."""
    with temporary_conf(spark, {ARROW_BATCH_ROWS: str(rows)}):
        yield


def _filled_tables(spark: SparkSession, opts: BackfillOptions) -> set[str]:
    """The output tables that already hold rows; refused unless `replace` is asked for."""
    tables = [*OUTPUT_TABLES, *(LAG_TABLES if opts.lag is not None else ()),
              *(SHARE_TABLES if opts.share_state is not None else ())]
    filled = {t for t in tables
              if DeltaTable.isDeltaTable(spark, paths.join(opts.warehouse, t))
              and read_delta(spark, paths.join(opts.warehouse, t)).limit(1).count()}
    if filled and not opts.replace:
        raise UsageError(
            f"{opts.warehouse} already holds rows in {', '.join(sorted(filled))}: pass --replace "
            "to replace every table (one Delta commit each; older versions stay readable by "
            "time travel), or give a new --warehouse")
    return filled


def _replace(spark: SparkSession, path: str, rows: DataFrame, append_only: bool,
             filled: bool) -> None:
    """Replace one table's rows in one commit. An empty table is appended to: the same rows,
    and no appendOnly toggle (Delta refuses even an empty append-only table an overwrite),
    so a fresh warehouse costs one commit a table, from the driver when its rows are few
    (`writes`). A filled append-only table is opened for just the overwrite, by Spark."""
    if not filled:
        writes.append(spark, rows, path)
        return
    with open_for_rewrite(spark, path, append_only):
        writes.overwrite(spark, rows, path, new_schema=True)
