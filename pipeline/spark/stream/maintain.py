"""Upkeep of a warehouse's tables: few files, short logs, and (if asked) history kept for a
bounded time.

Per table, in order: `OPTIMIZE` (small files compacted into few; rows unchanged, a new
version that readers at older versions do not see), an optional retention (`retain_days`:
the append-only history and lag tables lose their rows older than that many days of event
time, in one `DELETE` with the table's append-only property lifted for it), then `VACUUM`
(files no version younger than `vacuum_hours` reads are deleted, the hours set as the table's
`delta.deletedFileRetentionDuration`, which Delta 4's VACUUM keeps; Delta refuses less than
its own 168-hour default, which keeps time travel and running readers safe). Every step is a
Delta commit of its own, marked in `userMetadata` as the maintenance's, so a running
stream's exactly-once marks (`sinks.last_batch`) pass over it.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from delta.tables import DeltaTable
from deltalake import DeltaTable as LocalTable
from pyspark.sql import SparkSession

from pipeline.spark.runtime.session import COMMIT_METADATA, temporary_conf
from pipeline.spark.tables import paths, writes
from pipeline.spark.tables.catalog import quote_path
from pipeline.spark.tables.options import read_delta
from pipeline.spark.tables.warehouse import APPEND_ONLY, open_for_rewrite
from schemas import APPEND_TABLES, TIME_COLUMNS, WAREHOUSE_TABLES
from schemas.internal import LAG_PENDING, LAG_STATE, SHARE_CURRENT, SHARE_LAG
from schemas.lag import LAG_TABLES

log = logging.getLogger("maintain")
# VACUUM lists a table's files in this many tasks (Delta's recursiveListDirs repartitions to
# it), 10,000 by default: on two local cores that alone took minutes for a table of two files.
# The maintenance lists in as many tasks as the session has slots.
LISTING_PARALLELISM = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
MIN_VACUUM_HOURS = 168  # Delta's delta.deletedFileRetentionDuration default, its check's floor
FILE_RETENTION = "delta.deletedFileRetentionDuration"
# The event time of each table whose rows a retention may delete: the history and the lag.
RETAINED: dict[str, str] = {
    **{t: TIME_COLUMNS.get(t, "event_time") for t in APPEND_TABLES},
    **{t: "sampled_at" for t in LAG_TABLES},
}


@dataclass
class Done:
    """What `maintain` did to one table."""

    table: str
    files_before: int = 0
    files_after: int = 0
    deleted_rows: int = 0
    vacuumed: bool = False
    steps: list[str] = field(default_factory=list)


# jobs/replay.py's --maintain-every by default. Each micro-batch adds a file to every table it
# writes: a hundred batches make a hundred small files, which one OPTIMIZE puts back into
# one, and the checkpoint every 100 commits (tables/warehouse.py) keeps the logs short.
DEFAULT_EVERY = 100


# How often a stream's upkeep VACUUMs a table at most, and how many tables one upkeep
# VACUUMs at most (those VACUUMed longest ago, never first). A file becomes deletable only
# `vacuum_hours` (a week at least) after a commit stopped reading it, so a VACUUM an hour
# after the last finds at most an hour's worth; each costs a listing of the table's
# directory and Spark jobs, seconds a table, which held a stream's batch up for the whole
# warehouse's every time (docs/performance.md).
VACUUM_EVERY_S = 3600.0
VACUUMS_PER_UPKEEP = 3


@dataclass(frozen=True)
class Upkeep:
    """`--maintain-every N`: a stream maintains its tables itself after every `every`-th
    micro-batch's writes, so no OPTIMIZE or VACUUM runs beside its own MERGEs. OPTIMIZE (where
    a table has more than one file) and the retention each time; VACUUM of at most
    `VACUUMS_PER_UPKEEP` tables, those this stream has not VACUUMed in `VACUUM_EVERY_S`."""

    every: int
    retain_days: float | None = None
    vacuum_hours: float = MIN_VACUUM_HOURS
    # this stream's last VACUUM of each table (monotonic seconds): not a setting
    vacuumed: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"maintain every N batches: N must be at least 1, got {self.every}")

    def due(self, batch_id: int) -> bool:
        return (batch_id + 1) % self.every == 0

    def run(self, spark: SparkSession, warehouse: str,
            tables: Iterable[str] | None = None) -> list[Done]:
        """`tables`: by default the main query's (`maintained_tables`)."""
        names = tuple(tables or maintained_tables())
        stale = self.to_vacuum(names, time.monotonic())
        return maintain(spark, warehouse, names, retain_days=self.retain_days,
                        vacuum_hours=self.vacuum_hours, vacuum=stale)

    def to_vacuum(self, tables: Iterable[str], now: float) -> set[str]:
        """The tables this upkeep VACUUMs at `now` (monotonic seconds), counted as VACUUMed
        then (a table not there has nothing to delete)."""
        last = {t: self.vacuumed.get(t, -math.inf) for t in tables}  # -inf: never
        stale = sorted((t for t, at in last.items() if now - at >= VACUUM_EVERY_S),
                       key=last.__getitem__)  # the longest ago first, in the tables' order
        picked = set(stale[:VACUUMS_PER_UPKEEP])
        self.vacuumed.update({t: now for t in picked})
        return picked


# The lag step's own working tables, overwritten at each step: their old files need VACUUM.
WORKING_TABLES = (LAG_PENDING, LAG_STATE)
# The share query's own (`--share-state`): it MERGEs `_share_state` and overwrites
# `_share_lag` from its own batches, beside the main query's, whose upkeep would race them;
# so the share query maintains these after its own batches (`ShareWriter`), and the main
# query's upkeep leaves them out. Its OPTIMIZE of share_partition_state, which the share
# query only appends to, does not conflict with those appends; a metadata change does
# (`--vacuum-hours` other than 168, a retention's append-only toggle on the lag tables and
# rejected_events): docs/running.md.
SHARE_WORKING_TABLES = (SHARE_CURRENT, SHARE_LAG)


def maintained_tables() -> tuple[str, ...]:
    """What the main query's upkeep maintains."""
    return (*WAREHOUSE_TABLES, *WORKING_TABLES)


def every_table() -> tuple[str, ...]:
    """What jobs/maintain.py maintains: the main query's tables and the share query's."""
    return (*maintained_tables(), *SHARE_WORKING_TABLES)


def maintain(spark: SparkSession, warehouse: str, tables: Iterable[str] | None = None,
             retain_days: float | None = None, vacuum_hours: float = MIN_VACUUM_HOURS,
             now: datetime | None = None, vacuum: Container[str] | None = None) -> list[Done]:
    """OPTIMIZE, the retention, then VACUUM each of `tables` (default: the main query's,
    `maintained_tables`) that exists under `warehouse`; `vacuum`: the tables to VACUUM
    (default: all of them)."""
    if vacuum_hours < MIN_VACUUM_HOURS:
        raise ValueError(f"vacuum retention must be at least {MIN_VACUUM_HOURS} hours "
                         "(Delta's own floor, which keeps readers of recent versions safe)")
    if retain_days is not None and retain_days <= 0:
        raise ValueError("retention must be a positive number of days")
    cutoff = None if retain_days is None else (now or datetime.now(UTC)) - timedelta(days=retain_days)
    done: list[Done] = []
    mark = json.dumps({"maintenance": (now or datetime.now(UTC)).isoformat()})
    with temporary_conf(spark, {COMMIT_METADATA: mark,
                               LISTING_PARALLELISM: str(spark.sparkContext.defaultParallelism)}):
        for table in tables or maintained_tables():
            path = paths.join(warehouse, table)
            if DeltaTable.isDeltaTable(spark, path):
                done.append(_maintain_table(spark, table, path, cutoff, vacuum_hours,
                                            vacuum is None or table in vacuum))
    return done


def file_count(spark: SparkSession, path: str) -> int:
    """The live data files of the Delta table at `path` (its latest version): read from its
    log by delta-rs where the driver reads the table itself, else by Spark's
    `DESCRIBE DETAIL` (a Spark job)."""
    local = writes.driver_path(spark, path)
    if local is not None:
        return len(LocalTable(local).file_uris())
    row = spark.sql(f"DESCRIBE DETAIL {quote_path(path)}").select("numFiles").first()
    return 0 if row is None or row[0] is None else int(row[0])


def table_properties(spark: SparkSession, path: str) -> dict[str, str]:
    """The table properties of the Delta table at `path`, read as `file_count` reads."""
    local = writes.driver_path(spark, path)
    if local is not None:
        return dict(LocalTable(local).metadata().configuration)
    row = spark.sql(f"DESCRIBE DETAIL {quote_path(path)}").select("properties").first()
    return {} if row is None or row[0] is None else dict(row[0])


def _maintain_table(spark: SparkSession, table: str, path: str, cutoff: datetime | None,
                    vacuum_hours: float, vacuum: bool = True) -> Done:
    done = Done(table, files_before=file_count(spark, path))
    name = quote_path(path)
    if done.files_before > 1:
        spark.sql(f"OPTIMIZE {name}")
        done.steps.append("OPTIMIZE")
    if cutoff is not None and table in RETAINED:
        done.deleted_rows = _delete_before(spark, table, path, cutoff)
        if done.deleted_rows:
            done.steps.append(f"DELETE {done.deleted_rows} rows before {cutoff.isoformat()}")
    if vacuum:
        _keep_files_for(spark, path, vacuum_hours)
        spark.sql(f"VACUUM {name}")
        done.vacuumed = True
        done.steps.append(f"VACUUM {vacuum_hours:g} h")
    done.files_after = file_count(spark, path)
    log.info("%s: %s; %d files -> %d", table, ", ".join(done.steps), done.files_before,
             done.files_after)
    return done


def _keep_files_for(spark: SparkSession, path: str, hours: float) -> None:
    """Make `hours` the table's file retention, which VACUUM keeps. Delta 4 ignores VACUUM's
    RETAIN argument unless it is 0 (`spark.databricks.delta.vacuum.retentionWindowIgnore.
    enabled`, on by default) and keeps what `delta.deletedFileRetentionDuration` says (a week
    when unset): a RETAIN longer than a week would delete files a reader still expects. Set
    only when it changes (each ALTER is a commit)."""
    current = table_properties(spark, path).get(FILE_RETENTION)
    wanted = f"interval {hours:g} hours"
    if current == wanted or (current is None and hours == MIN_VACUUM_HOURS):
        return
    spark.sql(f"ALTER TABLE {quote_path(path)} SET TBLPROPERTIES "
              f"('{FILE_RETENTION}' = '{wanted}')")


def _delete_before(spark: SparkSession, table: str, path: str, cutoff: datetime) -> int:
    """Delete `table`'s rows whose event time is before `cutoff`, in one commit; how many."""
    when = f"{RETAINED[table]} < TIMESTAMP '{cutoff.strftime('%Y-%m-%d %H:%M:%S.%f')}'"
    old = read_delta(spark, path).where(when).count()
    if not old:
        return 0
    name = quote_path(path)
    with open_for_rewrite(spark, path, table_properties(spark, path).get(APPEND_ONLY) == "true"):
        spark.sql(f"DELETE FROM {name} WHERE {when}")
    return old
