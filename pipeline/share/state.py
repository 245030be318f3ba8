"""Each share partition's state as Kafka's share coordinator replays `__share_group_state`
(`ShareCoordinatorShard.replay`), row by row of the decoded log (`pipeline.decode.share_state`).

Keyed by (group id, topic id, partition):

- a ShareSnapshot replaces the key's state whole: snapshot and state epochs, leader epoch,
  start offset (SPSO), delivery-complete count, timestamps and in-flight batches as written;
- a ShareUpdate merges into it (`ShareGroupOffset` merge): a start offset or leader epoch of
  -1 keeps the state's, anything else replaces it; the snapshot and state epochs and the
  timestamps stay the snapshot's; the batches are the state's and the update's combined
  (`combine`) from the new start offset on. An update to a key with no state starts one
  (state epoch 0, no timestamps), as Kafka's replay does. The delivery-complete count: the
  update's when it carries one (Kafka 4.2+), else the state's. (How 4.2/4.3's merge treats it
  was not found in a readable source; Kafka's write path writes the count it wants into
  each record, so the last record's is taken.)
- a ShareSnapshot tombstone deletes the key's state: a later record starts from nothing.

What Kafka's shard would not take is refused with a reason (`Refused`): a ShareUpdate
tombstone (Kafka writes none), an unknown record type (the shard ignores it), a row
without a key.

Share lag as Kafka 4.2 computes it (KIP-1226, `GroupCoordinatorService`): the partition's
end offset - the start offset - the delivery-complete count; unknown (None, `-` in
kafka-share-groups.sh) while either is -1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from schemas.events import MALFORMED_RECORD
from schemas.share_state import DELIVERY_STATES, SHARE_PARTITION_STATE

UNSET = -1  # Kafka's "not initialized" / "unchanged" start offset, epoch and count
DELETED = "DELETED"  # share_partition_state's `change` of a tombstone: the partition has no state
CHANGES = {"SHARE_SNAPSHOT": "SNAPSHOT", "SHARE_UPDATE": "UPDATE",
           "SHARE_SNAPSHOT_TOMBSTONE": DELETED}

Key = tuple[str, str, int]  # group id, topic id, partition
_HISTORY_COLUMNS = tuple(c.name for c in SHARE_PARTITION_STATE)


class StateBatch(NamedTuple):
    """In-flight records [first_offset, last_offset] in one delivery state and count."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True)
class SharePartition:
    """One share partition's state, as Kafka's `ShareGroupOffset` holds it."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    create_timestamp: int | None
    write_timestamp: int | None
    batches: tuple[StateBatch, ...]


class Refused(ValueError):
    """A row Kafka's share coordinator would not apply; its message is the reason."""


def combine(old: Iterable[StateBatch], new: Iterable[StateBatch],
            start_offset: int) -> tuple[StateBatch, ...]:
    """Kafka's `PersisterStateBatchCombiner.combineStateBatches`, step for step: the batches of
    both, pruned below `start_offset` (unless it is -1), in a sorted set (by first offset,
    last offset, count, state; equal batches once); then, as long as two neighbours overlap,
    or touch with the same state and count, the first such pair is resolved: the same state
    and count join; otherwise the batch delivered more times (the same count: the higher
    state) keeps the overlap and the other keeps what lies outside it. The batches before
    that pair are final as they stand (so two final batches may touch with the same state
    and count, as in Kafka). Offset by offset, each ends in the greatest (count, state) of
    the batches that held it."""
    batches = [*old, *new]
    if start_offset != UNSET:
        batches = [b if b.first_offset >= start_offset else b._replace(first_offset=start_offset)
                   for b in batches if b.last_offset >= start_offset]
    pending = sorted(set(batches), key=_order)
    done: list[StateBatch] = []
    while True:
        k = _first_overlap(pending)
        if k is None:
            return (*done, *pending)
        done += pending[:k]
        last, candidate = pending[k], pending[k + 1]
        rest = pending[k + 2:]
        pending = sorted({*rest, *_resolved(last, candidate)}, key=_order)


def _order(b: StateBatch) -> tuple[int, int, int, int]:
    """`PersisterStateBatch.compareTo`: first offset, last offset, count, state."""
    return b.first_offset, b.last_offset, b.delivery_count, b.delivery_state


def _first_overlap(batches: list[StateBatch]) -> int | None:
    """Where the first pair of neighbours that overlap, or touch alike, starts."""
    for k in range(len(batches) - 1):
        prev, candidate = batches[k], batches[k + 1]
        if candidate.first_offset <= prev.last_offset or (
                prev.last_offset + 1 == candidate.first_offset
                and _rank(prev) == _rank(candidate)):
            return k
    return None


def _rank(b: StateBatch) -> tuple[int, int]:
    return b.delivery_count, b.delivery_state


def _resolved(last: StateBatch, candidate: StateBatch) -> list[StateBatch]:
    """The batches a pair becomes: joined alike, else the higher owning the overlap (`last`
    starts first, or with `candidate` and ends no later)."""
    if _rank(last) == _rank(candidate):
        return [last._replace(last_offset=max(last.last_offset, candidate.last_offset))]
    high, low = (last, candidate) if _rank(last) > _rank(candidate) else (candidate, last)
    pieces = [high]
    if low.first_offset < high.first_offset:
        pieces.append(low._replace(last_offset=high.first_offset - 1))
    if low.last_offset > high.last_offset:
        pieces.append(low._replace(first_offset=high.last_offset + 1))
    return pieces


def _batches(row: Mapping[str, Any]) -> tuple[StateBatch, ...]:
    return tuple(StateBatch(b["first_offset"], b["last_offset"], b["delivery_state"],
                            b["delivery_count"]) for b in row.get("state_batches") or ())


def key_of(row: Mapping[str, Any]) -> Key:
    group_id, topic_id, partition = row.get("group_id"), row.get("topic_id"), row.get("partition")
    if group_id is None or topic_id is None or partition is None:
        raise Refused("MALFORMED: no group id, topic id or partition")
    return group_id, topic_id, partition


def apply(state: SharePartition | None, row: Mapping[str, Any]) -> SharePartition | None:
    """The key's state after `row` (a decoded `__share_group_state` row of that key); None
    once deleted. Raises `Refused` for a row Kafka's shard would not apply."""
    kind = row.get("event_type")
    count = row.get("delivery_complete_count")
    count = UNSET if count is None else count
    if kind == "SHARE_SNAPSHOT":
        return SharePartition(row["snapshot_epoch"], row["state_epoch"], row["leader_epoch"],
                              row["start_offset"], count, row.get("create_timestamp"),
                              row.get("write_timestamp"), _batches(row))
    if kind == "SHARE_SNAPSHOT_TOMBSTONE":
        return None
    if kind == "SHARE_UPDATE":
        if state is None:
            return SharePartition(row["snapshot_epoch"], 0, row["leader_epoch"],
                                  row["start_offset"], count, None, None,
                                  combine((), _batches(row), row["start_offset"]))
        start = state.start_offset if row["start_offset"] == UNSET else row["start_offset"]
        leader = state.leader_epoch if row["leader_epoch"] == UNSET else row["leader_epoch"]
        return replace(state, leader_epoch=leader, start_offset=start,
                       delivery_complete_count=state.delivery_complete_count
                       if count == UNSET else count,
                       batches=combine(state.batches, _batches(row), start))
    if kind == "SHARE_UPDATE_TOMBSTONE":
        raise Refused("MALFORMED: a ShareUpdate tombstone (Kafka deletes share state with "
                      "ShareSnapshot tombstones only)")
    raise Refused(f"UNSUPPORTED_RECORD: record type {row.get('record_type')} of "
                  "__share_group_state (Kafka's share coordinator ignores it)")


def history_row(key: Key, state: SharePartition | None, row: Mapping[str, Any]) -> dict[str, Any]:
    """The share_partition_state row of `row` (schemas.share_state.SHARE_PARTITION_STATE):
    the key's state after it (`state`, None once deleted)."""
    out: dict[str, Any] = dict.fromkeys(_HISTORY_COLUMNS)
    out |= {
        "group_id": key[0], "topic_id": key[1], "partition": key[2],
        "event_time": row.get("event_time"), "log_partition": row.get("log_partition"),
        "log_offset": row.get("log_offset"), "record_layout": row.get("record_layout"),
        "change": CHANGES[row["event_type"]]}
    if state is None:
        return out
    counts = dict.fromkeys(DELIVERY_STATES.values(), 0)
    for b in state.batches:
        name = DELIVERY_STATES.get(b.delivery_state)
        if name is not None:
            counts[name] += b.last_offset - b.first_offset + 1
    out.update(
        snapshot_epoch=state.snapshot_epoch, state_epoch=state.state_epoch,
        leader_epoch=state.leader_epoch, start_offset=state.start_offset,
        delivery_complete_count=state.delivery_complete_count,
        create_timestamp=state.create_timestamp, write_timestamp=state.write_timestamp,
        in_flight=sum(b.last_offset - b.first_offset + 1 for b in state.batches),
        available=counts["AVAILABLE"], acknowledged=counts["ACKNOWLEDGED"],
        archived=counts["ARCHIVED"],
        state_batches=[b._asdict() for b in state.batches])
    return out


@dataclass
class Replayed:
    """What `replay` made of a run of rows: each key's state after them (None: deleted), a
    share_partition_state row per record applied, and the rows refused, with the reason."""

    states: dict[Key, SharePartition | None] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[tuple[Mapping[str, Any], str]] = field(default_factory=list)
    positions: dict[Key, tuple[int, int]] = field(default_factory=dict)


def state_of(row: Mapping[str, Any]) -> SharePartition | None:
    """The state a share_partition_state row says its key had (None: deleted)."""
    if row["change"] == DELETED:
        return None
    return SharePartition(row["snapshot_epoch"], row["state_epoch"], row["leader_epoch"],
                          row["start_offset"], row["delivery_complete_count"],
                          row.get("create_timestamp"), row.get("write_timestamp"),
                          _batches(row))


def resumed(last_rows: Iterable[Mapping[str, Any]]) -> Replayed:
    """A replay to continue from: each key's state and position as its last
    share_partition_state row (`history_row`'s) says them. A stream keeps only those rows
    between micro-batches (`_share_state`), not the history."""
    out = Replayed()
    for row in last_rows:
        key = (row["group_id"], row["topic_id"], row["partition"])
        out.states[key] = state_of(row)
        out.positions[key] = (row["log_partition"], row["log_offset"])
    return out


def replay(rows: Iterable[Mapping[str, Any]], before: Replayed | None = None) -> Replayed:
    """Apply decoded `__share_group_state` rows in log order (by partition and offset: a
    key's records are all in one partition), onto `before`'s states. A row at or before its
    key's last applied position is a DUPLICATE; one Kafka's shard would not apply is refused
    (`Refused`); neither changes a state."""
    out = Replayed() if before is None else Replayed(dict(before.states), [], [],
                                                     dict(before.positions))
    ordered = sorted(rows, key=lambda r: (r.get("log_partition") is not None,
                                          r.get("log_partition") or 0, r.get("log_offset") or 0))
    for row in ordered:
        try:
            if row.get("event_type") == MALFORMED_RECORD:
                raise Refused(f"MALFORMED: {row.get('decode_error')}")
            key = key_of(row)
            lp, lo = row.get("log_partition"), row.get("log_offset")
            if lp is None or lo is None:
                raise Refused("MALFORMED: no position in __share_group_state")
            at = (lp, lo)
            last = out.positions.get(key)
            if last is not None and at <= last:
                raise Refused("DUPLICATE: at or before the key's last record applied")
            state = apply(out.states.get(key), row)
        except Refused as e:
            out.rejected.append((row, str(e)))
            continue
        out.states[key] = state
        out.positions[key] = at
        out.history.append(history_row(key, state, row))
    return out


def share_lag(end_offset: int | None, state: SharePartition | None) -> int | None:
    """Kafka 4.2's share lag of a partition: end offset - start offset - delivery-complete
    count; None (kafka-share-groups.sh prints `-`) while any of them is unknown."""
    if (end_offset is None or state is None or state.start_offset == UNSET
            or state.delivery_complete_count == UNSET):
        return None
    return end_offset - state.start_offset - state.delivery_complete_count
