"""The rows the fold leaves to the JVM: most rows of a real `__consumer_offsets` log never come
back from Python as JSON.

A plain commit record (no generation, no producer) of a group whose log carries no requests
is applied as it stands, and its offset_history row is, column for column, the record's own
values stored at its time. The fold still reads every row and stays the only judge of what
is applied: asked to leave (`replay_group(..., leave=True)`), it writes no row for such a
record whose time does not run back and names the record in its result's `Left` instead
(`Left.current` again if its partition's committed_offsets row is the record's own). This
module owns how those records travel and become rows: their wire tags (`LEFT`, and
`LEFT_CURRENT` for the current ones, which go first: `wire_order`), the columns the JVM
reads of them (`LEFT_COLUMNS`, handed back typed from the fold's input Arrow, without a Python
value per cell), and `left_rows`, which stores each as `offsets.from_request` stores a commit,
in the columns of either table.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from pipeline.fold.context import Left
from pipeline.spark.tables import sqltext
from pipeline.spark.tables.contract import table_schema

__all__ = ["LEFT", "LEFT_COLUMNS", "LEFT_CURRENT", "LEFT_TAGS", "LEFT_TYPE", "left_rows",
           "left_tags", "wire_order"]

# The wire's tags of the left records: every one's offset_history row is built here;
# LEFT_CURRENT's committed_offsets row too.
LEFT = "_left"
LEFT_CURRENT = "_left_current"
# The tags of the left records whose rows are rows of each table.
LEFT_TAGS = {"offset_history": (LEFT, LEFT_CURRENT), "committed_offsets": (LEFT_CURRENT,)}
# What a left record's rows read of it: the wire carries these columns, typed, null on every
# other wire row.
LEFT_COLUMNS = ("group_id", "topic", "partition", "committed_offset", "leader_epoch",
                "commit_metadata", "commit_timestamp", "expire_timestamp", "member_id",
                "log_partition", "log_offset", "event_time")
# And what the record does not say: the group's type then (`Left.types_of`), which both
# tables' rows carry: a column of the wire beside the LEFT_COLUMNS.
LEFT_TYPE = "group_type"


def wire_order(left: Left) -> list[int]:
    """The left records' indices in the wire's order: the current ones, then the others."""
    return [*left.current, *left.history_only()]


def left_tags(current: int, count: int) -> list[str]:
    """The tags of `count` left records in `wire_order`, of which the first `current` are
    current."""
    return [LEFT_CURRENT] * current + [LEFT] * (count - current)


def _ms(c: str) -> str:
    """A time as the fold holds it: whole epoch milliseconds."""
    return f"timestamp_millis(unix_millis({c}))"


def left_rows(records: DataFrame, table: str) -> DataFrame:
    """`table`'s rows (offset_history or committed_offsets, in its schema) of left `records`
    (rows holding the `LEFT_COLUMNS` of commit records, typed, and `LEFT_TYPE`), each stored as
    `offsets.from_request` stores a commit (metadata "" for none, the time for no commit
    timestamp, no member for an empty member id) at its own time: the fold leaves only
    records whose time is the group's clock."""
    at = _ms("event_time")
    values = {
        "commit_metadata": "coalesce(commit_metadata, '')",
        "commit_timestamp": f"coalesce({_ms('commit_timestamp')}, {at})",
        "expire_timestamp": _ms("expire_timestamp"),
        "member_id": "CASE WHEN member_id != '' THEN member_id END",
        "event_time": at, "change": "'COMMIT'",
    }
    return records.selectExpr(*[sqltext.named(
        sqltext.cast(values.get(f.name, sqltext.ident(f.name)
                                if f.name in (*LEFT_COLUMNS, LEFT_TYPE) else "NULL"),
                     f.dataType), f.name)
        for f in table_schema(table).fields])
