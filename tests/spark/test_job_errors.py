"""A user's mistake, as the jobs answer it: one line on stderr naming the input and what was
expected, exit status 2, no traceback. The event log's schema is refused before a stream or
a backfill starts. Tiny inputs, the suite's one session, each job's own `main(argv, spark)`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from pipeline.errors import UsageError
from pipeline.fold import CoordinatorConfig
from pipeline.generator import LogSpec, generate
from pipeline.spark.events.eventlog import write_event_log
from pipeline.spark.events.validate import check_event_log, check_group, check_partition_count
from pipeline.spark.tables.contract import as_table, mismatch
from pipeline.spark.tables.warehouse import ensure_tables
from pipeline.spark.tables.writes import append
from schemas import WAREHOUSE_TABLES
from tests.jobs.jobs import load_job

KEYS = [("log_partition", T.IntegerType()), ("log_offset", T.LongType()),
        ("event_time", T.TimestampType()), ("group_id", T.StringType()), ("event_type", T.StringType())]


def fails(job: str, argv: list[str], spark: SparkSession,
          capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        load_job(job).main(argv, spark=spark)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def write(spark: SparkSession, path: Path, columns: list[tuple[str, object]],
          row: tuple[object, ...]) -> str:
    schema = T.StructType([T.StructField(n, t) for n, t in columns])  # type: ignore[arg-type]
    spark.createDataFrame([row], schema).write.format("delta").save(str(path))
    return str(path)


@pytest.fixture(scope="module")
def logs(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("logs")
    from datetime import datetime
    at = datetime(2026, 1, 1)
    (root / "plain").mkdir()
    (root / "plain" / "events.csv").write_text("log_partition,log_offset\n")
    good = str(root / "good")
    write_event_log(spark, generate(LogSpec(groups=1, events=20, seed=1)), good)
    three = str(root / "three")  # a cluster whose __consumer_offsets has 3 partitions
    write_event_log(spark, generate(LogSpec(
        groups=6, events=120, seed=1, num_partitions=3,
        config=CoordinatorConfig(offsets_topic_num_partitions=3))), three)
    return {
        "good": good,
        "three": three,
        "plain": str(root / "plain"),
        "missing": str(root / "nowhere"),
        "typed": write(spark, root / "typed",
                       [*KEYS[:1], ("log_offset", T.StringType()), *KEYS[2:],
                        ("partition", T.LongType())],
                       (0, "12x", at, "g", "JOIN", 3)),
        "keyless": write(spark, root / "keyless", [k for k in KEYS if k[0] != "group_id"],
                         (0, 1, at, "JOIN")),
    }


@pytest.fixture(scope="module")
def warehouse(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Every output table, empty: enough to be a warehouse, holding no group."""
    path = str(tmp_path_factory.mktemp("errors") / "warehouse")
    ensure_tables(spark, path, None)
    return path


def test_a_lossless_type_is_taken_and_a_lossy_one_is_named_where_it_is() -> None:
    assert mismatch(T.IntegerType(), T.LongType(), "log_offset") is None
    assert mismatch(T.LongType(), T.IntegerType(), "partition") == (
        "partition", T.LongType(), T.IntegerType())
    member = T.StructType([T.StructField("member_id", T.StringType()),
                         T.StructField("session_timeout_ms", T.IntegerType())])
    wide = T.StructType([T.StructField("member_id", T.StringType()),
                       T.StructField("session_timeout_ms", T.StringType())])
    assert mismatch(T.ArrayType(wide), T.ArrayType(member), "members") == (
        "members[].session_timeout_ms", T.StringType(), T.IntegerType())
    swapped = T.StructType(list(reversed(member.fields)))  # Spark casts structs by position
    assert mismatch(swapped, member, "m") == ("m", swapped, member)


@pytest.mark.spark
def test_a_log_of_the_contracts_types_passes(spark: SparkSession, logs: dict[str, str]) -> None:
    check_event_log(spark, logs["good"])


@pytest.mark.spark
@pytest.mark.parametrize("job", ["replay", "backfill"])
def test_an_event_log_of_the_wrong_shape_is_refused_before_the_job_starts(
        job: str, spark: SparkSession, logs: dict[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = ["--warehouse", str(tmp_path / "wh")] + (
        ["--checkpoint", str(tmp_path / "ck")] if job == "replay" else [])
    run = f"{job}.py: error: --events"
    assert fails(job, ["--events", logs["typed"], *out], spark, capsys) == (
        f"{run} {logs['typed']}: column log_offset is string, expected bigint; column "
        "partition is bigint, expected int (a type that casts to it without loss also does; "
        "see schemas/events.py)")
    assert fails(job, ["--events", logs["keyless"], *out], spark, capsys) == (
        f"{run} {logs['keyless']}: no column group_id; an event log needs log_partition, "
        "log_offset, event_time, group_id, event_type (see schemas/events.py)")
    assert fails(job, ["--events", logs["missing"], *out], spark, capsys) == (
        f"{run} {logs['missing']}: no such path; expected the event log, a Delta table "
        "written by jobs/generate.py or jobs/ingest.py")
    assert fails(job, ["--events", logs["plain"], *out], spark, capsys) == (
        f"{run} {logs['plain']}: not a Delta table (no _delta_log); expected the event log "
        "written by jobs/generate.py or jobs/ingest.py")
    assert fails(job, ["--events", "no_such_table", *out], spark, capsys).startswith(
        f"{run} no_such_table: no such table in the catalog")
    assert not (tmp_path / "wh").exists(), "refused before any table was made"


@pytest.mark.spark
@pytest.mark.parametrize("job", ["replay", "backfill"])
def test_a_partition_count_that_is_not_the_clusters_is_refused_naming_the_one_that_fits(
        job: str, spark: SparkSession, logs: dict[str, str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """With offsets.topic.num.partitions=50 (the default) the fold would refuse every row of
    a 3-partition cluster's log as a foreign-partition MALFORMED: refused up front instead."""
    out = ["--warehouse", str(tmp_path / "wh")] + (
        ["--checkpoint", str(tmp_path / "ck")] if job == "replay" else [])
    line = fails(job, ["--events", logs["three"], *out], spark, capsys)
    assert re.fullmatch(rf"{job}\.py: error: --events {re.escape(logs['three'])}: (\d+) of \1 "
                        r"groups sit on another partition than Kafka's partitionFor gives with "
                        r"offsets\.topic\.num\.partitions=50; 3 fits every group: set "
                        r"offsets\.topic\.num\.partitions=3 in the --coordinator-conf file",
                        line), line
    check_partition_count(spark, logs["three"], 3)  # the cluster's own count passes
    check_partition_count(spark, logs["good"], 50)
    assert not (tmp_path / "wh").exists(), "refused before any table was made"


@pytest.mark.spark
def test_the_schema_check_guards_the_stream_itself(spark: SparkSession,
                                                   logs: dict[str, str]) -> None:
    """Called without the job (a notebook), the replay still refuses the log on its schema."""
    from pipeline.spark.events.eventlog import select_events
    with pytest.raises(UsageError, match="column log_offset is string, expected bigint"):
        select_events(spark.readStream.format("delta").load(logs["typed"]))


@pytest.mark.spark
def test_a_folder_that_is_not_a_warehouse_is_named(
        spark: SparkSession, logs: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert fails("query", ["--warehouse", logs["plain"], "SELECT 1"], spark, capsys) == (
        f"query.py: error: --warehouse {logs['plain']}: not a warehouse (no Delta table "
        "group_state, group_transitions, ... in it); expected the --warehouse given to "
        "jobs/replay.py or jobs/backfill.py")
    assert fails("report", ["--warehouse", logs["missing"], "--group", "g", "--output",
                            "g.png"], spark, capsys) == (
        f"report.py: error: --warehouse {logs['missing']}: no such folder; expected a "
        "warehouse written by jobs/replay.py or jobs/backfill.py")


@pytest.mark.spark
def test_sql_the_session_cannot_parse_or_resolve_is_one_line(
        spark: SparkSession, warehouse: str, capsys: pytest.CaptureFixture[str]) -> None:
    line = fails("query", ["--warehouse", warehouse, "SELEC * FROM group_state"], spark, capsys)
    assert line.startswith("query.py: error: SQL: syntax error: [PARSE_SYNTAX_ERROR] Syntax "
                           "error at or near 'SELEC'"), line
    line = fails("query", ["--warehouse", warehouse, "SELECT nope FROM group_state"],
                 spark, capsys)
    assert line.startswith("query.py: error: SQL: [UNRESOLVED_COLUMN"), line
    assert "`nope`" in line


@pytest.mark.spark
@pytest.mark.parametrize(("job", "argv"), [
    ("query", ["--as-of", "2026-01-01T00:00:00"]),
    ("export_offsets", ["--as-of", "2026-01-01T00:00:00", "--output", "-"]),
    ("report", ["--output", "nope.png"]),
])
def test_a_group_that_does_not_exist_is_said_so(
        job: str, argv: list[str], spark: SparkSession, warehouse: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    line = fails(job, ["--warehouse", warehouse, "--group", "nope", *argv], spark, capsys)
    assert line.startswith(f"{job}.py: error: --group nope: no such group in {warehouse}"), line


@pytest.mark.spark
def test_a_group_known_from_one_table_only_is_a_group(
        spark: SparkSession, tmp_path: Path) -> None:
    """check_group asks the tables one by one: a row in any of them makes the group known,
    refused rows included (it was asked about); one that is in none is refused."""
    warehouse = str(tmp_path / "warehouse")
    ensure_tables(spark, warehouse, None)
    for table, group in (("rejected_events", "refused-only"), ("offset_history", "commits-only")):
        row = spark.createDataFrame([(group,)], "group_id string")
        append(spark, as_table(row, WAREHOUSE_TABLES[table], {}), f"{warehouse}/{table}")
    check_group(spark, warehouse, "refused-only")
    check_group(spark, warehouse, "commits-only")
    with pytest.raises(UsageError, match="--group nope: no such group"):
        check_group(spark, warehouse, "nope")


@pytest.mark.spark
def test_end_offset_samples_of_the_wrong_shape_are_refused(
        spark: SparkSession, tmp_path: Path) -> None:
    from datetime import datetime

    from pipeline.spark.lag.samples import check_samples
    at = datetime(2026, 1, 1)
    keyless = write(spark, tmp_path / "keyless", [("topic", T.StringType()),
                                                  ("sampled_at", T.TimestampType())], ("t", at))
    with pytest.raises(UsageError) as no_column:
        check_samples(spark, keyless)
    assert str(no_column.value) == (
        f"--end-offsets {keyless}: no column partition, log_end_offset; end-offset samples "
        "need topic, partition, log_end_offset, sampled_at (see schemas/lag.py)")
    typed = write(spark, tmp_path / "typed", [
        ("topic", T.StringType()), ("partition", T.IntegerType()), ("log_end_offset", T.StringType()),
        ("sampled_at", T.TimestampType())], ("t", 0, "12", at))
    with pytest.raises(UsageError) as wrong_type:
        check_samples(spark, typed)
    assert str(wrong_type.value) == (
        f"--end-offsets {typed}: column log_end_offset is string, expected bigint (a type "
        "that casts to it without loss also does; see schemas/lag.py)")
