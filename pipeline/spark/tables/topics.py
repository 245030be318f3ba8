"""Topic ids to names: the `topics` table under the warehouse, and KIP-848 members' assignment
named through it at query time.

Kafka 4.1+ writes no subscription metadata record (type 4), so a consumer-protocol group's
records name topics by id only and the fold, which sees nothing but the log, cannot name
them. The live ingest records the cluster's topic ids and names (one admin call per
micro-batch, through Kafka's Java AdminClient already on the Spark Kafka source's classpath,
with the source's own consumer properties, so a secured cluster needs no second set of
options) with the event log (`<events>_topics`), and in the warehouse when given one; the
replay and the backfill copy the log's into their warehouse when they start. A raw dump
brings a map file. `with_topic_names` then adds, to each KIP-848
member's `assignment`, its `assigned_partitions` by name. Topic ids are never reused, so an
id has one name; where a map gives one id several names, the one seen last at or before the
row's time wins (else the first seen).
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pipeline.spark.tables import paths, writes
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.options import read_delta
from schemas import METADATA_TABLES, ddl
from schemas.columns import TP
from schemas.internal import LOG_TOPICS

log = logging.getLogger("topics")
TOPICS = "topics"
CLUSTER = "cluster"  # a source: the cluster's topic listing
COMMITTED = "offset-commit"  # a source: the ids Kafka 4.3+'s offset commits carry


def topics_schema() -> StructType:
    parsed = StructType.fromDDL(ddl(METADATA_TABLES[TOPICS]))
    assert isinstance(parsed, StructType)
    return parsed


def topics_path(warehouse: str) -> str:
    return paths.join(paths.qualify(warehouse), TOPICS)


def cluster_topics(spark: SparkSession, bootstrap: str, consumer_props: Mapping[str, str]
                   ) -> dict[str, str]:
    """Every topic's id -> name (internal ones too), as the cluster's ListTopics answers."""
    jvm: Any = spark._jvm
    props = jvm.java.util.Properties()
    props.put("bootstrap.servers", bootstrap)
    for key, value in consumer_props.items():
        props.put(key, value)
    admin = jvm.org.apache.kafka.clients.admin.Admin.create(props)
    try:
        options = jvm.org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(True)
        listings = admin.listTopics(options).listings().get(
            120, jvm.java.util.concurrent.TimeUnit.SECONDS)
        return {t.topicId().toString(): t.name() for t in listings.toArray()}
    finally:
        admin.close()


def read_topic_map(path: str) -> dict[str, str]:
    """A map file: CSV with a `topic_id,topic_name` header, or JSON, either an object
    `{"<id>": "<name>"}` or a list of `{"topic_id": ..., "topic_name": ...}`."""
    text = Path(path).read_text(encoding="utf-8")
    if path.endswith(".json"):
        doc = json.loads(text)
        pairs = (doc.items() if isinstance(doc, dict)
                 else ((d["topic_id"], d["topic_name"]) for d in doc))
    else:
        rows = csv.DictReader(text.splitlines())
        if rows.fieldnames is None or not {"topic_id", "topic_name"} <= set(rows.fieldnames):
            raise ValueError(f"topic map {path!r}: a CSV needs a topic_id,topic_name header, "
                             f"got {rows.fieldnames}")
        pairs = ((r["topic_id"], r["topic_name"]) for r in rows)
    found = {str(i).strip(): str(n).strip() for i, n in pairs}
    if not found or not all(found) or not all(found.values()):
        raise ValueError(f"topic map {path!r}: no topics, or an empty id or name")
    return found


def log_topics_path(events: str) -> str | None:
    """Where the live ingest records the cluster's topics with the event log: a Delta table
    beside the log's folder, `<events>_topics` (not inside it: Delta would take a folder in
    a table for one of its partitions); None for a log that is a catalog table (then only
    `--warehouse` records them)."""
    return paths.qualify(events).rstrip("/") + LOG_TOPICS if paths.is_path(events) else None


def record_topics(spark: SparkSession, warehouse: str, names: Mapping[str, str], source: str,
                  seen_at: datetime | None = None) -> int:
    """Add the (id, name) pairs the warehouse's `topics` table lacks; how many were new."""
    return record_topics_at(spark, topics_path(warehouse), names, source, seen_at)


def record_topics_at(spark: SparkSession, path: str, names: Mapping[str, str], source: str,
                     seen_at: datetime | None = None) -> int:
    """Add the (id, name) pairs the `topics` table at `path` lacks; how many were new."""
    create_table(spark, path, topics_schema())
    known = {(r[0], r[1]) for r in read_delta(spark, path)
             .select("topic_id", "topic_name").collect()}
    at = seen_at or datetime.now(UTC)
    new = [(i, n, at, source) for i, n in sorted(names.items()) if (i, n) not in known]
    if new:
        writes.append(spark, spark.createDataFrame(new, topics_schema()), path)
        log.info("recorded %d topic ids in %s (%s)", len(new), path, source)
    return len(new)


def copy_log_topics(spark: SparkSession, events: str, warehouse: str) -> int:
    """The topics the ingest recorded with the log (`log_topics_path`) that the warehouse's
    `topics` lacks, added as they were recorded (seen_at, source); how many."""
    source = log_topics_path(events)
    if source is None or not DeltaTable.isDeltaTable(spark, source):
        return 0
    path = topics_path(warehouse)
    create_table(spark, path, topics_schema())
    pair = ["topic_id", "topic_name"]
    new = read_delta(spark, source).join(read_delta(spark, path).select(*pair), pair,
                                         "left_anti").select(*topics_schema().fieldNames())
    rows = new.collect()  # ids of one cluster: a few thousand at most
    if rows:
        writes.append(spark, spark.createDataFrame(rows, topics_schema()), path)
        log.info("recorded %d topic ids in %s from the log's %s", len(rows), path, source)
    return len(rows)


def topic_names(spark: SparkSession, warehouse: str) -> DataFrame | None:
    """One row, `topic_names`: id -> its names by time seen; None without a `topics` table."""
    path = topics_path(warehouse)
    if not DeltaTable.isDeltaTable(spark, path):
        return None
    seen = (read_delta(spark, path).groupBy("topic_id")
            .agg(F.array_sort(F.collect_set(F.struct("seen_at", "topic_name"))).alias("names")))
    return seen.agg(F.map_from_entries(F.collect_list(F.struct("topic_id", "names")))
                    .alias("topic_names"))


_TPS = f"array<{TP}>"


def name_at(names: Column, topic_id: Column, at: Column) -> Column:
    """The name `names` (a `topic_names` map) gives `topic_id` at `at`: the one seen last at or
    before it, else the first seen; null for an id it lacks."""
    seen = F.try_element_at(names, topic_id)
    then = F.filter(seen, lambda s: s["seen_at"] <= at)
    return F.coalesce(F.try_element_at(then, F.lit(-1))["topic_name"],
                      F.try_element_at(seen, F.lit(1))["topic_name"])


def named_members(members: Column, names: Column, at: Column) -> Column:
    """`members` with each KIP-848 member's `assigned_partitions` added to its `assignment`
    by name (ids no map names are left out, as before); classic members unchanged."""
    def member(m: Column) -> Column:
        by_id = F.flatten(F.transform(m["assigned_partitions"], lambda a: F.transform(
            a["partitions"], lambda p: F.struct(name_at(names, a["topic_id"], at).alias("topic"),
                                                p.alias("partition")))))
        named = F.filter(by_id, lambda tp: tp["topic"].isNotNull())
        both = F.array_distinct(F.concat(F.coalesce(m["assignment"], F.array().cast(_TPS)), named))
        return m.withField("assignment", F.when(m["assigned_partitions"].isNull(),
                                                m["assignment"]).otherwise(both))
    return F.transform(members, member)


# When each table's names are taken: group_state's now, a group_history row's at its time.
NAMED_AT = {"group_state": "current_timestamp()", "group_history": "event_time"}


def with_topic_names(df: DataFrame, names: DataFrame | None, table: str) -> DataFrame:
    """`df` (group_state or group_history, by `table`) with members named through `names`;
    other tables, or no `topics` table, as they are."""
    if names is None or table not in NAMED_AT:
        return df
    at = F.expr(NAMED_AT[table])
    columns = df.columns
    return (df.crossJoin(F.broadcast(names))
            .withColumn("members", named_members(F.col("members"), F.col("topic_names"), at))
            .select(*columns))
