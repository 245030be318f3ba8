"""The jobs' command lines without Spark: every flag explained with its default, --version,
and a user's mistake in a flag answered in one line on stderr with exit status 2 (a
traceback only with --debug; a bug keeps its traceback)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.errors import UsageError
from pipeline.jobs import _common
from pipeline.spark.stream.maintain import Upkeep
from tests.jobs.jobs import JOBS, ROOT, load_job


def job_parser(name: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser a job builds, caught as it is asked to parse."""
    caught: list[argparse.ArgumentParser] = []

    def catch(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        caught.append(self)
        raise LookupError("caught")

    monkeypatch.setattr(_common.JobParser, "parse_args", catch)
    with pytest.raises(LookupError):
        load_job(name).parse([])
    return caught[0]


def fails(name: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a job prints on stderr as it exits with status 2."""
    with pytest.raises(SystemExit) as exit_:
        load_job(name).main(argv)
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


@pytest.mark.parametrize("name", JOBS)
def test_every_flag_of_every_job_has_a_help_text_and_shows_its_default(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    parser = job_parser(name, monkeypatch)
    unexplained = [a.option_strings or a.dest for a in parser._actions if not a.help]
    assert unexplained == []
    text = parser.format_help()
    for action in parser._actions:
        if action.default not in (None, False, [], argparse.SUPPRESS) and action.option_strings:
            assert f"(default: {action.default})" in " ".join(text.split()), action.dest


@pytest.mark.parametrize("name", JOBS)
def test_every_job_prints_its_version(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        load_job(name).parse(["--version"])
    assert exit_.value.code == 0
    assert f"{name}.py (consumer-group-replay " in capsys.readouterr().out


def test_backfill_still_takes_a_log_version_after_version() -> None:
    job = load_job("backfill")
    assert job.parse(["--events", "e", "--warehouse", "w", "--version", "41"]).version == 41
    assert job.parse(["--events", "e", "--warehouse", "w", "--log-version", "7"]).version == 7


def test_a_stream_maintains_its_tables_every_100_batches_unless_told_otherwise() -> None:
    job = load_job("replay")
    required = ["--events", "e", "--warehouse", "w", "--checkpoint", "c"]
    assert _common.upkeep_options(job.parse(required)) == Upkeep(100)
    assert _common.upkeep_options(job.parse([*required, "--maintain-every", "7",
                                             "--retain-days", "90"])) == Upkeep(7, 90)
    assert _common.upkeep_options(job.parse([*required, "--maintain-every", "0"])) is None
    with pytest.raises(UsageError, match="--maintain-every 0"):
        _common.upkeep_options(job.parse([*required, "--maintain-every", "0",
                                          "--retain-days", "90"]))


@pytest.mark.parametrize(("name", "argv", "expected"), [
    ("replay", ["--events", "e", "--warehouse", "w", "--checkpoint", "c", "--trigger", "once"],
     "replay.py: error: argument --trigger: 'once': expected available-now or "
     "processing-time:SECONDS (e.g. processing-time:30) (see --help)"),
    ("replay", ["--events", "e", "--warehouse", "w", "--checkpoint", "c",
                "--watermark-delay", "ten minutes"],
     "replay.py: error: argument --watermark-delay: 'ten minutes': expected a whole number "
     "and a unit, e.g. '10 minutes', '30 s', '2 hours' (see --help)"),
    ("replay", ["--events", "e", "--warehouse", "w", "--checkpoint", "c",
                "--maintain-every", "-1"],
     "replay.py: error: argument --maintain-every: '-1': expected a whole number, 0 or more"),
    ("replay", ["--events", "e", "--warehouse", "w"],
     "replay.py: error: the following arguments are required: --checkpoint (see --help)"),
    ("generate", ["--output", "o", "--groups", "many"],
     "generate.py: error: argument --groups: 'many': expected a whole number of at least 1 "
     "(see --help)"),
    ("generate", ["--output", "o", "--bad-rows", "5"],
     "generate.py: error: argument --bad-rows: '5': expected a fraction from 0 to 1 "
     "(see --help)"),
    ("backfill", ["--events", "e", "--warehouse", "w", "--until", "yesterday"],
     "backfill.py: error: argument --until: "),
    ("backfill", ["--events", "e", "--warehouse", "w", "--until", "2026-01-01", "--version", "3"],
     "backfill.py: error: give --until or --log-version, not both (see --help)"),
    ("query", ["--warehouse", "w", "--profile", "laptop", "SELECT 1"],
     "query.py: error: argument --profile: unknown Spark profile 'laptop'; known: "),
    ("query", ["--warehouse", "w"],
     "query.py: error: give a SQL statement, --as-of TIMESTAMP, or --demo (see --help)"),
    ("report", ["--warehouse", "w", "--group", "g", "--output", "g.png",
                "--from", "2026-01-02", "--to", "2026-01-01"],
     "report.py: error: --to (2026-01-01 00:00:00+00:00) must be after --from"),
    ("ingest", ["--raw", "r", "--events", "e", "--kafka-option", "novalue"],
     "ingest.py: error: --kafka-option must look like key=value, got 'novalue' (see --help)"),
    # Secrets' sources: a file that is not there, an environment variable that is not set
    ("ingest", ["--raw", "r", "--events", "e", "--kafka-options-file", "/nonexistent/c.properties"],
     "ingest.py: error: --kafka-options-file /nonexistent/c.properties: No such file or "
     "directory (see --help)"),
    ("ingest", ["--raw", "r", "--events", "e", "--kafka-option-env",
                "sasl.jaas.config=CGR_NO_SUCH_VARIABLE"],
     "ingest.py: error: --kafka-option-env sasl.jaas.config: the environment has no "
     "CGR_NO_SUCH_VARIABLE (see --help)"),
    # A what-if Kafka would refuse is refused before a session starts: nothing is read.
    ("whatif", ["--warehouse", "w", "--group", "g", "--assignor", "bogus"],
     "whatif.py: error: unknown assignor 'bogus': the classic protocol's are "),
    ("whatif", ["--warehouse", "w", "--group", "g", "--session-timeout", "1000"],
     "whatif.py: error: session timeout 1000 ms is outside the broker's bounds [6000, 1800000]"),
    ("whatif", ["--warehouse", "w", "--group", "g", "--protocol", "consumer", "--assignor",
                "sticky"],
     "whatif.py: error: --protocol consumer: the broker assigns, with uniform or range"),
    ("whatif", ["--warehouse", "w"],
     "whatif.py: error: one of the arguments --group --where is required"),
])
def test_a_bad_flag_value_is_one_line_naming_the_flag_and_what_was_expected(
        name: str, argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert fails(name, argv, capsys).startswith(expected)


def test_a_missing_coordinator_conf_is_one_line(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    line = fails("replay", ["--events", "e", "--warehouse", "w", "--checkpoint", "c",
                            "--coordinator-conf", str(tmp_path / "none.properties")], capsys)
    assert line.startswith(f"replay.py: error: --coordinator-conf {tmp_path}/none.properties: ")
    assert line.endswith("expected a Kafka-style .properties file (see conf/coordinator.properties)")


def test_debug_shows_the_traceback_of_a_users_mistake(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--coordinator-conf"):
        load_job("replay").main(["--events", "e", "--warehouse", "w", "--checkpoint", "c",
                                 "--coordinator-conf", str(tmp_path / "none"), "--debug"])


def test_a_bug_keeps_its_traceback() -> None:
    @_common.cli(lambda argv: argparse.Namespace(argv=argv))
    def main(args: argparse.Namespace) -> None:
        raise KeyError("a bug")

    with pytest.raises(KeyError, match="a bug"):
        main([])


@pytest.mark.parametrize("java", ["a JAVA_HOME without java", "no JAVA_HOME, no java on PATH"])
def test_a_machine_without_java_is_told_so_in_one_line(java: str, tmp_path: Path) -> None:
    """Not Spark's bare JAVA_GATEWAY_EXITED: the job names what is missing before it starts a
    JVM (a process of its own: the suite's worker may hold a Spark session already)."""
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    if java.startswith("a JAVA_HOME"):
        env["JAVA_HOME"] = str(tmp_path / "jdk")
        expected = f"generate.py: error: JAVA_HOME={tmp_path / 'jdk'} has no bin/java: "
    else:
        env["PATH"] = str(tmp_path)  # the job runs by its interpreter's full path
        expected = "generate.py: error: no java: JAVA_HOME is unset and PATH has none; "
    done = subprocess.run([sys.executable, str(ROOT / "jobs" / "generate.py"), "--output",
                           str(tmp_path / "events"), "--groups", "1", "--events", "10"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(expected), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Java 17 or 21" in done.stderr
    assert not (tmp_path / "events").exists()


def test_kafka_options_come_from_the_file_the_environment_and_the_flags_later_winning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client.properties as Kafka's tools read it (`:` separators, a continued line), then
    the environment, then --kafka-option: each later one wins its keys."""
    file = tmp_path / "client.properties"
    file.write_text("security.protocol: SASL_SSL\nsasl.mechanism=PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule \\\n"
                    "    required username=\"u\" password=\"from-file\";\n")
    monkeypatch.setenv("CGR_JAAS", "from-env")
    args = load_job("ingest").parse([
        "--raw", "r", "--events", "e", "--kafka-options-file", str(file),
        "--kafka-option-env", "sasl.jaas.config=CGR_JAAS",
        "--kafka-option", "sasl.mechanism=SCRAM-SHA-512"])
    assert args.kafka_options == {"security.protocol": "SASL_SSL",
                                  "sasl.mechanism": "SCRAM-SHA-512",
                                  "sasl.jaas.config": "from-env"}
    args = load_job("ingest").parse(["--raw", "r", "--events", "e",
                                     "--kafka-options-file", str(file)])
    assert args.kafka_options["sasl.jaas.config"].endswith('password="from-file";')
    assert "PlainLoginModule required" in args.kafka_options["sasl.jaas.config"]
