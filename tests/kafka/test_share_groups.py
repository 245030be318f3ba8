"""A share group on the real broker (Kafka 4.2: share groups on by default): Kafka's own
console share consumer reads a topic in two sessions, then the live ingest reads
`__consumer_offsets` and `__share_group_state` (`--share-state`) and the replay writes
share_partition_state. Each share partition's start offset and lag equal what
`kafka-share-groups --describe --offsets --verbose` prints, and so does the lag of the end
offsets the live ingest (`--end-offsets`) sampled then; then a third consumer joins and
is killed (its session expires) and the group is deleted: at each moment the replayed
group's state, epochs and member count are what `--describe --state --verbose` printed, its
members what `--members --verbose` printed, and the deletion ends each share partition's
state."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.kafka.broker import (
    CONFIG_COMMAND,
    CONSOLE_SHARE_CONSUMER,
    SHARE_GROUP_COMMAND,
    Broker,
    kafka_tool,
    tool_command,
)
from pipeline.share.state import share_lag, state_of
from tests.kafka.clients import admin, until
from tests.kafka.conftest import ingest, ingest_and_replay

pytestmark = pytest.mark.kafka

TOPIC = "queue"
GROUP = "share-queue"
PER_PARTITION = 30


@dataclass
class Moment:
    at_ms: int
    state: dict[str, str]  # the --state --verbose line, by column
    members: list[dict[str, str]] = field(default_factory=list)  # --members --verbose


@dataclass
class Shared:
    offsets: dict[int, tuple[str, str]]  # partition -> START-OFFSET, LAG as printed
    moments: list[Moment]  # after the two sessions; a third running; killed; deleted
    root: Path
    sampled: set[int]  # the live ingest's sample times at the first moment, epoch ms


def _table(text: str) -> list[dict[str, str]]:
    """A tool's table (a header line, then rows), each row by column."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    header = lines[0]
    return [dict(zip(header, row, strict=True)) for row in lines[1:]]


def _produce(bootstrap: str) -> None:
    client = admin(bootstrap)  # held: a collected client cancels its requests
    client.create_topics([NewTopic(TOPIC, num_partitions=2,
                                   replication_factor=1)])[TOPIC].result(60)
    p = Producer({"bootstrap.servers": bootstrap})
    for partition in range(2):
        for n in range(PER_PARTITION):
            p.produce(TOPIC, value=f"{partition}-{n}".encode(), partition=partition)
    assert p.flush(60) == 0


def _moment(broker: Broker, state: str, members: int) -> Moment:
    """The group as `--describe --state --verbose` prints it once it is `state` with
    `members` members, stamped after the answer (its records are in the log by then) and
    asked again unchanged."""

    def settled() -> Moment | None:
        rows = _table(kafka_tool(broker, SHARE_GROUP_COMMAND, "--describe", "--group", GROUP,
                                 "--state", "--verbose"))
        at = int(time.time() * 1000)
        if not rows or rows[0]["STATE"].upper() != state or int(rows[0]["#MEMBERS"]) != members:
            return None
        again = _table(kafka_tool(broker, SHARE_GROUP_COMMAND, "--describe", "--group", GROUP,
                                  "--state", "--verbose"))
        return Moment(at, rows[0]) if again == rows else None

    return until(f"{GROUP} {state} with {members} members", settled, timeout_s=120.0,
                 every_s=1.0)


def _consume(broker: Broker, records: int) -> None:
    kafka_tool(broker, CONSOLE_SHARE_CONSUMER, "--topic", TOPIC, "--group", GROUP,
               "--max-messages", str(records), "--timeout-ms", "30000")


@pytest.fixture(scope="module")
def shared(spark: SparkSession, broker: Broker, tmp_path_factory: pytest.TempPathFactory
           ) -> Shared:
    root = tmp_path_factory.mktemp("share-groups")
    bootstrap = broker.bootstrap_servers
    _produce(bootstrap)
    # A share group starts at the latest offset unless told otherwise.
    kafka_tool(broker, CONFIG_COMMAND, "--alter", "--entity-type", "groups", "--entity-name",
               GROUP, "--add-config", "share.auto.offset.reset=earliest")
    _consume(broker, 25)
    _consume(broker, 12)

    def described() -> dict[int, tuple[str, str]] | None:
        rows = _table(kafka_tool(broker, SHARE_GROUP_COMMAND, "--describe", "--group", GROUP,
                                 "--offsets", "--verbose"))
        got = {int(r["PARTITION"]): (r["START-OFFSET"], r["LAG"]) for r in rows
               if r["TOPIC"] == TOPIC}
        return got if len(got) == 2 else None

    offsets = until("the share group's offsets", described)
    moments = [_moment(broker, "EMPTY", 0)]
    assert described() == offsets  # the offsets are the first moment's
    # The live ingest samples the end offsets of what the logs name, at its start and end:
    # nothing moves meanwhile, so both samples see what the tool printed.
    ingest(spark, bootstrap, root, share_state=True, sample=True)
    sampled = {r["sampled_at"] for r in spark.read.format("delta").load(str(root / "samples"))
               .select(F.unix_millis("sampled_at").alias("sampled_at")).collect()}
    assert described() == offsets
    running = subprocess.Popen(tool_command(broker, CONSOLE_SHARE_CONSUMER, "--topic", TOPIC,
                                            "--group", GROUP), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        moments.append(_moment(broker, "STABLE", 1))
        moments[-1].members = _table(kafka_tool(broker, SHARE_GROUP_COMMAND, "--describe",
                                                "--group", GROUP, "--members", "--verbose"))
        assert _moment(broker, "STABLE", 1).state == moments[-1].state  # unmoved meanwhile
    finally:
        running.kill()  # gone without a word: its session expires
        running.wait(60)
    moments.append(_moment(broker, "EMPTY", 0))
    kafka_tool(broker, SHARE_GROUP_COMMAND, "--delete", "--group", GROUP)
    moments.append(Moment(int(time.time() * 1000), {"STATE": "DEAD", "#MEMBERS": "0"}))
    ingest_and_replay(spark, bootstrap, root, share_state=True, sample=True)
    return Shared(offsets, moments, root, sampled)


def _newest(spark: SparkSession, root: Path, at_ms: int) -> dict[int, Any]:
    """Each share partition's newest share_partition_state row at `at_ms`."""
    topics = spark.read.format("delta").load(str(root / "warehouse" / "topics"))
    rows = (spark.read.format("delta").load(str(root / "warehouse" / "share_partition_state"))
            .join(topics, "topic_id").filter((F.col("topic_name") == TOPIC)
                                             & (F.col("group_id") == GROUP)
                                             & (F.col("event_time")
                                                <= F.timestamp_millis(F.lit(at_ms))))
            .collect())
    newest: dict[int, Any] = {}
    for r in sorted(rows, key=lambda r: (r["log_partition"], r["log_offset"])):
        newest[r["partition"]] = r
    return newest


def test_each_share_partitions_start_offset_and_lag_are_what_kafka_share_groups_printed(
        spark: SparkSession, shared: Shared) -> None:
    newest = _newest(spark, shared.root, shared.moments[0].at_ms)
    assert set(newest) == {0, 1}
    consumed = 0
    for partition, (start, lag) in shared.offsets.items():
        row = newest[partition]
        assert str(row["start_offset"]) == start, (partition, row)
        # Kafka 4.2's share lag, from the replayed state and the partition's end offset.
        assert share_lag(PER_PARTITION, state_of(row.asDict())) == (
            None if lag == "-" else int(lag)), (partition, row)
        consumed += int(start)
    assert consumed > 0  # the consumer moved the start offsets


def test_the_live_ingest_samples_the_share_groups_topic_at_its_start_and_end(
        spark: SparkSession, shared: Shared) -> None:
    """Nobody commits to `queue`: only the share group's records name it, and the sampler
    learned it from them, on a log that named nothing when its first run began."""
    assert len(shared.sampled) == 2
    rows = (spark.read.format("delta").load(str(shared.root / "samples"))
            .filter(F.unix_millis("sampled_at").isin(*shared.sampled)
                    & (F.col("topic") == TOPIC)).collect())
    assert sorted((r["partition"], r["log_end_offset"]) for r in rows) == [
        (0, PER_PARTITION), (0, PER_PARTITION), (1, PER_PARTITION), (1, PER_PARTITION)]


def test_the_lag_tables_give_the_share_lag_kafka_share_groups_printed(
        spark: SparkSession, shared: Shared) -> None:
    def read(table: str) -> list[Any]:
        return (spark.read.format("delta").load(str(shared.root / "warehouse" / table))
                .filter((F.col("group_id") == GROUP)
                        & F.unix_millis("sampled_at").isin(*shared.sampled)).collect())
    every = read("partition_lag")
    # each sample's two partitions, no NO_COMMIT of a member
    assert sorted((int(r["sampled_at"].timestamp() * 1000), r["partition"]) for r in every) == \
        sorted((at, p) for at in shared.sampled for p in (0, 1))
    for row in every:
        start, lag = shared.offsets[row["partition"]]
        assert (row["offset_status"], row["group_type"], row["topic"]) == (
            "SHARE_STATE", "share", TOPIC)
        assert str(row["start_offset"]) == start, row
        assert row["lag"] == (None if lag == "-" else int(lag)), row
    groups = read("group_lag")
    assert len(groups) == 2
    known = [int(lag) for _, lag in shared.offsets.values() if lag != "-"]
    for group in groups:
        assert group["total_lag"] == (sum(known) if known else None)
        assert group["partitions"] == 2 and group["status"] == "NOTFOUND"


def test_the_share_state_log_holds_every_record_and_none_is_refused(
        spark: SparkSession, shared: Shared) -> None:
    log = spark.read.format("delta").load(str(shared.root / "share-state"))
    assert log.count() > 0
    kinds = {r[0] for r in log.select("event_type").distinct().collect()}
    assert kinds == {"SHARE_SNAPSHOT", "SHARE_UPDATE", "SHARE_SNAPSHOT_TOMBSTONE"}  # deleted
    rejected = spark.read.format("delta").load(str(shared.root / "warehouse" / "rejected_events"))
    assert rejected.filter(F.col("group_id") == GROUP).count() == 0


def test_the_share_groups_state_at_each_moment_is_what_kafka_share_groups_printed(
        spark: SparkSession, shared: Shared) -> None:
    history = (spark.read.format("delta").load(str(shared.root / "warehouse" / "group_history"))
               .filter(F.col("group_id") == GROUP).collect())
    history.sort(key=lambda r: (r["event_time"], r["log_partition"], r["log_offset"], r["seq"]))
    for moment in shared.moments:
        rows = [r for r in history
                if r["event_time"].timestamp() * 1000 <= moment.at_ms]
        row = rows[-1]
        assert row["group_type"] == "share", moment
        assert row["state"].upper() == moment.state["STATE"].upper(), (moment, row["state"])
        assert row["member_count"] == int(moment.state["#MEMBERS"]), moment
        if "GROUP-EPOCH" in moment.state:
            assert str(row["group_epoch"]) == moment.state["GROUP-EPOCH"], moment
            assert str(row["assignment_epoch"]) == moment.state["ASSIGNMENT-EPOCH"], moment
        replayed = {m["member_id"]: m for m in row["members"] or []}
        assert set(replayed) == {m["CONSUMER-ID"] for m in moment.members}, moment
        for tool in moment.members:  # --members --verbose
            m = replayed[tool["CONSUMER-ID"]]
            assert (m["client_id"], m["client_host"], str(m["member_epoch"])) == (
                tool["CLIENT-ID"], tool["HOST"], tool["MEMBER-EPOCH"]), (m, tool)
            topic, _, parts = tool["ASSIGNMENT"].partition(":")
            assert sorted((a["topic"], a["partition"]) for a in m["assignment"]) == [
                (topic, int(p)) for p in parts.split(",")], (m, tool)
            assert len(m["assignment"]) == int(tool["#PARTITIONS"])


def test_deleting_the_group_deletes_its_share_state(spark: SparkSession, shared: Shared
                                                     ) -> None:
    newest = _newest(spark, shared.root, shared.moments[-1].at_ms)
    assert {p: r["change"] for p, r in newest.items()} == {0: "DELETED", 1: "DELETED"}
