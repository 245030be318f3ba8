"""What every job shares: the project root on sys.path, logging, and the coordinator config."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from collections.abc import Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402

from pyspark.sql import SparkSession  # noqa: E402

from pipeline.fold import CoordinatorConfig  # noqa: E402
from pipeline.spark.session import build_session  # noqa: E402
from pipeline.times import event_time_ms  # noqa: E402


def event_time_arg(text: str) -> int:
    """argparse type: an ISO-8601 event time (UTC unless an offset is given) as epoch ms."""
    try:
        return event_time_ms(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s",
                        datefmt="%H:%M:%S", stream=sys.stdout)


def coordinator_config(path: str | None) -> CoordinatorConfig:
    return CoordinatorConfig.from_file(path or ROOT / "conf" / "coordinator.properties")


def add_common_args(p: argparse.ArgumentParser) -> None:
    """The flags every Spark job takes: coordinator settings and the session profile."""
    p.add_argument("--coordinator-conf", help="coordinator .properties (default conf/)")
    p.add_argument("--profile", default="local", help="conf/profiles/<name>.conf")


@contextmanager
def job_session(name: str, profile: str, spark: SparkSession | None = None) -> Iterator[SparkSession]:
    """The job's Spark session, stopped when the job ends; one passed in (a test, a notebook
    calling `main(argv, spark)`) is used and left running."""
    if spark is not None:
        yield spark
        return
    session = build_session(name, profile)
    try:
        yield session
    finally:
        session.stop()
