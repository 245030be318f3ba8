"""A group's current rows: its `group_state` row and its `committed_offsets` rows."""

from __future__ import annotations

from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.context import Row, offset_columns
from pipeline.fold.history import group_shape_row
from pipeline.fold.model import Group
from pipeline.fold.timers import next_deadline


def group_state_row(g: Group, cfg: CoordinatorConfig) -> Row:
    return {
        **group_shape_row(g, heartbeats=True),
        "last_event_time": g.last_event_time,
        "last_log_offset": None if g.position is None else g.position[1],
        "log_partition": None if g.position is None else g.position[0],
        "log_kind": "journal" if g.journal else "records",
        "rejected_count": g.rejected_count,
        "duplicate_count": g.duplicate_count,
        "out_of_order_count": g.out_of_order_count,
        "snapshot_mismatch_count": g.snapshot_mismatch_count,
        "late_count": g.late_count,
        "pending_transactions": len(g.pending_txns),
        "next_deadline": next_deadline(g, cfg),
    }


def committed_offset_rows(g: Group) -> list[Row]:
    return [offset_columns(g.group_id, tp, o, g.shown_type) for tp, o in sorted(g.offsets.items())]
