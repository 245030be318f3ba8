"""The output tables of the pure fold as pandas frames, shaped as Spark's `toPandas` gives them.

`tests/spark/backends.pure_tables` builds the same rows as Spark DataFrames, which needs a
JVM; the report is pure pandas, so its tests fold in-process and convert here: timestamps
as naive UTC `datetime64`, arrays as lists, structs as dicts. `truth` replays a group one
row at a time and records who was a member when: a check of the lanes that does not go
through group_history.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pandas as pd

from pipeline.fold import CoordinatorConfig, Event, advance, fold
from pipeline.fold.tables import DELETED, replay_group
from schemas import OUTPUT_TABLES

CONFIG = CoordinatorConfig()
DELAY_MS = 10 * 60 * 1000  # tests/spark/backends.DELAY


def _watermark(events: list[Event]) -> int:
    return max(e.event_time for e in events if e.event_time is not None) - DELAY_MS


def _time(ms: Any) -> Any:
    return pd.NaT if ms is None else pd.Timestamp(ms, unit="ms")


def pure_frames(events: list[Event], config: CoordinatorConfig = CONFIG) -> dict[str, pd.DataFrame]:
    by_group: dict[str, list[Event]] = defaultdict(list)
    for e in events:
        if e.group_id is not None:
            by_group[e.group_id].append(e)
    watermark = _watermark(events)
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in OUTPUT_TABLES}
    for group_id, group_events in by_group.items():
        for table, written in replay_group(group_id, None, group_events, watermark,
                                           config)[1].items():
            rows[table] += [r for r in written if not r.get(DELETED)]
    frames = {}
    for table, columns in OUTPUT_TABLES.items():
        df = pd.DataFrame(rows[table], columns=[c.name for c in columns])
        for c in columns:
            if c.type == "timestamp":
                df[c.name] = pd.to_datetime(df[c.name], unit="ms")
        frames[table] = df
    for table in ("group_state", "group_history"):
        frames[table]["members"] = [
            [{**m, "last_heartbeat": _time(m["last_heartbeat"]), "joined_at": _time(m["joined_at"])}
             for m in ms] for ms in frames[table]["members"]]
    return frames


def truth(events: list[Event], group_id: str,
          config: CoordinatorConfig = CONFIG) -> dict[str, tuple[int, int | None]]:
    """Every member id the group ever had: (joined, left) in event-time ms; left None if still in."""
    group_events = [e for e in events if e.group_id == group_id]
    group: Any = group_id
    spans: dict[str, tuple[int, int | None]] = {}

    def observe(members: set[str], now: int) -> None:
        for m in members:
            spans.setdefault(m, (now, None))
        for m, (start, end) in list(spans.items()):
            if end is None and m not in members:
                spans[m] = (start, now)

    for e in group_events:
        result = fold(group, [e], config)
        group = result.group
        times = [r["event_time"] for r in result.outputs.transitions] or [e.event_time or 0]
        observe({m.member_id for m in group.members}, max(times))
    timed = advance(group, _watermark(events), config)
    if timed.outputs.transitions:
        observe({m.member_id for m in timed.group.members},
                max(r["event_time"] for r in timed.outputs.transitions))
    return spans


def busiest(tables: dict[str, pd.DataFrame]) -> str:
    """The group with the most rebalances."""
    return str(tables["rebalances"]["group_id"].value_counts().index[0])
