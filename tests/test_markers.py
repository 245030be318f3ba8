"""tests/conftest.py refuses a suite in which a test reaches the Spark session or the broker
without a spark/kafka/cluster marker: run on a probe suite whose fixtures start nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import pytest

@pytest.fixture
def spark(): ...

@pytest.fixture
def table(spark): ...

def test_pure(): ...

def test_forgot(table): ...

@pytest.mark.spark
def test_marked(spark): ...

@pytest.mark.kafka
class TestOnTheBroker:
    def test_through_the_class(self, table): ...
"""


def test_an_unmarked_test_that_reaches_the_session_stops_the_collection(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest("from tests.conftest import pytest_collection_modifyitems  # noqa: F401")
    pytester.makepyfile(test_probe=PROBE)
    result = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*carry no spark/kafka/cluster marker*test_probe.py::test_forgot"])
    assert "test_marked" not in result.stderr.str()
    assert "test_through_the_class" not in result.stderr.str()


def test_a_marked_suite_collects(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("from tests.conftest import pytest_collection_modifyitems  # noqa: F401")
    pytester.makepyfile(test_probe=PROBE.replace("def test_forgot(table)", "def test_forgot()"))
    result = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*4 tests collected*"])


def test_under_xdist_the_run_stops_with_the_names(pytester: pytest.Pytester,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/run.sh runs -n 2: the workers collect, and an error raised there would reach
    no one (xdist prints an internal error instead)."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeconftest("from tests.conftest import pytest_collection_modifyitems  # noqa: F401")
    pytester.makepyfile(test_probe=PROBE)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.INTERNAL_ERROR)
    result.stdout.fnmatch_lines(["*carry no spark/kafka/cluster marker*test_probe.py::test_forgot*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
