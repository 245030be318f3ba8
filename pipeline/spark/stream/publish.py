"""The replay's Prometheus metrics (docs/metrics.md): after each micro-batch, `ReplayMetrics`
publishes to the endpoint's collector the batch's progress (`advance`, from Spark's
StreamingQueryProgress and the batch writer's figures) and the warehouse's new rows
(`WarehouseRows`). It runs on Spark's listener thread, after the batch committed: the next
batch does not wait for it, and a failure to publish is logged, never the stream's."""

from __future__ import annotations

import logging
import time
from collections import deque
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pipeline.metrics import ReplayProgress, RowsCollector, advance
from pipeline.spark.newest_rows import WarehouseRows
from pipeline.spark.stream.lines import ProgressListener
from pipeline.spark.stream.share import SHARE_QUERY
from pipeline.spark.stream.sinks import BatchProgress

if TYPE_CHECKING:
    from pipeline.spark.stream.sinks import BatchWriter

log = logging.getLogger("replay")
KEPT = 64  # batches whose publishing seconds `took_s` keeps (the benchmark reads them)
_NO_WATERMARK = datetime(1970, 1, 1, tzinfo=UTC)  # Spark's watermark before the first


def spark_time(text: str) -> datetime:
    """A progress report's time (`2023-11-14T22:00:00.000Z`), UTC."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def event_time(p: Any, which: str) -> datetime | None:
    """`p.eventTime[which]`: absent for a batch without rows; a watermark of 0 is none yet."""
    text = p.eventTime.get(which)
    moment = None if text is None else spark_time(text)
    return None if moment == _NO_WATERMARK else moment


def batch_figures(p: Any, written: BatchProgress | None) -> dict[str, Any]:
    """`advance`'s figures of one batch: Spark's progress `p` and what the writer recorded of
    the batch (`BatchWriter.progress[batch_id]`; None for a batch it did not see: then the
    rows out are unknown, no sample)."""
    return {
        "batch_id": p.batchId,
        "duration_ms": int(p.durationMs.get("triggerExecution", p.batchDuration)),
        "input_rows": int(p.numInputRows),
        "output_rows": None if written is None else sum(written.rows.values()),
        "rejected_rows": 0 if written is None else written.rejected,
        "groups_failed": 0 if written is None else written.failed,
        "finished_at": spark_time(p.timestamp) + timedelta(milliseconds=p.batchDuration),
        "watermark": event_time(p, "watermark"),
        "newest_event": event_time(p, "max"),
    }


class ReplayMetrics(ProgressListener):
    """Publishes each finished micro-batch's progress and the warehouse's new rows."""

    def __init__(self, writer: BatchWriter, collector: RowsCollector, rows: WarehouseRows) -> None:
        self.writer = writer
        self.collector = collector
        self.rows = rows
        self.progress: ReplayProgress | None = None
        self.took_s: deque[float] = deque(maxlen=KEPT)  # each publish's seconds, newest last

    def onQueryProgress(self, event: object) -> None:
        p = event.progress  # type: ignore[attr-defined]
        if p.name == SHARE_QUERY:  # the replay's metrics are its main query's
            return
        start = time.monotonic()
        try:
            self.progress = advance(self.progress, **batch_figures(
                p, self.writer.progress.get(p.batchId)))
            self.rows.publish(self.collector, self.progress)
        except Exception:  # the metrics must never take the stream down
            log.warning("metrics of batch %d not published", p.batchId, exc_info=True)
        self.took_s.append(time.monotonic() - start)
