"""Every write goes through `pipeline.spark.tables.writes`, from the driver (delta-rs) or by
Spark, and the two write the same: the stream's writer given the same two batches, once
each way, leaves equal tables (MERGEd updates, inserts and deletes of committed offsets
included), with the same batch marks; a table written by one is read and extended by the
other; a write over the limit, to a new table or schema, or under Delta's own idempotent
pair, stays with Spark's writer."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from delta.tables import DeltaTable as SparkTable
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pipeline.fold import Event
from pipeline.fold.group_replay import DELETES_KEY, Tables, replay_group
from pipeline.generator import LogSpec, generate
from pipeline.spark.fold.wire import wire_checks, wire_schema
from pipeline.spark.lag.samples import write_samples
from pipeline.spark.runtime.session import TXN_APP_ID, temporary_conf
from pipeline.spark.stream.sinks import NEVER_WRITTEN, BatchWriter, batch_mark, last_batch
from pipeline.spark.tables import writes
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.warehouse import append_missing, ensure_tables
from schemas import OUTPUT_TABLES
from tests.grouping import by_group
from tests.spark.backends import CONFIG, assert_same_tables, read_tables, wire_table

pytestmark = pytest.mark.spark
SPEC = LogSpec(groups=4, events=400, seed=41, log_kind="offsets-topic")
APP = "small-writes"


def _tables(events: list[Event]) -> Tables:
    """The rows of a batch that replays `events` from no state, every table's."""
    watermark = max(e.event_time for e in events if e.event_time is not None)
    tables: Tables = defaultdict(list)
    for group_id, group_events in by_group(events, unkeyed=True).items():
        for table, rows in replay_group(group_id, None, group_events, watermark,
                                        CONFIG).tables.items():
            tables[table] += rows
    return tables


def _wire(spark: SparkSession, tables: Tables) -> DataFrame:
    return spark.createDataFrame(wire_table(tables, wire_checks()).to_pandas(), wire_schema())


def _writers(log: Path) -> list[str]:
    """Who wrote each commit after the table's creation: `delta-rs` or `spark`."""
    commits = sorted(log.glob("*.json"))[1:]
    infos = [next(json.loads(line)["commitInfo"] for line in path.read_text().splitlines()
                  if "commitInfo" in line) for path in commits]
    return ["delta-rs" if "delta-rs" in json.dumps(info) else "spark" for info in infos]


def test_driver_commits_equal_spark_commits(spark: SparkSession, tmp_path: Path) -> None:
    events = generate(SPEC)
    # Batch 0: the first half's rows; batch 1: the whole log's, which updates every group's
    # row and inserts new ones; two of its offsets delete their key instead, and one deletes
    # a key no batch wrote (the MERGE inserts no row for it).
    first, whole = _tables(events[:len(events) // 2]), _tables(events)
    offsets = whole["committed_offsets"]
    kept = {(r["group_id"], r["topic"], r["partition"]) for r in first["committed_offsets"]}
    deleting = [i for i, r in enumerate(offsets) if (r["group_id"], r["topic"], r["partition"]) in kept][:2]
    assert len(deleting) == 2
    for i in deleting:
        offsets[i] = {**offsets[i], DELETES_KEY: True}
    offsets.append({**offsets[0], "topic": "never-committed", DELETES_KEY: True})
    batches = [_wire(spark, first), _wire(spark, whole)]
    warehouses = {way: tmp_path / way for way in ("driver", "spark")}
    for way, warehouse in warehouses.items():
        ensure_tables(spark, str(warehouse), None)
        writer = BatchWriter(str(warehouse), APP)
        with temporary_conf(spark, {writes.SMALL_CONF: str(way == "driver").lower()}):
            for batch_id, wire in enumerate(batches):
                writer(wire, batch_id)
    driver, by_spark = (read_tables(spark, warehouses[w]) for w in ("driver", "spark"))
    assert_same_tables(driver, by_spark)
    keys = {tuple(r) for r in driver["committed_offsets"].select("group_id", "topic", "partition").collect()}
    assert keys and not keys & {(offsets[i]["group_id"], offsets[i]["topic"], offsets[i]["partition"])
                                for i in deleting} and all(k[1] != "never-committed" for k in keys)
    written = {t: [b for b, rows in enumerate((first, whole)) if rows.get(t)] for t in OUTPUT_TABLES}
    assert all(written[t] == [0, 1] for t in ("group_state", "committed_offsets", "offset_history"))
    for table, batch_ids in written.items():
        assert _writers(warehouses["driver"] / table / "_delta_log") == ["delta-rs"] * len(batch_ids)
        assert _writers(warehouses["spark"] / table / "_delta_log") == ["spark"] * len(batch_ids)
        history = spark.sql(f"DESCRIBE HISTORY delta.`{warehouses['driver'] / table}`")
        assert [r[0] for r in history.where("version > 0").orderBy("version")
                .select("userMetadata").collect()] == [batch_mark(APP, b) for b in batch_ids]


def test_over_the_limit_or_under_deltas_pair_spark_writes(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "t")
    rows = spark.range(3)
    create_table(spark, path, rows.schema, {})
    writes.append(spark, rows, path)  # 3 rows: from the driver
    monkeypatch.setattr(writes, "SMALL_ROWS", 2)
    assert writes.collect(rows) is None
    writes.append(spark, rows, path)  # over the limit: Spark
    monkeypatch.undo()
    with temporary_conf(spark, {TXN_APP_ID: "app", "spark.databricks.delta.write.txnVersion": "0"}):
        assert not writes.on_driver(spark, path, 1)
        writes.append(spark, rows, path)  # Delta's own pair: Spark
    assert _writers(tmp_path / "t" / "_delta_log") == ["delta-rs", "spark", "spark"]
    assert spark.read.format("delta").load(path).count() == 9


def test_a_table_given_column_comments_is_still_never_written(
        spark: SparkSession, tmp_path: Path) -> None:
    """A catalog's warehouse gets its columns' docs as comments (`REPLACE COLUMNS`, a commit
    with no rows) before the stream's first batch: that batch may still go from the driver,
    not under Delta's pair (which is for a table a batch of this app may already hold)."""
    path = str(tmp_path / "t")
    create_table(spark, path, spark.range(1).schema, {})
    spark.sql(f"ALTER TABLE delta.`{path}` REPLACE COLUMNS (id BIGINT COMMENT 'the id')")
    assert last_batch(spark, path, APP) == NEVER_WRITTEN
    writes.append(spark, spark.range(2), path)
    assert last_batch(spark, path, APP) is None  # rows now, and no mark of APP


def test_only_local_tables_are_written_from_the_driver() -> None:
    assert writes.local_path("/w/t") == "/w/t"
    assert writes.local_path("file:/w/t") == "/w/t"
    assert writes.local_path("file:///w/t") == "/w/t"
    assert writes.local_path("s3a://lake/w/t") is None
    assert writes.local_path("hdfs://nn:8020/w/t") is None
    assert writes.local_path("lake.group_state") is None  # a catalog name


def test_a_table_written_one_way_is_read_and_extended_the_other(
        spark: SparkSession, tmp_path: Path) -> None:
    """The pair as pinned: Spark makes and fills a table, delta-rs MERGEs into it, Spark
    MERGEs after that, and each reads what the other wrote."""
    path = str(tmp_path / "t")
    key = ("k",)
    rows = spark.createDataFrame([(1, "a"), (2, "b")], "k int, v string")
    writes.overwrite(spark, rows, path)  # no table yet: Spark makes it
    writes.merge(spark, spark.createDataFrame([(2, "B"), (3, "c")], "k int, v string"), path, key)
    with temporary_conf(spark, {writes.SMALL_CONF: "false"}):
        writes.merge(spark, spark.createDataFrame([(3, "C"), (4, "d")], "k int, v string"),
                     path, key)
        by_spark = sorted((r["k"], r["v"]) for r in writes.read(spark, path).to_pylist())
    by_driver = sorted((r["k"], r["v"]) for r in writes.read(spark, path).to_pylist())
    assert by_driver == by_spark == [(1, "a"), (2, "B"), (3, "C"), (4, "d")]
    assert _writers(tmp_path / "t" / "_delta_log") == ["delta-rs", "spark"]
    new_only = spark.createDataFrame([(4, "x"), (5, "e")], "k int, v string")
    writes.merge(spark, new_only, path, key, insert_only=True)  # from the driver
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())[-2:] == \
        [(4, "d"), (5, "e")]


def test_an_insert_only_merge_on_a_key_of_columns_within_a_time_range_is_the_same_both_ways(
        spark: SparkSession, tmp_path: Path) -> None:
    """The samples' write: keys of three columns (compared null-safe), a range of times that
    holds every match; a row whose key the table has is left as it is, both ways."""
    when = [datetime(2023, 11, 14, 22, 13, s, tzinfo=UTC) for s in (0, 30, 59)]
    schema = pa.schema([("topic", pa.string()), ("partition", pa.int32()),
                        ("sampled_at", pa.timestamp("us", tz="UTC")), ("v", pa.int64())])
    first = pa.table([["a", "a", None], [0, 1, 1], when[:2] + [when[0]], [1, 2, 3]], schema=schema)
    again = pa.table([["a", None, "a"], [1, 1, 2], [when[1], when[0], when[2]], [9, 9, 4]],
                     schema=schema)
    key = ("topic", "partition", "sampled_at")
    tables = {}
    for way in ("driver", "spark"):
        path = str(tmp_path / way)
        writes.overwrite(spark, spark.createDataFrame(first), path)
        with temporary_conf(spark, {writes.SMALL_CONF: "true" if way == "driver" else "false"}):
            writes.merge(spark, again, path, key, insert_only=True,
                         within=writes.Within("sampled_at", when[0], when[2]))
        assert _writers(tmp_path / way / "_delta_log") == ["delta-rs" if way == "driver" else "spark"]
        tables[way] = sorted((tuple(r.values()) for r in writes.read(spark, path).to_pylist()),
                             key=repr)
    assert tables["driver"] == tables["spark"]
    assert sorted(r[3] for r in tables["driver"]) == [1, 2, 3, 4]  # only ("a", 2, :59) was new


def test_the_samples_are_merged_from_the_driver_once_each(spark: SparkSession, tmp_path: Path) -> None:
    """The sampler's round: the first makes the table (Spark), the next are delta-rs MERGEs
    that skip a sample written before."""
    path = str(tmp_path / "samples")
    row = {"topic": "t", "partition": 0, "log_end_offset": 5, "sampled_at": 1_700_000_000_000}
    assert write_samples(spark, [row], path) == 1
    later = {**row, "log_end_offset": 9, "sampled_at": 1_700_000_030_000}
    assert write_samples(spark, [row, later, later], path) == 2  # distinct rows offered
    assert _writers(tmp_path / "samples" / "_delta_log")[-1] == "delta-rs"
    rows = spark.read.format("delta").load(path).orderBy("sampled_at").collect()
    assert [(r["log_end_offset"], r["sampled_at"]) for r in rows] == [
        (5, datetime(2023, 11, 14, 22, 13, 20)), (9, datetime(2023, 11, 14, 22, 13, 50))]


def test_the_logs_append_of_what_it_lacks_is_the_same_both_ways_one_file_a_partition(
        spark: SparkSession, tmp_path: Path) -> None:
    """The ingest's append (`append_missing`): rows whose key the log has are skipped, each
    log partition's rows of a commit are in one file, in offset order; from the driver
    (one file for the commit) as by Spark (one file a partition)."""
    rows = [(p, o, f"{p}-{o}") for p in (0, 1, 2) for o in range(10, 0, -1)]
    first = spark.createDataFrame([r for r in rows if r[1] <= 4], "p int, o bigint, v string")
    second = spark.createDataFrame(rows[::-1] + rows[:3], "p int, o bigint, v string")
    logs = {}
    for way in ("driver", "spark"):
        path = str(tmp_path / way)

        def table(path: str = path) -> SparkTable:
            create_table(spark, path, StructType.fromDDL("p int, o bigint, v string"))
            return SparkTable.forPath(spark, path)
        with temporary_conf(spark, {writes.SMALL_CONF: "true" if way == "driver" else "false"}):
            assert append_missing(table, path, first, ("p", "o"), "o", cluster="p") == 12
            assert append_missing(table, path, second, ("p", "o"), "o", cluster="p") == 30
        assert _writers(tmp_path / way / "_delta_log") == [
            "delta-rs" if way == "driver" else "spark"] * 2
        files = spark.read.format("delta").load(path).select(
            "p", "o", F.input_file_name().alias("f")).collect()
        assert len(files) == 30  # nothing twice
        logs[way] = sorted((r["p"], r["o"]) for r in files)
        for f in {r["f"] for r in files}:  # each file: a partition's offsets in order
            one = [(r["p"], r["o"]) for r in spark.read.parquet(f).collect()]
            assert one == sorted(one), (way, one)
        by_partition: dict[int, set[str]] = defaultdict(set)
        for r in files:
            if r["o"] > 4:  # the second commit's rows
                by_partition[r["p"]].add(r["f"])
        assert all(len(fs) == 1 for fs in by_partition.values()), (way, by_partition)
    assert logs["driver"] == logs["spark"]


def test_an_overwrite_carrying_metadata_is_committed_even_empty(
        spark: SparkSession, tmp_path: Path) -> None:
    """A hand-off's commit (its `userMetadata`) is made though it changes nothing, both
    ways."""
    for way in ("driver", "spark"):
        path = str(tmp_path / way)
        create_table(spark, path, spark.range(1).schema, {})
        with temporary_conf(spark, {writes.SMALL_CONF: str(way == "driver").lower()}):
            writes.overwrite(spark, spark.range(0), path, metadata=f"mark-{way}")
        history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version")
        assert [r[0] for r in history.select("userMetadata").collect()][-1] == f"mark-{way}"
        assert _writers(tmp_path / way / "_delta_log") == (
            ["delta-rs"] if way == "driver" else ["spark"])


def test_driver_commits_checkpoint_where_the_table_says(spark: SparkSession, tmp_path: Path) -> None:
    """delta-rs writes Delta's checkpoints at the table's `delta.checkpointInterval`, and
    Spark reads the table from the newest."""
    path = str(tmp_path / "t")
    rows = spark.range(2)
    create_table(spark, path, rows.schema, {"delta.checkpointInterval": "2"})
    for _ in range(3):
        writes.append(spark, rows, path)
    log = tmp_path / "t" / "_delta_log"
    assert _writers(log) == ["delta-rs"] * 3
    # every second commit (delta-rs counts them from 1: versions 1 and 3, Spark from 0)
    checkpoints = sorted(int(p.name.split(".")[0]) for p in log.glob("*.checkpoint.parquet"))
    assert checkpoints == [1, 3]
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 3
    assert spark.read.format("delta").load(path).count() == 6


def test_rows_holding_a_column_the_table_lacks_are_refused_not_cut(
        spark: SparkSession, tmp_path: Path) -> None:
    """The driver casts rows to the table's columns; rows with one the table lacks go to
    Spark's writer, which refuses the append, instead of the column being dropped."""
    path = str(tmp_path / "t")
    create_table(spark, path, spark.range(1).schema, {})
    rows = spark.createDataFrame([(1, "x")], "id bigint, extra string")
    assert writes.on_driver(spark, path, 1)
    with pytest.raises(AnalysisException, match="(?i)schema mismatch"):
        writes.append(spark, rows, path)
    assert spark.read.format("delta").load(path).count() == 0
