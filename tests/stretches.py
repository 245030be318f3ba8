"""The JVM path's rules (`pipeline/spark/bulk.py`) restated row by row in plain Python: the
oracle the fold's side (tests/fold/test_stretches.py, many random logs, no Spark) and the
Spark side (tests/spark/test_bulk.py, `classified` against it) are both held to. Written
from bulk.py's docstrings, not from its code: a rule the two state differently fails a test.
Also the logs meant to end or split a stretch (`edge_rows`)."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from pipeline.fold import CoordinatorConfig, Event
from pipeline.fold.events import NESTED_COLUMNS, EventColumns, columns_of
from pipeline.fold.partitioning import partition_for
from pipeline.fold.runs import STRETCH
from pipeline.fold.timers import is_request

T0 = 1_700_000_000_000


@dataclass(frozen=True)
class Classified:
    event: Event
    bulk: bool  # applied by the JVM path: a plain commit record of a records-only group
    first: bool  # the first of its stretch: folded as it stands
    stretch: int  # bulk rows with the same number are one stretch
    clock: int | None  # the group's clock after the row, in ms


def spark_order(e: Event) -> tuple[bool, int, bool, int]:
    """A row's place in `Window.orderBy(log_partition, log_offset)`: nulls first."""
    p, o = e.log_partition, e.log_offset
    return (p is not None, p or 0, o is not None, o or 0)


def plain(e: Event) -> bool:
    """A commit record as it stands: no generation, no producer, every value it needs, and
    nothing else a commit never carries (a decoder's error, a nested value)."""
    return (e.group_id is not None and e.event_type == "OFFSET_COMMIT"
            and e.generation_id is None and e.producer_id is None and e.decode_error is None
            and e.topic is not None and e.partition is not None and e.partition >= 0
            and e.committed_offset is not None
            and all(getattr(e, n) is None for n in NESTED_COLUMNS))


def classify(events: list[Event], cfg: CoordinatorConfig) -> list[Classified]:
    """One group's rows in Spark's order, each classified."""
    rows = sorted(events, key=spark_order)
    if not rows:
        return []
    home = partition_for(str(rows[0].group_id), cfg.offsets_topic_num_partitions)
    journal = any(is_request(e.event_type, e.generation_id) for e in rows)
    previous: tuple[int, int] | None = None
    clock: int | None = None
    stretch, bulk_before, out = 0, False, []
    for i, e in enumerate(rows):
        at = e.position
        positioned = (at is not None and at[0] >= 0 and at[1] >= 0 and e.event_time is not None
                      and at[0] == home)
        applied = positioned and (previous is None or previous < at)  # type: ignore[operator]
        after = rows[i + 1].position if i + 1 < len(rows) else None
        bulk = applied and not journal and plain(e) and after != at
        if positioned:
            previous = at if previous is None or at > previous else previous  # type: ignore[operator]
        if applied:
            t = e.event_time
            clock = t if clock is None or t > clock else clock  # type: ignore[operator]
        stretch += not bulk
        out.append(Classified(e, bulk, bulk and not bulk_before, stretch, clock))
        bulk_before = bulk
    return out


def stored(c: Classified) -> dict[str, Any]:
    """A bulk row's commit as the fold stores it: metadata "" for none, the clock for no
    commit timestamp, no member for an empty member id."""
    e = c.event
    return {"committed_offset": e.committed_offset, "leader_epoch": e.leader_epoch,
            "commit_metadata": "" if e.commit_metadata is None else e.commit_metadata,
            "commit_timestamp": c.clock if e.commit_timestamp is None else e.commit_timestamp,
            "expire_timestamp": e.expire_timestamp, "member_id": e.member_id or None,
            "log_partition": e.log_partition, "log_offset": e.log_offset}


def projected(rows: list[Classified]) -> list[dict[str, Any]]:
    """The offset_history rows the stretches' rest stand for."""
    return [{"group_id": c.event.group_id, "topic": c.event.topic,
             "partition": c.event.partition, **stored(c), "generation_id": None,
             "event_time": c.clock, "change": "COMMIT", "producer_id": None}
            for c in rows if c.bulk and not c.first]


def summary(rest: list[Classified], cfg: CoordinatorConfig) -> dict[str, Any]:
    """One stretch's rest as its summary row's STRETCH value (nulls left out, as JSON)."""
    offsets: dict[tuple[str, int], dict[str, Any]] = {}
    for c in rest:  # in log order: the last commit of each partition wins, the first stays
        e = c.event
        kept = offsets.get((e.topic, e.partition))  # type: ignore[arg-type]
        first = (e.log_partition, e.log_offset) if kept is None else (
            kept["first_partition"], kept["first_offset"])
        offsets[(e.topic, e.partition)] = {  # type: ignore[index]
            "topic": e.topic, "partition": e.partition, **stored(c),
            "first_partition": first[0], "first_offset": first[1]}
    last = rest[-1]
    return {"positions": [{"log_partition": c.event.log_partition,
                           "log_offset": c.event.log_offset}
                          for c in rest[-cfg.recent_positions:]],
            "last_time": last.event.event_time, "clock": max(c.clock for c in rest),  # type: ignore[type-var]
            "offsets": [{k: v for k, v in o.items() if v is not None} for o in offsets.values()]}


def fold_input(rows: list[Classified], cfg: CoordinatorConfig) -> EventColumns:
    """What the fold gets: every row but the stretches' rest, and one summary row a stretch
    (at its last position and time)."""
    kept = [c.event for c in rows if not (c.bulk and not c.first)]
    stretches: dict[int, list[Classified]] = {}
    for c in rows:
        if c.bulk and not c.first:
            stretches.setdefault(c.stretch, []).append(c)
    columns = columns_of(kept)
    columns[STRETCH] = [None] * len(kept)
    for rest in stretches.values():
        last = rest[-1].event
        values = {"group_id": last.group_id, "log_partition": last.log_partition,
                  "log_offset": last.log_offset, "event_time": last.event_time,
                  "event_type": STRETCH, STRETCH: summary(rest, cfg)}
        for name, column in columns.items():
            column.append(values.get(name))
    return columns


def edge_rows(group: str, rng: random.Random) -> list[Event]:
    """One records-only group's rows meant to end or split its stretches: a duplicate
    delivery beside its original, commits without metadata, timestamp or member or with a
    value no commit carries, an offset
    tombstone, a transaction and its marker, a group tombstone and the commit that recreates
    the group, a malformed commit, a time that runs back, a row on another partition and one
    without a position."""
    home, t = partition_for(group), T0
    rows: list[Event] = []

    def add(kind: str, **values: object) -> Event:
        nonlocal t
        t += rng.choice((0, 5, 400, -300))  # a time running back keeps the group's clock
        e = Event(home, len(rows) * 2, t, group, kind, **values)  # type: ignore[arg-type]
        rows.append(e)
        return e

    def commit(**values: object) -> Event:
        fields: dict[str, object] = dict(topic="t", partition=rng.randrange(3),
                                         committed_offset=rng.randrange(10_000),
                                         commit_timestamp=t, member_id="m")
        fields.update(values)
        return add("OFFSET_COMMIT", **fields)

    for _ in range(6):
        commit()
    rows.append(rows[-2])  # a duplicate delivery, right behind... (re-sorted by position)
    commit(commit_metadata=None, commit_timestamp=None, member_id="")
    commit(leader_epoch=7, commit_metadata="é" * 3, expire_timestamp=t + 10_000)
    commit(subscribed_topic_names=("t",))  # a value no commit carries: the general path's
    add("OFFSET_TOMBSTONE", topic="t", partition=1)
    for _ in range(4):
        commit()
    commit(producer_id=42)
    commit()
    add("TXN_MARKER", producer_id=42, txn_result="COMMIT")
    for _ in range(3):
        commit()
    add("GROUP_TOMBSTONE")
    for _ in range(3):
        commit()  # the first recreates the group
    commit(partition=-3)  # malformed: it ends a stretch, and is rejected
    for _ in range(3):
        commit()
    other = (home + 1) % 50
    rows.append(replace(rows[-1], log_partition=other, log_offset=10**9))  # a foreign row
    rows.append(replace(rows[-1], log_partition=None, log_offset=None))  # no position
    return rows
