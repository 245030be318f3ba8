"""What the streaming job promises: exactly once across a killed process, the same tables
whatever the micro-batches, and bad input that never stops it."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipeline.fold import Event
from pipeline.generator import LogSpec, end_offset_samples, generate, last_event_ms
from pipeline.lag import LagConfig
from pipeline.spark.backfill import folded_history
from pipeline.spark.events.eventlog import select_events, write_event_log
from pipeline.spark.events.packing import packed_events
from pipeline.spark.fold.wire import table_rows
from pipeline.spark.lag.lagflow import LagOptions
from pipeline.spark.lag.samples import write_samples
from pipeline.spark.stream.sinks import BatchWriter
from pipeline.spark.tables.options import interval_ms
from pipeline.spark.tables.warehouse import ensure_tables
from schemas import OUTPUT_TABLES
from tests.jobs.jobs import job_file
from tests.spark.backends import (
    CONFIG,
    assert_oracle_agrees,
    assert_same_tables,
    pure_tables,
    streaming_tables,
    table_versions,
)

pytestmark = pytest.mark.spark


SPEC = LogSpec(groups=10, events=3000, seed=23, bad_rows=0.02)


@pytest.fixture(scope="module")
def log(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[Event]]:
    events = generate(SPEC)
    path = str(tmp_path_factory.mktemp("log") / "events")
    write_event_log(spark, events, path, commits=6)
    return path, events


# Micro-batches cut anywhere give the same tables: one batch for the whole log is
# test_backends.py's stream; one file a batch test_poison.py's; the killed stream below runs
# one file a batch until the kill, then, restarted, the batch in flight again (one file)
# and the rest of the six in one.
def _in_flight(checkpoint: Path) -> bool:
    """A batch has been planned (offsets/N) but not committed (commits/N), after one did: its
    restart begins from a committed state store and tables that hold a batch already."""
    def ids(name: str) -> set[str]:
        d = checkpoint / name
        return {p.name for p in d.iterdir() if p.name.isdigit()} if d.exists() else set()
    done = ids("commits")
    return len(done) >= 1 and bool(ids("offsets") - done)


def test_killed_mid_batch_and_restarted_it_writes_every_row_exactly_once(
        spark: SparkSession, tmp_path: Path, log: tuple[str, list[Event]]) -> None:
    """With the lag tables too: the samples arrive in three commits beside the log's six, and
    a delay short enough for most of them to be passed by the watermark."""
    path, events = log
    checkpoint, warehouse = tmp_path / "checkpoint", tmp_path / "warehouse"
    samples, delay = str(tmp_path / "samples"), "20 seconds"
    taken = end_offset_samples(SPEC, last_event_ms(events))
    for i in range(3):
        write_samples(spark, taken[i::3], samples)
    cmd = [sys.executable, str(job_file("replay")), "--events", path,
           "--warehouse", str(warehouse), "--checkpoint", str(checkpoint), "--database", "",
           "--max-files-per-trigger", "1", "--watermark-delay", delay, "--profile", "test",
           "--end-offsets", samples]
    victim = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while victim.poll() is None and not _in_flight(checkpoint):
            with contextlib.suppress(subprocess.TimeoutExpired):
                victim.wait(timeout=0.2)
        assert victim.poll() is None, "the job finished before it could be killed mid-batch"
        os.kill(victim.pid, signal.SIGKILL)
        assert victim.wait() == -signal.SIGKILL
    finally:
        if victim.poll() is None:
            victim.kill()
    # Same checkpoint, same warehouse.
    resumed = streaming_tables(spark, path, tmp_path, delay=delay, lag=LagOptions(samples))
    cut = last_event_ms(events) - interval_ms(delay)
    assert_same_tables(resumed, pure_tables(spark, events, watermark=cut))
    assert len(assert_oracle_agrees(spark, warehouse, samples, cut, LagConfig())) > 50


def _with_pair(warehouse: str, table: str, version: int) -> bool:
    """Whether the commit `version` of `table` carries a Delta (txnAppId, txnVersion) pair."""
    commit = Path(warehouse, table, "_delta_log", f"{version:020d}.json").read_text()
    return any("txn" in json.loads(line) for line in commit.splitlines())


def test_a_batch_written_again_adds_no_commit_and_a_table_without_marks_keeps_deltas_check(
        spark: SparkSession, tmp_path: Path) -> None:
    log = str(tmp_path / "events")
    write_event_log(spark, generate(LogSpec(groups=3, events=150, seed=5)), log)
    wire = folded_history(packed_events(select_events(spark.read.format("delta").load(log))), CONFIG, None,
                          seed=False).persist()
    warehouse = str(tmp_path / "warehouse")
    ensure_tables(spark, warehouse, None)
    counts = {r["_table"]: r["count"] for r in wire.groupBy("_table").count().collect()}
    filled = [t for t in OUTPUT_TABLES if counts.get(t)]
    assert {"offset_history", "group_state", "committed_offsets"} <= set(filled)

    def versions() -> dict[str, int]:
        return table_versions(spark, Path(warehouse))

    def rows(table: str) -> int:
        return spark.read.format("delta").load(f"{warehouse}/{table}").count()

    # A table written before marks: batch 5 is in it under Delta's own (appId, version).
    (table_rows(wire, "offset_history").write.format("delta").mode("append")
     .option("txnAppId", "app").option("txnVersion", 5).save(f"{warehouse}/offset_history"))
    once = rows("offset_history")
    writer = BatchWriter(warehouse, "app")
    start = versions()
    writer(wire, 5)  # every other table gets its first marked commit; offset_history none
    after = versions()
    assert {t for t in OUTPUT_TABLES if after[t] != start[t]} == set(filled) - {"offset_history"}
    assert rows("offset_history") == once
    # A table made empty and never written cannot hold the batch: no need of Delta's pair,
    # whose check costs a Spark job. Its first commit is a marked one only.
    assert not {t for t in set(filled) - {"offset_history"} if _with_pair(warehouse, t, 1)}
    assert _with_pair(warehouse, "offset_history", 1)
    # The progress line's figures: each table the writer wrote (offset_history too: Delta's
    # pair, not the writer, turned that write into no commit), with its seconds.
    assert set(writer.progress[5].tables) == set(filled)
    assert all(s > 0 for s in writer.progress[5].tables.values())
    assert writer.progress[5].fold_s > 0 and writer.progress[5].write_s > 0
    for batch_id in (5, 4):  # the same batch again, or an older one: no commit anywhere
        writer(wire, batch_id)
        assert versions() == after
        assert writer.progress[batch_id].tables == {}
    writer(wire, 6)
    assert {t for t, v in versions().items() if v != after[t]} == set(filled)
    assert set(writer.progress[6].tables) == set(filled)
    assert rows("offset_history") == 2 * once
    moved = versions()
    writer(wire, 6)  # this writer remembers its marks
    assert versions() == moved
    assert writer.progress[6].tables == {}
    BatchWriter(warehouse, "app")(wire, 6)  # a restarted one reads them from the tables
    assert versions() == moved
    wire.unpersist()


def test_late_out_of_order_and_broken_rows_are_rejected_or_counted_and_the_stream_goes_on(
        spark: SparkSession, tmp_path: Path) -> None:
    events = generate(LogSpec(groups=4, events=800, seed=5, bad_rows=0.03))
    path = str(tmp_path / "events")
    write_event_log(spark, events, path)
    streaming_tables(spark, path, tmp_path)
    group = next(e for e in events if e.group_id and e.event_type == "HEARTBEAT")
    own = [e for e in events if e.group_id == group.group_id and e.position]
    last = max(e.event_time or 0 for e in events)
    later = [
        replace(own[0], log_offset=(own[0].log_offset or 0) + 0),          # far behind: re-delivered
        replace(own[-1], log_offset=(own[-1].log_offset or 0) + 1000,      # new position, old time:
                event_time=last - 3_600_000),                              # behind the watermark
        Event(None, None, None, None, None),                               # nothing at all
        replace(own[-1], log_offset=(own[-1].log_offset or 0) + 1001, event_type="NO_SUCH_TYPE"),
    ]
    write_event_log(spark, later, path, mode="append")
    tables = streaming_tables(spark, path, tmp_path)
    reasons = {r["reason"] for r in tables["rejected_events"].select("reason").collect()}
    assert {"OUT_OF_ORDER", "DUPLICATE", "MALFORMED: group_id is null",
            "MALFORMED: unknown event_type 'NO_SUCH_TYPE'"} <= reasons
    state = tables["group_state"].filter(F.col("group_id") == group.group_id).first()
    assert state is not None
    assert state["late_count"] == 1
    assert state["out_of_order_count"] == 1
    assert state["last_log_offset"] == (own[-1].log_offset or 0) + 1001
