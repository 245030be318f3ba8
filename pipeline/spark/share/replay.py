"""The share-state log replayed in Spark: `pipeline.share.state.replay` per key, for the
backfill (the whole log, from nothing) and for each micro-batch of the stream (its rows, from
each key's last row so far).

A key (group id, topic id, partition) is folded by one Python call that gets both its new
log rows and its last `share_partition_state` row (`_share_state`, the state and position
the replay continues from): a cogroup by key, in Arrow. The call returns one wide row per
record: a `share_partition_state` row for each record applied (the key's last one marked
`_last`: what `_share_state` keeps), and, for each record refused, the reason with what
rejected_events keeps of it (`_reason`, the raw bytes, the decoder's message). The three
views of it (`history_rows`, `last_rows`, `rejected_rows`) are what the jobs write.

`_share_state` holds one row per key, the key's newest: what a stream pays per batch
depends on the batch's keys, never on the length of the history.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import pyarrow as pa
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, BooleanType, StringType, StructField, StructType

from pipeline.errors import UsageError
from pipeline.share.state import replay, resumed
from pipeline.spark.tables import paths, sqltext, writes
from pipeline.spark.tables.contract import arrow_schema, table_schema
from pipeline.spark.tables.creation import create_table
from pipeline.spark.tables.options import read_delta
from schemas.internal import INTERNAL_KEYS, SHARE_CURRENT
from schemas.share_state import SHARE_KEY, SHARE_STATE_TOPIC

HISTORY = "share_partition_state"
REASON, LAST = "_reason", "_last"
# What a refused record keeps beyond the columns it shares with share_partition_state.
REFUSED = {"event_type": StringType(), "raw_key": BinaryType(), "raw_value": BinaryType(),
           "decode_error": StringType()}
_REFUSED_COLUMNS = {name: f"_{name}" for name in REFUSED}


@cache
def replayed_schema() -> StructType:
    extra = [StructField(REASON, StringType()), StructField(LAST, BooleanType()),
             *(StructField(f"_{n}", t) for n, t in REFUSED.items())]
    return StructType([*table_schema(HISTORY).fields, *extra])


def _replay_key(arrow: pa.Schema, log: pa.Table, current: pa.Table) -> pa.Table:
    """One key's new log rows replayed from its last row (none: from nothing)."""
    done = replay(log.to_pylist(), resumed(current.to_pylist()))
    rows: list[dict[str, Any]] = [dict(h) for h in done.history]
    if rows:
        rows[-1][LAST] = True  # one key a call (keys with no group id: no row applied)
    for row, reason in done.rejected:
        rows.append({**{c: row.get(c) for c in ("group_id", "topic_id", "partition",
                                                 "event_time", "log_partition", "log_offset",
                                                 "record_layout")},
                     REASON: reason,
                     **{wire: row.get(name) for name, wire in _REFUSED_COLUMNS.items()}})
    return pa.Table.from_pylist(rows, schema=arrow)


def replayed(log_rows: DataFrame, last: DataFrame) -> DataFrame:
    """`log_rows` (the share-state log's columns) replayed per key on `last` (rows of
    `_share_state`): the wide rows the module docstring describes."""
    schema = replayed_schema()
    key = list(SHARE_KEY)
    return (log_rows.groupBy(*key).cogroup(last.groupBy(*key))
            .applyInArrow(partial(_replay_key, arrow_schema(schema)), schema))


def history_rows(out: DataFrame) -> DataFrame:
    return out.filter(F.col(REASON).isNull()).select(*table_schema(HISTORY).fieldNames())


def last_rows(out: DataFrame) -> DataFrame:
    return out.filter(F.col(LAST)).select(*table_schema(HISTORY).fieldNames())


def rejected_rows(out: DataFrame) -> DataFrame:
    """The refused records as rejected_events rows, `log_topic` naming the share-state log."""
    refused = out.filter(F.col(REASON).isNotNull())
    have = set(table_schema(HISTORY).fieldNames())
    columns = []
    for f in table_schema("rejected_events").fields:
        if f.name == "reason":
            value = sqltext.ident(REASON)
        elif f.name == "log_topic":
            value = sqltext.string(SHARE_STATE_TOPIC)
        elif f.name in _REFUSED_COLUMNS:
            value = sqltext.ident(_REFUSED_COLUMNS[f.name])
        elif f.name in have and f.name != "leader_epoch":  # a refused row has no state
            value = sqltext.ident(f.name)
        else:
            value = "NULL"
        columns.append(sqltext.named(sqltext.cast(value, f.dataType), f.name))
    return refused.selectExpr(*columns)


def check_share_log(spark: SparkSession, source: str) -> None:
    """The share-state log is a Delta table, or a one-line error saying what was expected."""
    if not DeltaTable.isDeltaTable(spark, source):
        raise UsageError(f"--share-state {source}: no Delta table there; expected the "
                         "share-state log jobs/ingest.py --share-state writes")


def current_path(warehouse: str) -> str:
    return paths.join(warehouse, SHARE_CURRENT)


def ensure_current(spark: SparkSession, warehouse: str) -> None:
    create_table(spark, current_path(warehouse), table_schema(HISTORY))


def last_of(spark: SparkSession, warehouse: str, log_rows: DataFrame) -> DataFrame:
    """The `_share_state` rows of the keys `log_rows` hold."""
    key = list(SHARE_KEY)
    current = read_delta(spark, current_path(warehouse))
    return current.join(log_rows.select(*key).distinct(), key, "left_semi")


def merge_current(spark: SparkSession, warehouse: str, last: DataFrame) -> None:
    """Each key's new last row into `_share_state`: a few rows MERGEd from the driver where
    it may (`writes`), else by Spark."""
    writes.merge(spark, last, current_path(warehouse), INTERNAL_KEYS[SHARE_CURRENT])


@dataclass(frozen=True)
class ShareHandoff:
    """What a backfill read of the share-state log: `_share_state`'s commit metadata, so a
    stream on a fresh checkpoint reads the log from `version + 1` on."""

    log: str
    version: int

    def to_json(self) -> str:
        return json.dumps({"share_backfill": {"log": self.log, "version": self.version}})


def read_handoff(spark: SparkSession, warehouse: str) -> ShareHandoff | None:
    """The hand-off of the newest backfill that wrote `_share_state`, if any."""
    path = current_path(warehouse)
    if not DeltaTable.isDeltaTable(spark, path):
        return None
    table = DeltaTable.forPath(spark, path)
    for limit in (16, None):  # newest first; a stream's MERGEs carry their batch marks
        commits = (table.history(limit) if limit else table.history()).select(
            "userMetadata").collect()
        for (metadata,) in commits:
            try:
                doc = json.loads(metadata) if metadata else None
            except ValueError:
                continue
            if isinstance(doc, dict) and "share_backfill" in doc:
                return ShareHandoff(**doc["share_backfill"])
        if limit is not None and len(commits) < limit:
            return None
    return None
