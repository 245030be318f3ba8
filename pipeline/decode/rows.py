"""Decoded record bodies as event-log columns (docs/contract.md §1, `schemas.events`; plus the
decoder's own few, `pipeline.decode.columns`): one small projection per record type,
independent of the version the body was read at, since the schema engine fills absent fields
with Kafka's defaults.
Kafka's sentinels become nulls here: -1 for a leader epoch, a timestamp or a generation, and
`""` for a protocol type. A GroupMetadata member's rebalance timeout falls back to its session
timeout when absent (v0) or -1. Consumer-protocol bytes are decoded only when the protocol type
is "consumer"; other protocol types (Connect, ...) carry opaque bytes and get null subscription
and assignment. Corrupt consumer-protocol bytes raise `DecodeError`, with the member's path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.decode.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    decode_user_data,
)
from pipeline.decode.messages import MEMBER_STATES, STREAMS_MEMBER_STATES, TASK_KINDS
from pipeline.decode.primitives import ZERO_UUID, DecodeError

Row = dict[str, Any]
Body = dict[str, Any]

MEMBER_EXTRA_KEYS = (
    "owned_partitions", "subscription_version", "assignment_version",
    "subscription_generation_id", "rack_id", "user_data_generation", "user_data_partitions",
)


def _opt(value: int) -> int | None:
    """Kafka's -1 "none" sentinel as None."""
    return None if value == -1 else value


def offset_commit(body: Body, row: Row) -> None:
    row["committed_offset"] = body["offset"]
    row["leader_epoch"] = _opt(body["leader_epoch"])
    row["commit_metadata"] = body["metadata"]
    row["commit_timestamp_ms"] = _opt(body["commit_timestamp"])
    row["expire_timestamp_ms"] = _opt(body["expire_timestamp"])
    row["topic_id"] = None if body["topic_id"] == ZERO_UUID else body["topic_id"]


def group_metadata(body: Body, row: Row) -> None:
    protocol_type = body["protocol_type"] or None
    protocol = body["protocol"]
    row["protocol_type"] = protocol_type
    row["generation_id"] = body["generation"]
    row["protocol"] = protocol
    row["leader_id"] = body["leader"]
    row["current_state_timestamp_ms"] = _opt(body["current_state_timestamp"])
    members = []
    for i, m in enumerate(body["members"]):
        try:
            members.append(_member(m, protocol_type == "consumer", protocol))
        except DecodeError as e:
            raise e.at(f"[{i}]").at("members") from None
    row["members"] = members


def _member(m: Body, consumer: bool, protocol: str | None) -> Row:
    session = m["session_timeout"]
    rebalance = m["rebalance_timeout"]
    out: Row = {
        "member_id": m["member_id"],
        "group_instance_id": m["group_instance_id"],
        "client_id": m["client_id"],
        "client_host": m["client_host"],
        "session_timeout_ms": session,
        "rebalance_timeout_ms": session if rebalance == -1 else rebalance,
        "subscription": None,
        "assignment": None,
    }
    out.update(dict.fromkeys(MEMBER_EXTRA_KEYS))
    if consumer:
        _consumer_member(m, protocol, out)
    return out


def _consumer_member(m: Body, protocol: str | None, out: Row) -> None:
    try:
        s = decode_subscription(m["subscription"])
    except DecodeError as e:
        raise e.at("subscription") from None
    try:
        a = decode_assignment(m["assignment"])
    except DecodeError as e:
        raise e.at("assignment") from None
    out["subscription"] = s["topics"]
    out["assignment"] = a["partitions"]
    out["owned_partitions"] = s["owned_partitions"]
    out["subscription_version"] = s["version"]
    out["assignment_version"] = a["version"]
    out["subscription_generation_id"] = s["generation_id"]
    out["rack_id"] = s["rack_id"]
    out.update(decode_user_data(protocol, s["user_data"]))


def copied(**columns: str) -> Callable[[Body, Row], None]:
    """The projection of a record type whose columns are body fields as they are
    (`column="field"`)."""
    pairs = tuple(columns.items())

    def fill(body: Body, row: Row) -> None:
        for column, name in pairs:
            row[column] = body[name]
    return fill


_member_metadata = copied(
    group_instance_id="instance_id", rack_id="rack_id", client_id="client_id",
    client_host="client_host", subscribed_topic_names="subscribed_topic_names",
    subscribed_topic_regex="subscribed_topic_regex", server_assignor="server_assignor")


def consumer_group_member_metadata(body: Body, row: Row) -> None:
    _member_metadata(body, row)
    row["rebalance_timeout_ms"] = _opt(body["rebalance_timeout_ms"])
    classic = body["classic_member_metadata"]
    if classic is None:
        row["session_timeout_ms"] = row["classic_protocols"] = row["protocols"] = None
        return
    row["session_timeout_ms"] = classic["session_timeout_ms"]
    row["classic_protocols"] = classic["supported_protocols"]
    protocols = []
    for i, p in enumerate(classic["supported_protocols"]):
        try:
            topics = decode_subscription(p["metadata"])["topics"]
        except DecodeError as e:
            raise e.at("metadata").at(f"[{i}]").at("supported_protocols").at(
                "classic_member_metadata") from None
        protocols.append({"name": p["name"], "topics": topics})
    row["protocols"] = protocols


_member_epochs = copied(
    member_epoch="member_epoch", previous_member_epoch="previous_member_epoch",
    member_state="state")


def share_group_current_member_assignment(body: Body, row: Row) -> None:
    _member_epochs(body, row)
    row["member_state_name"] = MEMBER_STATES.get(body["state"])
    row["assigned_partitions"] = body["assigned_partitions"]


def _without_epochs(partitions: list[Body]) -> list[Body]:
    """A consumer member's partitions by topic id, without the epochs Kafka 4.4 assigned
    them at (a fencing detail the fold does not read; the record's bytes keep them)."""
    return [{"topic_id": p["topic_id"], "partitions": p["partitions"]} for p in partitions]


def consumer_group_current_member_assignment(body: Body, row: Row) -> None:
    _member_epochs(body, row)
    row["member_state_name"] = MEMBER_STATES.get(body["state"])
    row["assigned_partitions"] = _without_epochs(body["assigned_partitions"])
    row["partitions_pending_revocation"] = _without_epochs(body["partitions_pending_revocation"])


def share_group_metadata(body: Body, row: Row) -> None:
    row["group_epoch"] = body["epoch"]
    row["metadata_hash"] = body.get("metadata_hash")  # absent from Kafka 4.0's layout


streams_group_metadata = copied(
    group_epoch="epoch", metadata_hash="metadata_hash",
    validated_topology_epoch="validated_topology_epoch",
    assignment_configs="last_assignment_configs",
    stored_description_topology_epoch="stored_description_topology_epoch",
    failed_description_topology_epoch="failed_description_topology_epoch")


def target_assignment_metadata(body: Body, row: Row) -> None:
    """A share or streams group's; Kafka's 0 "not recorded" timestamp (before 4.3) as null."""
    row["assignment_epoch"] = body["assignment_epoch"]
    row["assignment_timestamp_ms"] = body["assignment_timestamp"] or None


_streams_member_metadata = copied(
    group_instance_id="instance_id", rack_id="rack_id", client_id="client_id",
    client_host="client_host", rebalance_timeout_ms="rebalance_timeout_ms",
    topology_epoch="topology_epoch", process_id="process_id", user_endpoint="user_endpoint",
    client_tags="client_tags")


def _tasks(tasks: list[Body]) -> list[Row]:
    """Task entries with `assignment_epochs` always present (null where the record has none)."""
    return [{"subtopology_id": t["subtopology_id"], "partitions": t["partitions"],
             "assignment_epochs": t.get("assignment_epochs")} for t in tasks]


def streams_group_target_assignment_member(body: Body, row: Row) -> None:
    for kind in TASK_KINDS:
        row[kind] = _tasks(body[kind])


def streams_group_current_member_assignment(body: Body, row: Row) -> None:
    _member_epochs(body, row)
    row["member_state_name"] = STREAMS_MEMBER_STATES.get(body["state"])
    for kind in TASK_KINDS:
        row[kind] = _tasks(body[kind])
        row[f"{kind}_pending_revocation"] = _tasks(body[f"{kind}_pending_revocation"])


VALUE_ROWS: dict[str, Callable[[Body, Row], None]] = {
    "OFFSET_COMMIT": offset_commit,
    "GROUP_METADATA": group_metadata,
    "CONSUMER_GROUP_METADATA": copied(group_epoch="epoch", metadata_hash="metadata_hash"),
    "CONSUMER_GROUP_PARTITION_METADATA": copied(topics_metadata="topics"),
    "CONSUMER_GROUP_MEMBER_METADATA": consumer_group_member_metadata,
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA": copied(assignment_epoch="assignment_epoch"),
    "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER": copied(assigned_partitions="topic_partitions"),
    "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT": consumer_group_current_member_assignment,
    "CONSUMER_GROUP_REGULAR_EXPRESSION": copied(
        regex_topics="topics", regex_version="version", regex_timestamp_ms="timestamp"),
    "SHARE_GROUP_MEMBER_METADATA": copied(
        rack_id="rack_id", client_id="client_id", client_host="client_host",
        subscribed_topic_names="subscribed_topic_names"),
    "SHARE_GROUP_METADATA": share_group_metadata,
    "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA": target_assignment_metadata,
    "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER": copied(assigned_partitions="topic_partitions"),
    "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT": share_group_current_member_assignment,
    "SHARE_GROUP_STATE_PARTITION_METADATA": lambda body, row: row.update(
        initializing_topics=body.get("initializing_topics"),  # null in Kafka 4.0's layout
        initialized_topics=body["initialized_topics"], deleting_topics=body["deleting_topics"]),
    "STREAMS_GROUP_METADATA": streams_group_metadata,
    "STREAMS_GROUP_MEMBER_METADATA": _streams_member_metadata,
    "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA": target_assignment_metadata,
    "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER": streams_group_target_assignment_member,
    "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT": streams_group_current_member_assignment,
    "STREAMS_GROUP_TOPOLOGY": copied(topology_epoch="epoch", subtopologies="subtopologies"),
}


def key_columns(key: Body, row: Row) -> None:
    """The key's fields as columns: group_id, and topic/partition, member_id or the regex."""
    row["group_id"] = key["group"] if "group" in key else key["group_id"]
    for name in ("topic", "partition", "member_id", "regular_expression"):
        if name in key:
            row[name] = key[name]


def tombstone_type(event_type: str) -> str:
    """The event type of a value-less record of `event_type`."""
    return {"OFFSET_COMMIT": "OFFSET_TOMBSTONE", "GROUP_METADATA": "GROUP_TOMBSTONE"}.get(
        event_type, f"{event_type}_TOMBSTONE")
