"""The fold as Spark calls it: per group, a pandas frame of rows in, wire rows out.

`stateful_fold` is the applyInPandasWithState function of the streaming job: through
`replay_group` (pipeline.fold.group_replay) it folds the micro-batch's rows in log order onto the
group's stored state (the fold's versioned JSON), fires every timer the watermark has
passed, stores the state back and sets the group's next deadline as its event-time timeout,
so a group that goes silent still expires members and offsets. A group that ends Dead with
nothing left (`Group.gone`) leaves the state store, as Kafka's coordinator forgets it; a
group with no deadline carries no timeout, so the store holds live groups only. `batch_fold` is the same
call for `mapInArrow`, over whole histories sorted by group; it can also emit each group's final
state (a `SEED_TABLE` row) for a stream to continue from. A stream's first rows for a group
may include such a seed row (`SEED` set, every event column null): the group starts from
the seeded state instead of from nothing. Both leave the rows of plain commit
records to the JVM: those input rows go back as they came (`left.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pandas as pd
import pyarrow as pa

from pipeline.fold import CoordinatorConfig, Group, dumps, loads, next_deadline
from pipeline.fold.context import Left
from pipeline.fold.events import EventColumns
from pipeline.fold.group_replay import Tables, failed_tables, replay_group
from pipeline.spark.events.packing import (
    PACKED,
    columns_from_packed,
    columns_from_packed_frames,
    unpacked_schema,
)
from pipeline.spark.fold.left import LEFT_COLUMNS, wire_order
from pipeline.spark.fold.wire import Checks, packed_tables, wire_checks, wire_frame, wire_table_of
from pipeline.spark.runtime.logs import quiet_padded_concat
from pipeline.spark.tables.contract import SEED

# The last line of defence (pipeline.fold.group_replay): a group whose fold raises keeps the state
# it had before the call; its rows go to rejected_events as `INTERNAL: <exception>`, and one
# FAILED wire row carries the traceback for the driver to count and log (`wire.log_failed_groups`).


def stateful_fold(cfg: CoordinatorConfig) -> Callable[..., Iterator[pd.DataFrame]]:
    as_is = unpacked_schema(typed=False)  # on the driver: workers have no JVM to parse DDL
    checks = wire_checks()  # on the driver, as the schemas are parsed

    def fold_group(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                   state: Any) -> Iterator[pd.DataFrame]:
        quiet_padded_concat()  # in the worker, where PySpark pads this call's output
        group_id = None if key[0] is None else str(key[0])
        watermark = state.getCurrentWatermarkMs()
        now = watermark if watermark > 0 else None
        start: bytes | None = None
        events: EventColumns = {}
        event_frames: list[pd.DataFrame] = []
        try:
            if state.hasTimedOut:
                start = state.get[0]
            else:
                seed, event_frames = split_seed(frames)
                events = columns_from_packed_frames(event_frames, as_is)
                start = state.get[0] if state.exists else seed
            after, tables, left = replay_group(group_id, start, events, now, cfg, now, leave=True)
            order = wire_order(left)
            wire = wire_frame(tables, checks, group_id, _packed_texts(event_frames, order),
                              len(left.current), left.types_of(order))
            stored = None if after is None or after.gone else (dumps(after),
                                                                next_deadline(after, cfg))
        except Exception as exc:  # noqa: BLE001 - the last line of defence, see FAILED
            before = _loaded(start)  # as it was (a seed the call brought is kept too)
            if before is not None:
                store(state, dumps(before), next_deadline(before, cfg), watermark)
            yield wire_frame(failed_tables(group_id, events, before, exc), checks)
            return
        if stored is not None:
            store(state, *stored, watermark)
        elif state.exists:  # removed, as Kafka's coordinator removes it: its rows are written
            state.remove()
        yield wire

    return fold_group


def _loaded(start: bytes | None) -> Group | None:
    try:
        return None if start is None else loads(start)
    except Exception:  # noqa: BLE001 - a state that cannot be read is no state to keep
        return None


def store(state: Any, stored: bytes, deadline: int | None, watermark: int) -> None:
    """Keep the group's state; its next deadline becomes its event-time timeout."""
    state.update((stored,))
    if deadline is not None:
        state.setTimeoutTimestamp(max(deadline, watermark))


def _packed_texts(frames: list[pd.DataFrame], rows: list[int]) -> list[str]:
    """The packed JSON of the fold's input rows at `rows` (positions among `frames`' rows,
    in order), as the frames hold it: the JVM reads a left row's values from it."""
    if not rows:
        return []
    texts = [text for pdf in frames if len(pdf) for text in pdf[PACKED].tolist()]
    return [texts[i] for i in rows]


def split_seed(frames: Iterable[pd.DataFrame]) -> tuple[bytes | None, list[pd.DataFrame]]:
    """The seeded state among a group's rows, if any, and the frames of real events."""
    seed: bytes | None = None
    events: list[pd.DataFrame] = []
    for pdf in frames:
        if SEED in pdf.columns:
            seeded = pdf[SEED].notna()
            if seeded.any():
                seed = bytes(pdf.loc[seeded, SEED].iloc[-1])
                pdf = pdf.loc[~seeded]
        events.append(pdf)
    return seed, events


def batch_fold(cfg: CoordinatorConfig, until_ms: int | None, seed: bool = False,
               leave: bool = True
               ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """mapInArrow over a partition's rows sorted by group (`backfill.folded_history`): each
    group's whole history in one `replay_group` call, then its timers up to `until_ms`;
    with `seed`, also the group's final state as a `SEED_TABLE` row; with `leave`, the
    input rows whose rows the JVM builds go back as they came (`left.py`; without it, the
    fold writes every row: the benchmark's baseline).

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
                yield from _folded(pa.Table.from_batches(pending), checks, until_ms, cfg, seed,
                                   leave)
                pending = []
            last = _last_group_start(ids)
            if last == 0:
                pending.append(batch)  # one group throughout: it may go on
                continue
            yield from _folded(pa.Table.from_batches([*pending, batch.slice(0, last)]), checks,
                               until_ms, cfg, seed, leave)
            pending = [batch.slice(last)]
        if pending:
            yield from _folded(pa.Table.from_batches(pending), checks, until_ms, cfg, seed,
                               leave)

    return fold_partition


def _last_group_start(ids: list[Any]) -> int:
    """Where the last group of `ids` (sorted by group) starts."""
    last = ids[-1]
    k = len(ids) - 1
    while k > 0 and ids[k - 1] == last:
        k -= 1
    return k


def _folded(table: pa.Table, checks: Checks, until_ms: int | None, cfg: CoordinatorConfig,
            seed: bool, leave: bool) -> Iterator[pa.RecordBatch]:
    """The wire of `table`'s groups (whole, sorted by group), as record batches: every
    group's rows checked together (`wire.packed_tables`), and a group whose rows do not all
    fit their columns rejected as INTERNAL alone."""
    columns = columns_from_packed(table)
    ids = columns["group_id"]
    starts = [k for k in range(len(ids)) if k == 0 or ids[k] != ids[k - 1]]
    results: list[tuple[str | None, EventColumns, Tables, Left]] = []
    for a, b in zip(starts, [*starts[1:], len(ids)], strict=True):
        group_id = None if ids[a] is None else str(ids[a])
        events = {name: column[a:b] for name, column in columns.items()}
        _, tables, left = replay_group(group_id, None, events, until_ms, cfg, seed=seed,
                                      leave=leave)
        results.append((group_id, events, tables, left.shifted(a)))
    try:
        names_texts = packed_tables(_merged(r[2] for r in results), checks)
    except ValueError:
        results = [_checked(r, checks) for r in results]
        names_texts = packed_tables(_merged(r[2] for r in results), checks)
    left = Left()
    for r in results:
        left.extend(r[3])
    order = wire_order(left)
    records = table.select(list(LEFT_COLUMNS)).take(pa.array(order, pa.int64()))
    yield from wire_table_of(*names_texts, records, len(left.current),
                             left.types_of(order)).to_batches()


def _merged(each: Iterable[Tables]) -> Tables:
    merged: Tables = {}
    for tables in each:
        for name, rows in tables.items():
            merged.setdefault(name, []).extend(rows)
    return merged


def _checked(result: tuple[str | None, EventColumns, Tables, Left], checks: Checks
             ) -> tuple[str | None, EventColumns, Tables, Left]:
    """A group's result if its rows fit their columns; else the group rejected as INTERNAL."""
    group_id, events, tables, _ = result
    try:
        packed_tables(tables, checks)
    except ValueError as exc:
        return group_id, events, failed_tables(group_id, events, None, exc), Left()
    return result
