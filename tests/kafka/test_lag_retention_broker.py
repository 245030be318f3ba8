"""Records lost to retention, a compacted topic and a transactional producer, on the suite's
real broker, against Kafka's own tools. Three topics, a group on each that read part of it
and stopped:

- `lag-retained` (retention.ms 2 s): the group committed 10 of 100 records; retention then
  deleted every segment, so the log starts at 100 and 90 records were lost unread;
- `lag-compacted` (cleanup.policy compact, 10 keys): the cleaner has removed the superseded
  records, so offsets below the end jump; the group committed 50;
- `lag-txn`: 10 records in a committed transaction, whose marker takes offset 10; the group
  read them all (read_committed) and committed what its client commits.

The ingest's sampler takes two rounds, `__consumer_offsets` is ingested and replayed with
those samples, and the newest partition_lag row of each group must say what
`kafka-consumer-groups --describe` (CURRENT-OFFSET, LOG-END-OFFSET, LAG) and `kafka-get-offsets
--time -2` (the log start) say, with `lost_records` the log start's distance past the
committed offset: 90 on the retained topic, the status LOST there."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic, OffsetSpec
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.kafka.broker import Broker, describe_consumer_groups, kafka_tool
from pipeline.spark.ingest.ingest import IngestOptions, run_ingest
from pipeline.spark.ingest.sampler import EndOffsetSampler
from tests.kafka.clients import admin, consumer_conf, until
from tests.kafka.conftest import replay
from tests.kafka.test_lag_broker import parse_describe

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"  # kafka-get-offsets
RETAINED, COMPACTED, TXN = "lag-retained", "lag-compacted", "lag-txn"
GROUPS = {RETAINED: "lag-lost", COMPACTED: "lag-compacted-g", TXN: "lag-txn-g"}
CONFIGS = {
    RETAINED: {"retention.ms": "2000"},
    COMPACTED: {"cleanup.policy": "compact", "segment.ms": "100", "min.compaction.lag.ms": "0",
                "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "100"},
    TXN: {},
}
RECORDS = 100
KEYS = 10  # the compacted topic's


def _earliest(bootstrap: str, topic: str) -> int:
    client = admin(bootstrap)  # kept referenced: the futures die with their client
    (f,) = client.list_offsets({TopicPartition(topic, 0): OffsetSpec.earliest()}).values()
    return int(f.result(30).offset)


def _read_all(bootstrap: str, topic: str, group: str, **extra: Any) -> list[int]:
    """The offsets a fresh consumer of `group` reads from the start (to the end as it stands)."""
    c = Consumer(consumer_conf(bootstrap, group, **extra))
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[int] = []
    try:
        _, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not got or got[-1] < high - 1):
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.offset())
            if c.position([TopicPartition(topic, 0)])[0].offset >= high:
                break
    finally:
        c.close()
    return got


def _commit(bootstrap: str, topic: str, group: str, offset: int) -> None:
    c = Consumer(consumer_conf(bootstrap, group))
    try:
        c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        c.close()


def _set_up(bootstrap: str) -> dict[str, int]:
    """The three topics and groups as the module's docstring says; each group's committed
    offset."""
    client = admin(bootstrap)
    for f in client.create_topics([NewTopic(t, 1, 1, config=c) for t, c in CONFIGS.items()]
                                  ).values():
        f.result(60)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        p.produce(RETAINED, value=f"r{i}".encode())
        p.produce(COMPACTED, key=f"k{i % KEYS}".encode(), value=f"v{i}".encode())
    assert p.flush(30) == 0
    _commit(bootstrap, RETAINED, GROUPS[RETAINED], 10)
    time.sleep(0.3)  # past segment.ms: the next record rolls the compacted topic's segment
    p.produce(COMPACTED, key=b"k0", value=b"last")
    assert p.flush(30) == 0
    _commit(bootstrap, COMPACTED, GROUPS[COMPACTED], 50)
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "lag-txn-producer"})
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(10):
        txn.produce(TXN, value=f"t{i}".encode())
    txn.commit_transaction(30)
    c = Consumer(consumer_conf(bootstrap, GROUPS[TXN], **{"isolation.level": "read_committed"}))
    c.subscribe([TXN])
    try:
        read = until("the transaction's records read",
                     lambda: (m := c.poll(0.5)) is not None and m.error() is None
                     and m.offset() == 9, timeout_s=60, every_s=0)
        assert read
        c.commit(asynchronous=False)
    finally:
        c.close()
    # Retention deletes every segment of the retained topic (the active one too, once past
    # retention.ms: it is rolled first), so its log starts where it ends, and stays there.
    until(f"{RETAINED}'s records deleted", lambda: _earliest(bootstrap, RETAINED) == RECORDS,
          timeout_s=90)
    until(f"{COMPACTED} compacted", lambda: len(_read_all(bootstrap, COMPACTED, "lag-reader"))
          < RECORDS, timeout_s=90, every_s=1)
    return {t: _committed(bootstrap, t, g) for t, g in GROUPS.items()}


def _committed(bootstrap: str, topic: str, group: str) -> int:
    c = Consumer(consumer_conf(bootstrap, group))
    try:
        (tp,) = c.committed([TopicPartition(topic, 0)], timeout=30)
        return int(tp.offset)
    finally:
        c.close()


def test_lost_records_and_lag_equal_what_kafka_s_tools_print(
        spark: SparkSession, broker: Broker, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap_servers
    committed = _set_up(bootstrap)
    assert committed == {RETAINED: 10, COMPACTED: 50, TXN: committed[TXN]}
    events, samples = str(tmp_path / "events"), str(tmp_path / "samples")
    opts = IngestOptions(events=events, bootstrap_servers=bootstrap,
                         checkpoint=str(tmp_path / "ingest-ckpt"))
    sampler = EndOffsetSampler(spark, bootstrap, {}, samples, interval_ms=None)
    sampler.add_topics(list(GROUPS))
    tool = {(r.group, r.topic): r for r in parse_describe(describe_consumer_groups(broker))
            if r.group in GROUPS.values()}
    starts = {}
    for line in kafka_tool(broker, GET_OFFSETS, "--topic", "|".join(GROUPS), "--time",
                           "-2").split():
        name, partition, offset = line.rsplit(":", 2)
        assert partition == "0"
        starts[name] = int(offset)
    assert set(starts) == set(GROUPS)
    for _ in range(2):
        assert sampler.sample_once().error is None
        time.sleep(1.1)
    # A commit after the samples: the replay's watermark passes them.
    _commit(bootstrap, RETAINED, "lag-clock", 1)
    time.sleep(2.5)
    _commit(bootstrap, RETAINED, "lag-clock", 2)
    run_ingest(spark, opts)
    warehouse = replay(spark, events, tmp_path, end_offsets=samples)
    rows = spark.read.format("delta").load(str(warehouse / "partition_lag")).where(
        F.col("group_id").isin(list(GROUPS.values())))
    newest = rows.groupBy("group_id").agg(F.max("sampled_at").alias("sampled_at"))
    got = {r.topic: r for r in rows.join(newest, ["group_id", "sampled_at"]).collect()}
    assert set(got) == set(GROUPS)
    for topic, group in GROUPS.items():
        r, cli = got[topic], tool[(group, topic)]
        assert (r.committed_offset, r.log_end_offset, r.lag) == (cli.current, cli.end,
                                                                 cli.lag), topic
        assert r.log_start_offset == starts[topic], topic
        assert r.lost_records == max(0, starts[topic] - r.committed_offset), topic
    lost = got[RETAINED]
    assert (lost.lag, lost.lost_records, lost.status, lost.rule) == (
        RECORDS - 10, RECORDS - 10, "LOST", "RECORDS_LOST")
    assert got[COMPACTED].lost_records == 0 and got[COMPACTED].lag == RECORDS + 1 - 50
    assert got[TXN].log_end_offset == 11  # ten records and the commit marker
    group_lag = spark.read.format("delta").load(str(warehouse / "group_lag")).where(
        F.col("group_id") == GROUPS[RETAINED]).orderBy(F.desc("sampled_at")).first()
    assert group_lag is not None
    assert (group_lag.lost_records, group_lag.status, group_lag.worst_status) == (
        RECORDS - 10, "ERR", "LOST")
    assert group_lag.lost_since is not None
