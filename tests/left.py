"""The rows of the records the fold leaves to its caller (`replay_group(..., leave=True)`),
built in plain Python from the records alone, by the fold's own `offsets.from_request` and
row functions: what tests/fold/test_left.py holds the fold to, and tests/spark/test_left.py
the JVM's `left_rows`; and the logs meant to end or split a run of such records
(`edge_rows`)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from pipeline.fold import Event, Offset
from pipeline.fold.context import offset_columns, offset_history_row
from pipeline.fold.offsets import from_request
from pipeline.fold.partitioning import partition_for

T0 = 1_700_000_000_000


def left_rows(events: list[Event], left: list[int], types: list[str],
              table: str = "offset_history") -> list[dict[str, Any]]:
    """`table`'s rows (offset_history or committed_offsets) of the records of `events` at
    `left` (the indices the fold named), each stored as the fold stores a commit
    (`from_request`) at its own time, in a group of the type `types` gives at the same place
    (`Left.types_of`)."""
    rows = []
    for e, group_type in zip((events[i] for i in left), types, strict=True):
        assert e.group_id is not None and e.topic is not None and e.partition is not None
        assert e.committed_offset is not None and e.event_time is not None
        assert e.log_partition is not None and e.log_offset is not None
        tp = (e.topic, e.partition)
        values = from_request(e.committed_offset, e.leader_epoch, e.commit_metadata,
                              e.commit_timestamp, e.expire_timestamp, e.member_id,
                              e.generation_id, e.log_partition, e.log_offset, e.event_time)
        rows.append(offset_columns(e.group_id, tp, Offset(*values), group_type)
                    if table == "committed_offsets"
                    else offset_history_row(e.group_id, tp, values, e.event_time, "COMMIT", None,
                                            group_type))
    return rows


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
