"""What happened to a classic group's consumers, apart from what the coordinator made of it.

A group's recorded history (its group_history rows) mixes two things: what its consumers did
(a process started, stopped cleanly, died, changed its subscription) and what the coordinator
did about it under the group's configuration (rebalances, expiries). `script_of` keeps the
first: each client's lives, when each began and how it ended, so that `simulate` can play the
same lives against the coordinator again under another configuration.

A client is named by its static instance id, or by its client id and host: a restarted
dynamic consumer gets a new member id but keeps both. Two members of one name alive at once
are two clients (`name`, `name#2`, ...). A member's end is read from the cause Kafka gave for
its departure: MEMBER_LEFT is a clean stop (LeaveGroup); a session expiry is a crash at its
last heartbeat (the expiry's time less its session timeout, exactly as Kafka's timer counts);
a member dropped for not rejoining in time stopped at the rebalance's start at the latest (its
rebalance timeout before). A records-only log shows members only in snapshots: a member
appears at the first snapshot that holds it and is gone by the first that does not, and why
is not known (`Script.heartbeats` is False).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pipeline.fold.states import Cause

LEAVE, CRASH = "leave", "crash"
# Departures that mean the member went silent: the coordinator's timers removed it.
SILENT = frozenset({Cause.SESSION_TIMEOUT, Cause.REBALANCE_TIMEOUT,
                    Cause.NEW_MEMBER_JOIN_TIMEOUT, Cause.PENDING_SYNC_TIMEOUT})


class WhatIfError(ValueError):
    """A what-if that cannot be answered: one line says why; nothing is written."""


@dataclass
class Life:
    """One member id's life: a consumer process from its join to its end (None: still on)."""

    client: str
    member_id: str
    started_at: int
    topics: tuple[str, ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    static: bool
    before_window: bool = False  # a member already when the window opened
    ended_at: int | None = None
    ending: str | None = None  # LEAVE or CRASH
    # Later subscriptions: (when, topics).
    resubscribed: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)


@dataclass
class Script:
    group_id: str
    lives: list[Life]
    partitions: dict[str, int]  # topic -> partition count, as far as the history shows
    assignor: str | None  # the protocol the group ran under (the last one seen)
    start: int
    end: int
    heartbeats: bool  # a journal: departures have their causes, expiries their timing
    expelled: int  # members the coordinator removed by a timer, in the window
    # Each client's partitions in the last shape the history shows in the window.
    owners: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)

    @property
    def clients(self) -> list[str]:
        return sorted({life.client for life in self.lives})


def script_of(group_id: str, history: Iterable[Mapping[str, Any]], heartbeats: bool,
              start: int | None = None, end: int | None = None) -> Script:
    """The script of `group_id`'s consumers from its group_history rows (any order; times in
    epoch ms), within [start, end] (default: the whole history). Members alive at `start`
    begin there."""
    rows = sorted(history, key=lambda r: (r["event_time"], r["log_partition"] or 0,
                                          r["log_offset"] or 0, r["seq"]))
    if not rows:
        raise WhatIfError(f"group {group_id!r} has no history: it never existed, or the "
                         "warehouse holds none of its rows")
    lo = rows[0]["event_time"] if start is None else start
    hi = rows[-1]["event_time"] if end is None else end
    alive: dict[str, Life] = {}
    lives: list[Life] = []
    partitions: dict[str, int] = {}
    assignor: str | None = None
    expelled = 0
    last: dict[str, tuple[tuple[str, int], ...]] = {}
    for row in rows:
        t = row["event_time"]
        if t > hi:
            break
        if row.get("protocol"):
            assignor = row["protocol"]
        members = {m["member_id"]: m for m in row["members"] or ()}
        last = {m: tuple(sorted((tp["topic"], tp["partition"]) for tp in x.get("assignment") or ()))
                for m, x in members.items()}
        for m in members.values():
            for tp in m.get("assignment") or ():
                partitions[tp["topic"]] = max(partitions.get(tp["topic"], 0), tp["partition"] + 1)
            for topic in m.get("subscription") or ():
                partitions.setdefault(topic, 1)
        causes = {d["member_id"]: d["cause"] for d in row.get("departures") or ()}
        expelled += sum(1 for c in causes.values() if c in SILENT) if t >= lo else 0
        for member_id in [m for m in alive if m not in members]:
            _end(alive.pop(member_id), t, causes.get(member_id), heartbeats)
        for member_id, m in members.items():
            topics = tuple(sorted(m.get("subscription") or ()))
            known = alive.get(member_id)
            if known is None:
                began = m["joined_at"] if heartbeats and m.get("joined_at") else t
                life = Life(_base_name(m), member_id, max(lo, began), topics,
                            m.get("session_timeout_ms") or 45_000,
                            m.get("rebalance_timeout_ms") or 300_000,
                            m.get("group_instance_id") is not None, began < lo)
                alive[member_id] = life
                lives.append(life)
            elif topics and topics != (known.resubscribed[-1][1] if known.resubscribed
                                       else known.topics):
                if t >= lo:
                    known.resubscribed.append((t, topics))
                else:
                    known.topics = topics
    # A member whose life ended before the window is of no concern.
    kept = [life for life in lives if life.ended_at is None or life.ended_at >= lo]
    _name_clients(kept)
    client = {life.member_id: life.client for life in kept if life.ended_at is None}
    owners = {client[m]: tps for m, tps in last.items() if m in client}
    return Script(group_id, kept, partitions, assignor, lo, hi, heartbeats, expelled, owners)


def _end(life: Life, t: int, cause: str | None, heartbeats: bool) -> None:
    if heartbeats and cause == Cause.SESSION_TIMEOUT:
        life.ended_at, life.ending = t - life.session_timeout_ms, CRASH
    elif heartbeats and cause in SILENT:
        life.ended_at, life.ending = t - min(life.rebalance_timeout_ms, t - life.started_at), CRASH
    else:
        life.ended_at, life.ending = t, LEAVE
    life.ended_at = max(life.ended_at, life.started_at)


def _base_name(m: Mapping[str, Any]) -> str:
    return m.get("group_instance_id") or f"{m.get('client_id') or '?'}@{m.get('client_host') or '?'}"


def _name_clients(lives: list[Life]) -> None:
    """Give each life its client: the first of its base name's clients free when it starts (a
    restart continues the client whose life ended before), else a new one (`name#2`)."""
    free_at: dict[str, int | None] = {}  # client -> when its current life ends (None: never)
    for life in sorted(lives, key=lambda x: x.started_at):
        base, n = life.client, 1
        name = base
        while name in free_at and _busy(free_at[name], life.started_at):
            n += 1
            name = f"{base}#{n}"
        life.client = name
        free_at[name] = life.ended_at


def _busy(ends: int | None, at: int) -> bool:
    return ends is None or ends > at
