"""The docs' SQL examples on a real cluster's log: the demo's history as `__consumer_offsets`
holds it (`jobs/generate.py --log-kind offsets-topic`: records only, no requests), not the
journal the demo replays.

Every `jobs/query.py` example of the pages tests/spark/test_readme_examples.py runs
(README's tour, docs/sql.md, lag.md, whatif.md) runs here too, on a warehouse a backfill
builds from that log with the demo's end offsets. Each must exit 0 and print a row in each
table it answers, unless the comment right above it says it `needs the journal`
(docs/limits.md, "What a real `__consumer_offsets` gives you"): then it must run, and the
page has told the reader what a real log leaves out of its answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.jobs.jobs import load_job
from tests.spark.test_readme_examples import (
    DEMO_OUT,
    EXAMPLE_SOURCES,
    JOURNAL_ONLY,
    demo_argv,
    example_id,
    in_demo,
    noted_source_commands,
    shown_tables,
)

pytestmark = pytest.mark.spark

QUERIES = noted_source_commands(("query.py",), EXAMPLE_SOURCES)


@pytest.fixture(scope="module")
def real_log(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> Path:
    """The demo's log and end offsets as `--log-kind offsets-topic` writes them, backfilled
    into out/warehouse (the stream's tables are the backfill's: tests/spark's stream ==
    backfill checks), as the demo's replay, with its one-minute watermark delay."""
    out = tmp_path_factory.mktemp("real-log")
    load_job("generate").main([*demo_argv("generate.py", out), "--log-kind", "offsets-topic"],
                              spark=spark)
    load_job("backfill").main(["--events", str(out / "events"),
                               "--end-offsets", str(out / "end_offsets"),
                               "--warehouse", str(out / "warehouse"), "--database", "",
                               "--watermark-delay", "1 minute"], spark=spark)
    return out


def test_some_examples_need_the_journal_and_most_do_not() -> None:
    marked = [c for c, note in QUERIES if JOURNAL_ONLY in note]
    assert marked and len(marked) < len(QUERIES) / 3, marked


@pytest.mark.parametrize("example", QUERIES, ids=lambda e: example_id(e[0]))
def test_a_query_example_answers_on_a_real_log_or_says_it_needs_the_journal(
        example: tuple[tuple[str, list[str]], str], real_log: Path, spark: SparkSession,
        capsys: pytest.CaptureFixture[str]) -> None:
    (_, argv), note = example
    argv = in_demo(argv, real_log, DEMO_OUT)
    try:
        status = load_job("query").main(argv, spark=spark)
    except SystemExit as e:
        status = e.code
    stdout = capsys.readouterr().out
    assert status in (None, 0), stdout
    tables = shown_tables(stdout)
    assert tables, stdout
    if JOURNAL_ONLY not in note:
        assert all(tables.values()), f"empty on a real log (noted {note!r}): {tables}\n{stdout}"
