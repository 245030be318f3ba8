"""The lag tables through Spark: the backfill's equal the oracle's (the rules computed the slow,
obvious way in `tests/lag/oracle.py`), a stream that continues a backfill writes what one
backfill of everything writes, and a sample arriving after the watermark passed it is still
used, once. (A stream one file a batch, killed and restarted, is held to the oracle too: the
kill test of tests/spark/test_replay_guarantees.py runs with lag.)"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.errors import UsageError
from pipeline.fold import Event
from pipeline.generator import LogSpec, end_offset_samples, generate, last_event_ms
from pipeline.lag import LagConfig
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.fold.handoff import read_manifest
from pipeline.spark.lag.lagflow import LagOptions
from pipeline.spark.lag.samples import CHANGE_FEED, samples_schema, write_samples
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.options import interval_ms
from pipeline.times import ms_text
from schemas.lag import LAG_KEYS, LAG_TABLES
from tests.said import Said, saying
from tests.spark.backends import (
    assert_oracle_agrees,
    assert_same_tables,
    backfill_tables,
    streaming_tables,
    time_ms,
)

pytestmark = pytest.mark.spark
DELAY = "20 seconds"
MALFORMED = [{"topic": None, "partition": 0, "log_end_offset": 5, "sampled_at": 1_700_000_030_000},
             {"topic": "topic-0", "partition": -1, "log_end_offset": 5,
              "sampled_at": 1_700_000_030_000}]


@dataclass
class Lagged:
    events: list[list[Event]]  # the log's three commits
    sample_rounds: list[list[dict[str, Any]]]  # the samples' three
    log: str
    samples: str
    cut: int  # where the stream's final watermark stands: samples before it have rows
    backfilled: dict[str, DataFrame]
    root: Path
    said: list[str]  # what the backfill logged


@pytest.fixture(scope="module")
def lagged(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Lagged:
    """An offsets-topic log (bad rows included) in three commits, its producers' samples in
    three commits plus two malformed ones, and its backfill with lag."""
    root = tmp_path_factory.mktemp("lag")
    spec = LogSpec(groups=10, events=4000, seed=23, log_kind="offsets-topic", bad_rows=0.02)
    events = generate(spec)
    log, samples_path = str(root / "events"), str(root / "samples")
    size = -(-len(events) // 3)
    commits = [events[i:i + size] for i in range(0, len(events), size)]
    for i, chunk in enumerate(commits):
        write_event_log(spark, chunk, log, mode="overwrite" if i == 0 else "append")
    samples = end_offset_samples(spec, last_event_ms(events))
    third = len(samples) // 3
    rounds = [samples[:third], samples[third:2 * third] + MALFORMED, samples[2 * third:]]
    for chunk in rounds:
        write_samples(spark, chunk, samples_path)
    cut = last_event_ms(events) - interval_ms(DELAY)
    said, logger = Said(), logging.getLogger("backfill")
    level = logger.level
    logger.addHandler(said)
    logger.setLevel(logging.INFO)
    try:
        backfilled = backfill_tables(spark, log, root / "backfill", delay=DELAY,
                                     lag=LagOptions(samples_path))
    finally:
        logger.removeHandler(said)
        logger.setLevel(level)
    return Lagged(commits, rounds, log, samples_path, cut, backfilled, root, said.lines)



def test_the_backfill_writes_what_the_rules_say_for_every_sample_before_the_watermark(
        spark: SparkSession, lagged: Lagged) -> None:
    parts = assert_oracle_agrees(spark, lagged.root / "backfill" / "warehouse", lagged.samples,
                                 lagged.cut, LagConfig())
    statuses = Counter((r["offset_status"], r["status"]) for r in parts)
    assert statuses[("COMMITTED", "OK")] > 0 and statuses[("COMMITTED", "WARN")] > 0
    assert {r["lag_ms_basis"] for r in parts} >= {"CAUGHT_UP", "INTERPOLATED"}
    assert all(r["t"] < lagged.cut for r in parts)
    rejected = lagged.backfilled["rejected_samples"].select("reason").collect()
    assert sorted(r[0] for r in rejected) == ["MALFORMED: partition must not be negative",
                                             "MALFORMED: topic is null"]
    causes = {r[0] for r in lagged.backfilled["group_lag"].select("cause").collect()}
    assert "REBALANCE" in causes


def test_the_backfill_says_in_one_line_which_samples_wait_for_the_watermark(
        spark: SparkSession, lagged: Lagged) -> None:
    held = spark.read.format("delta").load(str(lagged.root / "backfill" / "warehouse"
                                               / "_lag_pending"))
    count = held.count()
    assert count > 0  # the samples of the log's last DELAY
    assert held.where(F.unix_millis("sampled_at") < lagged.cut).count() == 0
    said = [line for line in lagged.said if "wait in _lag_pending" in line]
    assert len(said) == 1, lagged.said
    assert said[0].startswith(f"{count} end-offset samples"), said
    assert f"--watermark-delay {DELAY}" in said[0] and ms_text(lagged.cut) in said[0], said


def _keys(table: DataFrame, name: str) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(r) for r in table.select(*LAG_KEYS[name]).collect())


def test_a_stream_continues_a_backfills_lag_and_takes_a_late_sample_once(
        spark: SparkSession, tmp_path: Path, lagged: Lagged) -> None:
    """The backfill reads the log's first commit and the samples' first (a table made without
    Delta's change data feed, as a user's may be: the backfill turns it on); the stream
    takes the rest from there on a new checkpoint (the backfill's pending samples first, the
    rest from the feed): together the same lag as one backfill of everything. Then a sample
    taken long ago arrives: the next run writes its rows at once, and a run after that
    nothing more. The checkpoint, started with the samples, refuses a run without them."""
    warehouse = tmp_path / "warehouse"
    first, samples = str(tmp_path / "events"), str(tmp_path / "samples")
    write_event_log(spark, lagged.events[0], first)
    create_table(spark, samples, samples_schema())  # no change data feed
    write_samples(spark, lagged.sample_rounds[0], samples)
    assert not _change_feed(spark, samples)
    backfill_tables(spark, first, tmp_path, delay=DELAY, lag=LagOptions(samples))
    assert _change_feed(spark, samples)
    manifest = read_manifest(spark, str(warehouse))
    assert manifest is not None and manifest.samples_version is not None
    for chunk, sampled in zip(lagged.events[1:], lagged.sample_rounds[1:], strict=True):
        write_event_log(spark, chunk, first, mode="append")
        write_samples(spark, sampled, samples)
    with saying("replay") as said:
        streamed = streaming_tables(spark, first, tmp_path, delay=DELAY, lag=LagOptions(samples))
    assert_same_tables(streamed, lagged.backfilled, LAG_TABLES)
    # The samples of the log's last DELAY wait, and the run says so in one line.
    held = spark.read.format("delta").load(str(warehouse / "_lag_pending")).count()
    waiting = [line for line in said.lines if "wait in _lag_pending" in line]
    assert held > 0 and len(waiting) == 1, said.lines
    assert waiting[0].startswith(f"{held} end-offset samples"), waiting
    assert ms_text(lagged.cut) in waiting[0] and "records past them" in waiting[0], waiting

    old = streamed["partition_lag"].where(F.col("offset_status") == "COMMITTED").orderBy(
        "sampled_at").first()
    assert old is not None
    late = {"topic": old["topic"], "partition": old["partition"],
            "log_end_offset": old["log_end_offset"] + 1,
            "sampled_at": time_ms(old["sampled_at"]) + 1, "source": "late"}
    write_samples(spark, [late], samples)
    again = streaming_tables(spark, first, tmp_path, delay=DELAY, lag=LagOptions(samples))
    at = F.col("sampled_at") == F.timestamp_millis(F.lit(late["sampled_at"]))
    taken = again["partition_lag"].where(at).collect()
    assert taken and {r["log_end_offset"] for r in taken} == {late["log_end_offset"]}
    counted = {name: _keys(again[name], name) for name in ("partition_lag", "group_lag")}
    assert all(n == 1 for keys in counted.values() for n in keys.values())
    streaming_tables(spark, first, tmp_path, delay=DELAY, lag=LagOptions(samples))
    assert {name: _keys(again[name], name) for name in counted} == counted
    with pytest.raises(UsageError, match="was started with --end-offsets"):
        streaming_tables(spark, first, tmp_path, delay=DELAY)


def _change_feed(spark: SparkSession, path: str) -> bool:
    properties = DeltaTable.forPath(spark, path).detail().first()["properties"]
    return properties.get(CHANGE_FEED) == "true"
