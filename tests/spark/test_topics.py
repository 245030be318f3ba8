"""The `topics` table and the names it gives KIP-848 members' partitions: map files read in
either form, pairs recorded once, the name valid at a row's time chosen, and a dump's map
recorded with the log and taken by the backfill."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipeline.spark.backfill import BackfillOptions, run_backfill
from pipeline.spark.ingest.ingest import IngestOptions, ingest_raw
from pipeline.spark.tables.catalog import register_views
from pipeline.spark.tables.contract import table_schema
from pipeline.spark.tables.topics import (
    copy_log_topics,
    log_topics_path,
    read_topic_map,
    record_topics,
)
from tests.decode import kafka_records

MAP = {"AAAAAAAAAAAAAAAAAAAAAQ": "orders", "AAAAAAAAAAAAAAAAAAAAAg": "payments"}


@pytest.mark.parametrize("name, text", [
    ("map.csv", "topic_id,topic_name\nAAAAAAAAAAAAAAAAAAAAAQ,orders\nAAAAAAAAAAAAAAAAAAAAAg,payments\n"),
    ("map.json", '{"AAAAAAAAAAAAAAAAAAAAAQ": "orders", "AAAAAAAAAAAAAAAAAAAAAg": "payments"}'),
    ("map.json", '[{"topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "topic_name": "orders"},'
                 ' {"topic_id": "AAAAAAAAAAAAAAAAAAAAAg", "topic_name": "payments"}]'),
])
def test_a_topic_map_reads_as_csv_or_json(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    assert read_topic_map(str(tmp_path / name)) == MAP


def test_a_topic_map_without_its_header_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "map.csv").write_text("AAAAAAAAAAAAAAAAAAAAAQ,orders\n")
    with pytest.raises(ValueError, match="map.csv.*topic_id,topic_name"):
        read_topic_map(str(tmp_path / "map.csv"))


def _at(minute: int) -> datetime:
    return datetime(2026, 1, 1, 0, minute, tzinfo=UTC)


def _member(member_id: str, by_name: list[tuple[str, int]] | None,
            by_id: list[tuple[str, list[int]]] | None) -> dict[str, object]:
    return {"member_id": member_id, "assignment": None if by_name is None else
            [{"topic": t, "partition": p} for t, p in by_name],
            "assigned_partitions": None if by_id is None else
            [{"topic_id": i, "partitions": ps} for i, ps in by_id]}


@pytest.mark.spark
def test_kip848_members_are_named_by_the_name_seen_at_the_rows_time(
        spark: SparkSession, tmp_path: Path) -> None:
    warehouse = str(tmp_path / "wh")
    one, two = MAP
    assert record_topics(spark, warehouse, MAP, "cluster", _at(0)) == 2
    assert record_topics(spark, warehouse, MAP, "cluster", _at(5)) == 0  # known: not again
    # A hand-written map that gives `two` another name later: rows after it take that one.
    assert record_topics(spark, warehouse, {two: "payments-v2"}, "map.csv", _at(10)) == 1
    schema = table_schema("group_history")
    row = {f.name: None for f in schema.fields}
    shapes = [
        {**row, "group_id": "g", "event_time": _at(minute), "seq": 0, "state": "Stable",
         "generation_id": 1, "member_count": 2, "rebalance_count": 1, "group_type": "consumer",
         "departures": [], "members": [
             _member("kip848", [("orders", 0)], [(one, [0, 1]), (two, [3]), ("unknown", [9])]),
             _member("classic", [("orders", 2)], None)]}
        for minute in (1, 11)]
    spark.createDataFrame(shapes, schema).write.format("delta").save(f"{warehouse}/group_history")
    register_views(spark, warehouse)
    named = {(r["event_time"].minute, m["member_id"]): sorted(
        (a["topic"], a["partition"]) for a in m["assignment"])
        for r in spark.table("group_history").collect() for m in r["members"]}
    assert named == {
        (1, "kip848"): [("orders", 0), ("orders", 1), ("payments", 3)],
        (11, "kip848"): [("orders", 0), ("orders", 1), ("payments-v2", 3)],
        (1, "classic"): [("orders", 2)], (11, "classic"): [("orders", 2)]}


@pytest.mark.spark
def test_a_dumps_topic_map_goes_with_the_log_and_the_backfill_takes_it(
        spark: SparkSession, tmp_path: Path) -> None:
    """`--topic-map` without `--warehouse` is recorded with the log, and
    the backfill copies it into its warehouse's `topics` as recorded, once."""
    key, value = kafka_records.records()["share_metadata"][:2]
    dump = str(tmp_path / "dump")
    spark.createDataFrame([(key, value, 0, 0, 1_700_000_000_000)],
                          "key binary, value binary, partition int, offset bigint, "
                          "timestamp bigint").write.parquet(dump)
    table = tmp_path / "map.csv"
    table.write_text("topic_id,topic_name\n" + "".join(f"{i},{n}\n" for i, n in MAP.items()))
    events, warehouse = str(tmp_path / "events"), str(tmp_path / "wh")
    ingest_raw(spark, IngestOptions(events=events, raw=dump, topic_map=str(table)))
    assert spark.read.format("delta").load(events).count() == 1  # the log reads as before
    path = log_topics_path(events)
    assert path is not None
    logged = {r["topic_id"]: (r["topic_name"], r["seen_at"], r["source"])
              for r in spark.read.format("delta").load(path).collect()}
    assert {i: v[0] for i, v in logged.items()} == MAP and not Path(warehouse).exists()
    run_backfill(spark, BackfillOptions(events=events, warehouse=warehouse, database=None))
    copied = {r["topic_id"]: (r["topic_name"], r["seen_at"], r["source"])
              for r in spark.read.format("delta").load(f"{warehouse}/topics").collect()}
    assert copied == logged
    assert copy_log_topics(spark, events, warehouse) == 0  # known pairs: not again


@pytest.mark.spark
def test_a_dumps_commits_name_the_topics_they_carry_the_ids_of(
        spark: SparkSession, tmp_path: Path) -> None:
    """Kafka 4.3+ offset commits carry their topic's id beside its name: a dump without a map
    file still records the pair (source `offset-commit`), and only that of the commits that
    carry one."""
    written = {r["name"]: r for r in kafka_records.every_version()}
    rows = [(bytes.fromhex(written[name]["key"]), bytes.fromhex(written[name]["value"]), 0, n,
             1_700_000_000_000 + n)
            for n, name in enumerate(["offset_commit_v3", "offset_commit_v4"])]
    dump = str(tmp_path / "dump")
    spark.createDataFrame(rows, "key binary, value binary, partition int, offset bigint, "
                                "timestamp bigint").write.parquet(dump)
    events = str(tmp_path / "events")
    ingest_raw(spark, IngestOptions(events=events, raw=dump))
    ids = {r["topic_id"] for r in spark.read.format("delta").load(events).collect()}
    assert ids == {None, written["offset_commit_v4"]["json"]["topicId"]}
    path = log_topics_path(events)
    assert path is not None
    assert {(r["topic_id"], r["topic_name"], r["source"])
            for r in spark.read.format("delta").load(path).collect()} == {
        (written["offset_commit_v4"]["json"]["topicId"], "orders", "offset-commit")}
