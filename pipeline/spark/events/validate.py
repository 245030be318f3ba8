"""The jobs' inputs checked before any work starts: paths, the event log's schema, groups.

Each check raises a one-line `UsageError` naming the input (`--events PATH`) and what was
expected. The event log's schema is checked against `schemas/events.py` on the table's
metadata alone, so a log with a column of the wrong type is refused before the stream starts
instead of failing minutes later in an executor (CAST_OVERFLOW, CAST_INVALID_INPUT): each
column present must cast to the contract's type without loss (int to bigint, timestamp_ntz
to timestamp), and the required columns must be there. Paths go through Hadoop's FileSystem,
so any URI Spark reads (file:, s3a:, abfss:) is checked the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pipeline.errors import UsageError
from pipeline.fold.partitioning import partition_count_misfit
from pipeline.spark.tables.contract import event_schema, mismatch
from pipeline.spark.tables.options import read_delta
from pipeline.spark.tables.paths import exists, is_path
from schemas import OUTPUT_TABLES

REQUIRED = ("log_partition", "log_offset", "event_time", "group_id", "event_type")
_WRITERS = "jobs/generate.py or jobs/ingest.py"


def check_columns(schema: StructType, contract: StructType, required: Sequence[str],
                  label: str, needs: str, doc: str) -> None:
    """Refuse a table (`schema`) that lacks a `required` column or has a column of a type
    the `contract`'s does not take without loss: `label` names the table, `needs` says what
    it is ("an event log"), `doc` where its columns are described."""
    given = {f.name: f.dataType for f in schema.fields}
    missing = [c for c in required if c not in given]
    if missing:
        raise UsageError(f"{label}: no column {', '.join(missing)}; {needs} "
                         f"{', '.join(required)} (see {doc})")
    problems = []
    for f in contract.fields:
        found = f.name in given and mismatch(given[f.name], f.dataType, f.name)
        if found:
            where, source, target = found
            problems.append(f"column {where} is {source.simpleString()}, "
                            f"expected {target.simpleString()}")
    if problems:
        raise UsageError(f"{label}: {'; '.join(problems)} (a type that casts to it without "
                         f"loss also does; see {doc})")


def check_event_schema(schema: StructType, label: str = "the event log") -> None:
    """Refuse an event log that lacks a required column or has a column of a type the
    contract's does not take without loss."""
    check_columns(schema, event_schema(), REQUIRED, label, "an event log needs",
                  "schemas/events.py")


def check_event_log(spark: SparkSession, events: str, flag: str = "--events") -> None:
    """`events` is an existing Delta table (a path or a catalog name) with an event log's
    columns."""
    label = f"{flag} {events}"
    if is_path(events):
        if not exists(spark, events):
            raise UsageError(f"{label}: no such path; expected the event log, a Delta table "
                             f"written by {_WRITERS}")
        if not DeltaTable.isDeltaTable(spark, events):
            raise UsageError(f"{label}: not a Delta table (no _delta_log); expected the event "
                             f"log written by {_WRITERS}")
    elif not spark.catalog.tableExists(events):
        raise UsageError(f"{label}: no such table in the catalog; expected a path or the "
                         "name of a Delta table holding the event log")
    check_event_schema(read_delta(spark, events).schema, label)


def check_partition_count(spark: SparkSession, events: str, num_partitions: int,
                          flag: str = "--events", sample: int = 2000) -> None:
    """The coordinator's offsets.topic.num.partitions fits the log (one scan of two columns,
    up to `sample` groups): with another count the fold would refuse nearly every row as a
    foreign-partition MALFORMED, so the job is refused before it starts instead."""
    df = read_delta(spark, events)
    counts = (df.where(F.col("group_id").isNotNull() & F.col("log_partition").isNotNull())
              .groupBy("group_id", "log_partition").count())
    top = (counts.groupBy("group_id")
           .agg(F.max_by("log_partition", "count").alias("home")).limit(sample).collect())
    problem = partition_count_misfit(((r["group_id"], r["home"]) for r in top), num_partitions)
    if problem is not None:
        raise UsageError(f"{flag} {events}: {problem}")


def warehouse_tables(spark: SparkSession, warehouse: str, flag: str = "--warehouse") -> list[str]:
    """The output tables under `warehouse`; a folder that holds none is refused."""
    label = f"{flag} {warehouse}"
    if not exists(spark, warehouse):
        raise UsageError(f"{label}: no such folder; expected a warehouse written by "
                         "jobs/replay.py or jobs/backfill.py")
    root = warehouse.rstrip("/")
    found = [t for t in OUTPUT_TABLES if DeltaTable.isDeltaTable(spark, f"{root}/{t}")]
    if not found:
        raise UsageError(f"{label}: not a warehouse (no Delta table group_state, "
                         "group_transitions, ... in it); expected the --warehouse given to "
                         "jobs/replay.py or jobs/backfill.py")
    return found


TABLES_NAMING_GROUPS = ("group_state", "group_transitions", "offset_history", "rejected_events")


def check_group(spark: SparkSession, warehouse: str, group: str, flag: str = "--group") -> None:
    """`group` has a row in one of the warehouse's tables (a group known only from refused
    rows counts: it was asked about). The tables are asked in TABLES_NAMING_GROUPS' order,
    one job each, group_state first: one row a group, so a group that exists costs a scan of
    the smallest table, not of offset_history's every commit."""
    root = warehouse.rstrip("/")
    for table in TABLES_NAMING_GROUPS:
        path = f"{root}/{table}"
        if DeltaTable.isDeltaTable(spark, path) and read_delta(spark, path).select("group_id") \
                .filter(F.col("group_id") == F.lit(group)).limit(1).count():
            return
    raise UsageError(f"{flag} {group}: no such group in {warehouse} (no row of it in "
                     f"{', '.join(TABLES_NAMING_GROUPS)}); group ids are matched exactly")
