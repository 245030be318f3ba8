"""One SparkSession for the whole test run (JVM start-up costs seconds), built like the jobs'."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.spark.session import build_session, stop_session


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    home = os.environ.get("JAVA_HOME")
    if home and not (Path(home) / "bin" / "java").exists():
        # Spark would say only JAVA_GATEWAY_EXITED: its launcher's stderr is not shown.
        pytest.fail(f"JAVA_HOME={home} has no bin/java, so no Spark session: a test run "
                    "without Java (tests/run.sh --fast) must not ask for `spark`; mark the "
                    "test @pytest.mark.spark", pytrace=False)
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = build_session("tests", profile="test",
                            extra_conf={"spark.sql.warehouse.dir": str(warehouse)})
    yield session
    stop_session(session)
