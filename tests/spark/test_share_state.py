"""`__share_group_state` through the jobs: a dump ingested into the share-state log
(`--raw-share-state`, `--share-state`), replayed by the backfill and by the stream into
share_partition_state as `pipeline.share.state.replay` replays it without Spark, the records
Kafka's shard would not apply in rejected_events, and, with end-offset samples, each share
partition's Kafka 4.2 share lag as of each sample the share-state log's watermark passed in
partition_lag and group_lag; the stream three log files a batch, and continuing a backfill of
the log's first half, ends on the same rows."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from pipeline.decode.share_state import decode_share_state
from pipeline.errors import UsageError
from pipeline.share.state import replay, share_lag, state_of
from pipeline.spark.backfill import BackfillOptions, run_backfill
from pipeline.spark.events.records import decode_one
from pipeline.spark.ingest.ingest import KEY as LOG_KEY
from pipeline.spark.lag.lagflow import LagOptions
from pipeline.spark.stream.maintain import SHARE_WORKING_TABLES, Upkeep
from pipeline.spark.stream.replay import ReplayOptions, run_replay
from tests.spark.sharelog import (
    DELAY,
    DELAY_MS,
    NAMES,
    RAW,
    SAMPLES,
    ingest_share_dumps,
    named,
)

pytestmark = pytest.mark.spark

# What the comparison reads of a share_partition_state row (its times are the records').
STATE = ("group_id", "topic_id", "partition", "log_partition", "log_offset", "change",
         "snapshot_epoch", "state_epoch", "leader_epoch", "start_offset",
         "delivery_complete_count", "in_flight", "available", "acknowledged", "archived")


def _commit_files(log: Path) -> list[list[list[tuple[int, int]]]]:
    """Each commit's files of the Delta table at `log`, in the commit's order: each file's
    (log_partition, log_offset) in the file's order."""
    commits = []
    for entry in sorted((log / "_delta_log").glob("*.json")):
        adds = [json.loads(line)["add"]["path"] for line in entry.read_text().splitlines()
                if "add" in json.loads(line)]
        commits.append([list(zip(*pq.read_table(log / a, columns=list(LOG_KEY)).to_pydict()
                                 .values(), strict=True)) for a in adds])
    return commits


def _expected() -> tuple[list[tuple[Any, ...]], Counter[str]]:
    rows = []
    for key, value, lp, lo, t in RAW:
        rows.append(decode_one(key, value, decode_share_state)
                    | {"log_partition": lp, "log_offset": lo, "event_time": t})
    done = replay(rows)
    return ([tuple(h[c] for c in STATE) + (_batches(h["state_batches"]),) for h in done.history],
            Counter(reason for _, reason in done.rejected))


def _expected_lag() -> tuple[Counter[tuple[Any, ...]], Counter[tuple[Any, ...]]]:
    """The share rows of partition_lag and group_lag, by hand from the pure replay: each
    sample before the watermark (the newest record applied less DELAY), each share
    partition of its topic partition as of its time (the last row by time and position
    at or before it) unless it has none or is DELETED."""
    rows = []
    for key, value, lp, lo, t in RAW:
        rows.append(decode_one(key, value, decode_share_state)
                    | {"log_partition": lp, "log_offset": lo, "event_time": t})
    history = replay(rows).history
    watermark = max(h["event_time"] for h in history) - DELAY_MS
    partitions: Counter[tuple[Any, ...]] = Counter()
    groups: dict[tuple[int, str], list[int | None]] = {}
    for s in SAMPLES:
        if s["sampled_at"] >= watermark:
            continue
        keys = {(h["group_id"], h["topic_id"]) for h in history
                if NAMES[h["topic_id"]] == s["topic"] and h["partition"] == s["partition"]}
        for group, topic_id in sorted(keys):
            before = [h for h in history if (h["group_id"], h["topic_id"], h["partition"])
                      == (group, topic_id, s["partition"]) and h["event_time"] <= s["sampled_at"]]
            if not before:
                continue
            last = max(before, key=lambda h: (h["event_time"], h["log_offset"]))
            if last["change"] == "DELETED":
                continue
            lag = share_lag(s["log_end_offset"], state_of(last))
            lag = None if lag is None else max(0, lag)
            partitions[(s["sampled_at"], group, s["topic"], s["partition"],
                        s["log_end_offset"], last["start_offset"],
                        last["delivery_complete_count"], lag)] += 1
            groups.setdefault((s["sampled_at"], group), []).append(lag)
    summed = Counter((t, g, sum(x for x in lags if x is not None)
                      if any(x is not None for x in lags) else None,
                      max((x for x in lags if x is not None), default=None), len(lags),
                      sum(x is None for x in lags)) for (t, g), lags in groups.items())
    return partitions, summed


def _lag(spark: SparkSession, warehouse: Path
         ) -> tuple[Counter[tuple[Any, ...]], Counter[tuple[Any, ...]]]:
    """The share rows of the lag tables, counted (a sample written twice would show)."""
    def read(table: str) -> Any:
        return spark.read.format("delta").load(str(warehouse / table)).filter(
            "group_type = 'share'").collect()
    partitions = read("partition_lag")
    assert {r["offset_status"] for r in partitions} <= {"SHARE_STATE"}
    assert all(r["committed_offset"] is None and r["status"] is None for r in partitions)
    groups = read("group_lag")
    assert {(r["status"], r["complete"]) for r in groups} <= {("NOTFOUND", 0.0)}
    ms = 1_000  # Spark's timestamps back to epoch ms
    return (Counter((int(r["sampled_at"].timestamp() * ms), r["group_id"], r["topic"],
                     r["partition"], r["log_end_offset"], r["start_offset"],
                     r["delivery_complete_count"], r["lag"]) for r in partitions),
            Counter((int(r["sampled_at"].timestamp() * ms), r["group_id"], r["total_lag"],
                     r["max_lag"], r["partitions"], r["partitions_unknown"]) for r in groups))


def _batches(batches: list[Any] | None) -> tuple[tuple[int, ...], ...] | None:
    if batches is None:
        return None
    return tuple(tuple(b[f] for f in ("first_offset", "last_offset", "delivery_state",
                                      "delivery_count")) for b in batches)


def _history(spark: SparkSession, warehouse: Path) -> list[tuple[Any, ...]]:
    rows = spark.read.format("delta").load(str(warehouse / "share_partition_state")).collect()
    got = [tuple(r[c] for c in STATE) + (_batches(r["state_batches"]),) for r in rows]
    return sorted(got, key=lambda r: (r[3], r[4]))


def _refused(spark: SparkSession, warehouse: Path) -> Counter[str]:
    rows = (spark.read.format("delta").load(str(warehouse / "rejected_events"))
            .filter("log_topic = '__share_group_state'").collect())
    assert all(r["raw_key"] is not None and r["event_time"] is not None for r in rows)
    return Counter(r["reason"] for r in rows)


def test_the_ingest_writes_each_log_partition_of_a_commit_in_one_file_in_order(
        share_base: Path) -> None:
    """What a stream that splits a commit between micro-batches needs (the next test's, one
    file a batch): no partition's later record in an earlier file."""
    commits = [files for files in _commit_files(share_base / "share-log") if files]
    assert len(commits) == 4 and max(len(files) for files in commits) > 1  # one a dump
    for files in commits:
        partitions = [{p for p, _ in rows} for rows in files]
        assert sum(len(p) for p in partitions) == len(set().union(*partitions))
        assert all(rows == sorted(rows) for rows in files)


def test_the_backfill_replays_the_log_as_the_share_coordinator_does(
        spark: SparkSession, share_backfilled: Path) -> None:
    history, refused = _expected()
    assert len(history) > 150 and sum(refused.values()) >= 3
    warehouse = share_backfilled
    assert _history(spark, warehouse) == sorted(history, key=lambda r: (r[3], r[4]))
    assert _refused(spark, warehouse) == refused
    last = spark.read.format("delta").load(str(warehouse / "_share_state")).collect()
    keys = {r[:3] for r in history}
    assert len(last) == len(keys)  # one row a key: its newest
    newest = {r[:3]: r for r in sorted(history, key=lambda r: (r[3], r[4]))}
    assert {tuple(r[c] for c in STATE) + (_batches(r["state_batches"]),) for r in last} \
        == set(newest.values())
    partitions, groups = _expected_lag()
    assert len(partitions) > 100 and any(r[-1] is None for r in partitions)  # some unknown
    assert max(partitions.values()) == 1  # a row per sample and share partition
    assert _lag(spark, warehouse) == (partitions, groups)


def test_the_stream_three_files_a_batch_and_after_a_backfill_writes_the_same_rows(
        spark: SparkSession, share_base: Path) -> None:
    history, refused = _expected()
    want = sorted(history, key=lambda r: (r[3], r[4]))
    streamed = share_base / "streamed"
    lag = _expected_lag()
    run_replay(spark, ReplayOptions(events=str(share_base / "events"), warehouse=str(streamed),
                                    checkpoint=str(share_base / "ck-streamed"), database=None,
                                    max_files_per_trigger=3,
                                    share_state=str(share_base / "share-log"),
                                    lag=named(spark, streamed), watermark_delay=DELAY,
                                    upkeep=Upkeep(every=3)))
    assert _history(spark, streamed) == want
    assert _refused(spark, streamed) == refused
    assert _lag(spark, streamed) == lag
    for own in SHARE_WORKING_TABLES:  # maintained by the share query, after its own batches
        ops = [r["operation"] for r in
               spark.sql(f"DESCRIBE HISTORY delta.`{streamed / own}`").collect()]
        assert "VACUUM END" in ops, (own, ops)
    # A backfill of the log's first two dumps, then a stream once the rest arrived.
    half = share_base / "share-log-half"
    ingest_share_dumps(spark, share_base, [0, 1], half)
    handed = share_base / "handed"
    run_backfill(spark, BackfillOptions(events=str(share_base / "events"), warehouse=str(handed),
                                        database=None, share_state=str(half),
                                        lag=named(spark, handed), watermark_delay=DELAY))
    early = _lag(spark, handed)
    assert early[0] and early[0] < lag[0] and early[0] != lag[0]  # some rows, the rest wait
    ingest_share_dumps(spark, share_base, [2, 3], half)
    run_replay(spark, ReplayOptions(events=str(share_base / "events"), warehouse=str(handed),
                                    checkpoint=str(share_base / "ck-handed"), database=None,
                                    share_state=str(half), lag=LagOptions(str(share_base / "samples")),
                                    watermark_delay=DELAY))
    assert _history(spark, handed) == want
    assert _refused(spark, handed) == refused
    assert _lag(spark, handed) == lag


def test_a_missing_share_state_log_is_a_one_line_error(spark: SparkSession, share_base: Path) -> None:
    with pytest.raises(UsageError, match="--share-state .*no Delta table"):
        run_backfill(spark, BackfillOptions(events=str(share_base / "events"),
                                            warehouse=str(share_base / "none"), database=None,
                                            share_state=str(share_base / "nowhere")))
