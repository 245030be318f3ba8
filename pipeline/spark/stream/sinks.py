"""The stream's writer: each micro-batch's wire rows into the Delta tables, exactly once.

History tables are appended to, current tables MERGEd, each table in one Delta commit of its
own, side by side (`pipeline.spark.tables.parallel`). Tables live at `<warehouse>/<table>`.
A table's few rows of a warm batch are committed from the driver by delta-rs
(`pipeline.spark.tables.writes`), a big batch's (or one on an object store) by Spark.

Exactly once: every commit carries the batch's mark in its `userMetadata` (the stream's app
id and the batch id). Before writing a table, the writer reads the table's newest commits
and skips the table if its last mark for this app is this batch or a later one: a batch
Spark runs again after a crash writes only the tables it had not committed. A table with no
mark of this app yet (backfilled, or written before marks) is written with Delta's own
`txnAppId`/`txnVersion` as well, which Delta checks itself; one whose whole log is in view
and holds no write yet (made empty, its properties set) cannot hold the batch, and is
written as a marked one: the first batch of a new warehouse. Marks, not Delta's pair, on
every other write: Delta answers its check by rebuilding the table's snapshot state in a
Spark job before each write, which costs a small append several times its own time
(docs/performance.md). What the pair would add beyond this: when
two applications run one checkpoint at once (Spark refuses it within an application and does
not support it across two), Delta would refuse the second commit of a batch to a table;
marks let both through.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from pipeline.spark.fold.wire import FAILED, NEWEST, SAMPLE, folded, table_count, table_rows
from pipeline.spark.lag.lagflow import StreamLag
from pipeline.spark.lag.lagstate import ENGINE_INPUTS
from pipeline.spark.runtime.session import COMMIT_METADATA, TXN_APP_ID, TXN_VERSION, temporary_conf
from pipeline.spark.stream.maintain import Upkeep
from pipeline.spark.tables import paths, sqltext, writes
from pipeline.spark.tables.contract import table_schema
from pipeline.spark.tables.parallel import WRITERS, run_all
from schemas import OUTPUT_TABLES, TABLE_KEYS

HISTORY_PAGE = 16  # commits read first when looking for a table's last mark
PROGRESS_KEPT = 64  # batches whose figures the writer keeps for the progress line to read


@dataclass(frozen=True)
class BatchProgress:
    """What a writer recorded of one micro-batch, the same fields on every path (the replay's
    query and the share-state query's), which the progress lines, the metrics and the
    benchmarks read. A batch the writer did not see has none."""

    rows: dict[str, int] = field(default_factory=dict)  # rows written, by table
    groups: int = 0  # groups touched (the share query: none)
    rejected: int = 0  # rows rejected
    failed: int = 0  # groups whose fold failed
    fold_s: float = 0.0  # the fold's seconds: the stateful operator, run by the batch's first job
    write_s: float = 0.0  # the rest of the batch's seconds in the writer: its writes
    tables: dict[str, float] = field(default_factory=dict)  # each table's write seconds


def record(progress: dict[int, BatchProgress], batch_id: int, figures: BatchProgress) -> None:
    """`figures` kept for `batch_id`, only the last `PROGRESS_KEPT` batches'."""
    progress[batch_id] = figures
    while len(progress) > PROGRESS_KEPT:
        del progress[next(iter(progress))]


def batch_mark(app_id: str, batch_id: int) -> str:
    """A commit's `userMetadata` saying which stream and which of its batches wrote it."""
    return json.dumps({"replay_app": app_id, "batch": batch_id})


def _marked_batch(metadata: str | None, app_id: str) -> int | None:
    try:
        mark = json.loads(metadata) if metadata else None
    except ValueError:
        return None  # another writer's free text
    if isinstance(mark, dict) and mark.get("replay_app") == app_id \
            and isinstance(mark.get("batch"), int):
        return int(mark["batch"])
    return None


NEVER_WRITTEN = -1  # `last_batch`: the table has never held a row, nobody's batch is in it
# Commits that add no row: how `tables.creation` makes a table, the properties set later,
# and the columns' comments a catalog's warehouse gets (`catalog.comment_columns`).
NO_ROWS = frozenset({"CREATE TABLE", "SET TBLPROPERTIES", "REPLACE COLUMNS"})


def last_batch(spark: SparkSession, path: str, app_id: str) -> int | None:
    """The batch of `app_id`'s newest mark among the commits of the table at `path`, newest
    first (a page of them, then the whole history); NEVER_WRITTEN if the whole log is in view
    (from version 0) and none of its commits added rows; None if no commit carries a mark."""
    table = DeltaTable.forPath(spark, path)
    for limit in (HISTORY_PAGE, None):
        history = table.history(limit) if limit else table.history()
        commits = history.select("version", "operation", "userMetadata").collect()
        for _, _, metadata in commits:
            batch = _marked_batch(metadata, app_id)
            if batch is not None:
                return batch
        if limit is None or len(commits) < limit:
            whole = bool(commits) and min(v for v, _, _ in commits) == 0
            return NEVER_WRITTEN if whole and {op for _, op, _ in commits} <= NO_ROWS else None
    return None


@dataclass
class BatchWriter:
    """The foreachBatch function of the replay job."""

    warehouse: str
    app_id: str
    # What it recorded of each of the last `PROGRESS_KEPT` batches.
    progress: dict[int, BatchProgress] = field(default_factory=dict)
    # The last batch each table is known to hold, from this writer's own commits: a table's
    # marks only rise, so after its first write here the writer skips reading its history
    # (a Spark job a table a batch). Empty at start, and nothing is kept for a write that
    # raised (its commit may or may not be in): the table's history answers then.
    marks: dict[str, int] = field(default_factory=dict)
    writers: int = WRITERS  # tables written side by side
    lag: StreamLag | None = None  # with --end-offsets: the lag tables, after the others
    upkeep: Upkeep | None = None  # --maintain-every: the tables maintained every N batches

    def path(self, table: str) -> str:
        return paths.join(self.warehouse, table)

    def __call__(self, wire: DataFrame, batch_id: int) -> None:
        start = time.monotonic()
        seconds: dict[str, float] = {}  # each table's write, side by side with the others
        # The first job of the batch (counting it) runs the stateful operator, the fold.
        with folded(wire, f"batch {batch_id}") as (wire, counts):
            fold_s = time.monotonic() - start
            spark = wire.sparkSession
            # Every commit of the batch carries its mark (the MERGEs take it from the session).
            with temporary_conf(spark, {COMMIT_METADATA: batch_mark(self.app_id, batch_id)}):
                self.write_phase(spark, batch_id, {
                    t: partial(self._commit, wire, t, table_count(counts, t))
                    for t in OUTPUT_TABLES if table_count(counts, t)}, seconds)
                if self.lag is not None:  # over the history tables as this batch left them
                    new = table_rows(wire, SAMPLE) if counts.get(SAMPLE) else None
                    history = {t: table_rows(wire, t, count=table_count(counts, t))
                               for t in ENGINE_INPUTS if table_count(counts, t)}
                    try:
                        for phase in self.lag.writes(spark, new, counts.get(NEWEST),
                                                     batch_mark(self.app_id, batch_id), history):
                            self.write_phase(spark, batch_id, phase, seconds)
                    finally:
                        self.lag.release()
            if self.upkeep is not None and self.upkeep.due(batch_id):
                self.upkeep.run(spark, self.warehouse)
        record(self.progress, batch_id, BatchProgress(
            # the lag tables' rows: those the stream's lag step made
            rows={**{t: n for t in OUTPUT_TABLES if (n := table_count(counts, t))},
                  **(self.lag.written if self.lag is not None else {})},
            groups=counts.get("group_state", 0), rejected=counts.get("rejected_events", 0),
            failed=counts.get(FAILED, 0), fold_s=fold_s,
            write_s=time.monotonic() - start - fold_s, tables=seconds))

    def write_phase(self, spark: SparkSession, batch_id: int,
                     commits: dict[str, Callable[[], None]], seconds: dict[str, float]) -> None:
        """Commit each table's write of the batch unless the table holds it already, side by
        side; a table without a mark of this app yet is written after the others, one by
        one, under Delta's own pair."""
        unmarked: list[str] = []
        run_all([partial(self._write_once, spark, t, commit, batch_id, unmarked, seconds)
                 for t, commit in commits.items()], self.writers)
        if unmarked:
            with temporary_conf(spark, {TXN_APP_ID: self.app_id, TXN_VERSION: str(batch_id)}):
                for table in sorted(unmarked, key=list(commits).index):
                    self._write(table, commits[table], seconds)
                    self.marks[table] = batch_id

    def _write_once(self, spark: SparkSession, table: str, commit: Callable[[], None],
                    batch_id: int, unmarked: list[str], seconds: dict[str, float]) -> None:
        """Write `table` unless its marks say this batch is in it; a table without a mark of
        this app, and written before, is left in `unmarked` for a write under Delta's own
        pair."""
        last = self.marks.get(table)
        if last is None:
            last = last_batch(spark, self.path(table), self.app_id)
        if last is None:
            unmarked.append(table)
        elif last < batch_id:
            self._write(table, commit, seconds)
            self.marks[table] = batch_id

    def _write(self, table: str, commit: Callable[[], None], seconds: dict[str, float]) -> None:
        start = time.monotonic()
        commit()
        seconds[table] = time.monotonic() - start

    def _commit(self, wire: DataFrame, table: str, count: int) -> None:
        spark = wire.sparkSession
        path = self.path(table)
        if table == "committed_offsets":
            rows = table_rows(wire, table, extra=True, count=count)
            source = rows.selectExpr(*map(sqltext.ident, table_schema(table).names),
                                     sqltext.named("coalesce(_deleted, false)", "_deleted"))
        else:
            source = table_rows(wire, table, count=count)
        if table in TABLE_KEYS:
            writes.merge(spark, source, path, TABLE_KEYS[table], count=count,
                         deleted="_deleted" if table == "committed_offsets" else None)
        else:
            writes.append(spark, source, path, count=count)
