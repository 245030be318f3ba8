"""The JVM's projection (`pipeline/spark/fold/projection.py`) restated in plain Python: the rows
the fold leaves to its caller (`replay_group(..., left=Left())`) as offset_history and
committed_offsets rows, built from the input rows alone: the oracle
tests/fold/test_projection.py holds the fold to; and the logs meant to end or split a run
of such rows (`edge_rows`)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from pipeline.fold import Event
from pipeline.fold.partitioning import partition_for

T0 = 1_700_000_000_000


def projected(events: list[Event], rows: list[int], table: str = "offset_history"
              ) -> list[dict[str, Any]]:
    """`table`'s rows (offset_history or committed_offsets) of `events` at `rows` (the
    indices the fold named), each stored as the fold stores a commit (metadata "" for none,
    its own time for no commit timestamp, no member for an empty member id) at its own
    time."""
    built = [{"group_id": e.group_id, "topic": e.topic, "partition": e.partition,
              "committed_offset": e.committed_offset, "leader_epoch": e.leader_epoch,
              "commit_metadata": "" if e.commit_metadata is None else e.commit_metadata,
              "commit_timestamp": e.event_time if e.commit_timestamp is None
              else e.commit_timestamp,
              "expire_timestamp": e.expire_timestamp, "member_id": e.member_id or None,
              "generation_id": None, "log_partition": e.log_partition,
              "log_offset": e.log_offset, "event_time": e.event_time, "change": "COMMIT",
              "producer_id": None}
             for e in (events[i] for i in rows)]
    if table == "committed_offsets":
        for row in built:
            for name in ("event_time", "change", "producer_id"):
                del row[name]
    return built


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
