"""One SparkSession for the whole test run (JVM start-up costs seconds), built like the jobs'."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from pipeline.errors import UsageError
from pipeline.java import java_executable
from pipeline.spark.runtime.session import build_session, stop_session
from tests.spark.sharelog import share_backfilled, share_base

# The session's JVM compiles as the test profile's jobs do, with C1 alone, though it lives as
# long as a pytest worker: the two workers keep both cores busy, and C2's compiling of the
# code each new query generates takes them from the tests. tests/spark/test_backfill.py,
# test_backends.py, test_lag.py and test_maintain.py on two workers, `farm-bench -n 2
# --warmup 0 --vs`: 286.9 s against 349.9 s with C2, 0.82x (pairs 0.83, 0.81). (One file
# alone on one worker, C2's compiler has the idle core and won: 0.89x, stop 57.)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    try:
        java_executable()
    except UsageError as exc:
        pytest.fail(f"{exc}. A test run without Java (tests/run.sh --fast) must not ask for "
                    "`spark`: mark the test @pytest.mark.spark", pytrace=False)
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = build_session("tests", profile="test",
                            extra_conf={"spark.sql.warehouse.dir": str(warehouse)})
    yield session
    stop_session(session)


__all__ = ["share_backfilled", "share_base", "spark"]  # the session's fixtures
