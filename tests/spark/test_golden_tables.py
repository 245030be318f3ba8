"""The golden tables are Spark's tables: for the small single-batch golden cases, the rows
`tests/spark/backends.py` `pure_tables` builds in Spark, read back as exact values, are
the stored rows (so the pure harness of `tests/golden/` stands for the Spark path)."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.spark.tables.options import interval_ms
from schemas import METADATA_TABLES, OUTPUT_TABLES
from schemas.lag import LAG_TABLES
from schemas.share_state import SHARE_TABLES
from tests.golden.files import read_case
from tests.golden.tables import line, sort_rows
from tests.share.log import T0
from tests.spark.backends import CONFIG, DELAY, pure_tables
from tests.spark.test_readme_examples import (
    KAFKA4_EXAMPLES,
    KAFKA4_OUT,
    example_id,
    in_demo,
    query_answers,
    runs_and_answers,
)

pytestmark = pytest.mark.spark


def _exact(value: Any) -> Any:
    """A collected Spark value as the golden files hold it (the session's zone is UTC)."""
    if isinstance(value, datetime):
        return int(value.replace(tzinfo=UTC).timestamp() * 1000)
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, list):
        return [_exact(v) for v in value]
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("name", ["classic-by-hand", "kip848-by-hand", "share-streams-by-hand"])
def test_spark_builds_the_stored_golden_tables(spark: SparkSession, name: str) -> None:
    case = read_case(name, OUTPUT_TABLES)
    assert case.batches == [len(case.events)] and case.config == CONFIG
    assert case.delay_ms == interval_ms(DELAY)
    tables = pure_tables(spark, case.events)
    for table, df in tables.items():
        rows = [{k: v for k, v in _exact(r.asDict(recursive=True)).items() if v is not None}
                for r in df.collect()]
        assert [line(r) for r in sort_rows(table, rows)] == [line(r) for r in case.tables[table]], table


@pytest.fixture(scope="module")
def kafka4(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory,
           share_backfilled: Path) -> Path:
    """out/kafka4: a warehouse of the share-streams-by-hand case's tables, as Delta tables;
    with, since that case has no `__share_group_state`, the share-state and lag tables (and
    `topics`) of the session's backfill of tests/spark/sharelog.py's share-state log and
    end-offset samples."""
    out = tmp_path_factory.mktemp("kafka4")
    case = read_case("share-streams-by-hand", OUTPUT_TABLES)
    for table, df in pure_tables(spark, case.events).items():
        df.write.format("delta").save(str(out / "warehouse" / table))
    for table in (*SHARE_TABLES, *LAG_TABLES, *METADATA_TABLES):  # a Delta table is its folder
        shutil.copytree(share_backfilled / table, out / "warehouse" / table)
    return out


@pytest.mark.parametrize("example", KAFKA4_EXAMPLES, ids=example_id)
def test_a_share_or_streams_example_of_the_docs_answers_from_kafka_4s_groups(
        example: tuple[str, list[str]], kafka4: Path, spark: SparkSession,
        capsys: pytest.CaptureFixture[str]) -> None:
    """docs/sql.md's share and streams questions, each answered with rows."""
    job, argv = example
    runs_and_answers(job, in_demo(argv, kafka4, KAFKA4_OUT), spark, capsys)


def test_as_of_keeps_share_partition_state_to_its_rows_until_then(
        kafka4: Path, spark: SparkSession) -> None:
    """`--as-of T` binds share_partition_state, as the other histories, to its rows with
    event_time <= T."""
    warehouse = kafka4 / "warehouse"
    at = datetime.fromtimestamp((T0 + 120_000) / 1000, UTC)
    [asked] = query_answers(spark, ["--warehouse", str(warehouse), "--as-of",
                               at.strftime("%Y-%m-%dT%H:%M:%S"),
                               "SELECT count(*) AS n FROM share_partition_state"])
    table = spark.read.format("delta").load(str(warehouse / "share_partition_state"))
    until = table.filter(F.col("event_time") <= F.lit(at.replace(tzinfo=None))).count()
    assert 0 < until < table.count()
    assert asked == [{"n": until}]
