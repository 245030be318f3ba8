"""What the jobs' flags name, read one way for every job: intervals, triggers, and a Delta
source given as a path or a catalog table name.

- An interval is a whole number and a unit (`10 minutes`, `30 s`, `2h`): `interval_ms`, the
  one parser of every `--watermark-delay` and `--sample-interval`; Spark is handed
  `spark_interval` (whole milliseconds), never the user's text.
- A trigger is `available-now` or `processing-time:SECONDS`: `check_trigger` at the edge,
  `with_trigger` on a stream writer.
- A source is a path (it has a slash or starts with a dot) or a catalog table name:
  `delta_table`, `read_delta` (at a version, if asked), `stream_delta`, `latest_version`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

from pipeline.errors import UsageError
from pipeline.spark.tables.paths import is_path

_INTERVAL = re.compile(r"^\s*(\d+)\s*([a-z]+)\s*$")
_UNIT_MS = {
    "ms": 1, "millisecond": 1, "milliseconds": 1, "s": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
}
AVAILABLE_NOW = "available-now"
PROCESSING_TIME = "processing-time:"


def interval_ms(text: str) -> int:
    """`10 minutes`, `30 s`, `2h` as milliseconds; ValueError naming what was expected."""
    match = _INTERVAL.match(text.lower())
    if not match or match.group(2) not in _UNIT_MS:
        raise ValueError(f"{text!r}: expected a whole number and a unit, e.g. '10 minutes', "
                         "'30 s', '2 hours'")
    return int(match.group(1)) * _UNIT_MS[match.group(2)]


def spark_interval(ms: int) -> str:
    """An interval of `ms` as Spark's own syntax takes it (`withWatermark`)."""
    return f"{ms} milliseconds"


def check_trigger(text: str) -> str:
    """`available-now` or `processing-time:SECONDS` (SECONDS > 0); ValueError otherwise."""
    if text == AVAILABLE_NOW:
        return text
    kind, _, seconds = text.partition(":")
    try:
        ok = kind == PROCESSING_TIME[:-1] and float(seconds) > 0
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{text!r}: expected {AVAILABLE_NOW} or processing-time:SECONDS "
                         "(e.g. processing-time:30)")
    return text


def trigger_seconds(trigger: str) -> float:
    """A processing-time trigger's interval in seconds (`check_trigger`'s form)."""
    if check_trigger(trigger) == AVAILABLE_NOW:
        raise ValueError(f"{trigger!r} has no interval")
    return float(trigger.removeprefix(PROCESSING_TIME))


def with_trigger(stream: DataStreamWriter, trigger: str) -> DataStreamWriter:
    """The writer with `trigger` (`check_trigger`'s forms)."""
    if check_trigger(trigger) == AVAILABLE_NOW:
        return stream.trigger(availableNow=True)
    return stream.trigger(processingTime=f"{trigger_seconds(trigger)} seconds")


def check_cut(until_ms: int | None, version: int | None) -> None:
    """A backfill stops at an event time or reads one version of the log, not both."""
    if until_ms is not None and version is not None:
        raise UsageError("give --until or --log-version, not both")


def delta_table(spark: SparkSession, source: str) -> DeltaTable:
    return DeltaTable.forPath(spark, source) if is_path(source) else DeltaTable.forName(spark, source)


def latest_version(spark: SparkSession, source: str) -> int:
    row = delta_table(spark, source).history(1).select("version").first()
    assert row is not None
    return int(row[0])


def location(spark: SparkSession, source: str) -> str:
    """Where the table's files are (a path as given; a table name's LOCATION)."""
    if is_path(source):
        return source
    row = DeltaTable.forName(spark, source).detail().select("location").first()
    assert row is not None
    return str(row[0])


def read_delta(spark: SparkSession, source: str, version: int | None = None) -> DataFrame:
    """The table now, or at `version`."""
    reader = spark.read.format("delta")
    if version is None:
        return reader.load(source) if is_path(source) else spark.read.table(source)
    return reader.option("versionAsOf", version).load(location(spark, source))


def stream_delta(spark: SparkSession, source: str, **options: str | int) -> DataFrame:
    """The table as a stream (`startingVersion`, `maxFilesPerTrigger`, ... as given)."""
    reader: DataStreamReader = spark.readStream.format("delta")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(source) if is_path(source) else reader.table(source)


def await_all(queries: Callable[[], Sequence[StreamingQuery]], timeout_s: float | None = None,
              poll_s: int = 1) -> None:
    """Until every query `queries()` gives ended (asked again each round: a job may start one
    later), or `timeout_s` passed. A query that failed stops the others, and its error is
    raised."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        running = list(queries())
        for query in running:
            try:
                if query.isActive:
                    query.awaitTermination(poll_s)  # raises if it failed
                else:
                    query.awaitTermination()  # at once; raises if it failed
            except BaseException:
                for other in running:
                    if other is not query and other.isActive:
                        other.stop()
                raise
        if not any(q.isActive for q in queries()):
            return
        if deadline is not None and time.monotonic() >= deadline:
            return
