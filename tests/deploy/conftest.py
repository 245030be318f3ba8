"""The suite's one Spark session (tests/spark/conftest.py), for writing a test's event log."""

from __future__ import annotations

from tests.spark import conftest as spark_conftest

spark = spark_conftest.spark
