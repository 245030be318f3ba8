"""A steady progress line while a long Spark job runs: tasks, rows, rate and ETA.

A backfill folds the whole log in one Spark job, and a stream's first micro-batch over a big
log is as long; the per-batch line (`ProgressLine`) only comes at the end. `Progress`
is a driver thread that, while some stage has been running for at least `interval_s`, logs
every `interval_s`:

    backfill: 57/200 tasks, 1,204,311 rows read, 48,170 rows/s, ETA 2m 58s

Tasks come from PySpark's status tracker; rows are the records the running stages have read
(input and shuffle), from Spark's status store, which executors update as tasks finish and on
their heartbeats (left out where the JVM does not offer it). ETA: the tasks left at the
tasks' rate so far. Work shorter than `interval_s` logs nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming.listener import StreamingQueryListener

from pipeline.spark.stream.share import SHARE_QUERY, ShareWriter, share_line
from pipeline.spark.stream.sinks import BatchProgress

if TYPE_CHECKING:
    from pipeline.spark.stream.sinks import BatchWriter

log = logging.getLogger("progress")


@dataclass(frozen=True)
class Sample:
    """The running stages at one moment."""

    tasks_done: int
    tasks: int
    rows: int | None  # records read by those stages so far; None: unknown


def spark_sample(spark: SparkSession) -> Callable[[], Sample | None]:
    tracker = spark.sparkContext.statusTracker()

    def sample() -> Sample | None:
        stages = [s for s in map(tracker.getStageInfo, tracker.getActiveStageIds()) if s]
        if not stages:
            return None
        return Sample(sum(s.numCompletedTasks for s in stages), sum(s.numTasks for s in stages),
                      _rows_read(spark, {s.stageId for s in stages}))
    return sample


def _rows_read(spark: SparkSession, stage_ids: set[int]) -> int | None:
    try:
        jsc: Any = spark.sparkContext._jsc
        store: Any = jsc.sc().statusStore()
        stages = store.activeStages()
        rows = 0
        for i in range(stages.size()):
            stage = stages.apply(i)
            if stage.stageId() in stage_ids:
                rows += stage.inputRecords() + stage.shuffleReadRecords()
        return int(rows)
    except Exception:  # an internal API: its absence costs the rows, not the line
        return None


def duration(seconds: float) -> str:
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


def line(label: str, now: Sample, busy_s: float, rows_then: tuple[float, int] | None,
         at: float) -> str:
    """The progress line: `rows_then` is (time, rows) of the previous line, for the rate."""
    parts = [f"{label}: {now.tasks_done}/{now.tasks} tasks"]
    if now.rows:  # executors report rows as tasks finish: none yet says nothing
        parts.append(f"{now.rows:,} rows read")
        rate = 0.0 if rows_then is None or at <= rows_then[0] else (
            (now.rows - rows_then[1]) / (at - rows_then[0]))
        if rate >= 1:
            parts.append(f"{rate:,.0f} rows/s")
    if now.tasks_done:
        parts.append(f"ETA {duration(busy_s * (now.tasks - now.tasks_done) / now.tasks_done)}")
    else:
        parts.append(f"running {duration(busy_s)}")
    return ", ".join(parts)


class Progress:
    """`with Progress(spark, "backfill"): run_backfill(...)`: a line every `interval_s`
    while Spark has been busy for at least that long."""

    def __init__(self, spark: SparkSession | None, label: str, interval_s: float = 10.0,
                 sample: Callable[[], Sample | None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 emit: Callable[[str], None] = log.info) -> None:
        if sample is None:
            assert spark is not None
            sample = spark_sample(spark)
        self.label, self.interval_s, self.sample = label, interval_s, sample
        self.clock, self.emit = clock, emit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"progress-{label}", daemon=True)
        self._busy_since: float | None = None
        self._rows_then: tuple[float, int] | None = None
        self._last = 0.0

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s / 5):
            try:
                self.tick()
            except Exception:  # progress must never take the job down
                log.debug("progress sample failed", exc_info=True)

    def tick(self) -> None:
        """Sample now; log if busy for an interval since the last line (or since busy)."""
        now, at = self.sample(), self.clock()
        if now is None:
            self._busy_since, self._rows_then = None, None
            return
        if self._busy_since is None:
            self._busy_since, self._last = at, at
            self._rows_then = None if now.rows is None else (at, now.rows)
            return
        if at - self._last >= self.interval_s:
            self.emit(line(self.label, now, at - self._busy_since, self._rows_then, at))
            self._last = at
            if now.rows is not None:
                self._rows_then = (at, now.rows)


class ProgressListener(StreamingQueryListener):
    """A listener of finished micro-batches only (`onQueryProgress`): the query's other
    events are of no use to ours."""

    def onQueryStarted(self, event: object) -> None:
        pass

    def onQueryIdle(self, event: object) -> None:
        pass

    def onQueryTerminated(self, event: object) -> None:
        pass

    def onQueryProgress(self, event: object) -> None:
        raise NotImplementedError


class ProgressLine(ProgressListener):
    """One log line per micro-batch: rows in, groups touched, rows rejected, groups whose
    fold failed (their rows rejected as INTERNAL), time, watermark."""

    def __init__(self, writer: BatchWriter) -> None:
        self.writer = writer
        self.share: ShareWriter | None = None  # --share-state: the second query's writer

    def onQueryProgress(self, event: object) -> None:
        p = event.progress  # type: ignore[attr-defined]
        if p.name == SHARE_QUERY:
            if self.share is not None:
                log.info("%s", share_line(p.batchId, p.batchDuration,
                                          self.share.progress.get(p.batchId)))
            return
        log.info("%s", batch_line(p.batchId, p.numInputRows, p.batchDuration,
                                  p.eventTime.get("watermark", "-"),
                                  self.writer.progress.get(p.batchId)))


def batch_line(batch_id: int, rows_in: int, duration_ms: int, watermark: str,
               written: BatchProgress | None) -> str:
    """A micro-batch's progress line; `written` is what `BatchWriter` recorded of the batch
    (None for a batch it did not see): its counts, the seconds of its fold and of its
    writes, and each table's write seconds."""
    seen = written if written is not None else BatchProgress()
    tables = seen.tables
    parts = ""
    if written is not None:
        parts = f" (fold {seen.fold_s:.2f} s, writes {seen.write_s:.2f} s"
        if tables:
            longest = max(tables, key=tables.__getitem__)
            parts += f": {len(tables)} tables, longest {longest} {tables[longest]:.2f} s"
        parts += ")"
    return (f"batch {batch_id}: {rows_in} rows in, {seen.groups} groups touched, "
            f"{seen.rejected} rows rejected, {seen.failed} groups "
            f"failed, {duration_ms / 1000:.2f} s{parts}, watermark {watermark}")
