"""The fold as Spark calls it: per group, a pandas frame of rows in, wire rows out.

`stateful_fold` is the applyInPandasWithState function of the streaming job: through
`replay_group` (pipeline.fold.group_replay) it folds the micro-batch's rows in log order onto the
group's stored state (the fold's versioned JSON), fires every timer the watermark has
passed, stores the state back and sets the group's next deadline as its event-time timeout,
so a group that goes silent still expires members and offsets. `batch_fold` is the same
call for `applyInArrow`, over a whole history at once; it can also emit each group's final
state (a `SEED_TABLE` row) for a stream to continue from. A stream's first rows for a group
may include such a seed row (`SEED` set, every event column null): the group starts from
the seeded state instead of from nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pandas as pd
import pyarrow as pa

from pipeline.fold import CoordinatorConfig, Group, dumps, loads, next_deadline
from pipeline.fold.events import EventColumns
from pipeline.fold.group_replay import failed_tables, replay_group
from pipeline.spark.contract import SEED
from pipeline.spark.logs import quiet_padded_concat
from pipeline.spark.packing import columns_from_packed, columns_from_packed_frames, unpacked_schema
from pipeline.spark.wire import wire_checks, wire_frame, wire_table

# The last line of defence (pipeline.fold.group_replay): a group whose fold raises keeps the state
# it had before the call; its rows go to rejected_events as `INTERNAL: <exception>`, and one
# FAILED wire row carries the traceback for the driver to count and log (`wire.log_failed_groups`).


def stateful_fold(cfg: CoordinatorConfig) -> Callable[..., Iterator[pd.DataFrame]]:
    as_is = unpacked_schema()  # on the driver: workers have no JVM to parse DDL
    checks = wire_checks()  # on the driver, as the schemas are parsed

    def fold_group(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                   state: Any) -> Iterator[pd.DataFrame]:
        quiet_padded_concat()  # in the worker, where PySpark pads this call's output
        group_id = None if key[0] is None else str(key[0])
        watermark = state.getCurrentWatermarkMs()
        now = watermark if watermark > 0 else None
        start: bytes | None = None
        events: EventColumns = {}
        try:
            if state.hasTimedOut:
                start = state.get[0]
            else:
                seed, event_frames = split_seed(frames)
                events = columns_from_packed_frames(event_frames, as_is)
                start = state.get[0] if state.exists else seed
            after, tables = replay_group(group_id, start, events, now, cfg, now)
            wire = wire_frame(tables, checks)
            stored = None if after is None else (dumps(after), next_deadline(after, cfg))
        except Exception as exc:  # noqa: BLE001 - the last line of defence, see FAILED
            before = _loaded(start)  # as it was (a seed the call brought is kept too)
            if before is not None:
                store(state, dumps(before), next_deadline(before, cfg), watermark)
            yield wire_frame(failed_tables(group_id, events, before, exc), checks)
            return
        if stored is not None:
            store(state, *stored, watermark)
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


def batch_fold(cfg: CoordinatorConfig, until_ms: int | None, seed: bool = False
               ) -> Callable[[tuple[Any, ...], pa.Table], pa.Table]:
    """applyInArrow: a group's whole history in one call, then its timers up to `until_ms`;
    with `seed`, also the group's final state as a `SEED_TABLE` row. Arrow in and out: the
    pandas conversions cost more than the fold itself on groups of a few hundred rows. The
    rows come packed (`packing.packed_events`): one JSON object a row, not 60 columns."""
    checks = wire_checks()

    def fold_history(key: tuple[Any, ...], table: pa.Table) -> pa.Table:
        group_id = key[0].as_py()
        group_id = None if group_id is None else str(group_id)
        events: EventColumns = {}
        try:
            events = columns_from_packed(table)
            return wire_table(replay_group(group_id, None, events, until_ms, cfg, seed=seed)[1],
                              checks)
        except Exception as exc:  # noqa: BLE001 - the last line of defence, see FAILED
            return wire_table(failed_tables(group_id, events, None, exc), checks)

    return fold_history

