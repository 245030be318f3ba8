"""The report's generated logs, folded once for every test here; the Spark test shares the
suite's one session (tests/spark/conftest.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.fold import Event
from pipeline.generator import LogSpec, generate
from tests.report.frames import pure_frames
from tests.spark.conftest import spark  # noqa: F401

Log = tuple[list[Event], dict[str, pd.DataFrame]]


@pytest.fixture(scope="session")
def journal() -> Log:
    events = generate(LogSpec(groups=12, events=4000, seed=11, log_kind="journal", bad_rows=0.03))
    return events, pure_frames(events)


@pytest.fixture(scope="session")
def records() -> Log:
    events = generate(LogSpec(groups=12, events=4000, seed=11, log_kind="offsets-topic",
                              bad_rows=0.03))
    return events, pure_frames(events)
