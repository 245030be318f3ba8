"""The fold: apply a group's events in log order to its state, with every output row.

`fold(group, events)` sorts the events by log position, and for each one: rejects it if its
position was applied already (DUPLICATE / OUT_OF_ORDER) or it is malformed; otherwise fires
the timers due before its time, then hands it to the handler for its type. A request Kafka
refuses leaves the group as it was (positions aside) and becomes a rejected row with Kafka's
error name. `advance(group, t)` fires the timers due before `t`, for silent groups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pipeline.fold import consumer_groups, errors, modern, share_groups, streams_groups
from pipeline.fold.config import CoordinatorConfig
from pipeline.fold.context import Left, Outputs, Row, Step
from pipeline.fold.errors import Refused
from pipeline.fold.events import Event, EventColumns
from pipeline.fold.history import record_shape
from pipeline.fold.membership import on_heartbeat, on_join, on_leave, on_sync
from pipeline.fold.model import Group, tick
from pipeline.fold.offsets import on_commit, on_offset_tombstone, on_txn_marker
from pipeline.fold.partitioning import partition_for
from pipeline.fold.runs import NOT_QUIET, STALE, TAKEN, Batch, QuietRow, QuietRun
from pipeline.fold.snapshots import on_group_metadata, on_group_tombstone
from pipeline.fold.timers import PROTOCOL_REQUESTS, is_request
from pipeline.fold.timers import advance as advance_timers
from pipeline.fold.validation import placement_problem, row_defect
from schemas.events import SHARE_STREAMS_EVENT_TYPES

Handler = Callable[[Group, Event, Step], Group]


def _on_group_metadata(g: Group, e: Event, step: Step) -> Group:
    if g.modern is not None:
        g = modern.replaced_by_classic(g, step)
    return on_group_metadata(g, e, step)


def _on_group_tombstone(g: Group, e: Event, step: Step) -> Group:
    if g.modern is not None:
        return modern.removed_by_group_tombstone(g, step)
    return on_group_tombstone(g, e, step)


HANDLERS: dict[str, Handler] = {
    "JOIN": on_join,
    "SYNC": on_sync,
    "HEARTBEAT": on_heartbeat,
    "LEAVE": on_leave,
    "OFFSET_COMMIT": on_commit,
    "TXN_MARKER": on_txn_marker,
    "OFFSET_TOMBSTONE": on_offset_tombstone,
    "GROUP_METADATA": _on_group_metadata,
    "GROUP_TOMBSTONE": _on_group_tombstone,
    **consumer_groups.HANDLERS,
    **share_groups.HANDLERS,
    **streams_groups.HANDLERS,
}
DEFAULT_CONFIG = CoordinatorConfig()
# Decoded but not replayed yet: they take the path their UNSUPPORTED_RECORD rows took before
# they were decoded, reason and all.
_NOT_REPLAYED = frozenset(SHARE_STREAMS_EVENT_TYPES) - frozenset(HANDLERS)


@dataclass
class FoldResult:
    group: Group
    outputs: Outputs = field(default_factory=Outputs)

    @property
    def left(self) -> Left | None:
        """What the fold left to the caller (`fold(..., leave=True)`), else None."""
        return self.outputs.left


def fold(group: Group | str, events: Iterable[Event] | EventColumns,
         config: CoordinatorConfig = DEFAULT_CONFIG, watermark: int | None = None,
         records: bool = False, leave: bool = False) -> FoldResult:
    """Apply `events` of one group, in log-position order, to `group` (or a new group id).

    `events`: `Event`s, or the same rows as `EventColumns` (plain commits are then never
    built into Events). `watermark`: the stream's event-time watermark when these rows
    arrived; rows behind it are applied all the same (log order is the truth) and counted as
    late on the group. `records`: also return the coordinator's own records
    (`Outputs.records`), which only the generator reads. `leave`: leave the rows of plain
    commit records that are the records' own values to the caller (`Left`, in the result).
    """
    g = Group(group_id=group) if isinstance(group, str) else group
    out = Outputs(left=Left() if leave else None)
    home = partition_for(g.group_id, config.offsets_topic_num_partitions)
    batch = Batch(events)
    if batch.size and _starts_anew(g, batch.event_type(batch.order[0])):
        g = Group(group_id=g.group_id)
    if watermark is not None:
        late = sum(1 for t in batch.event_times() if t is not None and t < watermark)
        if late:
            g = g.evolve(late_count=g.late_count + late)
    # Quiet rows (commits, markers and heartbeats that change no group's shape: `quiet`) go
    # in runs on one working copy; every other row, and a quiet one a run cannot take
    # exactly, through its handler. Never with `records`: the generator wants every record.
    quiet: list[QuietRow | None] = (
        batch.quiet_rows(g.group_id, home, config.offsets_topic_num_partitions) if not records
        else [None] * batch.size)
    return FoldResult(_replay(g, batch, quiet, config, out, home, records), out)


def _replay(g: Group, batch: Batch, quiet: list[QuietRow | None], config: CoordinatorConfig,
            out: Outputs, home: int, records: bool) -> Group:
    """`batch`'s rows in log order: quiet ones in runs, each other one through `_apply`."""
    run: QuietRun | None = None
    order, k = batch.order, 0
    while k < len(order):
        i = order[k]
        row = quiet[i]
        if _starts_anew(g, batch.event_type(i)):
            g = Group(group_id=g.group_id)
        if row is not None:
            if run is None and QuietRun.opens_on(g):
                run = QuietRun(g, config)
            if run is not None and run.records_only:
                taken = run.take_records(quiet, order, k, out)
                if taken:
                    k += taken
                    continue
            taken = NOT_QUIET if run is None else run.take(row, out)
            if taken == STALE:
                assert run is not None
                g, run = run.close(), None
                run = QuietRun(g, config)
                taken = run.take(row, out)
            if taken == TAKEN:
                k += 1
                continue
        if run is not None:
            g, run = run.close(), None
        g = _apply(g, batch.event(i), config, out, home, records)
        k += 1
    if run is not None:
        g = run.close()
    return g


def _starts_anew(g: Group, event_type: str | None) -> bool:
    """A removed group's next record starts a new one, as in Kafka; not a tombstone, which
    Kafka ignores for a group it no longer has (a streams group's topology tombstone comes
    after its group epoch's), so the removed group, Dead, stays what the tables show."""
    return g.gone and not (event_type or "").endswith("TOMBSTONE")


def apply(group: Group | str, event: Event,
          config: CoordinatorConfig = DEFAULT_CONFIG, records: bool = False) -> FoldResult:
    return fold(group, [event], config, records=records)


def advance(group: Group, until: int, config: CoordinatorConfig = DEFAULT_CONFIG,
            records: bool = False) -> FoldResult:
    """Fire every timer due strictly before `until` (a watermark, in event-time ms)."""
    steps: list[Step] = []
    g = advance_timers(group, until, config, steps, records)
    out = Outputs()
    for step in steps:
        out.extend(step.out)
    return FoldResult(g, out)


def _apply(g: Group, e: Event, cfg: CoordinatorConfig, out: Outputs, home: int,
           records: bool) -> Group:
    problem = placement_problem(e.group_id, e.log_partition, e.log_offset, e.event_time, home,
                                cfg.offsets_topic_num_partitions)
    if problem is not None:  # the decoder's reason first: the row may be no record at all
        # Not even the group's position moves: a row with no place in its log is not in it.
        out.rejected.append(rejected_row(e, errors.malformed(e.decode_error or problem), g))
        return g.evolve(rejected_count=g.rejected_count + 1)
    assert e.position is not None and e.event_time is not None
    if g.position is not None and e.position <= g.position:
        return _behind(g, e, out)
    steps: list[Step] = []
    g = advance_timers(g, e.event_time, cfg, steps, records)
    for s in steps:
        out.extend(s.out)
    now = tick(g.clock, e.event_time)
    reason = _reason_not_applied(e, g)
    # A request, even a refused one, is protocol traffic: from now on timers apply.
    journal = g.journal or reason is None and is_request(e.event_type, e.generation_id)
    g = g.moved((e.position,), now, e.event_time, cfg.recent_positions, journal=journal)
    if reason is None:
        step = Step(cfg, now, e.position, keep_records=records)
        try:
            after = HANDLERS[e.event_type or ""](g, e, step)
        except Refused as refused:
            reason = refused.reason
        else:
            after = record_shape(g, after, step)
            out.extend(step.out)
            if step.response is not None:
                out.answered.append(answered_row(e, step.response, after))
            return after
    out.rejected.append(rejected_row(e, reason, g))
    return g.evolve(rejected_count=g.rejected_count + 1)


def _reason_not_applied(e: Event, g: Group) -> str | None:
    problem = row_defect(e)
    if problem is not None:
        return errors.malformed(problem)
    if e.event_type == errors.UNSUPPORTED_RECORD or e.event_type in _NOT_REPLAYED:
        return errors.UNSUPPORTED_RECORD
    if e.event_type not in HANDLERS:
        return f"{errors.UNSUPPORTED_RECORD}: {e.event_type} is not modelled yet"
    if e.event_type in PROTOCOL_REQUESTS and g.consumer is not None:
        # Kafka would take the request as a classic-protocol member of the consumer group
        # (KIP-848 online migration); that path is not modelled.
        return (f"{errors.UNSUPPORTED_RECORD}: {e.event_type} to a consumer (KIP-848) group: "
                "classic-protocol members of consumer groups are not modelled")
    if e.event_type in PROTOCOL_REQUESTS and g.modern is not None:
        # Kafka refuses a JoinGroup to a share group or a live streams group
        # (INCONSISTENT_GROUP_PROTOCOL) and converts an empty streams group; neither the
        # refusal nor the conversion of a request is modelled.
        return (f"{errors.UNSUPPORTED_RECORD}: {e.event_type} to a {g.group_type} group: "
                "classic-protocol requests to share and streams groups are not modelled")
    return None


def _behind(g: Group, e: Event, out: Outputs) -> Group:
    if e.position in g.recent:
        out.rejected.append(rejected_row(e, errors.DUPLICATE, g))
        return g.evolve(duplicate_count=g.duplicate_count + 1,
                       rejected_count=g.rejected_count + 1)
    out.rejected.append(rejected_row(e, errors.OUT_OF_ORDER, g))
    return g.evolve(out_of_order_count=g.out_of_order_count + 1,
                   rejected_count=g.rejected_count + 1)


def rejected_row(e: Event, reason: str, g: Group | None) -> Row:
    row = e.to_row()
    row["reason"] = reason
    row["group_state"] = g.state if g is not None and g.exists else None
    row["group_generation_id"] = g.generation_id if g is not None and g.exists else None
    row["group_type"] = g.group_type if g is not None and g.exists else None
    row["log_topic"] = None  # the event log's own record (share-state ones: spark/share)
    return row


def answered_row(e: Event, response: str, g: Group) -> Row:
    row = e.to_row()
    row["response"] = response
    row["group_state"] = g.state if g.exists else None
    row["group_generation_id"] = g.generation_id if g.exists else None
    row["group_type"] = g.group_type if g.exists else None
    return row


def reject_unkeyed(events: Iterable[Event]) -> list[Row]:
    """Rows with no group id belong to no group: each is rejected, no state is touched."""
    return [rejected_row(e, errors.malformed(e.decode_error or "group_id is null"), None)
            for e in events]
