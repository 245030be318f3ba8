"""A streams group on the real broker (Kafka 4.2: the streams rebalance protocol on by
default): Kafka's WordCount (tests/kafka/java/WordCount.java, kafka-streams 4.2.1) run as two
instances with `group.protocol=streams`; one leaves, the other is killed and its session
expires, more words arrive, then the group is deleted. At each of those moments
`kafka-streams-groups --describe` printed the group's state, epochs and members (`--state
--verbose`, `--members --verbose`); the live ingest and the replay then give the same, moment
by moment, from group_history; the group's committed offsets equal `--offsets --verbose` once
it caught up, and the lag of the end offsets the live ingest sampled while it lagged equals
what the Admin API gave then (the tool prints no offsets for a group without members)."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import NewTopic, OffsetSpec
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.kafka.broker import KAFKA_VERSION, Broker, kafka_tool
from tests.java_programs import compile_java, java_command, kafka_classpath
from tests.kafka.clients import admin, broker_positions, until
from tests.kafka.conftest import ingest, ingest_and_replay

pytestmark = pytest.mark.kafka

STREAMS_GROUP_COMMAND = "org.apache.kafka.tools.streams.StreamsGroupCommand"
APP = "wordcount"
IN, OUT = "words-in", "words-out"
MORE = 12  # lines produced once the group stopped: its lag
HERE = Path(__file__).parent


@dataclass
class Moment:
    at_ms: int
    state: dict[str, str]
    members: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Run:
    moments: list[Moment]
    offsets: dict[tuple[str, int], str]  # (topic, partition) -> CURRENT-OFFSET, while running
    root: Path
    lags: dict[tuple[str, int], int]  # (topic, partition) -> lag, stopped, more words in
    sampled: set[int]  # the live ingest's sample times then, epoch ms


def _rows(text: str) -> list[dict[str, str]]:
    """A tool's table: header, then rows; a row's last column keeps its spaces."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith(
        ("Streams group", "Error"))]
    if not lines:
        return []
    header = lines[0].split()  # COORDINATOR (ID): two words over the two of host:port (id)
    out = []
    for line in lines[1:]:
        cells = line.split(None, len(header) - 1)
        out.append(dict(zip(header, cells + [""] * (len(header) - len(cells)), strict=True)))
    return out


def _describe(broker: Broker, *what: str) -> list[dict[str, str]]:
    return _rows(kafka_tool(broker, STREAMS_GROUP_COMMAND, "--describe", "--group", APP,
                            *what))


class App:
    """One WordCount instance, its own JVM."""

    def __init__(self, classpath: str, bootstrap: str, state_dir: Path) -> None:
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - open as long as the JVM runs
        self.process = subprocess.Popen(
            java_command(classpath, "WordCount", bootstrap, APP, str(state_dir), IN, OUT,
                         heap="256m"),
            stdout=subprocess.PIPE, stderr=self.log, text=True)

    def wait_running(self, timeout_s: float = 120.0) -> None:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.strip() == "RUNNING":
                return
            if not line and self.process.poll() is not None:
                break
        self.log.seek(0)
        raise AssertionError(f"WordCount did not run: {self.log.read()[-3000:]!r}")

    def stop(self, sig: int) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, sig)
        self.process.wait(60)


def _produce(bootstrap: str) -> None:
    client = admin(bootstrap)  # held: a collected client cancels its requests
    for topic in (IN, OUT):
        client.create_topics([NewTopic(topic, num_partitions=2,
                                       replication_factor=1)])[topic].result(60)
    _produce_words(bootstrap, 40)


def _produce_words(bootstrap: str, lines: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for n in range(lines):
        p.produce(IN, key=f"k{n}", value=f"the quick fox {n % 5} jumps over the dog")
    assert p.flush(60) == 0


def _lags(bootstrap: str) -> dict[tuple[str, int], int] | None:
    """(topic, partition) -> lag, as the Admin API answers it for the stopped group (the
    tool prints no offsets for a group without members): each committed offset's distance
    to its partition's end offset, once the input lags by what was produced after it
    stopped."""
    committed = broker_positions(bootstrap, APP)
    client = admin(bootstrap)  # held: a collected client cancels its requests
    ends = client.list_offsets({TopicPartition(t, p): OffsetSpec.latest() for t, p in committed},
                               request_timeout=30)
    lags = {(tp.topic, tp.partition): f.result(30).offset - committed[(tp.topic, tp.partition)]
            for tp, f in ends.items()}
    behind = sum(lag for (topic, _), lag in lags.items() if topic == IN)
    return lags if behind == MORE else None


def _moment(broker: Broker, members: int, state: str) -> Moment:
    """The group as the tool prints it, once it shows `members` members in `state`."""

    def settled() -> Moment | None:
        states = _describe(broker, "--state", "--verbose")
        # Every record of what the tool was answered is in the log by now; asked again
        # below, the group is known not to have moved since.
        at = int(time.time() * 1000)
        if not states or states[0]["STATE"].upper() != state or \
                int(states[0]["#MEMBERS"]) != members:
            return None
        listed = _describe(broker, "--members", "--verbose") if members else []
        again = _describe(broker, "--state", "--verbose")
        if again != states:  # moved meanwhile: ask again
            return None
        return Moment(at, states[0], listed)

    return until(f"{APP} {state} with {members} members", settled, timeout_s=120.0,
                 every_s=1.0)


@pytest.fixture(scope="module")
def streams(spark: SparkSession, broker: Broker, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("streams-groups")
    bootstrap = broker.bootstrap_servers
    classpath = kafka_classpath("kafka-streams", KAFKA_VERSION)
    build = root / "classes"
    compile_java([HERE / "java" / "WordCount.java"], classpath, build)
    classpath = f"{classpath}:{build}"
    _produce(bootstrap)
    apps = [App(classpath, bootstrap, root / f"state-{k}") for k in range(2)]
    try:
        for app in apps:
            app.wait_running()
        moments = [_moment(broker, 2, "STABLE")]

        def caught_up() -> list[dict[str, str]] | None:
            rows = _describe(broker, "--offsets", "--verbose")
            done = rows and all(r["CURRENT-OFFSET"] == r["LOG-END-OFFSET"] for r in rows)
            return rows if done else None

        offsets = {(r["TOPIC"], int(r["PARTITION"])): r["CURRENT-OFFSET"]
                   for r in until("the group caught up", caught_up, timeout_s=120.0,
                                  every_s=1.0)}
        apps[1].stop(signal.SIGTERM)  # closes: the member leaves
        moments.append(_moment(broker, 1, "STABLE"))
        apps[0].stop(signal.SIGKILL)  # gone without a word: its session expires
        moments.append(_moment(broker, 0, "EMPTY"))
    finally:
        for app in apps:
            app.stop(signal.SIGKILL)
    # Words arrive while nobody reads: the group lags. The live ingest samples the end
    # offsets of what the logs name at its start and end; nothing moves meanwhile.
    _produce_words(bootstrap, MORE)
    lags = until("the group lags", lambda: _lags(bootstrap), timeout_s=120.0, every_s=1.0)
    ingest(spark, bootstrap, root, sample=True)
    sampled = {r[0] for r in spark.read.format("delta").load(str(root / "samples"))
               .select(F.unix_millis("sampled_at")).collect()}
    assert _lags(bootstrap) == lags
    kafka_tool(broker, STREAMS_GROUP_COMMAND, "--delete", "--group", APP)
    moments.append(Moment(int(time.time() * 1000), {"STATE": "DEAD", "#MEMBERS": "0"}))
    ingest_and_replay(spark, bootstrap, root, sample=True)
    yield Run(moments, offsets, root, lags, sampled)


def _history_at(spark: SparkSession, root: Path, at_ms: int) -> Any:
    rows = (spark.read.format("delta").load(str(root / "warehouse" / "group_history"))
            .filter((F.col("group_id") == APP)
                    & (F.col("event_time") <= F.timestamp_millis(F.lit(at_ms))))
            .orderBy("event_time", "log_partition", "log_offset", "seq").collect())
    return rows[-1] if rows else None


def _tasks(member: Any) -> str:
    """A member's active tasks as the tool prints them (`ACTIVE: 0:[0,1]; 1:[0]; `)."""
    tasks = (member["assigned_tasks"] or {})["active"] or []
    return "".join(f"{t['subtopology_id']}:[{','.join(str(p) for p in t['partitions'])}]; "
                   for t in sorted(tasks, key=lambda t: t["subtopology_id"]))


def test_the_replayed_group_at_each_moment_is_what_kafka_streams_groups_printed(
        spark: SparkSession, streams: Run) -> None:
    for moment in streams.moments:
        row = _history_at(spark, streams.root, moment.at_ms)
        assert row is not None and row["group_type"] == "streams", moment
        assert row["state"].upper() == moment.state["STATE"].upper(), (moment, row["state"])
        assert row["member_count"] == int(moment.state["#MEMBERS"]), moment
        if "GROUP-EPOCH" in moment.state:
            assert str(row["group_epoch"]) == moment.state["GROUP-EPOCH"], moment
            assert str(row["assignment_epoch"]) == moment.state["TARGET-ASSIGNMENT-EPOCH"]
        printed = {m["MEMBER"]: m for m in moment.members}
        replayed = {m["member_id"]: m for m in row["members"] or []}
        assert set(replayed) == set(printed), moment
        for member_id, m in replayed.items():
            tool = printed[member_id]
            assert str(m["member_epoch"]) == tool["MEMBER-EPOCH"]
            assert m["process_id"] == tool["PROCESS"]
            assert m["client_id"] == tool["CLIENT-ID"]
            assert tool["ASSIGNMENTS"].startswith(f"ACTIVE: {_tasks(m)}"), (tool, _tasks(m))


def test_the_groups_committed_offsets_are_what_kafka_streams_groups_printed(
        spark: SparkSession, streams: Run) -> None:
    moment = streams.moments[2]  # empty, before the deletion took its offsets
    rows = (spark.read.format("delta").load(str(streams.root / "warehouse" / "offset_history"))
            .filter((F.col("group_id") == APP)
                    & (F.col("event_time") <= F.timestamp_millis(F.lit(moment.at_ms))))
            .collect())
    newest: dict[tuple[str, int], Any] = {}
    for r in sorted(rows, key=lambda r: (r["event_time"], r["log_offset"])):
        newest[(r["topic"], r["partition"])] = r
    assert streams.offsets, "the tool printed no committed offset"
    for tp, offset in streams.offsets.items():
        assert str(newest[tp]["committed_offset"]) == offset, tp
        assert newest[tp]["group_type"] == "streams"
    assert {tp[0] for tp in streams.offsets} >= {IN}  # and the repartition topic's


def test_the_lag_tables_give_the_lag_kafka_streams_groups_printed(
        spark: SparkSession, streams: Run) -> None:
    """The live ingest sampled the input and repartition topics (named by the group's
    topology and commits), and the lag of each sample is what the tool printed then."""
    assert len(streams.sampled) == 2
    def read(table: str) -> list[Any]:
        return (spark.read.format("delta").load(str(streams.root / "warehouse" / table))
                .filter((F.col("group_id") == APP)
                        & F.unix_millis("sampled_at").isin(*streams.sampled)).collect())
    rows = read("partition_lag")
    for at in streams.sampled:
        got = {(r["topic"], r["partition"]): r for r in rows
               if int(r["sampled_at"].timestamp() * 1000) == at}
        assert set(got) == set(streams.lags), at
        for tp, lag in streams.lags.items():
            assert got[tp]["lag"] == lag, (tp, got[tp])
            assert got[tp]["group_type"] == "streams"
    groups = read("group_lag")
    assert len(groups) == 2
    total = sum(streams.lags.values())
    assert {g["total_lag"] for g in groups} == {total} and total >= MORE
