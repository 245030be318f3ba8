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

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from pipeline.fold import (
    CoordinatorConfig,
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
from pipeline.spark.convert import (
    Tagged,
    events_from_arrow,
    events_from_frames,
    wire_frame,
    wire_table,
)
from pipeline.spark.quiet import quiet_padded_concat
from pipeline.spark.tables import SEED, SEED_TABLE, event_schema, wire_schema


def tagged_rows(result: FoldResult, cfg: CoordinatorConfig) -> list[Tagged]:
    """Every output row of a fold call, plus the group's current rows it changed."""
    out, g = result.outputs, result.group
    rows: list[Tagged] = [("group_transitions", r) for r in out.transitions]
    rows += [("rebalances", r) for r in out.rebalances]
    rows += [("offset_history", r) for r in out.offset_history]
    rows += [("rejected_events", r) for r in out.rejected]
    rows += [("error_responses", r) for r in out.answered]
    rows += [("group_history", r) for r in out.history]
    rows.append(("group_state", group_state_row(g, cfg)))
    for tp in sorted({(h["topic"], h["partition"]) for h in out.offset_history}):
        o = g.offsets.get(tp)
        if o is None:
            rows.append(("committed_offsets", {"group_id": g.group_id, "topic": tp[0],
                                               "partition": tp[1], "_deleted": True}))
        else:
            rows.append(("committed_offsets", offset_columns(g.group_id, tp, o)))
    return rows


def _merged(first: FoldResult, second: FoldResult) -> FoldResult:
    first.outputs.extend(second.outputs)
    return FoldResult(second.group, first.outputs)


def stateful_fold(cfg: CoordinatorConfig) -> Callable[..., Iterator[pd.DataFrame]]:
    events_type, wire_type = event_schema(), wire_schema()  # on the driver

    def fold_group(key: tuple[Any, ...], frames: Iterator[pd.DataFrame],
                   state: Any) -> Iterator[pd.DataFrame]:
        quiet_padded_concat()  # in the worker, where PySpark pads this call's output
        group_id = key[0]
        watermark = state.getCurrentWatermarkMs()
        if state.hasTimedOut:
            result = advance(loads(state.get[0]), watermark, cfg)
        else:
            seed, event_frames = split_seed(frames)
            events = events_from_frames(event_frames, events_type)
            if group_id is None:
                yield wire_frame([("rejected_events", r) for r in reject_unkeyed(events)],
                                 wire_type)
                return
            if state.exists:
                start: Group | str = loads(state.get[0])
            else:
                start = loads(seed) if seed is not None else str(group_id)
            result = fold(start, events, cfg, watermark if watermark > 0 else None)
            if watermark > 0:
                result = _merged(result, advance(result.group, watermark, cfg))
        state.update((dumps(result.group),))
        deadline = next_deadline(result.group, cfg)
        if deadline is not None:
            state.setTimeoutTimestamp(max(deadline, watermark))
        yield wire_frame(tagged_rows(result, cfg), wire_type)

    return fold_group


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
        events = events_from_arrow(table)
        group_id = key[0].as_py()
        if group_id is None:
            return wire_table([("rejected_events", r) for r in reject_unkeyed(events)], wire_type)
        result = fold(str(group_id), events, cfg)
        if until_ms is not None:
            result = _merged(result, advance(result.group, until_ms, cfg))
        rows = tagged_rows(result, cfg)
        if seed:
            rows.append((SEED_TABLE, {"group_id": result.group.group_id,
                                      "_state": dumps(result.group)}))
        return wire_table(rows, wire_type)

    return fold_history
