"""Every command README.md and docs/*.md show is run by a test, or says which test runs it.

Each ```bash block of the pages is cut into commands (as tests/spark/test_readme_examples.py
cuts them). A command passes when one of these holds:

1. tests/spark/test_readme_examples.py runs it (its `runs_here`: the SQL, lag and report
   examples of its EXAMPLE_SOURCES as printed, and the demo's own generate and replay);
2. its block's first line is `# tested by tests/<path>.py`, naming an existing test file
   that runs that recipe (a command that cannot run here as written: a cluster, S3, a
   broker, /data paths);
3. its block's first line is one of BY_HAND: a recipe no test runs, saying why;
4. it starts with one of SETUP, the docs' own setup.

Whatever the rule, a job's command (`jobs/<job>.py`, `python -m pipeline.jobs.<job>`,
`cgr-<job>`) must parse with that job's own parser, and a benchmark's flags must be ones the
benchmark declares: a flag renamed or removed fails here even where no test runs the
command. And README's first bash block is the two commands a newcomer runs first.
No Spark: the jobs' parsers and the pages' text only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.jobs.jobs import JOBS, load_job
from tests.spark.test_readme_examples import bash_blocks, job_command, runs_here, shell_commands

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
TESTED_BY = re.compile(r"# tested by (tests/\S+\.py)")
BY_HAND = (
    "# run by hand; not in the suite (595 MB archive)",
    "# run by hand; not in the suite (benchmarks print figures, they assert nothing)",
    "# run by hand; not in the suite (rewrites tests/data/golden)",
    "# run by hand; not in the suite (spark-submit; the test starts the job with python)",
    "# run by hand; not in the suite (needs a PostgreSQL server)",
    # the services' files themselves are parsed by tests/deploy/test_units.py
    "# run by hand; not in the suite (on your own hosts: systemd, Kubernetes, your cluster's tools)",
)
SETUP = ("bash jobs/demo.sh", "bash tests/run.sh", "export ", "JARS=", "pip install ")
FIRST = [["bash", "jobs/demo.sh"], ["bash", "tests/run.sh"]]
JOB_FILES = tuple(f"{job}.py" for job in JOBS)


@dataclass(frozen=True)
class Command:
    page: str
    heading: str  # the first line of its block
    words: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page}: {' '.join(self.words)}"[:200]


def page_commands(page: str, text: str) -> list[Command]:
    return [Command(page, block.splitlines()[0].strip(), tuple(words))
            for block in bash_blocks(text) for words in shell_commands(block)]


COMMANDS = [c for page in PAGES
            for c in page_commands(str(page.relative_to(ROOT)), page.read_text(encoding="utf-8"))]


def accepted_by(command: Command) -> str | None:
    """Which rule accepts `command` (see the module's docstring), or None."""
    run = job_command(list(command.words), JOB_FILES)
    if run is not None and runs_here(*run):
        return "run by tests/spark/test_readme_examples.py"
    if match := TESTED_BY.fullmatch(command.heading):
        test = ROOT / match.group(1)
        return f"tested by {match.group(1)}" if test.is_file() and test.name.startswith(
            "test_") else None
    if command.heading in BY_HAND:
        return "run by hand"
    if " ".join(command.words).startswith(SETUP):
        return "setup"
    return None


def invoked_job(words: tuple[str, ...]) -> tuple[str, list[str]] | None:
    """(job, argv) if the command runs a job, in any of the three forms."""
    for i, word in enumerate(words):
        if re.fullmatch(r"jobs/\w+\.py", word) and word != "jobs/demo.sh":
            return Path(word).stem, list(words[i + 1:])
        if word == "-m" and i + 1 < len(words) and words[i + 1].startswith("pipeline.jobs."):
            return words[i + 1].removeprefix("pipeline.jobs."), list(words[i + 2:])
        if word.startswith("cgr-"):
            return word.removeprefix("cgr-").replace("-", "_"), list(words[i + 1:])
    return None


def test_the_pages_show_commands() -> None:
    pages = {c.page for c in COMMANDS}
    assert {"README.md", "docs/running.md", "docs/deploying.md", "docs/sql.md"} <= pages
    assert len(COMMANDS) >= 40, len(COMMANDS)


def test_the_readme_opens_with_the_two_commands() -> None:
    """A newcomer's first screen: the demo, then the suite, before anything else is run."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = bash_blocks(text)[0]
    assert [words for words in shell_commands(first)] == FIRST
    assert text.index("```bash") < len("\n".join(text.splitlines()[:25])), "not on screen one"


def test_every_command_is_run_by_a_test_or_says_which() -> None:
    unaccounted = [str(c) for c in COMMANDS if accepted_by(c) is None]
    assert not unaccounted, (
        "commands no test runs; run them in tests/spark/test_readme_examples.py, or start "
        "their block with `# tested by tests/<path>.py` naming the test that runs the "
        "recipe:\n" + "\n".join(unaccounted))


def test_a_tested_by_line_names_a_test_file() -> None:
    named = {m.group(1) for c in COMMANDS if (m := TESTED_BY.fullmatch(c.heading))}
    assert named
    missing = [n for n in sorted(named) if not (ROOT / n).is_file()]
    assert not missing, missing


def test_the_rules_refuse_what_no_test_runs() -> None:
    block = "```bash\n{first}\nspark-submit jobs/replay.py --events e --warehouse w \\\n" \
            "    --checkpoint c\n```\n"

    def accepted(first: str) -> list[str | None]:
        return [accepted_by(c) for c in page_commands("x.md", block.format(first=first))]
    assert accepted("# a comment") == [None]
    assert accepted("# tested by tests/no/such_test.py") == [None]
    assert accepted("# tested by tests/deploy/conftest.py") == [None]
    assert accepted("# run by hand") == [None]
    assert accepted("# tested by tests/deploy/test_cluster.py") == [
        "tested by tests/deploy/test_cluster.py"]
    assert accepted(BY_HAND[0]) == ["run by hand"]


def test_every_job_command_parses_with_the_jobs_own_parser(
        capsys: pytest.CaptureFixture[str]) -> None:
    refused = []
    for command in COMMANDS:
        if (run := invoked_job(command.words)) is None:
            continue
        job, argv = run
        if job not in JOBS:
            refused.append(f"{command}: no job {job!r}")
            continue
        try:
            load_job(job).parse(argv)
        except SystemExit:
            refused.append(f"{command}: {capsys.readouterr().err.strip()}")
    assert not refused, "\n".join(refused)
    assert sum(invoked_job(c.words) is not None for c in COMMANDS) >= 30


def test_every_benchmark_flag_is_one_the_benchmark_declares() -> None:
    wrong = []
    for command in COMMANDS:
        for i, word in enumerate(command.words):
            if not word.startswith("tests/benchmarks/"):
                continue
            bench = ROOT / word
            if not bench.is_file():
                wrong.append(f"{command}: no {word}")
                continue
            declared = set(re.findall(r"add_argument\(\s*\"(--[\w-]+)\"", bench.read_text()))
            flags = {w.split("=")[0] for w in command.words[i + 1:] if w.startswith("--")}
            wrong += [f"{command}: {flag}" for flag in sorted(flags - declared)]
    assert not wrong, "\n".join(wrong)
