"""Who was a member when, as far as the output tables can say.

No output table records membership changes one by one: `group_transitions` has a row only
when the state changes (its `member_id` names the member that caused it), `rebalances`
counts `members_joined`/`members_left` without naming them, and `group_state` is the
current row (or a few snapshots of it, one per Delta version). A member that joins or
leaves while the group is already rebalancing leaves no named trace. So each member id
gets the span the tables prove: from its first certain sighting to its last, where a
sighting is a join or removal naming it, a commit it made in a generation, a leadership,
or a `group_state` row listing it. An end is exact when a removal names the member or it
is still a member; a start is exact when a join names it or `joined_at` gives it. A
member id is a member over one interval (Kafka never re-admits a removed member id), so
a span never claims a time it was not a member. Where a member's end is unknown but the
group later emptied, the span continues faintly to that moment: it left in between.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

JOIN_CAUSES = frozenset({"MEMBER_JOINED", "STATIC_MEMBER_REJOINED"})
REMOVAL_CAUSES = frozenset({"MEMBER_LEFT", "STATIC_MEMBER_REMOVED", "SESSION_TIMEOUT",
                            "NEW_MEMBER_JOIN_TIMEOUT", "PENDING_SYNC_TIMEOUT",
                            "GROUP_MAX_SIZE_REACHED"})


@dataclass(frozen=True)
class Span:
    """One member id's proven membership; `until` is a later moment it had surely left by."""

    member_id: str
    start: pd.Timestamp
    end: pd.Timestamp
    start_exact: bool
    end_exact: bool
    current: bool
    until: pd.Timestamp | None = None
    end_cause: str | None = None


@dataclass
class Lane:
    """One row of the picture: a static instance id (all its member ids) or a member id."""

    key: str
    static: bool
    spans: list[Span] = field(default_factory=list)
    commits: list[pd.Timestamp] = field(default_factory=list)

    @property
    def first(self) -> pd.Timestamp:
        return min(s.start for s in self.spans)


@dataclass
class _Seen:
    times: list[pd.Timestamp] = field(default_factory=list)
    joined: pd.Timestamp | None = None
    left: pd.Timestamp | None = None
    left_cause: str | None = None
    current: bool = False
    instance: str | None = None
    commits: list[pd.Timestamp] = field(default_factory=list)


def _ids(value: Any) -> list[str]:
    # PENDING_SYNC_TIMEOUT names every member it removed, comma-separated.
    return [] if not isinstance(value, str) or not value else [v for v in value.split(",") if v]


def _sightings(t: dict[str, pd.DataFrame]) -> dict[str, _Seen]:
    seen: dict[str, _Seen] = defaultdict(_Seen)
    for r in t["group_transitions"].itertuples(index=False):
        for m in _ids(r.member_id):
            s = seen[m]
            s.times.append(r.event_time)
            if r.cause in JOIN_CAUSES and s.joined is None:
                s.joined = r.event_time
            if r.cause in REMOVAL_CAUSES:
                s.left, s.left_cause = r.event_time, r.cause
    for r in t["rebalances"].itertuples(index=False):
        if isinstance(r.leader_id, str) and r.outcome == "COMPLETED":
            seen[r.leader_id].times.append(r.completed_at)
    commits = t["offset_history"]
    commits = commits[(commits["change"] == "COMMIT") & commits["member_id"].notna()
                      & (pd.to_numeric(commits["generation_id"], errors="coerce").fillna(-1) >= 0)]
    for m, at in zip(commits["member_id"], commits["event_time"], strict=True):
        if m:
            seen[m].times.append(at)
            seen[m].commits.append(at)
    states = t["group_state"].sort_values("last_event_time")
    for i, r in enumerate(states.itertuples(index=False)):
        for member in r.members:
            s = seen[member["member_id"]]
            s.times.append(r.last_event_time)
            joined = member.get("joined_at")
            if joined is not None and pd.notna(joined):
                s.joined = joined if s.joined is None else min(s.joined, joined)
                s.times.append(joined)
            s.instance = member.get("group_instance_id") or s.instance
            s.current = i == len(states) - 1 and r.state != "Dead"
    rejected = t["rejected_events"]
    if "group_instance_id" in rejected:
        pairs = rejected[rejected["member_id"].notna() & rejected["group_instance_id"].notna()]
        for m, inst in zip(pairs["member_id"], pairs["group_instance_id"], strict=True):
            if m in seen and seen[m].instance is None:
                seen[m].instance = inst
    return seen


def _emptied(t: dict[str, pd.DataFrame]) -> list[pd.Timestamp]:
    """Moments the group had no member at all: everyone seen before had left by then."""
    tr = t["group_transitions"]
    return sorted(tr.loc[(tr["member_count"] == 0) | (tr["to_state"] == "Dead"), "event_time"])


def lanes(t: dict[str, pd.DataFrame], end: pd.Timestamp) -> list[Lane]:
    """The lanes of the picture, ordered by when their first member was first seen.

    `t` holds one group's frames (see `frames.group_frames`); `end` is where the picture
    stops, the end of a span of a member that is still in the group.
    """
    emptied = _emptied(t)
    by_key: dict[str, Lane] = {}
    for member_id, s in _sightings(t).items():
        times = [x for x in s.times if pd.notna(x)]
        if not times:
            continue
        start = s.joined if s.joined is not None else min(times)
        last = s.left if s.left is not None else max(times)
        if s.current:
            last = max(last, end)
        until = None
        if s.left is None and not s.current:
            until = next((x for x in emptied if x > last), None)
        span = Span(member_id, start, last, start_exact=s.joined is not None,
                    end_exact=s.left is not None or s.current, current=s.current,
                    until=until, end_cause=s.left_cause)
        key = s.instance or member_id
        lane = by_key.setdefault(key, Lane(key, static=s.instance is not None))
        lane.spans.append(span)
        lane.commits.extend(s.commits)
    out = sorted(by_key.values(), key=lambda lane: (lane.first, lane.key))
    for lane in out:
        lane.spans.sort(key=lambda s: s.start)
    return out
