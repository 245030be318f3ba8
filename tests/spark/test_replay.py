"""The replayed warehouse answers the demo's SQL questions (equality with the pure fold and
the backfill: test_backends.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.generator import LogSpec, generate
from pipeline.spark.catalog import DEMO_QUERIES, register_views
from pipeline.spark.eventlog import write_event_log
from schemas import OUTPUT_TABLES
from tests.spark.backends import streaming_tables

pytestmark = pytest.mark.spark


def test_the_demo_questions_answer_from_a_replayed_warehouse(
        spark: SparkSession, tmp_path: Path) -> None:
    events = generate(LogSpec(groups=5, events=1500, seed=4, bad_rows=0.02))
    write_event_log(spark, events, str(tmp_path / "events"))
    streaming_tables(spark, str(tmp_path / "events"), tmp_path)
    assert set(register_views(spark, str(tmp_path / "warehouse"))) == set(OUTPUT_TABLES)
    answers = {title: spark.sql(sql).collect() for title, sql in DEMO_QUERIES.items()}
    groups = {e.group_id for e in events if e.group_id}
    assert {r["group_id"] for r in answers["groups now"]} <= groups
    assert len(answers["groups now"]) == min(10, len(groups))
    assert sum(r["rows"] for r in answers["refused or malformed rows, by reason"]) > 0


def test_query_views_need_a_replayed_warehouse(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="run jobs/replay.py first"):
        register_views(spark, str(tmp_path))
