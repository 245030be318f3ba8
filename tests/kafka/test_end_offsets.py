"""The ingest's end-offset sampler against the real broker: a round samples every partition of
the topics the log's groups commit to or subscribe to, as the broker's own ListOffsets answers
them; a round written twice is kept once; a cluster that does not answer is logged and tried
again, never fatal; and `run_ingest --end-offsets` (available-now) writes samples."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import IsolationLevel, TopicPartition
from confluent_kafka.admin import OffsetSpec
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.kafka.broker import Broker, free_ports
from pipeline.spark.ingest.ingest import IngestOptions, run_ingest
from pipeline.spark.ingest.sampler import EndOffsetSampler, SampleRound, named_topics
from pipeline.spark.lag.samples import write_samples
from pipeline.spark.tables.contract import event_schema
from schemas.consumed import SHARE_STATE_CONSUMED_TOPICS
from schemas.lag import SAMPLE_KEY
from tests.jobs.jobs import load_job
from tests.kafka.clients import OUT_TOPIC, PARTITIONS, PER_PARTITION, TOPIC, Scenarios, admin, until
from tests.said import Said, saying

pytestmark = [pytest.mark.kafka, pytest.mark.spark]
ORDERS = {(TOPIC, p) for p in range(PARTITIONS)}


def broker_answer(bootstrap: str, topic: str, partitions: int, spec: OffsetSpec,
                  isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
                  ) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (offset, timestamp), as the broker's ListOffsets answers."""
    client = admin(bootstrap)  # kept referenced: the futures die with their client
    futures = client.list_offsets({TopicPartition(topic, p): spec for p in range(partitions)},
                                  isolation_level=isolation, request_timeout=30)
    return {(tp.topic, tp.partition): (f.result(30).offset, f.result(30).timestamp)
            for tp, f in futures.items()}


def samples(spark: SparkSession, path: Path) -> DataFrame:
    return (spark.read.format("delta").load(str(path))
            .withColumn("sampled_ms", F.unix_millis("sampled_at"))
            .withColumn("max_ms", F.unix_millis("max_timestamp")))


@dataclass
class Ingested:
    events: str
    samples: Path
    started_ms: int
    said: list[str]  # what the sampler and the ingest logged


@pytest.fixture(scope="module")
def ingested(spark: SparkSession, broker: Broker, workload: Scenarios,
             tmp_path_factory: pytest.TempPathFactory) -> Ingested:
    """The broker's `__consumer_offsets` ingested afresh (available-now) with --end-offsets."""
    root = tmp_path_factory.mktemp("end-offsets")
    started_ms = int(time.time() * 1000)
    with saying("sampler", "ingest") as said:
        run_ingest(spark, IngestOptions(events=str(root / "events"),
                                        bootstrap_servers=broker.bootstrap_servers,
                                        checkpoint=str(root / "ingest-ckpt"),
                                        end_offsets=str(root / "samples")))
    return Ingested(str(root / "events"), root / "samples", started_ms, said.lines)


@pytest.fixture(scope="module")
def sampled(spark: SparkSession, broker: Broker, ingested: Ingested, workload: Scenarios,
            tmp_path_factory: pytest.TempPathFactory) -> tuple[SampleRound, Path, str]:
    """One round of a sampler that knows the topics from the ingested log's records of this
    workload's groups (the broker is the session's: other modules' groups are in its log
    too) and one topic the cluster lacks, written to a table of its own; the round and the
    log it wrote."""
    root = tmp_path_factory.mktemp("sampled")
    target, events = root / "samples", str(root / "events")
    (spark.read.format("delta").load(ingested.events)
     .where(F.col("group_id").isin(workload.groups + workload.kip848_groups))
     .write.format("delta").save(events))
    sampler = EndOffsetSampler(spark, broker.bootstrap_servers, {}, str(target),
                               events=events)
    sampler.add_topics(["no-such-topic"])
    handler = Said()
    logging.getLogger("sampler").addHandler(handler)
    try:
        result = sampler.sample_once()
    finally:
        logging.getLogger("sampler").removeHandler(handler)
        sampler.close()
    return result, target, "\n".join(handler.lines)



def test_the_consumed_topics_are_named_by_commits_and_every_group_type(
        spark: SparkSession) -> None:
    member = {"member_id": "m", "subscription": ["classic-sub"], "assignment": None}
    info = {"name": "changelog", "partitions": 1, "replication_factor": 1, "topic_configs": []}
    rows: list[dict[str, Any]] = [
        {"event_type": "OFFSET_COMMIT", "topic": "committed", "partition": 4},
        {"event_type": "GROUP_METADATA", "members": [member, {**member, "subscription": None}]},
        {"event_type": "JOIN", "protocols": [{"name": "range", "topics": ["joined", "b"]},
                                             {"name": "sticky", "topics": None}]},
        {"event_type": "CONSUMER_GROUP_MEMBER_METADATA", "subscribed_topic_names": ["kip848"]},
        {"event_type": "CONSUMER_GROUP_REGULAR_EXPRESSION", "regex_topics": ["by-regex"]},
        {"event_type": "SHARE_GROUP_MEMBER_METADATA", "subscribed_topic_names": ["queue"]},
        {"event_type": "SHARE_GROUP_STATE_PARTITION_METADATA", "initialized_topics": [
            {"topic_id": "id", "topic_name": "queue-state", "partitions": [0]}]},
        {"event_type": "STREAMS_GROUP_TOPOLOGY", "subtopologies": [
            {"subtopology_id": "0", "source_topics": ["words"], "source_topic_regex": [],
             "state_changelog_topics": [info], "repartition_sink_topics": ["sunk"],
             "repartition_source_topics": [{**info, "name": "repart"}],
             "copartition_groups": []}]},
        {"event_type": "OFFSET_TOMBSTONE", "topic": "deleted-offsets"},  # no longer consumed
        {"event_type": "STREAMS_GROUP_MEMBER_METADATA", "subscribed_topic_names": ["unread"]},
        {"event_type": "OFFSET_COMMIT", "topic": None},
    ]
    names = [f.name for f in event_schema().fields]
    df = spark.createDataFrame([tuple(r.get(n) for n in names) for r in rows], event_schema())
    found = named_topics(df)
    assert {t for t, by_id in found} == {
        "committed", "classic-sub", "joined", "b", "kip848", "by-regex", "queue", "queue-state",
        "words", "changelog", "repart"}
    assert found[("queue", False)] == {"share group subscription"}
    assert found[("repart", False)] == {"streams group repartition topic"}
    assert found[("committed", False)] == {"committed offsets"}
    assert {t for t, _ in named_topics(df.drop("regex_topics", "subscribed_topic_names"))} == {
        "committed", "classic-sub", "joined", "b", "queue-state", "words", "changelog", "repart"}
    share_log = spark.createDataFrame(
        [("SHARE_SNAPSHOT", "AAECAwQFBgcICQoLDA0ODw"), ("SHARE_UPDATE", None),
         ("SHARE_SNAPSHOT_TOMBSTONE", "gone")], "event_type string, topic_id string")
    assert named_topics(share_log, SHARE_STATE_CONSUMED_TOPICS) == {
        ("AAECAwQFBgcICQoLDA0ODw", True): {"share group share-partition state"}}


def test_a_round_samples_every_partition_of_the_consumed_topics_as_the_broker_answers(
        spark: SparkSession, broker: Broker, sampled: tuple[SampleRound, Path, str]) -> None:
    result, target, logged = sampled
    assert result.error is None and result.written == PARTITIONS
    bootstrap = broker.bootstrap_servers
    latest = broker_answer(bootstrap, TOPIC, PARTITIONS, OffsetSpec.latest())
    earliest = broker_answer(bootstrap, TOPIC, PARTITIONS, OffsetSpec.earliest())
    maxima = broker_answer(bootstrap, TOPIC, PARTITIONS, OffsetSpec.max_timestamp())
    rows = {(r["topic"], r["partition"]): r for r in samples(spark, target).collect()}
    # The workload's groups commit to and subscribe to `orders` only: `orders-out` is only
    # produced to, and `__consumer_offsets` is nobody's, so neither is sampled.
    assert set(rows) == ORDERS
    for tp, r in rows.items():
        assert r["log_end_offset"] == latest[tp][0] == PER_PARTITION
        assert r["log_start_offset"] == earliest[tp][0] == 0
        assert (r["max_timestamp_offset"], r["max_ms"]) == maxima[tp]
        assert r["max_ms"] is not None and r["max_ms"] > 0
        assert (r["sampled_ms"], r["isolation_level"], r["source"]) == \
            (result.sampled_at, "READ_UNCOMMITTED", "cluster")
    assert "no-such-topic is named by the event log but not on the cluster" in logged


def test_the_same_round_written_twice_is_kept_once(
        spark: SparkSession, sampled: tuple[SampleRound, Path, str]) -> None:
    result, target, _ = sampled
    before = samples(spark, target).count()
    assert write_samples(spark, result.rows, str(target)) == PARTITIONS
    after = samples(spark, target)
    assert after.count() == before == PARTITIONS
    assert after.groupBy(*SAMPLE_KEY).count().where(F.col("count") > 1).count() == 0


def test_read_committed_samples_the_last_stable_offset(
        spark: SparkSession, broker: Broker, workload: Scenarios) -> None:
    sampler = EndOffsetSampler(spark, broker.bootstrap_servers, {}, "unused",
                               isolation_level="read_committed")
    sampler.add_topics([TOPIC, OUT_TOPIC])  # orders-out holds a committed and an aborted txn
    try:
        result = sampler.take_round(1_700_000_000_000)
    finally:
        sampler.close()
    want = {**broker_answer(broker.bootstrap_servers, TOPIC, PARTITIONS, OffsetSpec.latest(),
                            IsolationLevel.READ_COMMITTED),
            **broker_answer(broker.bootstrap_servers, OUT_TOPIC, 1, OffsetSpec.latest(),
                            IsolationLevel.READ_COMMITTED)}
    assert result.error is None and not result.left_out
    assert {(r["topic"], r["partition"]): r["log_end_offset"] for r in result.rows} == \
        {tp: offset for tp, (offset, _) in want.items()}
    assert {r["isolation_level"] for r in result.rows} == {"READ_COMMITTED"}


def test_a_cluster_that_does_not_answer_is_logged_and_asked_again_never_fatal(
        spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="sampler")
    nobody = f"127.0.0.1:{free_ports(1)[0]}"
    sampler = EndOffsetSampler(spark, nobody, {}, str(tmp_path / "samples"),
                               interval_ms=50, timeout_ms=500)
    sampler.add_topics([TOPIC])
    result = sampler.sample_once()  # raises nothing
    assert result.error is not None and "Timeout" in result.error, result.error
    assert "wrote nothing (retried in the next round)" in caplog.text
    assert result.error in caplog.text
    sampler.start()
    try:
        until("the thread took two more rounds", lambda: sampler.rounds >= 3, timeout_s=60)
        assert sampler.is_alive()
    finally:
        sampler.stop(final_round=False)
    assert not sampler.is_alive()
    assert sampler.failures == sampler.rounds
    assert not (tmp_path / "samples").exists()


def test_an_available_now_ingest_with_end_offsets_writes_samples(
        spark: SparkSession, broker: Broker, ingested: Ingested) -> None:
    latest = broker_answer(broker.bootstrap_servers, TOPIC, PARTITIONS, OffsetSpec.latest())
    rows = samples(spark, ingested.samples).collect()
    rounds = {r["sampled_ms"] for r in rows}
    # A round at the start (on this fresh log, once the first batch named the topics) and
    # one at the end.
    assert len(rounds) == 2 and min(rounds) >= ingested.started_ms
    # (the session's broker logs other modules' groups too: their topics are sampled as well)
    last = [r for r in rows if r["sampled_ms"] == max(rounds) and r["topic"] == TOPIC]
    assert {(r["topic"], r["partition"]): r["log_end_offset"] for r in last} == \
        {tp: offset for tp, (offset, _) in latest.items()}
    assert {(r["source"], r["isolation_level"]) for r in rows} == {("cluster", "READ_UNCOMMITTED")}


def test_the_ingest_says_what_it_samples_and_why_and_that_its_samples_wait(
        ingested: Ingested) -> None:
    said = "\n".join(ingested.said)
    assert "the first round waits for the first records that name one" in said
    (topics,) = [line for line in ingested.said if line.startswith("sampling the end offsets")]
    # the workload's classic and KIP-848 groups subscribe to `orders` and commit to it
    assert f"{TOPIC} (" in topics and "committed offsets" in topics
    assert "classic group subscription" in topics and "consumer group subscription" in topics
    assert "later than every record it wrote" in said and "--trigger processing-time" in said


def test_end_offsets_without_a_live_cluster_is_a_one_line_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        load_job("ingest").main(["--raw", "r", "--events", "e", "--end-offsets", "s"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "ingest.py: error: --end-offsets goes with --bootstrap-servers: end offsets are asked "
        "of a live cluster (see --help)")


def test_a_partition_the_cluster_cannot_answer_is_left_out_with_its_reason_the_rest_sampled(
        spark: SparkSession, broker: Broker, workload: Scenarios) -> None:
    """The round's answers are read in the JVM (`EndOffsetsRound.answers`): one partition's
    failure leaves the others' answers, each failure with its own reason."""
    sampler = EndOffsetSampler(spark, broker.bootstrap_servers, {}, "unused", timeout_ms=3000)
    asked = [(TOPIC, 0), (TOPIC, PARTITIONS + 7), (TOPIC, 1)]
    try:
        rows, failed = sampler._list_offsets(sampler._admin_client(), asked, 1_700_000_000_000)
    finally:
        sampler.close()
    latest = broker_answer(broker.bootstrap_servers, TOPIC, PARTITIONS, OffsetSpec.latest())
    assert {(r["topic"], r["partition"]): r["log_end_offset"] for r in rows} == \
        {tp: latest[tp][0] for tp in ((TOPIC, 0), (TOPIC, 1))}
    assert set(failed) == {(TOPIC, PARTITIONS + 7)}
    # Kafka's Admin asks the metadata again for a partition it does not know until the call's
    # time-out: its own reason, not the wait's (worded "Timed out waiting to send the call"
    # or "Call(...) timed out ... after N attempt(s)" by where the call was when it ran out)
    why = failed[(TOPIC, PARTITIONS + 7)]
    assert why.startswith("TimeoutException: ") and "listOffsets" in why, why
