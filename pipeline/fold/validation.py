"""What a row must carry to be applied at all; anything less is `MALFORMED: <what>`.

Checks here depend on the row alone (and, for its partition, on the group id the row names).
Whether Kafka would accept the request depends on the group, and is the handlers' business.
The checks of the rows the quiet path reads as tuples (`placement_problem`, `commit_problem`,
`marker_problem`, `member_request_problem`) take values, not an `Event`, so that path and the
general one (`row_defect`, `fold._apply`) ask the same functions.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.fold.events import TASK_COLUMNS, Event
from schemas.events import EVENT_TYPES

Check = Callable[[Event], "str | None"]


def row_defect(e: Event) -> str | None:
    """The first thing that makes the row unusable, or None."""
    if e.defect is not None:
        return e.defect
    if e.decode_error is not None:
        return e.decode_error
    if e.event_type is None:
        return "event_type is null"
    if e.event_type not in EVENT_TYPES:
        return f"unknown event_type {e.event_type!r}"
    check = _CHECKS.get(e.event_type)
    return None if check is None else check(e)


def placement_problem(group_id: str | None, log_partition: int | None, log_offset: int | None,
                      event_time: int | None, home: int, partitions: int) -> str | None:
    """Why a row has no place in its group's log, or None. It needs a log position to be
    ordered by and an event time to be applied at; and a group's records all live in the one
    partition Kafka maps it to, `home` (`partition_for`, Kafka's `partitionFor`: the group
    id's hash modulo offsets.topic.num.partitions, `partitions`), so a row elsewhere is no
    record of this group's coordinator. Decided by the row and its group id alone, never by
    which row came first, so it is the same under any batching."""
    if log_partition is None or log_offset is None:
        return "log_partition and log_offset are required"
    if log_partition < 0 or log_offset < 0:
        return f"negative log position ({log_partition}, {log_offset})"
    if event_time is None:
        return "event_time is null"
    if log_partition != home:
        return (f"group {group_id} belongs to partition {home} "
                f"(offsets.topic.num.partitions={partitions}), not {log_partition}")
    return None


def _missing(e: Event, *names: str) -> str | None:
    return _absent(e.event_type, *((name, getattr(e, name)) for name in names))


def _negative(e: Event, *names: str) -> str | None:
    for name in names:
        value = getattr(e, name)
        if value is not None and value < 0:
            return f"{name} must not be negative, got {value}"
    return None


def _join(e: Event) -> str | None:
    problem = _missing(e, "member_id", "session_timeout_ms", "protocol_type", "protocols")
    problem = problem or _negative(e, "session_timeout_ms", "rebalance_timeout_ms")
    if problem:
        return problem
    if not e.member_id:
        return "JOIN needs the member id the coordinator assigned or recognised"
    if e.request_member_id and e.request_member_id != e.member_id:
        return f"request_member_id {e.request_member_id!r} differs from member_id {e.member_id!r}"
    return None


def _member_request(e: Event) -> str | None:
    return member_request_problem(e.event_type, e.member_id, e.generation_id)


def member_request_problem(event_type: str | None, member_id: str | None,
                           generation_id: int | None) -> str | None:
    """A SYNC or HEARTBEAT names its member and the generation it believes in."""
    if member_id is None or generation_id is None:
        return _absent(event_type, ("member_id", member_id), ("generation_id", generation_id))
    return None


def _leave(e: Event) -> str | None:
    if not e.member_id and e.group_instance_id is None:
        return "LEAVE needs member_id or group_instance_id"
    return None


def _commit(e: Event) -> str | None:
    return commit_problem(e.topic, e.partition, e.committed_offset)


def commit_problem(topic: str | None, partition: int | None,
                   committed_offset: int | None) -> str | None:
    """An OFFSET_COMMIT names its partition and the offset (the record's key and value)."""
    if topic is None or partition is None or committed_offset is None:
        return _absent("OFFSET_COMMIT", ("topic", topic), ("partition", partition),
                       ("committed_offset", committed_offset))
    if partition < 0:
        return f"partition must not be negative, got {partition}"
    return None


def _marker(e: Event) -> str | None:
    return marker_problem(e.producer_id, e.txn_result)


def marker_problem(producer_id: int | None, txn_result: str | None) -> str | None:
    """A TXN_MARKER names its producer and ends the transaction one way or the other."""
    if producer_id is None or txn_result is None:
        return _absent("TXN_MARKER", ("producer_id", producer_id), ("txn_result", txn_result))
    if txn_result not in ("COMMIT", "ABORT"):
        return f"txn_result must be COMMIT or ABORT, got {txn_result!r}"
    return None


def _required(name: str, event_type: str | None) -> str:
    return f"{name} is required for {event_type}"


def _absent(event_type: str | None, *fields: tuple[str, object]) -> str | None:
    """The first of the (name, value) fields without a value, as the reason; checked only
    once one is known to be missing, so a whole row costs nothing more."""
    return next((_required(name, event_type) for name, value in fields if value is None), None)


def _tombstone(e: Event) -> str | None:
    return _missing(e, "topic", "partition") or _negative(e, "partition")


def _metadata(e: Event) -> str | None:
    problem = _missing(e, "generation_id") or _negative(e, "generation_id")
    if problem:
        return problem
    if any(not m.member_id for m in e.members or ()):
        return "GROUP_METADATA member without a member_id"
    ids = [m.member_id for m in e.members or ()]
    if len(set(ids)) != len(ids):
        # Kafka writes this record from its members map, keyed by id: it never lists an id twice.
        twice = sorted({i for i in ids if ids.count(i) > 1})
        return f"GROUP_METADATA lists member {', '.join(twice)} more than once"
    return None


def _group_epoch(e: Event) -> str | None:
    return _missing(e, "group_epoch") or _negative(e, "group_epoch")


def _partition_metadata(e: Event) -> str | None:
    return _missing(e, "topics_metadata")


def _member_key(e: Event) -> str | None:
    if not e.member_id:
        return f"member_id is required for {e.event_type}"
    return None


def _member_metadata(e: Event) -> str | None:
    return _member_key(e) or _negative(e, "session_timeout_ms")


def _assignment_epoch(e: Event) -> str | None:
    return _missing(e, "assignment_epoch")


def _target_member(e: Event) -> str | None:
    return _member_key(e) or _missing(e, "assigned_partitions") or _partitions(e)


def _current_assignment(e: Event) -> str | None:
    return (_member_key(e) or _missing(e, "member_epoch", "member_state", "assigned_partitions")
            or _partitions(e))


def _partitions(e: Event) -> str | None:
    for name in ("assigned_partitions", "partitions_pending_revocation"):
        for topic_id, partitions in getattr(e, name) or ():
            if any(p < 0 for p in partitions):
                return f"{name} has a negative partition of topic {topic_id}"
    return None


def _state_partitions(e: Event) -> str | None:
    # InitializingTopics is null in Kafka 4.0's layout: an empty set then.
    problem = _missing(e, "initialized_topics", "deleting_topics")
    if problem:
        return problem
    for name in ("initializing_topics", "initialized_topics"):
        for topic_id, _, partitions in getattr(e, name) or ():
            if any(p < 0 for p in partitions):
                return f"{name} has a negative partition of topic {topic_id}"
    return None


def _tasks(e: Event) -> str | None:
    for name in TASK_COLUMNS:
        for task in getattr(e, name) or ():
            if any(p < 0 for p in task.partitions):
                return f"{name} has a negative partition of subtopology {task.subtopology_id}"
    return None


def _regular_expression(e: Event) -> str | None:
    return _missing(e, "regular_expression")


_CHECKS: dict[str, Check] = {
    "JOIN": _join,
    "SYNC": _member_request,
    "HEARTBEAT": _member_request,
    "LEAVE": _leave,
    "OFFSET_COMMIT": _commit,
    "TXN_MARKER": _marker,
    "OFFSET_TOMBSTONE": _tombstone,
    "GROUP_METADATA": _metadata,
    "CONSUMER_GROUP_METADATA": _group_epoch,
    "CONSUMER_GROUP_PARTITION_METADATA": _partition_metadata,
    "CONSUMER_GROUP_MEMBER_METADATA": _member_metadata,
    "CONSUMER_GROUP_MEMBER_METADATA_TOMBSTONE": _member_key,
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA": _assignment_epoch,
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER": _target_member,
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_TOMBSTONE": _member_key,
    "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT": _current_assignment,
    "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TOMBSTONE": _member_key,
    "CONSUMER_GROUP_REGULAR_EXPRESSION": _regular_expression,
    "CONSUMER_GROUP_REGULAR_EXPRESSION_TOMBSTONE": _regular_expression,
    "SHARE_GROUP_METADATA": _group_epoch,
    "SHARE_GROUP_MEMBER_METADATA": _member_key,
    "SHARE_GROUP_MEMBER_METADATA_TOMBSTONE": _member_key,
    "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA": _assignment_epoch,
    "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER": _target_member,
    "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_TOMBSTONE": _member_key,
    "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT": _current_assignment,
    "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_TOMBSTONE": _member_key,
    "SHARE_GROUP_STATE_PARTITION_METADATA": _state_partitions,
    "STREAMS_GROUP_METADATA": _group_epoch,
    "STREAMS_GROUP_MEMBER_METADATA": _member_key,
    "STREAMS_GROUP_MEMBER_METADATA_TOMBSTONE": _member_key,
    "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA": _assignment_epoch,
    "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER": lambda e: _member_key(e) or _tasks(e),
    "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_TOMBSTONE": _member_key,
    "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT": lambda e: (
        _member_key(e) or _missing(e, "member_epoch", "member_state") or _tasks(e)),
    "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_TOMBSTONE": _member_key,
    "STREAMS_GROUP_TOPOLOGY": lambda e: _missing(e, "topology_epoch", "subtopologies"),
    # With its decode_error the row never gets here; without, it still is no request.
    "MALFORMED_RECORD": lambda e: "an undecodable record (its decode_error is null)",
}
