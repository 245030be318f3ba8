"""The recipes of docs/serving.md on a small warehouse: `jobs/serve.py` serves it to real
clients at once (Spark Connect Python sessions and `beeline` over JDBC) while a stream keeps
writing it. The jobs build the warehouse themselves, by their entry points in the suite's
session (the server and the stream are the processes under test): `jobs/generate.py`
writes ~1,000 events in two Delta commits to a staging folder; the log the replay reads
starts as the first commit only, and the second is appended later the way any Delta writer
appends (its data file first, then its commit file, renamed into `_delta_log/`).
`jobs/replay.py --database ''` replays the first part and names nothing, so every name the
clients use is the server's doing. The server also serves Prometheus metrics
(`--metrics-port`), scraped over HTTP. The server then runs on free loopback ports with the
test profile's small settings and a Hive catalog (a .conf of the test's own: the test
profile plus `spark.sql.catalogImplementation hive`) in the warehouse's embedded Derby
metastore, and beside it the stream (`jobs/replay.py --database '' --trigger
processing-time:1`) on the same warehouse, which must not need that metastore.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import pyspark
import pytest
from pyspark.sql import SparkSession

from pipeline.spark.runtime.session import PROFILES_DIR
from schemas import OUTPUT_TABLES
from tests.jobs.jobs import load_job
from tests.metrics.test_exposition import of, samples

ROOT = Path(__file__).resolve().parents[2]
SPARK_HOME = Path(pyspark.__file__).parent  # pip pyspark is a Spark distribution
GROUPS = 8
EVER = "TIMESTAMP'1970-01-01', TIMESTAMP'2100-01-01'"
# The questions both clients ask, each row tagged so that beeline's echo of the statement
# (it prints what it reads from a pipe) is never taken for an answer.
QUESTIONS = {
    "groups": "SELECT 'groups', count(*), sum(CASE WHEN state <> 'Dead' THEN member_count END) "
              "FROM consumer_groups.group_state",
    "summary": f"SELECT 'summary', sum(rebalances) FROM consumer_groups.rebalance_summary({EVER})",
    "rebalances": "SELECT 'rebalances', count(*) FROM consumer_groups.rebalances",
    "members": "SELECT 'members', count(*) FROM consumer_groups.group_members",
}
NEWEST = "SELECT '{tag}', count(*) FROM consumer_groups.offset_history"
T = TypeVar("T")
CONNECT_MARK = "SPARK_CONNECT_MODE_ENABLED"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(what: str, probe: Callable[[], T | None], seconds: float,
             alive: subprocess.Popen[bytes] | None = None, log: Path | None = None,
             every: float = 0.5) -> T:
    """Poll `probe` every `every` seconds until it answers (not None); fail at the deadline,
    or at once if the process `alive` has exited, with the end of its `log`."""
    deadline = time.monotonic() + seconds
    while (answer := probe()) is None:
        ended = alive is not None and alive.poll() is not None
        if ended or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-4000:] if log else ""
            why = f"the process exited with {alive.returncode}" if ended and alive else (
                f"not within {seconds:.0f} s")
            pytest.fail(f"{what}: {why}\n{tail}")
        time.sleep(every)
    return answer


def commit_files(table: Path, version: int) -> tuple[Path, list[str]]:
    """A Delta commit's file and the data files it adds (paths relative to the table)."""
    commit = table / "_delta_log" / f"{version:020d}.json"
    actions = [json.loads(line) for line in commit.read_text().splitlines() if line.strip()]
    return commit, [a["add"]["path"] for a in actions if "add" in a]


def append_commit(staged: Path, log: Path, version: int, scratch: Path) -> None:
    """Append commit `version` of the staged log to `log` as a Delta writer does: the data
    files first (unreferenced until the commit exists), then the commit file, renamed in
    whole, so a reader sees all of it or none."""
    commit, added = commit_files(staged, version)
    (log / "_delta_log").mkdir(parents=True, exist_ok=True)
    for name in added:
        shutil.copy(staged / name, log / name)
    shutil.copy(commit, scratch)
    os.replace(scratch, log / "_delta_log" / commit.name)


@dataclass
class Served:
    root: Path
    staged: Path
    events: Path
    connect: str
    jdbc: str
    metrics: str
    stream: subprocess.Popen[bytes]
    stream_log: Path


def job(name: str, *args: str | Path | int) -> list[str]:
    return [sys.executable, str(ROOT / "jobs" / f"{name}.py"), *map(str, args)]


def job_env() -> dict[str, str]:
    """This environment without the Connect client's mark (`connect_session`)."""
    return {k: v for k, v in os.environ.items() if k not in (CONNECT_MARK, "SPARK_REMOTE")}


def run_job(spark: SparkSession, name: str, *args: str | Path | int) -> None:
    """Job `name`'s entry point with `args`, in `spark` (a process of its own would add a
    JVM's start and warm-up, and nothing this file tests)."""
    assert load_job(name).main(list(map(str, args)), spark=spark) in (None, 0)


def light_profile(root: Path) -> Path:
    """The test profile (two cores, small shuffles, no UI) with the local profile's Hive
    catalog, as a .conf path --profile takes."""
    path = root / "serve-test.conf"
    path.write_text((PROFILES_DIR / "test.conf").read_text()
                    + "\nspark.sql.catalogImplementation hive\n")
    return path


@contextmanager
def running(command: list[str], log: Path, cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A job in the background, its output to `log`; stopped (SIGTERM) on leaving."""
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                env=job_env())
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> Iterator[Served]:
    """docs/serving.md's deployment: the server, and beside it the stream, started together
    (the stream needs no metastore), over a warehouse the replay made first."""
    root = tmp_path_factory.mktemp("serve")
    profile, staged, events = light_profile(root), root / "staged", root / "events"
    warehouse, checkpoint = root / "wh", root / "checkpoint"
    run_job(spark, "generate", "--output", staged, "--groups", GROUPS, "--events", 1000,
            "--commits", 2)
    append_commit(staged, events, 0, root / "commit.tmp")
    run_job(spark, "replay", "--events", events, "--warehouse", warehouse, "--checkpoint",
            checkpoint, "--database", "")
    connect, thrift, metrics = free_port(), free_port(), free_port()
    server_log, stream_log = root / "serve.log", root / "stream.log"
    with running(job("replay", "--events", events, "--warehouse", warehouse, "--checkpoint",
                     checkpoint, "--database", "", "--trigger", "processing-time:1",
                     "--profile", profile), stream_log, root) as stream, \
            running(job("serve", "--warehouse", warehouse, "--profile", profile, "--host",
                        "127.0.0.1", "--connect-port", connect, "--thrift-port", thrift,
                        "--metrics-port", metrics),
                    server_log, root) as server:
        wait_for("the server's endpoints", lambda: "serving consumer_groups until"
                 in server_log.read_text(errors="replace") or None, 240, server, server_log)
        text = server_log.read_text(errors="replace")
        urls = (f"sc://127.0.0.1:{connect}", f"jdbc:hive2://127.0.0.1:{thrift}/consumer_groups",
                f"http://127.0.0.1:{metrics}/metrics")
        assert all(url in text for url in urls), text[-3000:]
        yield Served(root, staged, events, *urls, stream, stream_log)
    # SIGTERM: the server stops its endpoints, then Spark, and exits 0.
    text = server_log.read_text(errors="replace")
    assert server.returncode == 0 and "SIGTERM: stopping the endpoints" in text, text[-4000:]


@contextmanager
def connect_session(url: str) -> Iterator[Any]:
    """A Spark Connect session of its own (not the process's default one), stopped after.

    Creating one marks this process as a Connect client (`SPARK_CONNECT_MODE_ENABLED`),
    which would turn the suite's classic session here, and any job started from here, into
    Connect clients: the mark leaves with the session that set it, and `job_env` drops it."""
    from pyspark.sql import SparkSession

    marked = CONNECT_MARK in os.environ
    session = SparkSession.builder.remote(url).create()
    try:
        yield session
    finally:
        session.stop()
        if not marked:
            os.environ.pop(CONNECT_MARK, None)


def beeline(url: str, statements: str) -> dict[str, list[str]]:
    """`bin/beeline -u URL -e "..."` as docs/serving.md runs it: each answer row by its tag."""
    done = subprocess.run(
        [str(SPARK_HOME / "bin" / "beeline"), "-u", url, "--silent=true", "--showHeader=false",
         "--outputformat=tsv2", "-e", statements],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**job_env(), "SPARK_HOME": str(SPARK_HOME)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return tagged(done.stdout.splitlines())


_PROMPT = re.compile(r"^\d+: jdbc:hive2://\S*> ")


def tagged(lines: list[str]) -> dict[str, list[str]]:
    rows = [_PROMPT.sub("", line).split("\t") for line in lines]
    return {row[0]: row[1:] for row in rows if len(row) > 1}


class BeelineSession:
    """One beeline process, one JDBC connection held open, statements fed one at a time on
    its standard input, as a BI tool keeps a connection and asks again."""

    def __init__(self, url: str, log: Path) -> None:
        self.log = log.open("w")
        self.proc = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "beeline"), "-u", url, "--silent=true",
             "--showHeader=false", "--outputformat=tsv2"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
            bufsize=1, env={**job_env(), "SPARK_HOME": str(SPARK_HOME)})
        self.lines: queue.Queue[str] = queue.Queue()
        self.asked = 0
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, out: IO[str]) -> None:
        for line in out:
            self.lines.put(line.rstrip("\n"))

    def ask(self, sql: str, seconds: float = 60) -> list[str]:
        """The answer to `sql`, whose first column is `'{tag}'`: a tag of its own per
        statement, so that no late answer is taken for another's."""
        assert self.proc.stdin is not None
        self.asked += 1
        tag = f"jdbc{self.asked}"
        self.proc.stdin.write(sql.format(tag=tag) + ";\n")
        deadline = time.monotonic() + seconds
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"beeline: no answer to {sql!r} within {seconds:.0f} s; "
                            f"see {self.log.name}")
            answer = tagged([line]).get(tag)
            if answer is not None:
                return answer

    def __enter__(self) -> BeelineSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # end of input: beeline closes the connection and exits
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.mark.spark
def test_a_connect_client_and_beeline_get_the_same_answers_by_name(served: Served) -> None:
    with connect_session(served.connect) as session:
        names = {r["tableName"] for r in session.sql("SHOW TABLES IN consumer_groups").collect()}
        functions = {r["function"] for r in
                     session.sql("SHOW USER FUNCTIONS IN consumer_groups").collect()}
        groups = session.table("consumer_groups.group_state").select("group_id").collect()

        def agreed() -> dict[str, list[str]] | None:
            """Both clients' answers, when they agree: asked one after the other, they
            could straddle a commit of the stream (only if a test before this one gave it
            something to do)."""
            # One Connect round trip per question, as a notebook asks them.
            said = {tag: [str(v) for v in session.sql(sql).collect()[0][1:]]
                    for tag, sql in QUESTIONS.items()}
            return said if beeline(served.jdbc, ";".join(QUESTIONS.values())) == said else None

        said = wait_for("the same answers from Spark Connect and beeline", agreed, 120)
    # The replay registered nothing: the server named every table, the functions, the view.
    assert set(OUTPUT_TABLES) | {"group_members"} <= names
    assert {f"spark_catalog.consumer_groups.{f}" for f in
            ("rebalance_summary", "group_state_as_of", "member_sessions")} <= functions
    assert len(groups) == int(said["groups"][0]) > 0
    assert said["summary"] == said["rebalances"] != ["0"]
    assert said["members"] == [said["groups"][1]]


@pytest.mark.spark
def test_two_clients_at_once_see_what_a_running_stream_appends(served: Served) -> None:
    """Two Spark Connect sessions and a held-open JDBC connection poll at once while the
    stream replays the log's second commit: each sees the new rows in the session it
    already had (a table registered by LOCATION is read afresh by every query)."""
    with ExitStack() as stack:
        first = stack.enter_context(connect_session(served.connect))
        second = stack.enter_context(connect_session(served.connect))
        jdbc = stack.enter_context(BeelineSession(served.jdbc, served.root / "beeline.log"))
        before = int(first.sql(NEWEST.format(tag="c")).collect()[0][1])
        assert jdbc.ask(NEWEST) == [str(before)]
        append_commit(served.staged, served.events, 1, served.root / "commit.tmp")

        def more(ask: Callable[[], int]) -> int:
            return wait_for("new offset_history rows", lambda: n if (n := ask()) > before
                            else None, 240, served.stream, served.stream_log, every=2)

        with ThreadPoolExecutor(3) as pool:
            counts = list(pool.map(more, [
                lambda: int(first.sql(NEWEST.format(tag="c")).collect()[0][1]),
                lambda: int(second.sql(NEWEST.format(tag="c")).collect()[0][1]),
                lambda: int(jdbc.ask(NEWEST)[0])]))
    assert served.stream.poll() is None, "the stream stopped: the rows must come from it running"
    assert min(counts) > before
    # The stream never tried the metastore the server holds (Derby's lock error).
    assert "XSDB6" not in served.stream_log.read_text(errors="replace")


@pytest.mark.spark
def test_the_server_s_metrics_endpoint_serves_the_live_groups_of_group_state(
        served: Served) -> None:
    """A scrape reads the warehouse afresh: each live group's members and generation as
    group_state holds them (the replay ran without --end-offsets: no lag series). Asked
    until both agree: the stream beside may commit between the question and the scrape."""
    with connect_session(served.connect) as session:
        def agreed() -> dict[tuple[str, frozenset[tuple[str, str]]], float] | None:
            live = session.sql("SELECT group_id, member_count, generation_id FROM "
                               "consumer_groups.group_state WHERE state <> 'Dead'").collect()
            with urllib.request.urlopen(served.metrics, timeout=120) as r:
                found = samples(r.read().decode())
            members = {frozenset({("group", g)}): n for g, n, _ in live}
            generations = {frozenset({("group", g)}): n for g, _, n in live}
            return found if live and of(found, "cgr_group_members") == members and \
                of(found, "cgr_group_generation") == generations else None
        found = wait_for("the metrics of group_state's live groups", agreed, 120)
    assert not [name for name, _ in found if name.startswith(("kafka_", "cgr_replay_"))]


def test_the_endpoints_default_to_loopback_and_their_own_ports() -> None:
    args = load_job("serve").parse(["--warehouse", "wh"])
    assert (args.host, args.connect_port, args.thrift_port, args.database) == (
        "127.0.0.1", 15002, 10000, "consumer_groups")


@pytest.mark.parametrize("argv", [["--connect-port", "0", "--thrift-port", "0"],
                                  ["--database", ""], ["--thrift-port", "70000"]])
def test_nothing_to_serve_is_a_usage_error(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        load_job("serve").parse(["--warehouse", "wh", *argv])
    assert exit_.value.code == 2
