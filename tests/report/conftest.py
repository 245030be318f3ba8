"""The Spark test here shares the suite's one session (tests/spark/conftest.py)."""

from tests.spark.conftest import spark  # noqa: F401
