"""The warehouse's rows the Prometheus metrics serve (`pipeline.metrics`), read so that each
read costs what is new rather than what the history holds; the stream's listener
(`pipeline.spark.stream.publish`) and `jobs/serve.py` both publish through `WarehouseRows`.

The lag tables are append-only histories: each read takes only the rows sampled at or after
the newest moment the previous read saw (a filter on `sampled_at`, which Delta answers from
each file's statistics, skipping every older file), the newest per key, and publishes them
with `merge`, so they join the rows already served. The moment itself is read again: another
partition's sample of it may land in a later batch. The first read takes a whole table, once.
A sample delivered late (older than one already read: docs/lag.md) is missed, and matters
only for a group that no newer sample reached.

group_state is read whole each time, its live groups (not Dead) and the columns the metrics
read: it is the current table, one row per group, so a read costs what every scrape renders
anyway, not the history; and it needs no knowledge of which groups a batch changed (a timer
changes a group no input row names, and the writer hands its rows to no one). It is also
what tells a group that turned Dead or was deleted to leave the lag series (`merge`).
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipeline.fold.states import DEAD
from pipeline.metrics import ReplayProgress, RowsCollector
from pipeline.metrics.catalogue import KEYS, LAG, METRICS, TABLES
from pipeline.spark.tables import paths
from pipeline.spark.tables.options import read_delta


def columns(table: str) -> list[str]:
    """What the metrics read of `table` (its key, its time and every metric's column), in
    the contract's order."""
    wanted = {*KEYS[table], *(m.column for m in METRICS if m.table == table)}
    return [c.name for c in TABLES[table] if c.name in wanted or c.name == "sampled_at"]


def newest_rows(rows: DataFrame, table: str) -> DataFrame:
    """Per key of the lag table `table` (its key but sampled_at), the row sampled last."""
    kept = F.struct(*columns(table))
    return rows.groupBy(*KEYS[table]).agg(F.max_by(kept, "sampled_at").alias("r")).select("r.*")


class WarehouseRows:
    """Reads the rows of `warehouse` the metrics serve and publishes them (`publish`): the
    first time every table's newest rows, then only what is newer (the module's docstring).
    Partition rows only with `per_partition`. One publish at a time."""

    def __init__(self, spark: SparkSession, warehouse: str, per_partition: bool) -> None:
        self.spark = spark
        self.warehouse = paths.qualify(warehouse)
        self.tables = ("group_state", "group_lag", *(("partition_lag",) if per_partition else ()))
        self.since: dict[str, datetime] = {}  # per lag table, the newest sampled_at read
        self._present: set[str] = set()
        self._lock = threading.Lock()

    def publish(self, collector: RowsCollector, progress: ReplayProgress | None = None) -> None:
        with self._lock:
            rows = {t: self.read(t) for t in self.tables}
            collector.publish(**rows, progress=progress, merge=True)

    def read(self, table: str) -> list[dict[str, Any]] | None:
        """`table`'s rows to publish; None while the table does not exist (the lag tables of
        a warehouse replayed without --end-offsets)."""
        path = paths.join(self.warehouse, table)
        if table not in self._present:
            if not DeltaTable.isDeltaTable(self.spark, path):
                return None
            self._present.add(table)
        rows = read_delta(self.spark, path)
        if table not in LAG:
            live = rows.where(F.col("state") != DEAD).select(*columns(table))
            return [r.asDict() for r in live.collect()]
        since = self.since.get(table)
        if since is not None:
            rows = rows.where(F.col("sampled_at") >= F.lit(since))
        found = [r.asDict() for r in newest_rows(rows, table).collect()]
        if found:
            self.since[table] = max(r["sampled_at"] for r in found)
        return found
