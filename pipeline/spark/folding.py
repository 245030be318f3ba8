"""The fold as Spark calls it: per group, a pandas frame of rows in, wire rows out.

`stateful_fold` is the applyInPandasWithState function of the streaming job: it reads the
group's stored state (the fold's versioned JSON), folds the micro-batch's rows in log order,
fires every timer the watermark has passed, stores the state back and sets the group's next
deadline as its event-time timeout, so a group that goes silent still expires members and
offsets. `batch_fold` is the same fold for `applyInPandas`, over a whole history at once;
it can also emit each group's final state (a `SEED_TABLE` row) for a stream to continue
from. A stream's first rows for a group may include such a seed row (`SEED` set, every
event column null): the group starts from the seeded state instead of from nothing.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from pipeline.fold import (
    CoordinatorConfig,
    Event,
    FoldResult,
    Group,
    advance,
    dumps,
    fold,
    group_state_row,
    loads,
    next_deadline,
    reject_unkeyed,
)
from pipeline.fold.context import offset_columns
from pipeline.fold.fold import rejected_row
from pipeline.spark.convert import (
    Tagged,
    events_from_arrow,
    events_from_frames,
    wire_frame,
    wire_table,
)
from pipeline.spark.quiet import quiet_padded_concat
from pipeline.spark.tables import SEED, SEED_TABLE, event_schema, wire_schema

# The last line of defence: a group whose fold raises anything keeps the state it had before
# the call; its rows go to rejected_events as `INTERNAL: <exception>`, and one FAILED wire
# row carries the traceback for the driver to count and log (sinks.py, backfill.py).
FAILED = "_group_failed"
INTERNAL = "INTERNAL"


def tagged_rows(result: FoldResult, cfg: CoordinatorConfig) -> list[Tagged]:
    """Every output row of a fold call, plus the group's current rows it changed."""
    out, g = result.outputs, result.group
    rows: list[Tagged] = [("group_transitions", r) for r in out.transitions]
    rows += [("rebalances", r) for r in out.rebalances]
    rows += [("offset_history", r) for r in out.offset_history]
    rows += [("rejected_events", r) for r in out.rejected]
    rows += [("error_responses", r) for r in out.answered]
    rows += [("group_history", r) for r in out.history]
    if g.exists or g.state_since is not None:
        # A group that never existed (every row refused) has no row: Kafka has no such group.
        rows.append(("group_state", group_state_row(g, cfg)))
    for tp in sorted({(h["topic"], h["partition"]) for h in out.offset_history}):
        o = g.offsets.get(tp)
        if o is None:
            rows.append(("committed_offsets", {"group_id": g.group_id, "topic": tp[0],
                                               "partition": tp[1], "_deleted": True}))
        else:
            rows.append(("committed_offsets", offset_columns(g.group_id, tp, o)))
    return rows


def failed_rows(group_id: Any, events: list[Event], before: Group | None,
                exc: BaseException) -> list[Tagged]:
    """The rows of a group whose fold raised: each event rejected as INTERNAL, and the
    FAILED row with the traceback."""
    text = f"{type(exc).__name__}: {exc}"
    reason = f"{INTERNAL}: {text if len(text) <= 1000 else text[:997] + '...'}"
    rows: list[Tagged] = [("rejected_events", rejected_row(e, reason, before)) for e in events]
    rows.append((FAILED, {"group_id": None if group_id is None else str(group_id),
                          "reason": "".join(traceback.format_exception(exc))}))
    return rows


def _merged(first: FoldResult, second: FoldResult) -> FoldResult:
    first.outputs.extend(second.outputs)
    return FoldResult(second.group, first.outputs)


@dataclass
class _Seen:
    """What a call learnt before it failed: the group's state before it, the rows it got."""

    before: Group | None = None
    events: list[Event] = field(default_factory=list)


def stateful_fold(cfg: CoordinatorConfig) -> Callable[..., Iterator[pd.DataFrame]]:
    events_type, wire_type = event_schema(), wire_schema()  # on the driver

    def fold_group(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                   state: Any) -> Iterator[pd.DataFrame]:
        quiet_padded_concat()  # in the worker, where PySpark pads this call's output
        group_id, watermark, seen = key[0], state.getCurrentWatermarkMs(), _Seen()
        try:
            wire, after = fold_call(group_id, frames, state, watermark, seen)
        except Exception as exc:  # noqa: BLE001 - the last line of defence, see FAILED
            if seen.before is not None:  # as it was (a seed the call brought is kept too)
                store(state, dumps(seen.before), next_deadline(seen.before, cfg), watermark)
            yield wire_frame(failed_rows(group_id, seen.events, seen.before, exc), wire_type)
            return
        if after is not None:
            store(state, *after, watermark)
        yield wire

    def fold_call(group_id: Any, frames: Iterator[pd.DataFrame], state: Any, watermark: int,
                  seen: _Seen) -> tuple[pd.DataFrame, tuple[bytes, int | None] | None]:
        """The call's wire frame, and the state and deadline to store (None: none)."""
        if state.hasTimedOut:
            seen.before = loads(state.get[0])
            result = advance(seen.before, watermark, cfg)
        else:
            seed, event_frames = split_seed(frames)
            seen.events = events_from_frames(event_frames, events_type)
            if group_id is None:
                rows = [("rejected_events", r) for r in reject_unkeyed(seen.events)]
                return wire_frame(rows, wire_type), None
            if state.exists:
                seen.before = loads(state.get[0])
            elif seed is not None:
                seen.before = loads(seed)
            result = fold(seen.before or str(group_id), seen.events, cfg,
                          watermark if watermark > 0 else None)
            if watermark > 0:
                result = _merged(result, advance(result.group, watermark, cfg))
        wire = wire_frame(tagged_rows(result, cfg), wire_type)
        return wire, (dumps(result.group), next_deadline(result.group, cfg))

    return fold_group


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
    pandas conversions cost more than the fold itself on groups of a few hundred rows."""
    wire_type = to_arrow_schema(wire_schema(), timezone="UTC")

    def fold_history(key: tuple[Any, ...], table: pa.Table) -> pa.Table:
        group_id = key[0].as_py()
        events: list[Event] = []
        try:
            events = events_from_arrow(table)
            if group_id is None:
                return wire_table([("rejected_events", r) for r in reject_unkeyed(events)],
                                  wire_type)
            result = fold(str(group_id), events, cfg)
            if until_ms is not None:
                result = _merged(result, advance(result.group, until_ms, cfg))
            rows = tagged_rows(result, cfg)
            if seed:
                rows.append((SEED_TABLE, {"group_id": result.group.group_id,
                                          "_state": dumps(result.group)}))
            return wire_table(rows, wire_type)
        except Exception as exc:  # noqa: BLE001 - the last line of defence, see FAILED
            return wire_table(failed_rows(group_id, events, None, exc), wire_type)

    return fold_history
