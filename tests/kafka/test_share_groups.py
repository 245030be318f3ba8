"""A share group on the real broker (Kafka 4.2: share groups on by default): Kafka's own
console share consumer reads a topic in two sessions, then the live ingest reads
`__consumer_offsets` and `__share_group_state` (`--share-state`) and the replay writes
share_partition_state. Each share partition's start offset and lag equal what
`kafka-share-groups --describe --offsets --verbose` prints, and the group's state, epochs
and members what `--describe --state --verbose` prints."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.fold import CoordinatorConfig
from pipeline.kafka.broker import (
    CONFIG_COMMAND,
    CONSOLE_SHARE_CONSUMER,
    DEFAULT_CONFIG,
    SHARE_GROUP_COMMAND,
    Broker,
    kafka_tool,
)
from pipeline.share.state import share_lag, state_of
from pipeline.spark.ingest.ingest import IngestOptions, run_ingest
from pipeline.spark.stream.replay import ReplayOptions, run_replay
from tests.kafka.clients import admin, until

pytestmark = pytest.mark.kafka

TOPIC = "queue"
GROUP = "share-queue"
PER_PARTITION = 30


@dataclass
class Shared:
    offsets: dict[int, tuple[str, str]]  # partition -> START-OFFSET, LAG as printed
    state: dict[str, str]  # the --state line, by column
    root: Path


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
    state = _table(kafka_tool(broker, SHARE_GROUP_COMMAND, "--describe", "--group", GROUP,
                              "--state", "--verbose"))[0]
    run_ingest(spark, IngestOptions(events=str(root / "events"), bootstrap_servers=bootstrap,
                                    checkpoint=str(root / "ingest-ckpt"),
                                    warehouse=str(root / "warehouse"),
                                    share_state=str(root / "share-state")))
    config = CoordinatorConfig(offsets_topic_num_partitions=int(
        DEFAULT_CONFIG["offsets.topic.num.partitions"]))
    run_replay(spark, ReplayOptions(events=str(root / "events"),
                                    warehouse=str(root / "warehouse"),
                                    checkpoint=str(root / "replay-ckpt"), database=None,
                                    config=config, share_state=str(root / "share-state")))
    return Shared(offsets, state, root)


def _newest(spark: SparkSession, root: Path) -> dict[int, Any]:
    topics = spark.read.format("delta").load(str(root / "warehouse" / "topics"))
    rows = (spark.read.format("delta").load(str(root / "warehouse" / "share_partition_state"))
            .join(topics, "topic_id").filter((F.col("topic_name") == TOPIC)
                                             & (F.col("group_id") == GROUP)).collect())
    newest: dict[int, Any] = {}
    for r in sorted(rows, key=lambda r: (r["log_partition"], r["log_offset"])):
        newest[r["partition"]] = r
    return newest


def test_each_share_partitions_start_offset_and_lag_are_what_kafka_share_groups_printed(
        spark: SparkSession, shared: Shared) -> None:
    newest = _newest(spark, shared.root)
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


def test_the_share_state_log_holds_every_record_and_none_is_refused(
        spark: SparkSession, shared: Shared) -> None:
    log = spark.read.format("delta").load(str(shared.root / "share-state"))
    assert log.count() > 0
    assert log.filter("event_type NOT IN ('SHARE_SNAPSHOT', 'SHARE_UPDATE')").count() == 0
    rejected = spark.read.format("delta").load(str(shared.root / "warehouse" / "rejected_events"))
    assert rejected.filter(F.col("group_id") == GROUP).count() == 0


def test_the_share_groups_state_is_what_kafka_share_groups_printed(
        spark: SparkSession, shared: Shared) -> None:
    group = (spark.read.format("delta").load(str(shared.root / "warehouse" / "group_state"))
             .filter(F.col("group_id") == GROUP).collect())
    assert len(group) == 1
    row = group[0]
    assert row["group_type"] == "share"
    assert row["state"].upper() == shared.state["STATE"].upper(), (row, shared.state)
    assert str(row["group_epoch"]) == shared.state["GROUP-EPOCH"]
    assert str(row["assignment_epoch"]) == shared.state["ASSIGNMENT-EPOCH"]  # the target's
    assert str(len(row["members"] or [])) == shared.state["#MEMBERS"]
