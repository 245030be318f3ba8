"""One group's replay as output tables: the one call the stream, the backfill, the generator
and the tests make. `replay_group` starts from a stored state, a seed, a Group or nothing,
folds the group's events, fires its timers up to `until`, and returns the state to keep and
every row it wrote, per table of `schemas/tables.py` (rows are dicts under the schema's
column names, times in epoch milliseconds), with the group's current rows it changed: its
`group_state` row and a `committed_offsets` row per partition the call touched (a deleted
offset flagged `_deleted`). A fold that raises keeps the state it started from and writes,
as the last line of defence, each event rejected as `INTERNAL: <exception>` and one FAILED
row with the traceback. Standard library only, like the rest of the fold.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from typing import NamedTuple

from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.context import Left, Outputs, Row, offset_columns
from pipeline.fold.events import Event, EventColumns, events_of
from pipeline.fold.fold import advance, fold, reject_unkeyed, rejected_row
from pipeline.fold.model import Group
from pipeline.fold.rows import group_state_row
from pipeline.fold.serde import dumps, loads
from schemas.internal import BACKFILL_STATE

Tables = dict[str, list[Row]]  # table name -> rows, in the order they were written

FAILED = "_group_failed"  # a group whose fold raised: group_id and the traceback (`reason`)
INTERNAL = "INTERNAL"  # the reason prefix of the events of such a group

DELETES_KEY = "_deleted"  # a committed_offsets row that deletes its key
STATE = "_state"


class Replay(NamedTuple):
    """What `replay_group` returns: the state to keep, the rows written per table, and what
    the fold left to the caller (`Left`; empty unless asked to leave)."""

    state: Group | None
    tables: Tables
    left: Left


def replay_group(group_id: str | None, start: bytes | Group | None,
                 events: Iterable[Event] | EventColumns,
                 until: int | None, cfg: CoordinatorConfig, watermark: int | None = None,
                 seed: bool = False, leave: bool = False) -> Replay:
    """Fold `events` of `group_id` onto `start`, then fire every timer due before `until`.

    `start`: the group's stored state or seed (`dumps` bytes), a Group, or None for a group
    not seen yet. `watermark`: the stream's, when the rows arrived (rows behind it are
    counted late). `seed`: also return the final state as a BACKFILL_STATE row. A `group_id` of
    None is no group: every event is rejected and there is no state. The returned state is
    the one to store; after a failure it is `start`'s (None if there was none). `events` is
    read again after a failure, so pass a list, not an iterator. `leave`: leave the rows of
    plain commit records that are the records' own values to the caller (`Left`): those
    rows are not in the tables (nothing is left if the fold raises: every row is rejected).
    """
    if group_id is None:
        return Replay(None, {"rejected_events": reject_unkeyed(as_events(events))}, Left())
    before: Group | None = None
    try:
        loaded = loads(start) if isinstance(start, bytes) else start
        if loaded is not None and loaded.group_id != group_id:  # kept nowhere: not this group's
            raise ValueError(f"start is group {loaded.group_id!r}'s state, not {group_id!r}'s")
        before = loaded
        result = fold(group_id if before is None else before, events, cfg, watermark,
                      leave=leave)
        g, out = result.group, result.outputs
        if until is not None:
            timed = advance(g, until, cfg)
            g = timed.group
            out.extend(timed.outputs)
        tables = result_tables(g, out, cfg, None if before is None else before.shown_type)
        if seed and not g.gone:  # a removed group's next record starts it from nothing
            tables[BACKFILL_STATE] = [{"group_id": g.group_id, STATE: dumps(g)}]
        return Replay(g, tables, out.left or Left())
    except Exception as exc:  # noqa: BLE001 - the last line of defence, see FAILED
        return Replay(before, failed_tables(group_id, events, before, exc), Left())


def result_tables(g: Group, out: Outputs, cfg: CoordinatorConfig,
                  type_before: str | None = None) -> Tables:
    """The rows `out` holds, and group `g`'s current rows they changed; only tables with rows.
    A partition whose committed_offsets row is a left record's own (`out.left`, the group of
    the same type then as now) has none here: that record's index goes to `Left.current`
    instead. `type_before`: the group's type before these rows; a group of another type now
    has each of its committed_offsets rows written again (they say the group's type)."""
    tables: Tables = {
        "group_transitions": out.transitions,
        "rebalances": out.rebalances,
        "rebalance_cost": out.rebalance_cost,
        "offset_history": out.offset_history,
        "rejected_events": out.rejected,
        "error_responses": out.answered,
        "group_history": out.history,
    }
    if g.exists or g.state_since is not None:
        # A group that never existed (every row refused) has no row: Kafka has no such group.
        tables["group_state"] = [group_state_row(g, cfg)]
    left = out.left
    last = {} if left is None else left.last
    group_type = g.shown_type
    touched = {(h["topic"], h["partition"]) for h in out.offset_history} | last.keys()
    if type_before is not None and type_before != group_type:
        touched |= g.offsets.keys()
    # The group's type at each partition's last left record.
    records = [i for _, _, i in last.values()]
    type_at = {} if left is None else dict(zip(records, left.types_of(records), strict=True))
    rows: list[Row] = []
    for tp in sorted(touched):
        o = g.offsets.get(tp)
        if o is None:
            rows.append({"group_id": g.group_id, "topic": tp[0], "partition": tp[1],
                         DELETES_KEY: True})
            continue
        mine = last.get(tp)
        if (left is not None and mine is not None and (o.log_partition, o.log_offset) == mine[:2]
                and type_at[mine[2]] == group_type):
            left.current.append(mine[2])  # the offset is the one that record stored
        else:
            rows.append(offset_columns(g.group_id, tp, o, group_type))
    tables["committed_offsets"] = rows
    return {table: rows for table, rows in tables.items() if rows}


def as_events(events: Iterable[Event] | EventColumns) -> list[Event]:
    """Rows as `Event`s, from either form (for the rows that become rejected rows whole)."""
    return events_of(events) if isinstance(events, dict) else list(events)


def failed_tables(group_id: str | None, events: Iterable[Event] | EventColumns, before: Group | None,
                  exc: BaseException) -> Tables:
    """The rows of a group whose fold raised: each event rejected as INTERNAL (with the
    state the group had before the call), and the FAILED row with the traceback and the
    reason. Every row is rejected here, those the fold would have left to the caller too."""
    text = f"{type(exc).__name__}: {exc}"
    reason = f"{INTERNAL}: {text if len(text) <= 1000 else text[:997] + '...'}"
    tables: Tables = {"rejected_events": [rejected_row(e, reason, before)
                                          for e in as_events(events)]}
    tables[FAILED] = [{"group_id": group_id, "reason": "".join(traceback.format_exception(exc)),
                       "rejected_as": reason}]
    return {table: rows for table, rows in tables.items() if rows}
