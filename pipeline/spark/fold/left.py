"""The bulk of offset_history built in the JVM from the input rows: most rows of a real
`__consumer_offsets` log never come back from Python as JSON.

A plain commit record (no generation, no producer) of a group whose log carries no requests
is applied as it stands, and its offset_history row is, column for column, a projection of
the record. The fold still reads every row and stays the only judge of what is applied:
asked to (`replay_group(..., left=Left())`), it writes no row for such a record whose time
does not run back and names the row instead, and names it again if its partition's
committed_offsets row is the row's own. The Spark side hands those rows back as they came in
(`PROJECTED` wire rows, `CURRENT` for the latter): the backfill's as the `PASSED` columns,
typed, taken from the fold's input Arrow without a Python value per cell; the stream's as
the packed JSON each came in as, which `wire.table_rows` parses into the same columns.
`projected` stores each the way `offsets.from_request` stores a commit, in the columns of
either table, for backfill and stream.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pipeline.spark.tables.contract import event_schema, table_schema

__all__ = ["CURRENT", "PASSED", "PROJECTED", "passed_schema", "projected"]

# The wire's rows of input rows whose offset_history rows are projected here; CURRENT: whose
# committed_offsets rows are too.
PROJECTED = "_projected"
CURRENT = "_projected_current"
# What a projected row reads of its input row: the wire carries these columns, typed, null
# on every other wire row.
PASSED = ("group_id", "topic", "partition", "committed_offset", "leader_epoch",
          "commit_metadata", "commit_timestamp", "expire_timestamp", "member_id",
          "log_partition", "log_offset", "event_time")


def _ms(c: Column) -> Column:
    """A time as the fold holds it: whole epoch milliseconds."""
    return F.timestamp_millis(F.unix_millis(c))


def projected(rows: DataFrame, table: str) -> DataFrame:
    """`table`'s rows (offset_history or committed_offsets, in its schema) of `rows` (rows
    holding the `PASSED` columns of commit records, typed), each stored as
    `offsets.from_request` stores a commit (metadata "" for none, the time for no commit
    timestamp, no member for an empty member id) at its own time: the fold names only rows
    whose time is the group's clock."""
    at = _ms(F.col("event_time"))
    values: dict[str, Column] = {
        "commit_metadata": F.coalesce(F.col("commit_metadata"), F.lit("")),
        "commit_timestamp": F.coalesce(_ms(F.col("commit_timestamp")), at),
        "expire_timestamp": _ms(F.col("expire_timestamp")),
        "member_id": F.when(F.col("member_id") != "", F.col("member_id")),
        "event_time": at, "change": F.lit("COMMIT"),
    }
    return rows.select(*[values.get(f.name, F.col(f.name) if f.name in PASSED else F.lit(None))
                         .cast(f.dataType).alias(f.name)
                         for f in table_schema(table).fields])


def passed_schema() -> StructType:
    """The `PASSED` columns as the event log types them."""
    log = {f.name: f for f in event_schema().fields}
    return StructType([log[name] for name in PASSED])
