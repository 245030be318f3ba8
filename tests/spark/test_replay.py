"""The demo's SQL views need a replayed warehouse (the demo's questions are asked of the
demo's own warehouse in test_readme_examples.py; equality with the pure fold and the
backfill: test_backends.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.spark.tables.catalog import register_views

pytestmark = pytest.mark.spark


def test_query_views_need_a_replayed_warehouse(spark: SparkSession, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="run jobs/replay.py first"):
        register_views(spark, str(tmp_path))
