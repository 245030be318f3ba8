"""The progress line: silent for short work, then one line per interval with tasks, rows,
rate and ETA (a fake clock and fake samples; the sampling of a real session is Spark's)."""

from __future__ import annotations

from pipeline.spark.stream.lines import Progress, Sample, batch_line, duration
from pipeline.spark.stream.sinks import BatchProgress


def run(samples: list[tuple[float, Sample | None]], interval_s: float = 10) -> list[str]:
    lines: list[str] = []
    feed = iter(samples)
    current: list[tuple[float, Sample | None]] = []

    def sample() -> Sample | None:
        current[:] = [next(feed)]
        return current[0][1]

    progress = Progress(None, "backfill", interval_s, sample=sample,
                        clock=lambda: current[0][0], emit=lines.append)
    for _ in samples:
        progress.tick()
    return lines


def test_work_shorter_than_the_interval_says_nothing() -> None:
    assert run([(0, Sample(0, 8, 0)), (5, Sample(4, 8, 500)), (9, Sample(8, 8, 1000)),
                (12, None)]) == []


def test_long_work_gets_a_line_per_interval_with_rows_rate_and_eta() -> None:
    lines = run([(0, Sample(0, 200, 0)), (4, Sample(0, 200, 0)), (10, Sample(50, 200, 100_000)),
                 (15, Sample(60, 200, 120_000)), (20, Sample(100, 200, 300_000)),
                 (25, None), (30, Sample(0, 4, None)), (40, Sample(0, 4, None))])
    assert lines == [
        "backfill: 50/200 tasks, 100,000 rows read, 10,000 rows/s, ETA 30s",
        "backfill: 100/200 tasks, 300,000 rows read, 20,000 rows/s, ETA 20s",
        "backfill: 0/4 tasks, running 10s",  # busy again from 30 s; rows unknown
    ]


def test_durations_read_as_a_person_would_say_them() -> None:
    assert [duration(s) for s in (4.4, 61, 3599, 7322)] == ["4s", "1m 01s", "59m 59s", "2h 02m"]


def test_a_micro_batch_line_says_what_its_fold_and_writes_took_and_the_longest_table() -> None:
    written = BatchProgress(groups=41, rejected=2, failed=0, fold_s=0.61, write_s=3.2,
                            tables={"offset_history": 0.91, "group_state": 2.9,
                                    "rebalances": 1.2})
    assert batch_line(3, 5120, 4100, "2023-11-14T22:00:00.000Z", written) == (
        "batch 3: 5120 rows in, 41 groups touched, 2 rows rejected, 0 groups failed, 4.10 s "
        "(fold 0.61 s, writes 3.20 s: 3 tables, longest group_state 2.90 s), "
        "watermark 2023-11-14T22:00:00.000Z")
    # Every table already held the batch (a batch run again): a fold, no table written.
    assert batch_line(4, 0, 350, "-", BatchProgress(fold_s=0.2, write_s=0.01)) == (
        "batch 4: 0 rows in, 0 groups touched, 0 rows rejected, 0 groups failed, 0.35 s "
        "(fold 0.20 s, writes 0.01 s), watermark -")
    # A batch the writer did not see (its figures already dropped): the counts alone.
    assert batch_line(5, 7, 120, "-", None) == (
        "batch 5: 7 rows in, 0 groups touched, 0 rows rejected, 0 groups failed, 0.12 s, "
        "watermark -")


def test_a_micro_batch_s_metrics_figures_come_from_spark_s_progress_and_the_writer_s() -> None:
    """As `ReplayMetrics` reads a StreamingQueryProgress (its attributes, faked here): the
    trigger's duration, the watermark and newest event as UTC times (Spark's epoch-0
    watermark is none yet), the writer's rejected rows, failed groups and rows out (unknown
    for a batch it has no record of)."""
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from pipeline.spark.stream.publish import batch_figures

    p = SimpleNamespace(batchId=7, numInputRows=5120, batchDuration=4100,
                        timestamp="2023-11-14T22:16:00.000Z",
                        durationMs={"triggerExecution": 4150, "addBatch": 3900},
                        eventTime={"watermark": "2023-11-14T22:00:00.000Z",
                                   "max": "2023-11-14T22:10:30.500Z"})
    at = datetime(2023, 11, 14, 22, tzinfo=UTC)
    written = BatchProgress(groups=41, rejected=2, failed=1,
                            rows={"group_state": 41, "offset_history": 900, "group_lag": 40})
    assert batch_figures(p, written) == {
        "batch_id": 7, "duration_ms": 4150, "input_rows": 5120, "output_rows": 981,
        "rejected_rows": 2, "groups_failed": 1,
        "finished_at": datetime(2023, 11, 14, 22, 16, 4, 100_000, tzinfo=UTC),
        "watermark": at, "newest_event": datetime(2023, 11, 14, 22, 10, 30, 500_000, tzinfo=UTC)}
    first = SimpleNamespace(**{**vars(p), "eventTime": {"watermark": "1970-01-01T00:00:00.000Z"}})
    figures = batch_figures(first, None)
    assert (figures["watermark"], figures["newest_event"], figures["rejected_rows"],
            figures["output_rows"]) == (None, None, 0, None)
