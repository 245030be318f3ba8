"""A real broker's `__consumer_offsets`, ingested through Spark's Kafka source and replayed by the
streaming job, agrees with what the broker itself answers: OffsetFetch for every group, and
DescribeGroups (state and members) for classic and KIP-848 groups alike."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.fold import CoordinatorConfig
from pipeline.kafka.broker import DEFAULT_CONFIG, NODE_ID, Broker, serving_brokers
from pipeline.spark.events.eventlog import recorded_partitions
from pipeline.spark.events.records import MALFORMED_RECORD
from pipeline.spark.ingest.ingest import IngestOptions, start_ingest
from pipeline.spark.tables.catalog import as_of, register_views
from tests.kafka.clients import BrokerMember, Scenarios, admin
from tests.kafka.conftest import Replayed, before, ingested_until, topic_now
from tests.spark.test_readme_examples import load_job

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

CLASSIC = ["g-leave", "g-crash", "g-static", "g-coop", "g-txn-commit", "g-txn-abort"]
KIP848 = ["g-848"]
SECRET = "hunter2-not-logged"


def _rows(df: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.select(*columns).collect())


def _offsets(replayed: Replayed, spark: SparkSession, group: str
             ) -> dict[tuple[str, int], tuple[int, str]]:
    rows = replayed.table(spark, "committed_offsets").where(F.col("group_id") == group).collect()
    # librdkafka sends a metadata string with its C terminator (the log holds "first\x00"), and
    # the Python client reads OffsetFetch's answer back as a C string ("first"): compare so.
    return {(r["topic"], r["partition"]):
            (r["committed_offset"], (r["commit_metadata"] or "").rstrip("\x00")) for r in rows}


def _assignment(m: Any, topics: dict[str, str]) -> tuple[tuple[str, int], ...]:
    """A classic member's assignment by topic name; a KIP-848 member's records name topics by
    id (`assigned_partitions`), which the broker's DescribeTopics turns into names."""
    by_name = [(a["topic"], a["partition"]) for a in m["assignment"] or ()]
    by_id = [(topics[a["topic_id"]], p) for a in m.asDict().get("assigned_partitions") or ()
             for p in a["partitions"]]
    return tuple(sorted(by_name + by_id))


def _members(replayed: Replayed, spark: SparkSession, group: str
             ) -> tuple[str | None, tuple[BrokerMember, ...]]:
    rows = replayed.table(spark, "group_state").where(F.col("group_id") == group).collect()
    assert len(rows) == 1, f"{group}: {len(rows)} group_state rows"
    members = tuple(sorted(
        (BrokerMember(m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"],
                      _assignment(m, replayed.topics))
         for m in rows[0]["members"] or ()), key=lambda m: m.member_id))
    return rows[0]["state"], members


def test_the_workload_covers_every_scenario(workload: Scenarios) -> None:
    assert workload.groups == CLASSIC
    assert workload.kip848_error is None, f"librdkafka refused group.protocol=consumer: " \
                                          f"{workload.kip848_error}"
    assert workload.kip848_groups == KIP848


def test_ingest_keeps_every_record_once_with_its_bytes_and_kafka_position(
        spark: SparkSession, broker: Broker, live: Replayed) -> None:
    events = spark.read.format("delta").load(live.events)
    # Every record before where the ingest stopped, once.
    assert _rows(events, "log_partition", "log_offset", "raw_key", "raw_value") == \
        _rows(topic_now(spark, broker).where(before(live.ingested)),
              "partition", "offset", "key", "value")
    assert events.where(F.col("event_type") == MALFORMED_RECORD).count() == 0
    types = {r[0] for r in events.select("event_type").distinct().collect()}
    assert {"OFFSET_COMMIT", "GROUP_METADATA", "CONSUMER_GROUP_METADATA",
            "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT"} <= types
    commits = events.where(F.col("event_type") == "OFFSET_COMMIT")
    assert commits.where(F.col("commit_timestamp").isNull() | F.col("event_time").isNull()
                         | F.col("topic").isNull()).count() == 0


@pytest.mark.parametrize("group", CLASSIC + KIP848)
def test_replayed_committed_offsets_equal_the_brokers(
        spark: SparkSession, live: Replayed, group: str) -> None:
    assert live.offsets[group], f"the broker has no offsets for {group}"
    assert _offsets(live, spark, group) == live.offsets[group]


@pytest.mark.parametrize("group", CLASSIC)
def test_replayed_classic_group_state_equals_describe_groups(
        spark: SparkSession, live: Replayed, group: str) -> None:
    assert _members(live, spark, group) == live.groups[group]


@pytest.mark.parametrize("group", KIP848)
def test_replayed_kip848_group_state_equals_describe_groups(
        spark: SparkSession, live: Replayed, group: str) -> None:
    assert _members(live, spark, group) == live.groups[group]


def test_the_replay_rejects_no_record_of_the_brokers_groups(
        spark: SparkSession, live: Replayed) -> None:
    rejected = live.table(spark, "rejected_events").where(F.col("group_id").isin(CLASSIC + KIP848))
    assert _rows(rejected, "group_id", "event_type", "reason") == []


def _command_lines() -> str:
    """Every process's arguments on this machine, as `ps` shows them to any user."""
    lines = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            lines.append(cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:  # a process that ended meanwhile
            continue
    return "\n".join(lines)


def test_a_second_ingest_from_the_start_adds_only_what_is_new_and_shows_no_secret(
        spark: SparkSession, broker: Broker, live: Replayed, session_dir: Path,
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """The secrets given as the job takes them, from a properties file and the environment,
    reach the consumer and appear in no log line and no process's arguments."""
    # Into a copy of the live log, which the other tests compare with what they read.
    copy = session_dir / "second-events"
    shutil.copytree(live.events, copy)
    had = spark.read.format("delta").load(str(copy)).count()
    caplog.set_level(logging.INFO, logger="ingest")
    secrets = session_dir / "client.properties"
    secrets.write_text(f"# a mounted secret\nssl.key.password = {SECRET}\n")
    monkeypatch.setenv("CGR_TEST_TRUSTSTORE_PASSWORD", SECRET + "-env")
    args = load_job("ingest").parse([
        "--bootstrap-servers", broker.bootstrap_servers, "--events", str(copy),
        "--checkpoint", str(session_dir / "second-ckpt"), "--kafka-options-file", str(secrets),
        "--kafka-option-env", "ssl.truststore.password=CGR_TEST_TRUSTSTORE_PASSWORD",
        "--kafka-option", "failOnDataLoss=true"])
    assert args.kafka_options == {"ssl.key.password": SECRET,
                                  "ssl.truststore.password": SECRET + "-env",
                                  "failOnDataLoss": "true"}
    query = start_ingest(spark, IngestOptions(
        events=args.events, bootstrap_servers=args.bootstrap_servers,
        checkpoint=args.checkpoint, kafka_options=args.kafka_options))
    assert SECRET not in _command_lines()  # while the stream runs, the JVM's included
    query.awaitTermination()
    # What was written after the first ingest stopped (the broker is the suite's) is new to
    # it; nothing before.
    second = ingested_until(session_dir / "second-ckpt")
    since = topic_now(spark, broker).where(~before(live.ingested) & before(second)).count()
    events = spark.read.format("delta").load(str(copy))
    assert events.count() == had + since
    assert events.select("log_partition", "log_offset").distinct().count() == had + since
    assert "ssl.key.password" in caplog.text and "ssl.truststore.password" in caplog.text
    assert SECRET not in caplog.text


def test_the_ingest_records_the_clusters_topic_ids_and_names(
        spark: SparkSession, live: Replayed) -> None:
    topics = live.table(spark, "topics")
    recorded = {r["topic_id"]: r["topic_name"] for r in topics.collect()}
    assert live.topics.items() <= recorded.items()
    assert "__consumer_offsets" in recorded.values()
    assert topics.where((F.col("source") != "cluster") | F.col("seen_at").isNull()).count() == 0
    assert topics.count() == len(recorded), "a topic recorded twice"


def test_the_ingest_records_the_offsets_topics_partition_count_and_the_replay_takes_it(
        spark: SparkSession, live: Replayed) -> None:
    # The suite's broker has 3, not Kafka's default 50; the replay was given no count (the
    # conftest's `replay`), and its fold refuses a record outside its group's partition.
    brokers = int(DEFAULT_CONFIG["offsets.topic.num.partitions"])
    assert recorded_partitions(spark, live.events) == brokers
    assert brokers != CoordinatorConfig().offsets_topic_num_partitions
    misplaced = F.col("reason").contains("offsets.topic.num.partitions")
    assert live.table(spark, "rejected_events").where(misplaced).count() == 0


def _by_name(rows: list[Any]) -> dict[str, tuple[tuple[str, int], ...]]:
    return {r["member_id"]: tuple(sorted((a["topic"], a["partition"]) for a in r["assignment"]))
            for r in rows}


def _brokers(live: Replayed, group: str) -> dict[str, tuple[tuple[str, int], ...]]:
    return {m.member_id: m.assignment for m in live.groups[group][1]}


@pytest.mark.parametrize("group", KIP848)
def test_kip848_members_are_named_through_the_topics_table_as_describe_groups_names_them(
        spark: SparkSession, live: Replayed, group: str) -> None:
    """Kafka 4.1+ logs no subscription metadata: the log names the group's topics by id only,
    and the SQL names them through `topics`, now and as of a time."""
    raw = live.table(spark, "group_state").where(F.col("group_id") == group).first()
    assert raw is not None and all(not m["assignment"] for m in raw["members"]), \
        "the log named the topics itself: this broker wrote subscription metadata"
    register_views(spark, str(live.warehouse))
    want = _brokers(live, group)
    assert all(want.values())
    now = spark.table("group_state").where(F.col("group_id") == group).first()
    assert now is not None and _by_name(now["members"]) == want
    at = spark.table("group_history").agg(F.max("event_time")).first()
    assert at is not None
    then = as_of(spark, "group_members_as_of", int(at[0].timestamp() * 1000), group).collect()
    assert _by_name(then) == want
    by_id = {r["member_id"]: tuple(sorted((live.topics[a["topic_id"]], p)
                                          for a in r["assigned_partitions"]
                                          for p in a["partitions"])) for r in then}
    assert by_id == want
    view = spark.table("group_members").where(F.col("group_id") == group).collect()
    assert _by_name(view) == want


@pytest.mark.parametrize("group", KIP848)
def test_the_report_names_kip848_partitions_through_the_topics_table(
        spark: SparkSession, live: Replayed, group: str) -> None:
    frames = load_job("report").load_group(spark, str(live.warehouse), group)
    for table in ("group_state", "group_history"):
        last = frames[table].sort_values("event_time" if table == "group_history"
                                         else "group_id").iloc[-1]
        assert {m["member_id"]: tuple(sorted((a["topic"], a["partition"])
                                             for a in m["assignment"]))
                for m in last["members"]} == _brokers(live, group), table


def test_the_broker_counts_as_ready_by_its_own_metadata_answer_as_a_client_reads_it(
        broker: Broker) -> None:
    """`wait_ready` reads Kafka's Metadata answer by hand (`serving_brokers`): the brokers it
    lists are those a real client's metadata lists."""
    client = admin(broker.bootstrap_servers)
    assert serving_brokers(broker.bootstrap_servers) == sorted(
        client.list_topics(timeout=30).brokers) == [NODE_ID]
