"""Who was a member when, and what it owned: read off `group_history`.

`group_history` has a row after every step that changed the group's shape (state,
generation, leader, members and their assignments), each row listing every member. So a
member id's span starts at the first row listing it and ends at the first later row that
does not list it, or runs to the picture's end if the group's last row still lists it; a
member id that comes back after a gap gets a second span. Rows are ordered as the as-of
SQL functions order them: event time, log position, `seq`. Within a span, the member's
assignment is read at every row, and each change is kept as (time, partitions owned).
A static member (`group_instance_id`) keeps one lane across the member ids it is given.
The cause of a removal is the row's `departures` entry for the member (a warehouse written
before that column: the step's transition that names the member, when one does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

ORDER = ["event_time", "log_partition", "log_offset", "seq"]
_STEP = ["event_time", "log_partition", "log_offset"]


@dataclass(frozen=True)
class Span:
    """One member id's stay in the group.

    `end` is the first history row without it, or the picture's end when `current`.
    `assignments` holds (time, partitions owned) at the stay's start and at every change.
    """

    member_id: str
    start: pd.Timestamp
    end: pd.Timestamp
    current: bool
    assignments: tuple[tuple[pd.Timestamp, int], ...] = ()
    end_cause: str | None = None

    def covers(self, t: pd.Timestamp) -> bool:
        """Whether the member was listed as of `t` (the last history row at or before it)."""
        return self.start <= t and (self.current or t < self.end)


@dataclass
class Lane:
    """One row of the picture: a static instance id (all its member ids) or a member id."""

    key: str
    static: bool
    spans: list[Span] = field(default_factory=list)

    @property
    def first(self) -> pd.Timestamp:
        return min(s.start for s in self.spans)


@dataclass
class _Open:
    start: pd.Timestamp
    instance: str | None
    assignments: list[tuple[pd.Timestamp, int]]
    owned: frozenset[tuple[str, int]]


def _owned(member: Mapping[str, Any]) -> frozenset[tuple[str, int]]:
    # Spark gives Rows or dicts, in a list or a numpy array; a hand-built frame may give None.
    assignment: Iterable[Any] | None = member.get("assignment")
    if assignment is None:
        return frozenset()
    return frozenset((str(tp["topic"]), int(tp["partition"])) for tp in assignment)


def history_rows(history: pd.DataFrame) -> pd.DataFrame:
    """The group's history rows in the order they happened."""
    return history.sort_values(ORDER, kind="stable", na_position="first").reset_index(drop=True)


def _step(row: Any) -> tuple[Any, ...]:
    """A step's time and log position (a null position as None: NaN equals nothing)."""
    return tuple(None if pd.isna(v) else v for v in (getattr(row, c) for c in _STEP))


def _removal_causes(transitions: pd.DataFrame) -> dict[tuple[Any, ...], list[tuple[int, str, str]]]:
    """Per step (time and log position): its transitions as (seq, cause, members named)."""
    out: dict[tuple[Any, ...], list[tuple[int, str, str]]] = {}
    for r in transitions.itertuples(index=False):
        key = _step(r)
        named = r.member_id if isinstance(r.member_id, str) else ""
        out.setdefault(key, []).append((int(r.seq), str(r.cause), named))
    return out


def _cause(step: list[tuple[int, str, str]], seq: int, member_id: str) -> str | None:
    """The cause of the step's transition that names `member_id`, if one does. Another
    transition of the step is no witness: a session that expires during a rebalance can
    complete the join phase, and the transition then names only the completion."""
    naming = sorted((s, cause) for s, cause, named in step
                    if s < seq and member_id in named.split(","))
    return naming[-1][1] if naming else None


def _departures(row: Any) -> dict[str, str]:
    """The members the row's step removed, with why (absent in older warehouses)."""
    value = getattr(row, "departures", None)
    if value is None or isinstance(value, float):  # no column, or a NaN from pandas
        return {}
    return {d["member_id"]: d["cause"] for d in value}


def stays(t: Mapping[str, pd.DataFrame], end: pd.Timestamp) -> list[tuple[str | None, Span]]:
    """Every member id's spans in `t["group_history"]`, each with the member's instance id."""
    causes = _removal_causes(t["group_transitions"])
    open_: dict[str, _Open] = {}
    out: list[tuple[str | None, Span]] = []
    for row in history_rows(t["group_history"]).itertuples(index=False):
        listed = {m["member_id"]: m for m in row.members}
        departed = _departures(row)
        for member_id in [m for m in open_ if m not in listed]:
            o = open_.pop(member_id)
            cause = departed.get(member_id) or _cause(causes.get(_step(row), []), int(row.seq),
                                                      member_id)
            out.append((o.instance, Span(member_id, o.start, row.event_time, False,
                                         tuple(o.assignments), cause)))
        for member_id, m in listed.items():
            owned = _owned(m)
            stay = open_.get(member_id)
            if stay is None:
                open_[member_id] = _Open(row.event_time, m.get("group_instance_id"),
                                         [(row.event_time, len(owned))], owned)
            elif owned != stay.owned:
                stay.assignments.append((row.event_time, len(owned)))
                stay.owned = owned
    return out + [(o.instance, Span(member_id, o.start, max(end, o.start), True,
                                    tuple(o.assignments))) for member_id, o in open_.items()]


def lanes(t: Mapping[str, pd.DataFrame], end: pd.Timestamp) -> list[Lane]:
    """The lanes of the picture, ordered by when their first member joined.

    `t` holds one group's frames (see `frames.group_frames`): `group_history`, and
    `group_transitions` for removal causes. `end` is where the picture stops, the end of
    the span of a member the group's last row still lists. An older warehouse without
    `group_history` gives no lanes.
    """
    by_key: dict[str, Lane] = {}
    for instance, span in stays(t, end):
        key = instance or span.member_id
        by_key.setdefault(key, Lane(key, static=instance is not None)).spans.append(span)
    out = sorted(by_key.values(), key=lambda lane: (lane.first, lane.key))
    for lane in out:
        lane.spans.sort(key=lambda s: s.start)
    return out
