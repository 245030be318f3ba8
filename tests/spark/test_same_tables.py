"""The suite's table comparison (`backends.assert_same_tables`, chispa's comparers) passes
equal tables in any row order and column order, and fails on a changed row or type."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tests.spark.backends import assert_same_tables

pytestmark = pytest.mark.spark


def test_equal_tables_pass_and_a_changed_row_or_type_fails(spark: SparkSession) -> None:
    rows = spark.createDataFrame([(1, "a"), (2, "b")], "k int, v string")
    shuffled = spark.createDataFrame([("b", 2), ("a", 1)], "v string, k int")
    assert_same_tables({"t": shuffled}, {"t": rows}, ["t"])
    changed = spark.createDataFrame([(1, "a"), (2, "c")], "k int, v string")
    with pytest.raises(AssertionError, match="t: "):
        assert_same_tables({"t": changed}, {"t": rows}, ["t"])
    retyped = spark.createDataFrame([(1, "a"), (2, "b")], "k bigint, v string")
    with pytest.raises(AssertionError, match="t: "):
        assert_same_tables({"t": retyped}, {"t": rows}, ["t"])
