"""Raw `__consumer_offsets` bytes from event-log rows, the inverse of `decode_record`, written
by the same schema tables: `encode_record(row) -> (key, value)`, with `encode_key` and
`encode_value`. The row's `event_type` picks the record type (`record_type` may choose 0 for an
old-style offset key; the default is 1, what coordinators write since 0.9) and a `_TOMBSTONE`
event type gives a null value. `record_version` picks the value version; by default an offset
commit is v3, or v1 when it carries an expire timestamp (Kafka's rule), a group snapshot v3 and
a KIP-848, share or streams record v0 (ShareGroupMetadata and ShareGroupStatePartitionMetadata
in Kafka 4.0's layout when `record_layout` is "kafka-4.0"). Timestamps are integer
milliseconds under the `_ms` names, or the fold's
`commit_timestamp`/`expire_timestamp`/`current_state_timestamp` names. A GroupMetadata member
with protocol type "consumer" gets consumer-protocol subscription and assignment bytes at its
`subscription_version`/`assignment_version` (default 3) with the assignor's user data; a member
may give `subscription_bytes`/`assignment_bytes` verbatim instead. An UNSUPPORTED_RECORD row is
re-emitted from its `raw_key`/`raw_value`. A row that cannot be written raises `EncodeError`."""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from typing import Any

from pipeline.decode.consumer_protocol import (
    CURRENT_VERSION,
    encode_assignment,
    encode_subscription,
    encode_user_data,
)
from pipeline.decode.messages import (
    EVENT_TO_RECORD_TYPE,
    MEMBER_STATES,
    RECORD_TYPES,
    STREAMS_MEMBER_STATES,
    TASK_KINDS,
)
from pipeline.decode.primitives import EncodeError, Writer
from pipeline.decode.writer import write_message

__all__ = ["EncodeError", "encode_key", "encode_record", "encode_value"]

Row = Mapping[str, Any]
_TOMBSTONES = {"OFFSET_TOMBSTONE": "OFFSET_COMMIT", "GROUP_TOMBSTONE": "GROUP_METADATA"}
_STATE_VALUES = {name: value for value, name in MEMBER_STATES.items()}
_STREAMS_STATE_VALUES = {name: value for value, name in STREAMS_MEMBER_STATES.items()}
LAYOUT_40 = "kafka-4.0"


def _ms(row: Row, name: str, default: int = -1) -> int:
    """`<name>_ms`, else `<name>`, else `default` (Kafka's -1 "none")."""
    value = row.get(f"{name}_ms")
    if value is None:
        value = row.get(name)
    return default if value is None else int(value)


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _kind(row: Row) -> tuple[int, bool]:
    """(record type, is tombstone) of a row."""
    event = row.get("event_type")
    if not isinstance(event, str):
        raise EncodeError(f"event_type must be a string, got {event!r}")
    base = _TOMBSTONES.get(event, event.removesuffix("_TOMBSTONE"))
    if base not in EVENT_TO_RECORD_TYPE:
        raise EncodeError(f"cannot encode event type {event!r}")
    rtype = EVENT_TO_RECORD_TYPE[base]
    if base == "OFFSET_COMMIT" and row.get("record_type") is not None:
        rtype = int(row["record_type"])
        if rtype not in (0, 1):
            raise EncodeError(f"an offset commit has record type 0 or 1, not {rtype}")
    return rtype, base != event


def encode_key(row: Row) -> bytes:
    """The key bytes of `row`: int16 record type, then the key body."""
    if row.get("event_type") == "UNSUPPORTED_RECORD":
        if row.get("raw_key") is None:
            raise EncodeError("an UNSUPPORTED_RECORD row is re-emitted from raw_key, which is null")
        return bytes(row["raw_key"])
    rtype, _ = _kind(row)
    spec = RECORD_TYPES[rtype]
    fields = {"group": row.get("group_id"), **{
        name: row.get(name)
        for name in ("group_id", "topic", "partition", "member_id", "regular_expression")
    }}
    w = Writer()
    w.int16(rtype)
    write_message(spec.key, 0, fields, w)  # raises EncodeError for a missing key field
    return w.getvalue()


def default_version(row: Row) -> int:
    """The value version written when `record_version` is not given."""
    rtype, _ = _kind(row)
    if rtype in (0, 1):
        return 1 if _ms(row, "expire_timestamp") != -1 else 3
    return 3 if rtype == 2 else 0


def encode_value(row: Row) -> bytes | None:
    """The value bytes of `row` (None for a tombstone): int16 version, then the value body."""
    if row.get("event_type") == "UNSUPPORTED_RECORD":
        raw = row.get("raw_value")
        return None if raw is None else bytes(raw)
    rtype, tombstone = _kind(row)
    if tombstone:
        return None
    spec = RECORD_TYPES[rtype]
    if spec.value is None:
        raise EncodeError(f"record type {rtype} has no value schema")
    version = row.get("record_version")
    try:
        version = default_version(row) if version is None else int(version)
        body = _VALUE_BODIES[spec.event_type](row)
        schema = spec.value
        if spec.legacy is not None and row.get("record_layout") == LAYOUT_40:
            schema = spec.legacy
        w = Writer()
        w.int16(version)
        write_message(schema, version, body, w)
    except EncodeError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, struct.error) as e:
        raise EncodeError(f"{spec.event_type} v{version}: cannot encode: {e!r}") from None
    return w.getvalue()


def encode_record(row: Row) -> tuple[bytes, bytes | None]:
    """`(key, value)` bytes of an event-log row; the value is None for a tombstone."""
    return encode_key(row), encode_value(row)


def _offset_commit(row: Row) -> dict[str, Any]:
    return {
        "offset": row["committed_offset"],
        "leader_epoch": _or(row.get("leader_epoch"), -1),
        "metadata": _or(row.get("commit_metadata"), ""),
        "commit_timestamp": _ms(row, "commit_timestamp"),
        "expire_timestamp": _ms(row, "expire_timestamp"),
    }


def _group_metadata(row: Row) -> dict[str, Any]:
    protocol_type = _or(row.get("protocol_type"), "")
    protocol = row.get("protocol")
    members = [_member(m, protocol_type == "consumer", protocol) for m in row.get("members") or ()]
    return {
        "protocol_type": protocol_type,
        "generation": row["generation_id"],
        "protocol": protocol,
        "leader": row.get("leader_id"),
        "current_state_timestamp": _ms(row, "current_state_timestamp"),
        "members": members,
    }


def _member(m: Row, consumer: bool, protocol: str | None) -> dict[str, Any]:
    session = m.get("session_timeout_ms")
    subscription = m.get("subscription_bytes")
    if subscription is None:
        subscription = _subscription_bytes(m, protocol) if consumer else b""
    assignment = m.get("assignment_bytes")
    if assignment is None:
        assignment = _assignment_bytes(m) if consumer else b""
    return {
        "member_id": m.get("member_id"),
        "group_instance_id": m.get("group_instance_id"),
        "client_id": _or(m.get("client_id"), ""),
        "client_host": _or(m.get("client_host"), ""),
        "rebalance_timeout": _or(m.get("rebalance_timeout_ms"), session),
        "session_timeout": session,
        "subscription": bytes(subscription),
        "assignment": bytes(assignment),
    }


def _subscription_bytes(m: Row, protocol: str | None) -> bytes:
    user_data = encode_user_data(protocol, generation=m.get("user_data_generation"),
                                 partitions=m.get("user_data_partitions"))
    return encode_subscription(
        m.get("subscription") or (), version=_or(m.get("subscription_version"), CURRENT_VERSION),
        user_data=user_data, owned_partitions=m.get("owned_partitions"),
        generation_id=m.get("subscription_generation_id"), rack_id=m.get("rack_id"))


def _assignment_bytes(m: Row) -> bytes:
    partitions = m.get("assignment") or ()
    version = m.get("assignment_version")
    if version is None and not partitions:
        return b""  # what the coordinator stores for a member the leader left out
    return encode_assignment(partitions, version=_or(version, CURRENT_VERSION))


def _member_identity(row: Row) -> dict[str, Any]:
    """The instance, rack, client and host fields every *MemberMetadataValue starts with."""
    return {
        "instance_id": row.get("group_instance_id"),
        "rack_id": row.get("rack_id"),
        "client_id": _or(row.get("client_id"), ""),
        "client_host": _or(row.get("client_host"), ""),
    }


def _consumer_group_member_metadata(row: Row) -> dict[str, Any]:
    return {
        **_member_identity(row),
        "subscribed_topic_names": list(row.get("subscribed_topic_names") or ()),
        "subscribed_topic_regex": row.get("subscribed_topic_regex"),
        "rebalance_timeout_ms": _or(row.get("rebalance_timeout_ms"), -1),
        "server_assignor": row.get("server_assignor"),
        "classic_member_metadata": _classic(row),
    }


def _classic(row: Row) -> dict[str, Any] | None:
    """ClassicMemberMetadata from `classic_protocols` ({name, metadata}) or, failing that,
    from `protocols` ({name, topics}, metadata written as v3 subscriptions)."""
    protocols = row.get("classic_protocols")
    if protocols is None and row.get("protocols") is not None:
        protocols = [{"name": p["name"], "metadata": encode_subscription(p.get("topics") or ())}
                     for p in row["protocols"]]
    if protocols is None:
        return None
    return {"session_timeout_ms": row.get("session_timeout_ms"),
            "supported_protocols": [{"name": p["name"], "metadata": bytes(p["metadata"])}
                                    for p in protocols]}


def _member_state(row: Row, names: Mapping[str, int] = _STATE_VALUES) -> int:
    state = row.get("member_state")
    if state is None:
        state = names.get(row.get("member_state_name") or "STABLE")
    if state is None:
        raise EncodeError(f"unknown member state {row.get('member_state_name')!r}")
    return int(state)


def _topic_partitions(value: Any) -> list[dict[str, Any]]:
    return [{"topic_id": tp["topic_id"], "partitions": list(tp["partitions"])}
            for tp in value or ()]


def _key_values(value: Any) -> list[dict[str, Any]]:
    return [{"key": kv["key"], "value": kv["value"]} for kv in value or ()]


def _tasks(value: Any) -> list[dict[str, Any]]:
    return [{"subtopology_id": t["subtopology_id"], "partitions": list(t["partitions"]),
             "assignment_epochs": None if t.get("assignment_epochs") is None
             else list(t["assignment_epochs"])} for t in value or ()]


def _streams_member_metadata(row: Row) -> dict[str, Any]:
    return {
        **_member_identity(row),
        "rebalance_timeout_ms": _or(row.get("rebalance_timeout_ms"), -1),
        "topology_epoch": _or(row.get("topology_epoch"), 0),
        "process_id": _or(row.get("process_id"), ""),
        "user_endpoint": row.get("user_endpoint"),
        "client_tags": _key_values(row.get("client_tags")),
    }


def _streams_current_assignment(row: Row) -> dict[str, Any]:
    body = _member_epochs(row, _STREAMS_STATE_VALUES)  # assigned_partitions: not written
    for kind in TASK_KINDS:
        body[kind] = _tasks(row.get(kind))
        body[f"{kind}_pending_revocation"] = _tasks(row.get(f"{kind}_pending_revocation"))
    return body


def _share_topics(value: Any) -> list[dict[str, Any]]:
    return [{**t, "partitions": list(t.get("partitions") or ())} for t in value or ()]


def _group_epoch(row: Row) -> dict[str, Any]:
    return {"epoch": row["group_epoch"], "metadata_hash": _or(row.get("metadata_hash"), 0)}


def _assignment_epoch(row: Row) -> dict[str, Any]:
    return {"assignment_epoch": row["assignment_epoch"],
            "assignment_timestamp": _or(row.get("assignment_timestamp_ms"), 0)}


def _target_partitions(row: Row) -> dict[str, Any]:
    return {"topic_partitions": _topic_partitions(row.get("assigned_partitions"))}


def _member_epochs(row: Row, names: Mapping[str, int] = _STATE_VALUES) -> dict[str, Any]:
    """The leading fields of every *CurrentMemberAssignmentValue, with its partitions."""
    return {"member_epoch": row["member_epoch"],
            "previous_member_epoch": row["previous_member_epoch"],
            "state": _member_state(row, names),
            "assigned_partitions": _topic_partitions(row.get("assigned_partitions"))}


_VALUE_BODIES: dict[str, Callable[[Row], dict[str, Any]]] = {
    "OFFSET_COMMIT": _offset_commit,
    "GROUP_METADATA": _group_metadata,
    "CONSUMER_GROUP_METADATA": _group_epoch,
    "CONSUMER_GROUP_PARTITION_METADATA": lambda row: {"topics": [
        {**t, "partition_metadata": t.get("partition_metadata") or []}
        for t in row.get("topics_metadata") or ()]},
    "CONSUMER_GROUP_MEMBER_METADATA": _consumer_group_member_metadata,
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA": _assignment_epoch,
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER": _target_partitions,
    "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT": lambda row: {
        **_member_epochs(row),
        "partitions_pending_revocation": _topic_partitions(
            row.get("partitions_pending_revocation")),
    },
    "CONSUMER_GROUP_REGULAR_EXPRESSION": lambda row: {
        "topics": list(row.get("regex_topics") or ()),
        "version": _or(row.get("regex_version"), 0),
        "timestamp": _ms(row, "regex_timestamp"),
    },
    "SHARE_GROUP_MEMBER_METADATA": lambda row: {
        **_member_identity(row),  # no instance id: not written
        "subscribed_topic_names": list(row.get("subscribed_topic_names") or ())},
    "SHARE_GROUP_METADATA": _group_epoch,
    "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA": _assignment_epoch,
    "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER": _target_partitions,
    "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT": _member_epochs,
    "SHARE_GROUP_STATE_PARTITION_METADATA": lambda row: {
        "initializing_topics": _share_topics(row.get("initializing_topics")),
        "initialized_topics": _share_topics(row.get("initialized_topics")),
        "deleting_topics": list(row.get("deleting_topics") or ())},
    "STREAMS_GROUP_METADATA": lambda row: {
        **_group_epoch(row),
        "validated_topology_epoch": _or(row.get("validated_topology_epoch"), -1),
        "last_assignment_configs": (None if "assignment_configs" in row
                                    and row["assignment_configs"] is None
                                    else _key_values(row.get("assignment_configs"))),
        "stored_description_topology_epoch": _or(
            row.get("stored_description_topology_epoch"), -1),
        "failed_description_topology_epoch": _or(
            row.get("failed_description_topology_epoch"), -1)},
    "STREAMS_GROUP_MEMBER_METADATA": _streams_member_metadata,
    "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA": _assignment_epoch,
    "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER": lambda row: {
        kind: _tasks(row.get(kind)) for kind in TASK_KINDS},
    "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT": _streams_current_assignment,
    "STREAMS_GROUP_TOPOLOGY": lambda row: {
        "epoch": _or(row.get("topology_epoch"), 0),
        "subtopologies": list(row.get("subtopologies") or ())},
}
