"""The fold as Spark calls it: many groups a call, Arrow in, wire rows out.

`bucket_fold` is the applyInPandasWithState function of the streaming job. Its key is not a
group but a bucket of groups (`BUCKET`, a hash of the group id modulo `BUCKETS`): Spark's cost
per call of the operator (a pandas frame and a state object each way) is ~0.8 ms of a
2-core machine's wall clock, more than folding a group's few rows of a micro-batch costs,
so a call per group would spend most of a busy cluster's batch on calls (docs/performance.md).
A call folds each group of its bucket that has rows, from its stored state (or a seed row a
backfill handed over), fires the timers of every group in the bucket the watermark has
passed, stores the states back and sets the bucket's event-time timeout to the earliest
deadline left, so a group that goes silent still expires members and offsets. The bucket's
state holds its groups' states (the fold's versioned JSON, deflated) and their deadlines; a
group that ends Dead with nothing left (`Group.gone`) leaves it, as Kafka's coordinator
forgets it, and a bucket with no group left leaves the store: it holds live groups only.

`batch_fold` is the same fold for `mapInArrow` over whole histories sorted by group; it can
also emit each group's final state (a `BACKFILL_STATE` row) for a stream to continue from. Both
go through `fold_groups`, and both leave the rows of plain commit records to the JVM: those
input rows go back as they came, typed (`left.py`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.fold import CoordinatorConfig, Group, dumps, loads, next_deadline
from pipeline.fold.context import Left
from pipeline.fold.events import EventColumns
from pipeline.fold.group_replay import FAILED, Tables, failed_tables, replay_group
from pipeline.spark.events.packing import columns_from_packed
from pipeline.spark.fold.left import LEFT_COLUMNS, wire_order
from pipeline.spark.fold.wire import (
    Checks,
    packed_tables,
    wire_checks,
    wire_table_of,
    with_newest,
)
from pipeline.spark.runtime.logs import quiet_padded_concat
from pipeline.spark.tables.contract import SEED

# The last line of defence (pipeline.fold.group_replay): a group whose fold raises keeps the state
# it had before the call; its rows go to rejected_events as `INTERNAL: <exception>`, and one
# FAILED wire row carries the traceback for the driver to count and log (`wire.log_failed_groups`).

BUCKET = "_bucket"  # the stream's fold key: a bucket of groups
# How many buckets the groups are hashed into. Fixed: a checkpoint's state is keyed by it.
BUCKETS = 1024
GUARD = "_watermark_guard"  # the stream's column carrying the watermark (stream.replay)
_NOT_EVENTS = (SEED, GUARD, BUCKET)
# A bucket's groups, each one's state and timeout, packed (`BucketState.packed`): PySpark
# 4.2's workers cannot read back a state schema with an array or a map in it.
STATE_SCHEMA = "groups binary"
_PACKING = 1  # the version of `BucketState.packed`'s layout, its first byte
_ENTRY = struct.Struct(">IqI")  # group id length, timeout (NO_TIMEOUT: none), state length
NO_TIMEOUT = -(2**63)


@dataclass
class Folded:
    """What `fold_groups` made: the wire, each group's state after it (None: no state to
    keep), and the groups whose fold failed (their states are as they were)."""

    wire: pa.Table
    after: dict[str | None, Group | None] = field(default_factory=dict)
    failed: set[str | None] = field(default_factory=set)


def fold_groups(table: pa.Table, checks: Checks, cfg: CoordinatorConfig, until: int | None,
                *, watermark: int | None = None, start_of: Callable[[str], bytes | None]
                | None = None, due: Iterable[str] = (), seed: bool = False) -> Folded:
    """The wire of `table`'s groups (packed rows, `packing.packed_events`, sorted by group so
    that each group's rows are together): each group's rows folded from `start_of(group)`
    (none: from nothing) and its timers fired up to `until`, then each group of `due` (no
    rows) from its start, timers only; every group's rows checked together
    (`wire.packed_tables`), and a group whose rows do not all fit their columns rejected as
    INTERNAL alone."""
    columns = columns_from_packed(table) if table.num_rows else {}
    ids = columns.get("group_id", [])
    starts = [k for k in range(len(ids)) if k == 0 or ids[k] != ids[k - 1]]
    spans = [(a, b) for a, b in zip(starts, [*starts[1:], len(ids)], strict=True)]
    folded = Folded(table)
    results: list[tuple[str | None, EventColumns, bytes | None, Tables, Left]] = []
    for group_id, a, b in [*((ids[a], a, b) for a, b in spans), *((g, 0, 0) for g in due)]:
        group_id = None if group_id is None else str(group_id)
        events = {name: column[a:b] for name, column in columns.items()} if b > a else {}
        start = None if start_of is None or group_id is None else start_of(group_id)
        after, tables, left = replay_group(group_id, start, events, until, cfg, watermark,
                                           seed=seed, leave=True)
        folded.after[group_id] = after
        if FAILED in tables:
            folded.failed.add(group_id)
        results.append((group_id, events, start, tables, left.shifted(a)))
    try:
        names_texts = packed_tables(_merged(r[3] for r in results), checks)
    except ValueError:
        results = [_checked(r, checks, folded) for r in results]
        names_texts = packed_tables(_merged(r[3] for r in results), checks)
    left = Left()
    for r in results:
        left.extend(r[4])
    order = wire_order(left)
    records = table.select(list(LEFT_COLUMNS)).take(pa.array(order, pa.int64()))
    folded.wire = wire_table_of(*names_texts, records, len(left.current), left.types_of(order))
    return folded


def _merged(each: Iterable[Tables]) -> Tables:
    merged: Tables = {}
    for tables in each:
        for name, rows in tables.items():
            merged.setdefault(name, []).extend(rows)
    return merged


def _checked(result: tuple[str | None, EventColumns, bytes | None, Tables, Left], checks: Checks,
             folded: Folded) -> tuple[str | None, EventColumns, bytes | None, Tables, Left]:
    """A group's result if its rows fit their columns; else the group rejected as INTERNAL,
    its state as it was."""
    group_id, events, start, tables, _ = result
    try:
        packed_tables(tables, checks)
    except ValueError as exc:
        folded.failed.add(group_id)
        before = _loaded(start)
        return group_id, events, start, failed_tables(group_id, events, before, exc), Left()
    return result


def _loaded(start: bytes | None) -> Group | None:
    try:
        return None if start is None else loads(start)
    except Exception:  # noqa: BLE001 - a state that cannot be read is no state to keep
        return None


@dataclass
class BucketState:
    """A bucket's stored groups: each one's state (the fold's `dumps`) and timeout (its next
    deadline, not before the watermark it was stored at)."""

    states: dict[str, bytes]
    timeouts: dict[str, int]

    @classmethod
    def of(cls, state: Any) -> BucketState:
        return cls.unpacked(state.get[0]) if state.exists else cls({}, {})

    @classmethod
    def unpacked(cls, data: bytes) -> BucketState:
        """The groups `packed` wrote: a version byte, then per group its id's length, its
        timeout and its state's length (`_ENTRY`, big-endian), its id (UTF-8) and its state."""
        view = memoryview(data)
        if not view or view[0] != _PACKING:
            raise ValueError(f"a bucket state of layout {view[0] if view else None}, not "
                             f"{_PACKING}")
        states: dict[str, bytes] = {}
        timeouts: dict[str, int] = {}
        at = 1
        while at < len(view):
            n, timeout, size = _ENTRY.unpack_from(view, at)
            at += _ENTRY.size
            group_id = bytes(view[at:at + n]).decode()
            states[group_id] = bytes(view[at + n:at + n + size])
            at += n + size
            if timeout != NO_TIMEOUT:
                timeouts[group_id] = timeout
        return cls(states, timeouts)

    def packed(self) -> bytes:
        parts = [bytes([_PACKING])]
        for group_id, data in self.states.items():
            name = group_id.encode()
            parts += [_ENTRY.pack(len(name), self.timeouts.get(group_id, NO_TIMEOUT), len(data)),
                      name, data]
        return b"".join(parts)

    def due(self, now: int | None) -> list[str]:
        """The groups whose timeout the watermark has passed (Spark's rule for a key's own
        event-time timeout: the timeout is before the watermark)."""
        return [] if now is None else [g for g, t in self.timeouts.items() if t < now]

    def keep(self, group_id: str, g: Group | None, cfg: CoordinatorConfig, watermark: int) -> None:
        if g is None or g.gone:
            self.states.pop(group_id, None)
            self.timeouts.pop(group_id, None)
            return
        self.states[group_id] = dumps(g)
        deadline = next_deadline(g, cfg)
        if deadline is None:
            self.timeouts.pop(group_id, None)
        else:
            self.timeouts[group_id] = max(deadline, watermark)

    def store(self, state: Any, watermark: int) -> None:
        if not self.states:
            if state.exists:
                state.remove()
            return
        state.update((self.packed(),))
        if self.timeouts:
            state.setTimeoutTimestamp(max(min(self.timeouts.values()), watermark))


def bucket_fold(cfg: CoordinatorConfig, arrow: pa.Schema) -> Callable[..., Iterator[pd.DataFrame]]:
    """The applyInPandasWithState function of the stream, over the packed rows of `arrow`'s
    schema (built on the driver: the workers have no JVM to parse DDL)."""
    checks = wire_checks()
    events_schema = pa.schema([f for f in arrow if f.name not in _NOT_EVENTS])

    def fold_bucket(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                    state: Any) -> Iterator[pd.DataFrame]:
        quiet_padded_concat()  # in the worker, where PySpark pads this call's output
        watermark = state.getCurrentWatermarkMs()
        now = watermark if watermark > 0 else None
        stored = BucketState.of(state)
        rows = pa.Table.from_batches([], events_schema)
        seeds: dict[str, bytes] = {}
        try:
            if not state.hasTimedOut:
                rows, seeds = _rows_and_seeds(frames, arrow, events_schema)
            present = set(rows.column("group_id").to_pylist())
            folded = fold_groups(rows, checks, cfg, now, watermark=now,
                                 start_of=lambda g: stored.states.get(g, seeds.get(g)),
                                 due=[g for g in stored.due(now) if g not in present])
        except Exception as exc:  # noqa: BLE001 - the last line of defence, see FAILED
            yield frame_of(with_newest(
                _failed_bucket(rows, seeds, stored, state, watermark, exc, checks, cfg),
                newest_ms(rows)))
            return
        for group_id, after in folded.after.items():
            if group_id is None:
                continue
            if group_id in folded.failed:  # as it was; a seed it brought is kept too
                if group_id not in stored.states and group_id in seeds:
                    stored.keep(group_id, _loaded(seeds[group_id]), cfg, watermark)
                continue
            stored.keep(group_id, after, cfg, watermark)
        stored.store(state, watermark)
        yield frame_of(with_newest(folded.wire, newest_ms(rows)))

    return fold_bucket


def _rows_and_seeds(frames: Iterable[pd.DataFrame], arrow: pa.Schema, events: pa.Schema
                    ) -> tuple[pa.Table, dict[str, bytes]]:
    """A bucket's rows of the micro-batch as Arrow, sorted by group, and the states seed rows
    (a backfill's hand-off: `SEED` set, every event column null) brought, by group."""
    table = arrow_of(frames, arrow)
    seeded = table.column(SEED).is_valid()
    seeds = {str(g): bytes(s) for g, s in zip(
        table.filter(seeded).column("group_id").to_pylist(),
        table.filter(seeded).column(SEED).to_pylist(), strict=True)}
    rows = table.filter(pc.invert(seeded)).select(events.names)
    return rows.sort_by([("group_id", "ascending")]), seeds


def _failed_bucket(rows: pa.Table, seeds: Mapping[str, bytes], stored: BucketState, state: Any,
                   watermark: int, exc: Exception, checks: Checks,
                   cfg: CoordinatorConfig) -> pa.Table:
    """A bucket whose call raised outside any group's fold: every group's rows rejected as
    INTERNAL, every state kept as it was (a seed brought too)."""
    for group_id, seeded in seeds.items():
        if group_id not in stored.states:
            stored.keep(group_id, _loaded(seeded), cfg, watermark)
    stored.store(state, watermark)
    columns = columns_from_packed(rows) if rows.num_rows else {}
    ids = columns.get("group_id", [])
    tables: Tables = {}
    for group_id in dict.fromkeys(ids):
        mine = [k for k, g in enumerate(ids) if g == group_id]
        events = {name: [column[k] for k in mine] for name, column in columns.items()}
        gid = None if group_id is None else str(group_id)
        before = _loaded(stored.states.get(gid)) if gid is not None else None
        for name, table_rows in failed_tables(gid, events, before, exc).items():
            tables.setdefault(name, []).extend(table_rows)
    names, texts = packed_tables(tables, checks)
    return wire_table_of(names, texts, rows.select(list(LEFT_COLUMNS)).slice(0, 0), 0, [])


def newest_ms(rows: pa.Table) -> int | None:
    """The newest `event_time` of a call's rows in epoch ms, as Spark's watermark takes it
    (microseconds divided down); None: no row has one."""
    if not rows.num_rows:
        return None
    top = pc.max(rows.column("event_time").cast(pa.int64())).as_py()
    return None if top is None else top // 1000


# The crossings applyInPandasWithState imposes, both ways: its pandas frames in as Arrow, the
# Arrow wire out as a frame. Integers keep pandas' nullable types (the replay asks Spark for
# them, `packing.PREFER_INT_EXTENSION`): a float64 holds them exactly only up to 2^53.
_NULLABLE_INTS = {pa.int64(): pd.Int64Dtype(), pa.int32(): pd.Int32Dtype(),
                  pa.int16(): pd.Int16Dtype(), pa.int8(): pd.Int8Dtype()}


def arrow_of(frames: Iterable[pd.DataFrame], schema: pa.Schema) -> pa.Table:
    """The operator's input frames as one Arrow table of `schema`."""
    parts = [pa.Table.from_pandas(pdf, schema=schema, preserve_index=False)
             for pdf in frames if len(pdf)]
    return pa.concat_tables(parts) if parts else pa.Table.from_batches([], schema)


def frame_of(wire: pa.Table) -> pd.DataFrame:
    """The Arrow wire as the frame the operator returns."""
    return wire.to_pandas(types_mapper=_NULLABLE_INTS.get)


def batch_fold(cfg: CoordinatorConfig, until_ms: int | None, seed: bool = False
               ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """mapInArrow over a partition's rows sorted by group (`backfill.folded_history`): each
    group's whole history in one `replay_group` call, then its timers up to `until_ms`;
    with `seed`, also the group's final state as a `BACKFILL_STATE` row. The input rows whose
    rows the JVM builds go back as they came (`left.py`).

    Many groups a batch, not one Arrow stream a group: Spark's and pyarrow's cost per call
    was most of a small group's. A batch's columns become Python values once, each complete
    group folds on its slice of them (a group that runs on into the next batch waits for
    it), and one wire batch goes back per batch in. The rows come packed
    (`packing.packed_events`)."""
    checks = wire_checks()

    def fold_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[pa.RecordBatch] = []  # the last group seen, which may go on
        for batch in batches:
            ids = batch.column("group_id").to_pylist()
            if not ids:
                continue
            if pending and ids[0] != pending[0].column("group_id")[0].as_py():
                yield from _folded(pa.Table.from_batches(pending))
                pending = []
            last = _last_group_start(ids)
            if last == 0:
                pending.append(batch)  # one group throughout: it may go on
                continue
            yield from _folded(pa.Table.from_batches([*pending, batch.slice(0, last)]))
            pending = [batch.slice(last)]
        if pending:
            yield from _folded(pa.Table.from_batches(pending))

    def _folded(table: pa.Table) -> Iterator[pa.RecordBatch]:
        yield from fold_groups(table, checks, cfg, until_ms, seed=seed).wire.to_batches()

    return fold_partition


def _last_group_start(ids: list[Any]) -> int:
    """Where the last group of `ids` (sorted by group) starts."""
    last = ids[-1]
    k = len(ids) - 1
    while k > 0 and ids[k - 1] == last:
        k -= 1
    return k


