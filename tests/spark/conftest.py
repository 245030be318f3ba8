"""One SparkSession for the whole test run (JVM start-up costs seconds), built like the jobs'."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from pipeline.errors import UsageError
from pipeline.java import java_executable
from pipeline.spark.runtime.session import build_session, stop_session


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
