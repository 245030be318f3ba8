"""The names the pages use are the code's: every job file, job flag, `table.column`, metric the
pages name exists, and no page outgrows what a reader takes in (README.md and docs/*.md).

A flag is a job's or a benchmark's, or one of the few flags of Kafka's and Spark's own tools
the pages quote (EXTERNAL_FLAGS); a `table.column` whose table is one the jobs write names
one of its columns (schemas/); a metric is one the exporter serves (its catalogue); a
`jobs/<name>` file is in jobs/. No Spark: the parsers, the schemas and the pages' text."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import pytest

from pipeline.metrics.catalogue import METRICS
from schemas import METADATA_TABLES, WAREHOUSE_TABLES
from schemas.whatif import WHATIF_TABLES
from tests.jobs.jobs import JOBS, load_job

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
TABLES = {**WAREHOUSE_TABLES, **METADATA_TABLES, **WHATIF_TABLES}
# Flags of other programs the pages quote: spark-submit's, and Kafka's command-line tools'
# (kafka-consumer-groups, kafka-share-groups, kafka-acls, ...).
EXTERNAL_FLAGS = {"--jars", "--packages", "--py-files", "--master", "--describe", "--members",
                  "--offsets", "--state", "--command-config", "--execute", "--verbose",
                  "--bootstrap-server", "--group", "--topic", "--time", "--reset-offsets"}
MAX_LINES = 400


def job_flags(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Every option string of every job's parser: each job's parse() stopped where it would
    parse, its parser kept."""
    parsers: list[argparse.ArgumentParser] = []

    def keep(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        parsers.append(self)
        raise SystemExit(0)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", keep)
    for job in JOBS:
        with pytest.raises(SystemExit):
            load_job(job).parse([])
    return {s for p in parsers for a in p._actions for s in a.option_strings}


def benchmark_flags() -> set[str]:
    return {f for b in (ROOT / "tests" / "benchmarks").glob("*.py")
            for f in re.findall(r'add_argument\(\s*"(--[a-z0-9-]+)"', b.read_text())}


def _each(pattern: str) -> list[tuple[str, Any]]:
    return [(page.name, m) for page in PAGES
            for m in re.findall(pattern, page.read_text(encoding="utf-8"))]


def test_every_flag_the_pages_name_is_one_a_job_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    known = job_flags(monkeypatch) | benchmark_flags() | EXTERNAL_FLAGS
    assert {"--watermark-delay", "--kafka-options-file", "--end-offsets"} <= known
    unknown = sorted({(page, f) for page, f in _each(r"`(--[a-z][a-z0-9-]*)") if f not in known})
    assert not unknown, f"flags no job declares: {unknown}"


def test_every_table_column_the_pages_name_is_in_the_schema() -> None:
    named = _each(r"`([a-z_]+)\.([a-z_]+)`")
    unknown = sorted({(page, t, c) for page, (t, c) in named
                      if t in TABLES and c not in {col.name for col in TABLES[t]}})
    assert not unknown, f"columns the tables lack: {unknown}"
    assert sum(t in TABLES for _, (t, _) in named) >= 20  # not vacuous


def test_every_metric_the_pages_name_is_served() -> None:
    served = {m.name + ("_total" if m.kind == "counter" else "") for m in METRICS}
    named = _each(r"`((?:kafka_consumergroup|cgr)_\w+)`")
    unknown = sorted({(page, m) for page, m in named if not m.endswith("_") and m not in served})
    assert not unknown, f"metrics the exporter does not serve: {unknown}"
    assert len(named) >= 20


def test_every_job_file_the_pages_name_is_there() -> None:
    named = _each(r"(?<![\w/.])jobs/(\w+\.(?:py|sh))")
    missing = sorted({(page, f) for page, f in named if not (ROOT / "jobs" / f).is_file()})
    assert not missing, f"no such file in jobs/: {missing}"
    assert {f for _, f in named} >= {f"{job}.py" for job in JOBS}  # every job is named


def test_no_page_is_longer_than_a_reader_takes_in() -> None:
    long = {page.name: n for page in PAGES
            if (n := len(page.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"pages over {MAX_LINES} lines (split them by topic): {long}"


def _anchor(heading: str) -> str:
    """A Markdown heading's anchor, as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower())
    return text.replace(" ", "-")


def test_every_link_between_the_pages_finds_its_page_and_heading() -> None:
    anchors = {page.resolve(): {_anchor(line) for line in page.read_text(encoding="utf-8")
                                .splitlines() if line.startswith("#")} for page in PAGES}
    broken = []
    for page in PAGES:
        prose = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for link in re.findall(r"\]\(([^)\s]+)\)", prose):
            if link.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, fragment = link.partition("#")
            target = (page.parent / path).resolve() if path else page.resolve()
            if not target.exists() or (fragment and target in anchors
                                       and fragment not in anchors[target]):
                broken.append(f"{page.name}: {link}")
    assert not broken, broken
