"""KIP-848 consumer groups: one replay handler per record type (3-8, 16), value and tombstone side
by side, as Kafka's `GroupMetadataManager.replay` applies them (those the three record-backed
types share, target assignments and the member and group tombstones, come from
`modern.handlers` for this type's `KIND`), and the group state derived after each record as
`ConsumerGroup.maybeUpdateGroupState` derives it: no members -> Empty; group epoch above the
target assignment epoch -> Assigning; a member not STABLE at the assignment epoch ->
Reconciling; else Stable. Kafka keeps no transition table for these states, so none is checked;
every change is a group_transitions row whose cause is the record's event type. Records are
applied one at a time, as Kafka replays them, so a member joining a new group (Kafka writes 5,
4, 3, then 7, 6, then 8) shows Empty -> Stable -> Assigning -> Reconciling -> Stable. A
rebalance (rebalances table) is what KIP-848 makes one: it starts when a group epoch bump puts
the group in Assigning (not the -1 target epoch of a group being deleted) and completes when
the group is next Stable, every member reconciled to the new target (EMPTIED if it empties
first, ABANDONED if deleted); a member's records alone (a joining member's metadata at epoch 0,
a leaving member's tombstones) move the state but start none. generation_id is the group epoch.
Tombstones for things already gone are ignored; the invariants Kafka's loader enforces (member
removed only after its current-assignment and target tombstones, the group only once members,
targets and assignment epoch are gone) refuse the row as MALFORMED, as does a KIP-848 record
for a classic group that is not a simple offsets holder. These records hold no heartbeats, so
no timer ever expires a member: the requests that kept one alive are not in the log.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from pipeline.fold import errors, modern
from pipeline.fold.context import Step
from pipeline.fold.errors import Refused
from pipeline.fold.events import Event, Protocol
from pipeline.fold.model import ConsumerGroup, ConsumerMember, Group, ResolvedRegex
from pipeline.fold.modern import Handler
from pipeline.fold.states import EMPTY


def derive_state(c: ConsumerGroup) -> str:
    """Kafka's `ConsumerGroup.maybeUpdateGroupState`."""
    return modern.assignment_state(c) if c.members else EMPTY


KIND: modern.Kind[ConsumerGroup, ConsumerMember] = modern.Kind(
    part="consumer", records="CONSUMER_GROUP", label="consumer group (KIP-848)",
    empty=ConsumerGroup, new_member=ConsumerMember, derive=derive_state, rebalances=True,
    replaces_simple=True)
# A member's assignment as its CURRENT_MEMBER_ASSIGNMENT tombstone leaves it (at epoch -1).
UNASSIGNED = {"assigned_partitions": (), "partitions_pending_revocation": ()}


# ----------------------------------------------------------------- type 4: subscription metadata

def subscription_metadata(e: Event) -> object:
    return e.topics_metadata or ()


# ----------------------------------------------------------------- type 5: member metadata

def on_member_metadata(g: Group, e: Event, step: Step) -> Group:
    assert e.member_id is not None
    found, c = modern.created(g, e, step, KIND)
    classic = e.protocols is not None or e.classic_protocols is not None or (
        e.session_timeout_ms is not None)
    if e.protocols is not None:
        protocols: tuple[Protocol, ...] | None = e.protocols
    elif e.classic_protocols is not None:
        protocols = tuple(Protocol(name, ()) for name, _ in e.classic_protocols)
    else:
        protocols = () if classic else None
    member = replace(
        modern.member_or_new(KIND, c, e.member_id, step.now),
        group_instance_id=e.group_instance_id, rack_id=e.rack_id,
        client_id=e.client_id or "", client_host=e.client_host or "",
        subscribed_topic_names=e.subscribed_topic_names or (),
        subscribed_topic_regex=e.subscribed_topic_regex,
        rebalance_timeout_ms=e.rebalance_timeout_ms, server_assignor=e.server_assignor,
        classic_protocols=protocols, session_timeout_ms=e.session_timeout_ms,
        last_record=step.now,
    )
    return modern.settle(found, KIND, modern.with_member(c, member), e, step)


# ----------------------------------------------------------------- type 8: current assignment

def assignment(e: Event) -> dict[str, object]:
    """A member's current partitions, as its CURRENT_MEMBER_ASSIGNMENT record holds them."""
    return {"assigned_partitions": e.assigned_partitions or (),
            "partitions_pending_revocation": e.partitions_pending_revocation or ()}


# ----------------------------------------------------------------- type 16: resolved regex

def on_regular_expression(g: Group, e: Event, step: Step) -> Group:
    assert e.regular_expression is not None
    found, c = modern.created(g, e, step, KIND)
    resolved = ResolvedRegex(e.regular_expression, e.regex_topics or (), e.regex_version,
                             e.regex_timestamp_ms)
    others = tuple(r for r in c.regexes if r.regular_expression != e.regular_expression)
    return modern.settle(found, KIND, replace(c, regexes=(*others, resolved)), e, step)


def on_regular_expression_tombstone(g: Group, e: Event, step: Step) -> Group:
    known = modern.existing(g, e, step, KIND)
    if known is None:
        return g
    found, c = known
    regexes = tuple(r for r in c.regexes if r.regular_expression != e.regular_expression)
    return modern.settle(found, KIND, replace(c, regexes=regexes), e, step)


# ----------------------------------------------------------------- commit requests

def validate_commit(g: Group, e: Event, transactional: bool) -> None:
    """Kafka's `ConsumerGroup.validateOffsetCommit`: a commit request's generation_id column
    carries the member epoch (the generation, from a classic-protocol member)."""
    c = g.consumer
    assert c is not None and e.generation_id is not None
    if not (e.generation_id < 0 and not c.members):
        member = c.member(e.member_id)
        if member is None:
            raise Refused(errors.UNKNOWN_MEMBER_ID)
        if (not transactional and not member.uses_classic_protocol
                and e.api_version is not None and e.api_version < 9):
            raise Refused(errors.UNSUPPORTED_VERSION)
        if e.generation_id != member.member_epoch:
            raise Refused(errors.ILLEGAL_GENERATION if member.uses_classic_protocol
                          else errors.STALE_MEMBER_EPOCH)


HANDLERS: dict[str, Handler] = {
    **modern.handlers(KIND, modern.assigned_partitions, assignment, UNASSIGNED,
                       quote_epoch=False, targets_first=True),
    "CONSUMER_GROUP_PARTITION_METADATA": partial(
        modern.on_group_record, kind=KIND, field="subscription_metadata",
        value=subscription_metadata),
    "CONSUMER_GROUP_PARTITION_METADATA_TOMBSTONE": partial(
        modern.on_group_record_tombstone, kind=KIND, field="subscription_metadata", cleared=()),
    "CONSUMER_GROUP_MEMBER_METADATA": on_member_metadata,
    "CONSUMER_GROUP_REGULAR_EXPRESSION": on_regular_expression,
    "CONSUMER_GROUP_REGULAR_EXPRESSION_TOMBSTONE": on_regular_expression_tombstone,
}
