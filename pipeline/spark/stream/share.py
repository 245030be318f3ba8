"""The share-state log as a second query of the replay job (`--share-state`): each
micro-batch of `__share_group_state` records replayed per key from each key's last row
(`pipeline.spark.share.replay`), exactly once.

Its own checkpoint, `<checkpoint>/share-state`, and its own app id for the batch marks
(`sinks.batch_mark`), so its commits to rejected_events never stand for the main query's.
Each batch writes share_partition_state and rejected_events first, then MERGEs each key's
new last row into `_share_state`: a batch Spark runs again after a crash between the two
finds the marks of the first and `_share_state` as it was, so it computes the same rows and
writes only what is missing. A table the batch gives no row gets no commit.

Over a warehouse a backfill with `--share-state` built, a new checkpoint reads the log from
the version after the backfill's (`_share_state`'s hand-off).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from pipeline.errors import UsageError
from pipeline.spark.fold.handoff import after_backfill
from pipeline.spark.runtime.keep import kept
from pipeline.spark.runtime.session import COMMIT_METADATA, temporary_conf
from pipeline.spark.runtime.stopping import stoppable
from pipeline.spark.share.lag import (
    LAG_WRITES,
    ensure_lag_state,
    lag_state_path,
    release_step,
    share_lag_step,
)
from pipeline.spark.share.replay import (
    HISTORY,
    LAST,
    REASON,
    ensure_current,
    history_rows,
    last_of,
    last_rows,
    merge_current,
    read_handoff,
    rejected_rows,
    replayed,
)
from pipeline.spark.stream.maintain import SHARE_WORKING_TABLES, Upkeep
from pipeline.spark.stream.sinks import BatchProgress, BatchWriter, batch_mark, record
from pipeline.spark.tables import paths, writes
from pipeline.spark.tables.options import (
    stream_delta,
    with_trigger,
)
from schemas.internal import SHARE_CURRENT, SHARE_LAG

log = logging.getLogger("replay")
SHARE_QUERY = "share-state-replay"
RECORDS = "records"
SHARE_CHECKPOINT = "share-state"


@dataclass
class ShareWriter:
    """The foreachBatch function of the share-state query."""

    warehouse: str
    app_id: str
    # --end-offsets and the watermark delay: the share lag's rows (`pipeline.spark.share.lag`)
    end_offsets: str | None = None
    delay_ms: int = 0
    # --maintain-every: after every N-th of its batches, the share query maintains its own
    # working tables (the main query's upkeep leaves them out: it would race these writes)
    upkeep: Upkeep | None = None
    tables: BatchWriter = field(init=False)
    progress: dict[int, BatchProgress] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tables = BatchWriter(self.warehouse, self.app_id)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        start = time.monotonic()
        spark = batch.sparkSession
        seconds: dict[str, float] = {}
        with kept(replayed(batch, last_of(spark, self.warehouse, batch))) as out:
            counts = out.agg(  # a row a record: applied, or refused with its reason
                F.count(F.lit(1)).alias(RECORDS),
                F.count(F.when(F.col(REASON).isNull(), 1)).alias(HISTORY),
                F.count(F.col(REASON)).alias("rejected_events"),
                F.count(F.when(F.col(LAST), 1)).alias(SHARE_CURRENT)).first()
            assert counts is not None
            def path(table: str) -> str:
                return paths.join(self.warehouse, table)

            first: dict[str, Callable[[], None]] = {}
            if counts[HISTORY]:
                first[HISTORY] = lambda: writes.append(spark, history_rows(out), path(HISTORY))
            if counts["rejected_events"]:
                first["rejected_events"] = lambda: writes.append(
                    spark, rejected_rows(out), path("rejected_events"))
            with temporary_conf(spark, {COMMIT_METADATA: batch_mark(self.app_id, batch_id)}):
                self.tables.write_phase(spark, batch_id, first, seconds)
                lag_rows = self._lag(spark, batch_id, seconds,
                                     history_rows(out) if counts[HISTORY] else None)
                if counts[SHARE_CURRENT]:
                    self.tables.write_phase(spark, batch_id, {SHARE_CURRENT: lambda: merge_current(
                        spark, self.warehouse, last_rows(out))}, seconds)
        if self.upkeep is not None and self.upkeep.due(batch_id):
            self.upkeep.run(spark, self.warehouse, SHARE_WORKING_TABLES)
        record(self.progress, batch_id, BatchProgress(
            rows={**{k: counts[k] for k in (RECORDS, HISTORY, "rejected_events")},
                  "partition_lag": lag_rows},
            rejected=counts["rejected_events"], write_s=time.monotonic() - start,
            tables=seconds))

    def _lag(self, spark: SparkSession, batch_id: int, seconds: dict[str, float],
             new: DataFrame | None) -> int:
        """The share lag of the samples the share-state log's watermark passed in this batch
        (its rows appended, then `_share_lag` replaced); `new`: the batch's
        share_partition_state rows. How many partition_lag rows."""
        if self.end_offsets is None:
            return 0
        step = share_lag_step(spark, self.warehouse, self.end_offsets, self.delay_ms,
                              new_rows=new)
        if step is None:
            return 0
        try:
            count = 0
            if step.watermark_ms != step.since_ms:  # else no sample can be ready
                count = step.rows.count()
            if count:
                self.tables.write_phase(spark, batch_id, {
                    table: partial(writes.append, spark, make(step.rows),
                                   paths.join(self.warehouse, table))
                    for table, make in LAG_WRITES}, seconds)
            if new is not None or step.watermark_ms != step.since_ms:  # the state moved
                self.tables.write_phase(spark, batch_id, {SHARE_LAG: partial(
                    writes.overwrite, spark, step.state, lag_state_path(self.warehouse))},
                    seconds)
        finally:
            release_step(step)
        return count


def start_share_replay(spark: SparkSession, source: str, warehouse: str, checkpoint: str,
                       trigger: str, app_id: str, max_files: int | None = None,
                       end_offsets: str | None = None, delay_ms: int = 0,
                       upkeep: Upkeep | None = None
                       ) -> tuple[StreamingQuery | None, ShareWriter]:
    """The share-state query started (None: an available-now run over a backfill whose log
    has no newer version yet, nothing to read); `max_files`: the log's files a batch;
    `end_offsets`: the samples its share lag is written for. The caller has checked the
    log (`check_share_log`)."""
    ensure_current(spark, warehouse)
    if end_offsets is not None:
        ensure_lag_state(spark, warehouse)
    own = paths.join(checkpoint, SHARE_CHECKPOINT)
    writer = ShareWriter(warehouse, f"{app_id}:{SHARE_CHECKPOINT}", end_offsets, delay_ms, upkeep)
    options: dict[str, str | int] = {}
    if max_files:
        options["maxFilesPerTrigger"] = max_files
    handoff = read_handoff(spark, warehouse)
    if handoff is not None and paths.is_empty(spark, paths.join(own, "offsets")):
        if handoff.log != source:
            raise UsageError(f"{warehouse} was backfilled from the share-state log "
                             f"{handoff.log}, not from {source}")
        if not after_backfill(spark, {source: handoff.version}, trigger,
                              "of the share-state log"):
            return None, writer
        options["startingVersion"] = handoff.version + 1
    stream = (stream_delta(spark, source, **options).writeStream.foreachBatch(stoppable(writer, log))
              .option("checkpointLocation", own).queryName(SHARE_QUERY))
    return with_trigger(stream, trigger).start(), writer


def share_line(batch_id: int, duration_ms: int, written: BatchProgress | None) -> str:
    """A share-state batch's line. Its records are counted by the writer, one row each:
    Spark's `numInputRows` counts the source once for every scan of it in the batch's
    plans, twice here (the cogroup reads the batch's rows and their keys)."""
    rows = written.rows if written is not None else {}
    return (f"share-state batch {batch_id}: {rows.get(RECORDS, 0)} records in, "
            f"{rows.get(HISTORY, 0)} applied, {rows.get('rejected_events', 0)} rejected, "
            f"{rows.get('partition_lag', 0)} share lag rows, {duration_ms / 1000:.2f} s")

