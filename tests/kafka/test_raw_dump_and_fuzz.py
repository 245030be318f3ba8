"""The archive path (`jobs/ingest.py --raw`) gives what the live path gives, and bytes no decoder
could read (random, bit-flipped, truncated real records) end in rejected_events, never in a
dead job."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chispa import assert_df_equality
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.decode import DecodeError, decode_record
from pipeline.kafka.broker import Broker
from pipeline.spark.ingest.ingest import IngestOptions, run_ingest
from pipeline.spark.tables.catalog import register_views
from schemas import OUTPUT_TABLES
from schemas.events import MALFORMED_RECORD
from tests.jobs.jobs import load_job
from tests.kafka.conftest import Replayed, before, replay, topic_now
from tests.kafka.test_real_broker import KIP848
from tests.spark.backends import assert_same_tables, read_tables

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def _sorted(df: DataFrame) -> DataFrame:
    return df.orderBy(*df.columns[:8])


@pytest.fixture(scope="session")
def dump(spark: SparkSession, broker: Broker, live: Replayed, session_dir: Path) -> Path:
    """The topic exported as an archive would hold it: raw records as Parquet (timestamps as
    epoch milliseconds, to exercise that form too), up to where the live ingest stopped."""
    path = session_dir / "dump"
    topic = topic_now(spark, broker).where(before(live.ingested))
    topic.select("key", "value", "partition", "offset",
                 F.unix_millis("timestamp").alias("timestamp")).write.parquet(str(path))
    return path


def test_a_raw_dump_through_the_job_gives_the_same_log_and_tables(
        spark: SparkSession, live: Replayed, dump: Path, session_dir: Path) -> None:
    root = session_dir / "raw"
    events = str(root / "events")
    topic_map = session_dir / "topic-ids.csv"  # the dumped cluster's topic ids, as a map file
    topic_map.write_text("topic_id,topic_name\n"
                         + "".join(f"{i},{n}\n" for i, n in live.topics.items()))
    # The job's own entry point, its command line parsed, in this session (a process of its
    # own, a JVM's start and warm-up, adds nothing tests/jobs/test_cli.py does not check).
    assert load_job("ingest").main(["--raw", str(dump), "--events", events, "--warehouse",
                                    str(root / "warehouse"), "--topic-map", str(topic_map)],
                                   spark=spark) in (None, 0)
    # Again: every position is present already, so nothing is added.
    run_ingest(spark, IngestOptions(events=events, raw=str(dump), warehouse=str(root / "warehouse"),
                                    topic_map=str(topic_map)))
    live_log = spark.read.format("delta").load(live.events)
    raw_log = spark.read.format("delta").load(events)
    assert_df_equality(_sorted(raw_log), _sorted(live_log), ignore_nullable=True)
    warehouse = replay(spark, events, root, dumped=True)
    assert_same_tables(read_tables(spark, warehouse),
                       {table: live.table(spark, table) for table in OUTPUT_TABLES})
    topics = spark.read.format("delta").load(str(warehouse / "topics")).collect()
    assert {r["topic_id"]: (r["topic_name"], r["source"]) for r in topics} == \
        {i: (n, str(topic_map)) for i, n in live.topics.items()}
    # The map names the KIP-848 group's partitions as DescribeGroups does.
    register_views(spark, str(warehouse))
    for group in KIP848:
        members = spark.table("group_members").where(F.col("group_id") == group).collect()
        assert {m["member_id"]: tuple(sorted((a["topic"], a["partition"]) for a in m["assignment"]))
                for m in members} == {m.member_id: m.assignment for m in live.groups[group][1]}


def _mutants(real: list[tuple[bytes, bytes | None]], n: int, seed: int
             ) -> list[tuple[bytes | None, bytes | None]]:
    rng = random.Random(seed)

    def flip(b: bytes) -> bytes:
        if not b:
            return b
        out = bytearray(b)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(out))
            out[i] ^= 1 << rng.randrange(8)
        return bytes(out)

    def cut(b: bytes) -> bytes:
        return b[:rng.randrange(len(b))] if b else b

    out: list[tuple[bytes | None, bytes | None]] = [(None, b"\x00\x03"), (b"", None), (b"\x00", b"")]
    while len(out) < n:
        key, value = rng.choice(real)
        kind = rng.randrange(7)
        if kind == 0:
            out.append((flip(key), value))
        elif kind in (1, 2) and value:
            out.append((key, flip(value) if kind == 1 else cut(value)))
        elif kind == 3:
            out.append((cut(key), value))
        elif kind == 4 and value:
            out.append((key, value + rng.randbytes(rng.randint(1, 9))))
        elif kind == 5:  # a known or unknown record type with a random body
            out.append((rng.randrange(30).to_bytes(2, "big") + rng.randbytes(rng.randint(0, 30)),
                        rng.randbytes(rng.randint(0, 60))))
        else:
            out.append((rng.randbytes(rng.randint(0, 40)), rng.randbytes(rng.randint(0, 80))))
    return out


def _decodes(key: bytes | None, value: bytes | None) -> bool:
    try:
        decode_record(key, value)
    except DecodeError:
        return False
    return True


def test_random_and_mutated_records_end_in_rejected_events_and_the_jobs_go_on(
        spark: SparkSession, dump: Path, session_dir: Path) -> None:
    real = [(r["key"], r["value"]) for r in spark.read.parquet(str(dump)).collect()]
    mutants = _mutants(real, 400, seed=848)
    path = session_dir / "fuzz-dump.parquet"
    pq.write_table(pa.table({
        "key": pa.array(mutants[i][0] for i in range(len(mutants))),
        "value": pa.array(mutants[i][1] for i in range(len(mutants))),
        "partition": [0] * len(mutants),  # one partition: no group's rows arrive out of order
        "offset": list(range(len(mutants))),
        # offset 5 claims a time past 2262, which the fold's pandas frames cannot hold
        "timestamp": [2**62 if i == 5 else 1_790_000_000_000 + i for i in range(len(mutants))],
    }, schema=pa.schema([("key", pa.binary()), ("value", pa.binary()), ("partition", pa.int32()),
                         ("offset", pa.int64()), ("timestamp", pa.int64())])), path)
    root = session_dir / "fuzz"
    events = str(root / "events")
    run_ingest(spark, IngestOptions(events=events, raw=str(path)))
    log = spark.read.format("delta").load(events)
    assert log.count() == len(mutants)
    undecodable = {o for o, (k, v) in enumerate(mutants) if not _decodes(k, v)}
    malformed = {r["log_offset"]: r["decode_error"] for r in log.where(
        F.col("event_type") == MALFORMED_RECORD).collect()}
    assert undecodable <= set(malformed)
    assert all(malformed.values())
    # Decodable but not storable: a flipped bit makes a timestamp no timestamp type can hold.
    assert all(" does not fit " in malformed[o] for o in set(malformed) - undecodable)
    assert len(undecodable) > len(mutants) // 4, "the fuzz should mostly break records"

    warehouse = replay(spark, events, root, dumped=True)
    rejected = spark.read.format("delta").load(str(warehouse / "rejected_events"))
    reasons = {r["log_offset"]: r["reason"] for r in rejected.collect()}
    unsupported = {r["log_offset"] for r in log.where(
        F.col("event_type") == "UNSUPPORTED_RECORD").select("log_offset").collect()}
    assert set(malformed) | unsupported <= set(reasons)
    assert all(reasons[o] == f"MALFORMED: {malformed[o]}" for o in malformed)
    unkeyed = "MALFORMED: group_id is null"  # an unknown record type whose key names no group
    assert all(reasons[o].startswith("UNSUPPORTED_RECORD") or reasons[o] == unkeyed
               for o in unsupported)
    assert all(reasons.values())
    assert reasons[5].startswith("MALFORMED: ")
