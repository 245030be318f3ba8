"""Every time the flags accept reaches SQL as a literal Spark reads back as the same time
(year 1 was once written `1-01-01`, INVALID_TYPED_LITERAL)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark.sql import SparkSession

from pipeline.spark.tables.catalog import timestamp_sql
from pipeline.times import PANDAS_MS_RANGE, clamp_ms, event_time_ms, utc_datetime

TIMES = ["0001-01-01T00:00:00", "1677-09-21T00:12:44", "2023-11-14T22:16:00.123",
         "2262-04-11T23:47:16", "9999-12-31T23:59:59.999"]


@pytest.mark.parametrize("text", TIMES)
def test_times_are_exact_milliseconds_in_every_year(text: str) -> None:
    ms = event_time_ms(text)
    assert utc_datetime(ms) == datetime.fromisoformat(text).replace(tzinfo=UTC)
    assert PANDAS_MS_RANGE[0] <= clamp_ms(ms) <= PANDAS_MS_RANGE[1]


@pytest.mark.spark
def test_a_time_literal_of_any_year_reads_back_as_that_time(spark: SparkSession) -> None:
    literals = ", ".join(
        f"date_format({timestamp_sql(event_time_ms(t))}, 'yyyy-MM-dd HH:mm:ss.SSS') AS t{i}"
        for i, t in enumerate(TIMES))
    row = spark.sql(f"SELECT {literals}").first()  # as text: Python's datetime of year 1 is
    assert row is not None                            # fragile; the session zone is UTC
    assert [row[i] for i in range(len(TIMES))] == [
        datetime.fromisoformat(t).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3].rjust(23, "0")
        for t in TIMES]
