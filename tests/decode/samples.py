"""Sample event-log rows of every record type and value version the decoder supports, written so
that each one survives encode -> decode unchanged (only fields the version can hold are set)."""

from __future__ import annotations

from typing import Any

from pipeline.decode.primitives import uuid_to_text

T0 = 1_700_000_000_000
TOPIC_A = uuid_to_text(bytes(range(16)))
TOPIC_B = uuid_to_text(bytes(range(100, 116)))
Row = dict[str, Any]


def offset_commit(version: int, record_type: int = 1, **extra: Any) -> Row:
    row: Row = {
        "event_type": "OFFSET_COMMIT", "record_type": record_type, "record_version": version,
        "group_id": "my-group", "topic": "orders", "partition": 3, "committed_offset": 42,
        "leader_epoch": 5 if version >= 3 else None, "commit_metadata": "meta",
        "commit_timestamp_ms": T0,
        "expire_timestamp_ms": T0 + 604_800_000 if version == 1 else None,
    }
    row.update(extra)
    return row


def _user_data(protocol: str, tps: list[Row], sticky_version: int) -> Row:
    if protocol == "sticky":
        return {"user_data_generation": 4 if sticky_version == 1 else None,
                "user_data_partitions": tps}
    if protocol == "cooperative-sticky":
        return {"user_data_generation": 4, "user_data_partitions": None}
    return {"user_data_generation": None, "user_data_partitions": None}


def member(i: int, version: int, protocol: str = "range", sub_version: int = 3,
           asg_version: int | None = 3, sticky_version: int = 1) -> Row:
    tps = [{"topic": "orders", "partition": i}, {"topic": "payments", "partition": i}]
    return {
        "member_id": f"consumer-{i}-0b3c",
        "group_instance_id": f"inst-{i}" if version >= 3 else None,
        "client_id": f"consumer-{i}", "client_host": f"/10.0.0.{i}",
        "session_timeout_ms": 45_000, "rebalance_timeout_ms": 300_000 if version >= 1 else 45_000,
        "subscription": ["orders", "payments"],
        "assignment": tps if asg_version is not None else [],
        "owned_partitions": tps if sub_version >= 1 else None,
        "subscription_version": sub_version, "assignment_version": asg_version,
        "subscription_generation_id": 4 if sub_version >= 2 else None,
        "rack_id": "rack-a" if sub_version >= 3 else None,
        **_user_data(protocol, tps, sticky_version),
    }


def group_metadata(version: int, protocol: str = "range", members: int = 2, **kw: Any) -> Row:
    return {
        "event_type": "GROUP_METADATA", "record_type": 2, "record_version": version,
        "group_id": "my-group", "protocol_type": "consumer", "generation_id": 7,
        "protocol": protocol, "leader_id": "consumer-0-0b3c",
        "current_state_timestamp_ms": T0 + 100_000 if version >= 2 else None,
        "members": [member(i, version, protocol, **kw) for i in range(members)],
    }


def _opaque_member(version: int) -> Row:
    keys = ("owned_partitions", "subscription_version", "assignment_version",
            "subscription_generation_id", "rack_id", "user_data_generation",
            "user_data_partitions")
    m = {**member(0, version), **dict.fromkeys(keys), "subscription": None, "assignment": None}
    return m


def connect_group(version: int) -> Row:
    """A non-consumer protocol type: member bytes are opaque and stay undecoded."""
    return {**group_metadata(version), "protocol_type": "connect", "protocol": "sessioned",
            "members": [_opaque_member(version)]}


def kip848_rows() -> list[Row]:
    base = {"group_id": "kip848-group", "record_version": 0}
    classic = [{"name": "range", "metadata": bytes.fromhex(
        "0001000000010006" + b"orders".hex() + "ffffffff00000000")}]
    return [
        {**base, "event_type": "CONSUMER_GROUP_METADATA", "record_type": 3, "group_epoch": 12,
         "metadata_hash": 0},
        {**base, "event_type": "CONSUMER_GROUP_METADATA", "record_type": 3, "group_epoch": 13,
         "metadata_hash": -8_000_000_000},
        {**base, "event_type": "CONSUMER_GROUP_PARTITION_METADATA", "record_type": 4,
         "topics_metadata": [
             {"topic_id": TOPIC_A, "topic_name": "orders", "num_partitions": 3,
              "partition_metadata": [{"partition": 0, "racks": ["r1", "r2"]}]},
             {"topic_id": TOPIC_B, "topic_name": "payments", "num_partitions": 1,
              "partition_metadata": []}]},
        {**base, **_member_metadata(None), "record_type": 5},
        {**base, **_member_metadata(classic), "record_type": 5},
        {**base, "event_type": "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA", "record_type": 6,
         "assignment_epoch": 12},
        {**base, "event_type": "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER", "record_type": 7,
         "member_id": "m-1", "assigned_partitions": [
             {"topic_id": TOPIC_A, "partitions": [0, 2]}, {"topic_id": TOPIC_B, "partitions": []}]},
        {**base, "event_type": "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT", "record_type": 8,
         "member_id": "m-1", "member_epoch": 12, "previous_member_epoch": 11, "member_state": 1,
         "member_state_name": "UNREVOKED_PARTITIONS",
         "assigned_partitions": [{"topic_id": TOPIC_A, "partitions": [0]}],
         "partitions_pending_revocation": [{"topic_id": TOPIC_B, "partitions": [1, 2]}]},
        {**base, "event_type": "CONSUMER_GROUP_REGULAR_EXPRESSION", "record_type": 16,
         "regular_expression": "orders-.*", "regex_topics": ["orders-eu", "orders-us"],
         "regex_version": 17, "regex_timestamp_ms": T0},
    ]


def _member_metadata(classic: list[Row] | None) -> Row:
    return {
        "event_type": "CONSUMER_GROUP_MEMBER_METADATA", "member_id": "m-1",
        "group_instance_id": None if classic is None else "static-1", "rack_id": "rack-b",
        "client_id": "client-1", "client_host": "/10.1.2.3",
        "subscribed_topic_names": ["orders", "payments"],
        "subscribed_topic_regex": None if classic else "pay.*",
        "rebalance_timeout_ms": 300_000, "server_assignor": None if classic else "uniform",
        "session_timeout_ms": None if classic is None else 45_000,
        "classic_protocols": classic,
        "protocols": None if classic is None else [{"name": "range", "topics": ["orders"]}],
    }


def _tasks(*subtopologies: str, epochs: bool = True) -> list[Row]:
    return [{"subtopology_id": sub, "partitions": [i, i + 3],
             "assignment_epochs": [5, 6] if epochs else None} for i, sub in enumerate(subtopologies)]


def share_streams_rows() -> list[Row]:
    """Share-group (10-15) and streams-group (17, 19-23) rows, in both Kafka 4.0 and 4.1+
    layouts where one version has two."""
    share = {"group_id": "share-group", "record_version": 0}
    app = {"group_id": "streams-app", "record_version": 0}
    topics = [{"topic_id": TOPIC_A, "topic_name": "orders", "partitions": [0, 1]}]
    no_pending = {f"{k}_tasks_pending_revocation": [] for k in ("active", "standby", "warmup")}
    return [
        {**share, "event_type": "SHARE_GROUP_MEMBER_METADATA", "record_type": 10,
         "member_id": "s-1", "rack_id": "r1", "client_id": "c", "client_host": "/h",
         "subscribed_topic_names": ["orders"]},
        {**share, "event_type": "SHARE_GROUP_METADATA", "record_type": 11,
         "record_layout": "kafka-4.1+", "group_epoch": 3, "metadata_hash": 0},
        {**share, "event_type": "SHARE_GROUP_METADATA", "record_type": 11,
         "record_layout": "kafka-4.0", "group_epoch": 2, "metadata_hash": None},
        {**share, "event_type": "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA", "record_type": 12,
         "assignment_epoch": 3, "assignment_timestamp_ms": T0},
        {**share, "event_type": "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER", "record_type": 13,
         "member_id": "s-1", "assigned_partitions": [{"topic_id": TOPIC_B, "partitions": [4]}]},
        {**share, "event_type": "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT", "record_type": 14,
         "member_id": "s-1", "member_epoch": 3, "previous_member_epoch": 2, "member_state": 127,
         "member_state_name": "UNKNOWN", "assigned_partitions": []},
        {**share, "event_type": "SHARE_GROUP_STATE_PARTITION_METADATA", "record_type": 15,
         "record_layout": "kafka-4.1+", "initializing_topics": [], "initialized_topics": topics,
         "deleting_topics": []},
        {**share, "event_type": "SHARE_GROUP_STATE_PARTITION_METADATA", "record_type": 15,
         "record_layout": "kafka-4.0", "initializing_topics": None, "initialized_topics": topics,
         "deleting_topics": [{"topic_id": TOPIC_B, "topic_name": "gone"}]},
        {**app, "event_type": "STREAMS_GROUP_METADATA", "record_type": 17, "group_epoch": 9,
         "metadata_hash": 1 << 62, "validated_topology_epoch": 2,
         "assignment_configs": [{"key": "num.standby.replicas", "value": "0"}]},
        {**app, "event_type": "STREAMS_GROUP_METADATA", "record_type": 17, "group_epoch": 10,
         "metadata_hash": -1, "validated_topology_epoch": -1, "assignment_configs": None,
         "stored_description_topology_epoch": 2, "failed_description_topology_epoch": -1},
        {**app, "event_type": "STREAMS_GROUP_MEMBER_METADATA", "record_type": 19,
         "member_id": "a-1", "group_instance_id": None, "rack_id": "r2", "client_id": "c",
         "client_host": "/h", "rebalance_timeout_ms": 1000, "topology_epoch": 2,
         "process_id": "p", "user_endpoint": {"host": "localhost", "port": 0},
         "client_tags": []},
        {**app, "event_type": "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA", "record_type": 20,
         "assignment_epoch": 9, "assignment_timestamp_ms": None},
        {**app, "event_type": "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER", "record_type": 21,
         "member_id": "a-1", "active_tasks": _tasks("0", epochs=False), "standby_tasks": [],
         "warmup_tasks": _tasks("1", "2", epochs=False)},
        {**app, "event_type": "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT", "record_type": 22,
         "member_id": "a-1", "member_epoch": 9, "previous_member_epoch": 8, "member_state": 3,
         "member_state_name": "UNRELEASED_TASKS", "active_tasks": _tasks("0"),
         "standby_tasks": [], "warmup_tasks": _tasks("1"), **no_pending},
        {**app, "event_type": "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT", "record_type": 22,
         "member_id": "a-1", "member_epoch": 10, "previous_member_epoch": 9, "member_state": 1,
         "member_state_name": "STABLE", "active_tasks": [], "standby_tasks": [],
         "warmup_tasks": [], **no_pending, "standby_tasks_pending_revocation": _tasks("3")},
        {**app, "event_type": "STREAMS_GROUP_TOPOLOGY", "record_type": 23, "topology_epoch": 2,
         "subtopologies": []},
    ]


def tombstones() -> list[Row]:
    out = [
        {"event_type": "OFFSET_TOMBSTONE", "record_type": 1, "group_id": "g", "topic": "t",
         "partition": 0},
        {"event_type": "OFFSET_TOMBSTONE", "record_type": 0, "group_id": "g", "topic": "t",
         "partition": 1},
        {"event_type": "GROUP_TOMBSTONE", "record_type": 2, "group_id": "g"},
    ]
    for row in kip848_rows() + share_streams_rows():
        keep = ("group_id", "record_type", "member_id", "regular_expression")
        out.append({**{k: row[k] for k in keep if k in row},
                    "event_type": f"{row['event_type']}_TOMBSTONE"})
    unique = {(r["event_type"], r["record_type"], r.get("member_id")): r for r in out}
    return list(unique.values())


def all_valid_rows() -> list[Row]:
    rows = [offset_commit(v, t) for v in range(5) for t in (0, 1)]
    rows += [group_metadata(v, p) for v in range(5)
             for p in ("range", "roundrobin", "sticky", "cooperative-sticky")]
    rows += [group_metadata(3, "range", sub_version=s, asg_version=a)
             for s in range(4) for a in range(4)]
    rows += [group_metadata(2, "sticky", sticky_version=0), group_metadata(3, members=0),
             group_metadata(3, asg_version=None), connect_group(0), connect_group(4)]
    return rows + kip848_rows() + share_streams_rows() + tombstones()
