"""One SparkSession for the whole test run (JVM start-up costs seconds), built like the jobs'."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from pipeline.errors import UsageError
from pipeline.java import java_executable
from pipeline.spark.runtime.session import build_session, stop_session
from tests.spark.sharelog import share_backfilled, share_base

# The test profile's JVM compiles with C1 only, for the jobs the tests start as processes,
# which live a minute or two. This session's JVM lives as long as a pytest worker (half an
# hour of Spark jobs): C2's faster code repays its compiling. tests/spark/test_backfill.py
# in one worker, C2 against C1 alternated: 0.89x the wall time (pairs 0.85, 0.93).
LONG_LIVED_JVM = "-XX:ReservedCodeCacheSize=240m"


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    try:
        java_executable()
    except UsageError as exc:
        pytest.fail(f"{exc}. A test run without Java (tests/run.sh --fast) must not ask for "
                    "`spark`: mark the test @pytest.mark.spark", pytrace=False)
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = build_session("tests", profile="test",
                            extra_conf={"spark.sql.warehouse.dir": str(warehouse),
                                        "spark.driver.extraJavaOptions": LONG_LIVED_JVM})
    yield session
    stop_session(session)


__all__ = ["share_backfilled", "share_base", "spark"]  # the session's fixtures
