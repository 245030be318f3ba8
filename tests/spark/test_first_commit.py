"""A process killed inside a table's first commit leaves a `_delta_log` with no version (an
empty temporary file, an empty `_staged_commits`): every kind of table the jobs create is
made again from there, and the job's tables equal a clean run's. A folder holding a version,
or files that are not a table's, is never touched; what cannot be made is one line naming
the folder."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from pipeline.decode.encode import encode_record
from pipeline.errors import UsageError
from pipeline.fold import Event
from pipeline.generator import LogSpec, end_offset_samples, generate, last_event_ms
from pipeline.lag import LagConfig
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.ingest.ingest import IngestOptions, run_ingest
from pipeline.spark.lag.lagflow import LagOptions
from pipeline.spark.lag.samples import samples_schema, write_samples
from pipeline.spark.stream.replay import ReplayOptions, run_replay
from pipeline.spark.tables.creation import create_table, forget_uncreated, uncreated
from pipeline.spark.tables.options import interval_ms
from tests.jobs.jobs import job_file, load_job
from tests.spark.backends import CONFIG, assert_oracle_agrees, assert_same_tables, pure_tables, read_tables
from tests.spark.test_job_errors import fails

pytestmark = pytest.mark.spark

SPEC = LogSpec(groups=4, events=400, seed=34, log_kind="offsets-topic")
DELAY = "10 seconds"
PLANTED = "-planted"  # in the name of a temporary file this test left, not a job
# One of each kind a replay creates: an output table, a history table, the pending samples,
# the hand-off, a lag table.
REPLAY_KINDS = ("group_state", "offset_history", "_lag_pending", "_backfill_state",
                "partition_lag")


def left_by_kill(folder: Path, data: bool = False) -> Path:
    """The folder as a SIGKILL inside Delta's first commit leaves it: `_delta_log/` with an
    empty `_staged_commits/` and an empty temporary file of version 0; with `data`, a data
    file the commit would have added."""
    log = folder / "_delta_log"
    (log / "_staged_commits").mkdir(parents=True)
    (log / f".00000000000000000000.json.{uuid.uuid4()}{PLANTED}.tmp").touch()
    if data:
        (folder / f"part-00000-{uuid.uuid4()}-c000.snappy.parquet").write_bytes(b"PAR1")
    return folder


@pytest.fixture(scope="module")
def log(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[list[Event], str, str]:
    root = tmp_path_factory.mktemp("first-commit")
    events = generate(SPEC)
    path, samples = str(root / "events"), str(root / "samples")
    write_event_log(spark, events, path, commits=2)
    write_samples(spark, end_offset_samples(SPEC, last_event_ms(events)), samples)
    return events, path, samples


def replay(spark: SparkSession, log: tuple[list[Event], str, str], root: Path) -> None:
    _, events, samples = log
    run_replay(spark, ReplayOptions(events=events, warehouse=str(root / "warehouse"),
                                    checkpoint=str(root / "checkpoint"), database=None,
                                    watermark_delay=DELAY, config=CONFIG,
                                    lag=LagOptions(samples)))


def assert_clean(spark: SparkSession, log: tuple[list[Event], str, str], warehouse: Path
                 ) -> None:
    """The warehouse holds what a clean run writes: the pure fold's tables and the lag
    oracle's rows, up to the final watermark."""
    events, _, samples = log
    cut = last_event_ms(events) - interval_ms(DELAY)
    assert_same_tables(read_tables(spark, warehouse), pure_tables(spark, events, watermark=cut))
    assert len(assert_oracle_agrees(spark, warehouse, samples, cut, LagConfig())) > 10


def test_a_folder_is_uncreated_only_with_an_unversioned_log_and_nothing_foreign(
        spark: SparkSession, tmp_path: Path) -> None:
    assert uncreated(spark, str(left_by_kill(tmp_path / "bare")))
    assert uncreated(spark, str(left_by_kill(tmp_path / "with-data", data=True)))
    assert not uncreated(spark, str(tmp_path / "missing"))
    foreign = left_by_kill(tmp_path / "foreign")
    (foreign / "notes.txt").write_text("mine")
    assert not uncreated(spark, str(foreign))
    assert not forget_uncreated(spark, str(foreign))
    assert (foreign / "notes.txt").read_text() == "mine"
    versioned = tmp_path / "versioned"
    create_table(spark, str(versioned), samples_schema())
    (versioned / "_delta_log" / ".00000000000000000001.json.x.tmp").touch()
    assert not uncreated(spark, str(versioned))
    staged = left_by_kill(tmp_path / "staged")  # a staged commit may be a version: not ours
    (staged / "_delta_log" / "_staged_commits" / f"00000000000000000000.{uuid.uuid4()}.json").touch()
    assert not forget_uncreated(spark, str(staged))
    assert len(list((staged / "_delta_log" / "_staged_commits").iterdir())) == 1


def test_a_table_left_unfinished_is_created_again_and_a_versioned_one_is_kept(
        spark: SparkSession, tmp_path: Path) -> None:
    path = str(left_by_kill(tmp_path / "t", data=True))
    assert create_table(spark, path, samples_schema(), {"delta.appendOnly": "true"})
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
    assert detail is not None and detail["properties"]["delta.appendOnly"] == "true"
    assert not create_table(spark, path, samples_schema())
    assert spark.sql(f"DESCRIBE HISTORY delta.`{path}`").count() == 1


def test_a_folder_that_is_no_table_is_one_line_naming_it(
        spark: SparkSession, tmp_path: Path, log: tuple[list[Event], str, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    warehouse = tmp_path / "warehouse"
    (warehouse / "group_state").mkdir(parents=True)
    (warehouse / "group_state" / "data.csv").write_text("not a table\n")
    with pytest.raises(UsageError, match="group_state"):
        create_table(spark, str(warehouse / "group_state"), samples_schema())
    _, events, _ = log
    line = fails("replay", ["--events", events, "--warehouse", str(warehouse),
                            "--checkpoint", str(tmp_path / "cp"), "--database", ""],
                 spark, capsys)
    assert f"{warehouse}/group_state" in line and "move its files away" in line, line
    assert (warehouse / "group_state" / "data.csv").exists()


def test_the_generator_and_the_samples_writer_create_again_a_log_left_unfinished(
        spark: SparkSession, tmp_path: Path, log: tuple[list[Event], str, str]) -> None:
    events, clean_events, clean_samples = log
    path = str(left_by_kill(tmp_path / "events", data=True))
    write_event_log(spark, events, path, commits=2)
    samples = str(left_by_kill(tmp_path / "samples"))
    write_samples(spark, end_offset_samples(SPEC, last_event_ms(events)), samples)
    for mine, theirs in ((path, clean_events), (samples, clean_samples)):
        got = spark.read.format("delta").load(mine)
        want = spark.read.format("delta").load(theirs)
        assert got.count() == want.count() > 0
        assert got.exceptAll(want).count() == 0 and want.exceptAll(got).count() == 0


def test_the_ingest_creates_again_an_event_log_left_unfinished(
        spark: SparkSession, tmp_path: Path, log: tuple[list[Event], str, str]) -> None:
    events = log[0]
    records = [encode_record(e.to_row()) for e in events]
    dump = tmp_path / "raw.parquet"
    pq.write_table(pa.table({
        "key": pa.array([k for k, _ in records], pa.binary()),
        "value": pa.array([v for _, v in records], pa.binary()),
        "partition": pa.array([e.log_partition for e in events], pa.int32()),
        "offset": pa.array([e.log_offset for e in events], pa.int64()),
        "timestamp": pa.array([e.event_time * 1000 for e in events], pa.timestamp("us", "UTC")),
    }), dump)
    clean, killed = str(tmp_path / "clean"), str(left_by_kill(tmp_path / "killed"))
    for target in (clean, killed):
        run_ingest(spark, IngestOptions(events=target, raw=str(dump)))
    got = spark.read.format("delta").load(killed)
    want = spark.read.format("delta").load(clean)
    assert got.count() == want.count() == len(events)
    assert got.exceptAll(want).count() == 0


def _mid_first_commit(warehouse: Path) -> list[str]:
    """The tables whose first commit a replay has under way: a `_delta_log` with no version
    yet (and none this test planted)."""
    found = []
    for log_dir in warehouse.glob("*/_delta_log"):
        with contextlib.suppress(FileNotFoundError):
            names = [p.name for p in log_dir.iterdir()]
            if not any(n.endswith(".json") and not n.startswith(".") or PLANTED in n
                       for n in names):
                found.append(log_dir.parent.name)
    return found


def _versioned(warehouse: Path) -> int:
    return sum(1 for _ in warehouse.glob("*/_delta_log/00000000000000000000.json"))


def test_a_replay_killed_while_it_starts_ends_as_a_clean_run(
        spark: SparkSession, tmp_path: Path, log: tuple[list[Event], str, str]) -> None:
    """One of each kind of table a replay creates is left first as a kill leaves it. Then a
    real replay (--end-offsets) is SIGKILLed before its first batch: inside a first commit
    once another table was made (else once 8 are made); restarted on the same checkpoint and
    warehouse, it ends as a clean run ends. (A kill inside the very first table's first
    commit leaves what the planted tables are.)"""
    _, events, samples = log
    warehouse, checkpoint = tmp_path / "warehouse", tmp_path / "checkpoint"
    for table in REPLAY_KINDS:
        left_by_kill(warehouse / table)
    cmd = [sys.executable, str(job_file("replay")), "--events", events,
           "--warehouse", str(warehouse), "--checkpoint", str(checkpoint), "--database", "",
           "--watermark-delay", DELAY, "--profile", "test", "--end-offsets", samples]
    victim = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while victim.poll() is None and not (checkpoint / "commits" / "0").exists():
            versioned = _versioned(warehouse)
            if versioned and _mid_first_commit(warehouse) or versioned >= 8:
                os.kill(victim.pid, signal.SIGKILL)
                break
            time.sleep(0.002)
        assert victim.wait() == -signal.SIGKILL, (
            f"the replay was not killed before its first batch: {victim.stderr!r}")
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    replay(spark, log, tmp_path)  # restarted, to its end
    assert_clean(spark, log, warehouse)
    assert not _mid_first_commit(warehouse), "a table left unmade"
    for table in REPLAY_KINDS:
        assert not uncreated(spark, str(warehouse / table)), table


def test_a_start_up_error_is_one_line_naming_where_and_debug_raises_it(
        spark: SparkSession, tmp_path: Path, log: tuple[list[Event], str, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """A checkpoint that is a file: Spark's many lines become one naming the folder and what
    to do; with --debug the exception itself reaches the caller."""
    _, events, _ = log
    checkpoint = tmp_path / "checkpoint"
    checkpoint.write_text("not a folder\n")
    argv = ["--events", events, "--warehouse", str(tmp_path / "warehouse"),
            "--checkpoint", str(checkpoint), "--database", ""]
    line = fails("replay", argv, spark, capsys)
    assert str(checkpoint) in line and "new --checkpoint" in line, line
    with pytest.raises(UsageError) as raised:
        load_job("replay").main([*argv, "--debug"], spark=spark)
    assert raised.value.__cause__ is not None  # Spark's own error, traceback and all


def _count_rows(key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
                ) -> Iterator[pd.DataFrame]:
    total = sum(len(f) for f in frames)
    state.update((total,))
    yield pd.DataFrame({"group_id": [key[0]], "rows": [total]})


def test_a_checkpoint_keyed_by_group_is_refused_in_one_line_before_spark_fails_on_it(
        spark: SparkSession, tmp_path: Path, log: tuple[list[Event], str, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """Releases before the buckets kept the fold's state keyed by group_id: Spark's operator
    writing such a checkpoint over the same log (as they did) leaves a state the replay cannot
    continue, and it says so in one line instead of failing its first batch with Spark's
    STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE and a plan."""
    _, events, _ = log
    checkpoint = tmp_path / "checkpoint"
    keyed = (spark.readStream.format("delta").load(events).groupBy("group_id")
             .applyInPandasWithState(_count_rows, "group_id string, rows long", "rows long",
                                     "append", GroupStateTimeout.NoTimeout))
    query = (keyed.writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    argv = ["--events", events, "--warehouse", str(tmp_path / "warehouse"),
            "--checkpoint", str(checkpoint), "--database", ""]
    line = fails("replay", argv, spark, capsys)
    assert "keyed by 'group_id'" in line and str(checkpoint) in line, line
    assert "new --checkpoint" in line, line
    assert not (tmp_path / "warehouse" / "group_state").exists()  # refused before any write
