"""The replay's own progress as the exporter serves it: a frozen snapshot, filled batch by
batch from what Spark's StreamingQueryProgress and the batch writer report (`advance`), so
the metrics package needs no Spark."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

_MS = timedelta(milliseconds=1)


@dataclass(frozen=True)
class ReplayProgress:
    """The last micro-batch's figures, and the running totals since the replay started."""

    batch_id: int
    duration_ms: int
    input_rows: int  # the last batch's event-log rows (StreamingQueryProgress.numInputRows)
    output_rows: int | None  # the rows it wrote, all tables; None: its writer did not say
    finished_at: datetime  # wall clock
    watermark: datetime | None  # eventTime["watermark"]; None before the first
    newest_event: datetime | None  # the newest event time read so far (eventTime["max"])
    input_rows_total: int = 0
    output_rows_total: int | None = None  # over the batches whose writer said; None: none did
    rejected_rows_total: int = 0
    groups_failed_total: int = 0

    @property
    def watermark_delay_ms(self) -> int | None:
        if self.watermark is None or self.newest_event is None:
            return None
        return (self.newest_event - self.watermark) // _MS


def advance(before: ReplayProgress | None, *, batch_id: int, duration_ms: int, input_rows: int,
            output_rows: int | None, rejected_rows: int, groups_failed: int,
            finished_at: datetime, watermark: datetime | None, newest_event: datetime | None
            ) -> ReplayProgress:
    """The snapshot once one more batch has finished (`before`: the snapshot until then, None
    before the first batch): this batch's figures, the totals grown by them, the newest
    event the latest of all batches'. An unknown figure (None) is served as no sample, not
    as a made-up 0."""
    for name, n in (("duration_ms", duration_ms), ("input_rows", input_rows),
                    ("output_rows", output_rows), ("rejected_rows", rejected_rows),
                    ("groups_failed", groups_failed)):
        if n is not None and n < 0:
            raise ValueError(f"{name} = {n}: a batch's figures are never negative")
    b = before
    return ReplayProgress(
        batch_id, duration_ms, input_rows, output_rows, finished_at, watermark,
        _later(b.newest_event if b else None, newest_event),
        input_rows + (b.input_rows_total if b else 0),
        _plus(b.output_rows_total if b else None, output_rows),
        rejected_rows + (b.rejected_rows_total if b else 0),
        groups_failed + (b.groups_failed_total if b else 0))


def _plus(total: int | None, n: int | None) -> int | None:
    return n if total is None else total if n is None else total + n


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)

