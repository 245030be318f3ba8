"""The output tables of the pure fold as pandas frames, shaped as Spark's `toPandas` gives them.

`tests/spark/backends.pure_tables` builds the same rows as Spark DataFrames, which needs a
JVM; the report is pure pandas, so its tests fold in-process and convert here: timestamps
as naive UTC `datetime64`, arrays as lists, structs as dicts. `truth` replays a group one
row at a time and records who was a member when: a check of the lanes that does not go
through group_history. `lag_group` builds, by hand, a small group whose life is known to the
second (rebalances, an Empty stretch) and, optionally, the lag tables a replay with
`--end-offsets` would give it, from a simulated producer and consumer.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from pipeline.fold import CoordinatorConfig, Event, advance, fold
from pipeline.fold.group_replay import DELETES_KEY, replay_group
from schemas import OUTPUT_TABLES
from tests.grouping import by_group

CONFIG = CoordinatorConfig()
DELAY_MS = 10 * 60 * 1000  # tests/spark/backends.DELAY


def _watermark(events: list[Event]) -> int:
    return max(e.event_time for e in events if e.event_time is not None) - DELAY_MS


def _time(ms: Any) -> Any:
    return pd.NaT if ms is None else pd.Timestamp(ms, unit="ms")


def pure_frames(events: list[Event], config: CoordinatorConfig = CONFIG) -> dict[str, pd.DataFrame]:
    watermark = _watermark(events)
    rows: dict[str, list[dict[str, Any]]] = {t: [] for t in OUTPUT_TABLES}
    for group_id, group_events in by_group(events).items():
        for table, written in replay_group(group_id, None, group_events, watermark,
                                           config).tables.items():
            rows[table] += [r for r in written if not r.get(DELETES_KEY)]
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


# lag_group's group: (second, state, generation, {member: partitions owned}, departures).
T0 = pd.Timestamp("2024-05-01 12:00:00")
TOPIC, RATES = "orders", (12, 8, 5)  # messages a second produced to each partition
BACKLOG, CAPACITY = (1500, 400, 100), 25  # at 0 s; and what a member reads a second per partition
STEPS: list[tuple[int, str, int, dict[str, tuple[int, ...]], dict[str, str]]] = [
    (0, "PreparingRebalance", 0, {"m1": ()}, {}),
    (3, "CompletingRebalance", 1, {"m1": ()}, {}),
    (4, "Stable", 1, {"m1": (0, 1, 2)}, {}),
    (180, "PreparingRebalance", 1, {"m1": (0, 1, 2), "m2": ()}, {}),
    (220, "CompletingRebalance", 2, {"m1": (0, 1, 2), "m2": ()}, {}),
    (221, "Stable", 2, {"m1": (0, 1), "m2": (2,)}, {}),
    (360, "PreparingRebalance", 2, {"m1": (0, 1)}, {"m2": "MEMBER_LEFT"}),
    (364, "CompletingRebalance", 3, {"m1": (0, 1)}, {}),
    (365, "Stable", 3, {"m1": (0, 1, 2)}, {}),
    (480, "Empty", 4, {}, {"m1": "SESSION_TIMEOUT"}),
    (660, "PreparingRebalance", 4, {"m3": ()}, {}),
    (663, "CompletingRebalance", 5, {"m3": ()}, {}),
    (664, "Stable", 5, {"m3": (0, 1, 2)}, {}),
]
# (started, completed, generation, cause, outcome, joined, left, moved, total), in seconds.
REBALANCES = [(0, 4, 1, "MEMBER_JOINED", "COMPLETED", 1, 0, 3, 3),
              (180, 221, 2, "MEMBER_JOINED", "COMPLETED", 1, 0, 1, 3),
              (360, 365, 3, "MEMBER_LEFT", "COMPLETED", 0, 1, 1, 3),
              (480, 480, 4, "SESSION_TIMEOUT", "EMPTIED", 0, 1, 3, 0),
              (660, 664, 5, "MEMBER_JOINED", "COMPLETED", 1, 0, 3, 3)]
SAMPLE_EVERY, LAST_SAMPLE, COMMIT_EVERY = 15, 840, 5


def at(second: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(seconds=second)


def _member(member: str, owned: tuple[int, ...]) -> dict[str, Any]:
    return {"member_id": member, "group_instance_id": None, "client_id": member,
            "client_host": "/10.0.0.1", "assignment": [{"topic": TOPIC, "partition": p}
                                                       for p in owned]}


def _group_tables(group: str) -> dict[str, pd.DataFrame]:
    history, moves = [], []
    previous = None
    for second, state, gen, members, gone in STEPS:
        listed = [_member(m, owned) for m, owned in members.items()]
        history.append({"group_id": group, "event_time": at(second), "seq": 0, "state": state,
                        "generation_id": gen, "members": listed, "member_count": len(listed),
                        "departures": [{"member_id": m, "cause": c} for m, c in gone.items()]})
        moves.append({"group_id": group, "event_time": at(second), "from_state": previous,
                      "to_state": state, "generation_id": gen, "member_count": len(listed),
                      "cause": next(iter(gone.values()), "MEMBER_JOINED"), "seq": 0})
        previous = state
    rebalances = [{"group_id": group, "started_at": at(a), "completed_at": at(b),
                   "duration_ms": (b - a) * 1000, "generation_id": gen, "cause": cause,
                   "outcome": outcome, "members_joined": j, "members_left": left,
                   "partitions_moved": moved, "partitions_total": total, "member_count": total and 1}
                  for a, b, gen, cause, outcome, j, left, moved, total in REBALANCES]
    last = history[-1]
    state = {**last, "last_event_time": last["event_time"], "log_kind": "journal"}
    return {"group_history": pd.DataFrame(history), "group_transitions": pd.DataFrame(moves),
            "rebalances": pd.DataFrame(rebalances), "group_state": pd.DataFrame([state])}


def _owner(second: int, partition: int) -> tuple[str | None, str, int]:
    """Who consumed `partition` at `second` (None: nobody), the group's state and generation."""
    _, state, gen, members, _ = [s for s in STEPS if s[0] <= second][-1]
    owner = next((m for m, owned in members.items() if partition in owned), None)
    return (owner if state == "Stable" else None), state, gen


def _simulate() -> tuple[list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
    """Offset commits (offset_history rows, less group_id) and, per sample second, each
    partition's lag row: the log grows at RATES, an owner of a partition in a Stable group
    reads CAPACITY a second and commits every COMMIT_EVERY seconds."""
    read = [0, 0, 0]
    committed: list[tuple[int, int] | None] = [None, None, None]  # (offset, second)
    commits: list[dict[str, Any]] = []
    samples: dict[int, list[dict[str, Any]]] = {}
    for second in range(LAST_SAMPLE + 1):
        for p, rate in enumerate(RATES):
            end = BACKLOG[p] + rate * second
            owner, state, gen = _owner(second, p)
            if owner is not None:
                read[p] = min(end, read[p] + CAPACITY)
                if second % COMMIT_EVERY == 0 and (committed[p] or (-1, 0))[0] != read[p]:
                    committed[p] = (read[p], second)
                    commits.append({"topic": TOPIC, "partition": p, "event_time": at(second),
                                    "committed_offset": read[p], "change": "COMMIT",
                                    "member_id": owner, "generation_id": gen})
            if second % SAMPLE_EVERY == 0 and second:
                samples.setdefault(second, []).append(
                    _partition_sample(second, p, end, committed[p], owner, state, gen,
                                      samples.get(second - SAMPLE_EVERY, []),
                                      samples.get(second - 2 * SAMPLE_EVERY, [])))
    return commits, samples


def _partition_sample(second: int, p: int, end: int, committed: tuple[int, int] | None,
                      owner: str | None, state: str, gen: int, before: list[dict[str, Any]],
                      earlier: list[dict[str, Any]]) -> dict[str, Any]:
    """One partition_lag row (less group_id), its status by Burrow's rules cut short: no
    commit for a minute with lag is STOP, lag rising over three samples WARN."""
    row = {"sampled_at": at(second), "topic": TOPIC, "partition": p, "log_end_offset": end,
           "member_id": owner, "state": state, "generation_id": gen, "committed_offset": None,
           "offset_status": "NO_COMMIT", "lag": None, "lag_ms": None, "status": None}
    if committed is None:
        return row
    offset, when = committed
    lag = end - offset
    behind = second - max(0.0, (offset - BACKLOG[p]) / RATES[p])  # when the log end was there
    lags = [r["lag"] for r in (*earlier, *before) if r["partition"] == p]
    status = ("OK" if lag == 0 else "STOP" if second - when > 60
              else "WARN" if len(lags) == 2 and None not in lags and lags[0] < lags[1] < lag
              else "OK")
    return {**row, "committed_offset": offset, "offset_status": "COMMITTED",
            "committed_at": at(when), "lag": lag, "lag_ms": int(behind * 1000) if lag else 0,
            "status": status}


def _cause(second: int, state: str) -> tuple[str, str | None, pd.Timestamp | None]:
    """What the coordinator was doing over the last sample interval, as group_lag says it."""
    if state == "Empty":
        since = max(s[0] for s in STEPS if s[0] <= second and s[1] == "Empty")
        return "EMPTY", "SESSION_TIMEOUT", at(since)
    for a, b, _, cause, *_ in REBALANCES:
        if a <= second and b > second - SAMPLE_EVERY:
            return "REBALANCE", cause, at(a)
    return "NONE", None, None


def _group_sample(second: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    known = [r for r in rows if r["lag"] is not None]
    worst = max(known, key=lambda r: (r["status"] != "OK", r["status"] == "STOP", r["lag"]),
                default=None)
    status = ("NOTFOUND" if worst is None else
              {"OK": "OK", "WARN": "WARN"}.get(worst["status"], "ERR"))
    total = sum(r["lag"] for r in known) if known else None
    cause, detail, since = _cause(second, rows[0]["state"]) if total else (None, None, None)
    return {"sampled_at": at(second), "state": rows[0]["state"],
            "generation_id": rows[0]["generation_id"], "total_lag": total,
            "max_lag": max((r["lag"] for r in known), default=None),
            "max_lag_ms": max((r["lag_ms"] for r in known), default=None),
            "partitions": len(rows), "partitions_unknown": len(rows) - len(known),
            "complete": 1.0, "status": status,
            "worst_topic": worst and worst["topic"], "worst_partition": worst and worst["partition"],
            "worst_status": worst and worst["status"], "cause": cause, "cause_detail": detail,
            "cause_since": since}


def lag_group(group: str = "orders-app", lag: bool = True) -> dict[str, pd.DataFrame]:
    """The hand-made group's tables (see STEPS, REBALANCES): Empty from 480 s to 660 s,
    rebalances at 0-4 s, 180-221 s, 360-365 s, 480 s and 660-664 s; with `lag`, a sample of
    its three partitions every 15 s from 15 s to 840 s."""
    tables = _group_tables(group)
    commits, samples = _simulate()
    tables["offset_history"] = pd.DataFrame([{"group_id": group, **c} for c in commits])
    if lag:
        tables["partition_lag"] = pd.DataFrame([{"group_id": group, **r}
                                                for rows in samples.values() for r in rows])
        tables["group_lag"] = pd.DataFrame([{"group_id": group, **_group_sample(s, rows)}
                                            for s, rows in samples.items()])
    return tables
