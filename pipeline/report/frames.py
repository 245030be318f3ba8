"""One group's rows from the output tables, with the shapes the drawing relies on.

The tables (the replay's output tables, and the lag tables `partition_lag` and `group_lag`
that a replay with `--end-offsets` adds) may come from Spark (`toPandas`: naive UTC
timestamps, arrays as numpy arrays or lists, structs as Rows or dicts) or be built by hand;
a missing table is an empty one, a missing column a column of nulls (a caller may leave out
what it does not need, such as `rejected_events.raw_value`). Times become naive UTC
`Timestamp`s, `members` (of group_state and group_history) a list of dicts; the rows of
other groups are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from schemas import OUTPUT_TABLES
from schemas.columns import Column
from schemas.lag import LAG_TABLES

# The lag tables of one group (rejected_samples belongs to no group: it is not drawn).
LAG_FRAMES = ("partition_lag", "group_lag")
TABLES: dict[str, tuple[Column, ...]] = {**OUTPUT_TABLES,
                                         **{t: LAG_TABLES[t] for t in LAG_FRAMES}}
TIME_COLUMNS = {
    table: [c.name for c in columns if c.type == "timestamp"]
    for table, columns in TABLES.items()
}
# The column that places a row of each history table on the time axis.
EVENT_TIME = {
    "group_transitions": "event_time",
    "rebalances": "completed_at",
    "offset_history": "event_time",
    "rejected_events": "event_time",
    "error_responses": "event_time",
    "group_state": "last_event_time",
    "group_history": "event_time",
    "partition_lag": "sampled_at",
    "group_lag": "sampled_at",
}


def _utc(s: pd.Series) -> pd.Series:
    s = pd.to_datetime(s)
    if getattr(s.dt, "tz", None) is not None:
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    return s


def _naive(value: Any) -> Any:
    if value is None or value is pd.NaT:
        return pd.NaT
    ts = pd.Timestamp(value)
    return ts.tz_convert("UTC").tz_localize(None) if ts.tzinfo is not None else ts


def _members(value: Any) -> list[dict[str, Any]]:
    """A `members` array as dicts, whether Spark gave Rows, dicts or a numpy array."""
    if value is None or (isinstance(value, float) and value != value):
        return []
    out = []
    for m in value:
        d = m.asDict(recursive=True) if hasattr(m, "asDict") else dict(m)
        for key in ("joined_at", "last_heartbeat"):
            d[key] = _naive(d.get(key))
        out.append(d)
    return out


def group_frames(tables: Mapping[str, pd.DataFrame], group_id: str) -> dict[str, pd.DataFrame]:
    """Every output and lag table, holding only `group_id`'s rows, time columns as timestamps."""
    if not isinstance(group_id, str) or not group_id:
        raise ValueError(f"group_id must be a non-empty string, got {group_id!r}")
    unknown = set(tables) - set(TABLES)
    if unknown:
        raise ValueError(f"tables: unknown table names {sorted(unknown)}; "
                         f"expected some of {sorted(TABLES)}")
    out = {}
    for table, columns in TABLES.items():
        names = [c.name for c in columns]
        df = tables.get(table)
        if df is None:
            df = pd.DataFrame({n: pd.Series(dtype="object") for n in names})
        if "group_id" not in df.columns:
            raise ValueError(f"tables[{table!r}] has no group_id column")
        df = df[df["group_id"] == group_id].copy()
        for name in names:
            if name not in df.columns:
                df[name] = pd.Series([None] * len(df), index=df.index, dtype="object")
        for c in TIME_COLUMNS[table]:
            df[c] = _utc(df[c])
        if table in ("group_state", "group_history"):
            df["members"] = [_members(v) for v in df["members"]]
        sort = EVENT_TIME.get(table)
        if sort:
            df = df.sort_values(sort, kind="stable")
        out[table] = df.reset_index(drop=True)
    return out


def time_range(t: Mapping[str, pd.DataFrame]) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """First and last moment any row of the group speaks of; None for a group with no rows."""
    times = [t["rebalances"]["started_at"]] + [t[table][c] for table, c in EVENT_TIME.items()]
    values = pd.concat([s.dropna() for s in times if len(s.dropna())] or [pd.Series([], dtype="M8[ns]")])
    if values.empty:
        return None
    return values.min(), values.max()


def parse_time(value: str | pd.Timestamp | None, name: str) -> pd.Timestamp | None:
    """A `--from`/`--to` bound: ISO text or a Timestamp, as naive UTC."""
    if value is None:
        return None
    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{name}: not a time: {value!r}") from e
    if ts is pd.NaT:
        raise ValueError(f"{name}: not a time: {value!r}")
    return ts.tz_convert("UTC").tz_localize(None) if ts.tzinfo is not None else ts
