"""The decoder against bytes Kafka's own classes wrote (tests/decode/kafka_records.json, from
tests/decode/java/*.java with kafka-group-coordinator 4.2.1, 4.0.0 and 4.4.0): every share-group and
streams-group record type, with tagged fields set and unset, nullable fields null and set, and
tombstones, decodes to exactly these columns; and writing the row back gives Kafka's bytes."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.decode import decode_record, encode_record
from tests.decode import kafka_records

A, B = "AAECAwQFBgcICQoLDA0ODw", "ZGVmZ2hpamtsbW5vcHFycw"  # the programs' two topic ids
SHARE = {"group_id": "share-g", "record_version": 0}
SHARE_MEMBER = {**SHARE, "member_id": "sm-1"}
APP = {"group_id": "app", "record_version": 0}
APP_MEMBER = {**APP, "member_id": "stm-1"}
NO_DESCRIPTION = {"stored_description_topology_epoch": -1, "failed_description_topology_epoch": -1}


def _task(subtopology: str, partitions: list[int], epochs: list[int] | None) -> dict[str, Any]:
    return {"subtopology_id": subtopology, "partitions": partitions, "assignment_epochs": epochs}


def _topic(name: str, partitions: int, rf: int, configs: list[dict[str, str]]) -> dict[str, Any]:
    return {"name": name, "partitions": partitions, "replication_factor": rf,
            "topic_configs": configs}


VALUES: dict[str, dict[str, Any]] = {
    "share_member_no_rack": {**SHARE_MEMBER, "event_type": "SHARE_GROUP_MEMBER_METADATA",
                             "record_type": 10, "rack_id": None, "client_id": "sc-1",
                             "client_host": "/10.0.0.1",
                             "subscribed_topic_names": ["orders", "payments"]},
    "share_member_rack": {**SHARE_MEMBER, "event_type": "SHARE_GROUP_MEMBER_METADATA",
                          "record_type": 10, "rack_id": "rack-a", "client_id": "sc-1",
                          "client_host": "/10.0.0.1", "subscribed_topic_names": []},
    "share_metadata": {**SHARE, "event_type": "SHARE_GROUP_METADATA", "record_type": 11,
                       "record_layout": "kafka-4.1+", "group_epoch": 7,
                       "metadata_hash": -1234567890123456789},
    "share_target_metadata": {**SHARE, "event_type": "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA",
                              "record_type": 12, "assignment_epoch": 7,
                              "assignment_timestamp_ms": None},
    "share_target_member": {**SHARE_MEMBER, "event_type": "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER",
                            "record_type": 13, "assigned_partitions": [
                                {"topic_id": A, "partitions": [0, 1, 2]},
                                {"topic_id": B, "partitions": []}]},
    "share_current": {**SHARE_MEMBER, "event_type": "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT",
                      "record_type": 14, "member_epoch": 7, "previous_member_epoch": 6,
                      "member_state": 0, "member_state_name": "STABLE",
                      "assigned_partitions": [{"topic_id": A, "partitions": [0, 2]}]},
    "share_state_partitions": {
        **SHARE, "event_type": "SHARE_GROUP_STATE_PARTITION_METADATA", "record_type": 15,
        "record_layout": "kafka-4.1+",
        "initializing_topics": [{"topic_id": B, "topic_name": "payments", "partitions": [3]}],
        "initialized_topics": [{"topic_id": A, "topic_name": "orders", "partitions": [0, 1, 2]}],
        "deleting_topics": [{"topic_id": B, "topic_name": "old"}]},
    "streams_metadata_no_tags": {**APP, "event_type": "STREAMS_GROUP_METADATA", "record_type": 17,
                                 "group_epoch": 3, "metadata_hash": 42,
                                 "validated_topology_epoch": -1, "assignment_configs": [],
                                 **NO_DESCRIPTION},
    "streams_metadata_tags": {**APP, "event_type": "STREAMS_GROUP_METADATA", "record_type": 17,
                              "group_epoch": 4, "metadata_hash": -42, "validated_topology_epoch": 0,
                              "assignment_configs": [{"key": "num.standby.replicas", "value": "1"}],
                              **NO_DESCRIPTION},
    "streams_member_nulls": {**APP_MEMBER, "event_type": "STREAMS_GROUP_MEMBER_METADATA",
                             "record_type": 19, "group_instance_id": None, "rack_id": None,
                             "client_id": "app-client", "client_host": "/10.0.0.2",
                             "rebalance_timeout_ms": 300000, "topology_epoch": 0,
                             "process_id": "proc-1", "user_endpoint": None, "client_tags": []},
    "streams_member_set": {**APP_MEMBER, "event_type": "STREAMS_GROUP_MEMBER_METADATA",
                           "record_type": 19, "group_instance_id": "inst-1", "rack_id": "rack-b",
                           "client_id": "app-client", "client_host": "/10.0.0.2",
                           "rebalance_timeout_ms": 60000, "topology_epoch": 1,
                           "process_id": "proc-2",
                           "user_endpoint": {"host": "app-host", "port": 65000},  # uint16 > 32767
                           "client_tags": [{"key": "zone", "value": "eu-1"}]},
    "streams_target_metadata": {**APP, "event_type": "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA",
                                "record_type": 20, "assignment_epoch": 4,
                                "assignment_timestamp_ms": None},
    "streams_target_member": {
        **APP_MEMBER, "event_type": "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER", "record_type": 21,
        "active_tasks": [_task("0", [0, 1], None), _task("1", [2], None)],
        "standby_tasks": [_task("0", [2], None)], "warmup_tasks": []},
    "streams_current": {
        **APP_MEMBER, "event_type": "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT", "record_type": 22,
        "member_epoch": 4, "previous_member_epoch": 3, "member_state": 2,
        "member_state_name": "UNREVOKED_TASKS",
        "active_tasks": [_task("0", [0, 1], [3, 4])],
        "active_tasks_pending_revocation": [_task("1", [2], [3])],
        "standby_tasks": [_task("0", [2], [])], "standby_tasks_pending_revocation": [],
        "warmup_tasks": [_task("1", [0], [4])], "warmup_tasks_pending_revocation": []},
    "streams_topology": {**APP, "event_type": "STREAMS_GROUP_TOPOLOGY", "record_type": 23,
                         "topology_epoch": 0, "subtopologies": [
        {"subtopology_id": "0", "source_topics": ["words"], "source_topic_regex": [],
         "state_changelog_topics": [_topic("app-counts-changelog", 0, 0,
                                           [{"key": "cleanup.policy", "value": "compact"}])],
         "repartition_sink_topics": ["app-repartition"], "repartition_source_topics": [],
         "copartition_groups": []},
        {"subtopology_id": "1", "source_topics": [], "source_topic_regex": ["in-.*"],
         "state_changelog_topics": [], "repartition_sink_topics": [],
         "repartition_source_topics": [_topic("app-repartition", 4, 3, [])],
         "copartition_groups": [{"source_topics": [], "source_topic_regex": [0],
                                 "repartition_source_topics": [0]}]}]},
    # Tags Kafka 4.3 and 4.4 added (kafka-group-coordinator 4.4.0).
    "share_target_metadata_44": {**SHARE, "record_type": 12, "assignment_epoch": 8,
                                 "event_type": "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA",
                                 "assignment_timestamp_ms": 1700000000123},
    "streams_target_metadata_44": {**APP, "record_type": 20, "assignment_epoch": 5,
                                   "event_type": "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA",
                                   "assignment_timestamp_ms": 1700000000456},
    "streams_metadata_44": {**APP, "event_type": "STREAMS_GROUP_METADATA", "record_type": 17,
                            "group_epoch": 5, "metadata_hash": 7, "validated_topology_epoch": 1,
                            "assignment_configs": None,  # null: nullable from 4.4
                            "stored_description_topology_epoch": 1,
                            "failed_description_topology_epoch": 0},
    # Kafka 4.0's layouts (kafka-group-coordinator 4.0.0), same version 0.
    "share_metadata_40": {**SHARE, "event_type": "SHARE_GROUP_METADATA", "record_type": 11,
                          "record_layout": "kafka-4.0", "group_epoch": 5, "metadata_hash": None},
    "share_state_partitions_40": {
        **SHARE, "event_type": "SHARE_GROUP_STATE_PARTITION_METADATA", "record_type": 15,
        "record_layout": "kafka-4.0", "initializing_topics": None,
        "initialized_topics": [{"topic_id": A, "topic_name": "orders", "partitions": [0, 1, 2]}],
        "deleting_topics": [{"topic_id": B, "topic_name": "old"}]},
    "share_state_partitions_40_empty": {
        **SHARE, "event_type": "SHARE_GROUP_STATE_PARTITION_METADATA", "record_type": 15,
        "record_layout": "kafka-4.0", "initializing_topics": None, "initialized_topics": [],
        "deleting_topics": []},
    # Type 9 existed in 4.0 only: kept, with its bytes and its name, as before.
    "share_partition_metadata_40": {**SHARE, "event_type": "UNSUPPORTED_RECORD", "record_type": 9,
                                    "record_name": "ShareGroupPartitionMetadata"},
}
RECORDS = kafka_records.records()


def _tombstone_of(name: str) -> dict[str, Any]:
    base = VALUES[name.removesuffix("_tombstone")
                  .replace("share_member", "share_member_rack")
                  .replace("streams_metadata", "streams_metadata_tags")
                  .replace("streams_member", "streams_member_set")]
    keep = ("group_id", "member_id", "record_type")
    return {**{k: base[k] for k in keep if k in base}, "record_version": None,
            "event_type": f"{base['event_type']}_TOMBSTONE"}


def _expected(name: str) -> dict[str, Any]:
    return _tombstone_of(name) if name.endswith("_tombstone") else VALUES[name]


def test_every_share_and_streams_type_is_covered_with_its_tombstone() -> None:
    types = {decode_record(*RECORDS[n])["record_type"] for n in RECORDS}
    assert types == {9, 10, 11, 12, 13, 14, 15, 17, 19, 20, 21, 22, 23}
    tombstones = {decode_record(*RECORDS[n])["record_type"] for n in RECORDS if n.endswith("tombstone")}
    assert tombstones == types - {9}
    assert set(VALUES) | {n for n in RECORDS if n.endswith("_tombstone")} == set(RECORDS)


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_kafkas_bytes_decode_to_every_expected_column(name: str) -> None:
    key, value = RECORDS[name]
    row = decode_record(key, value)
    assert row.pop("raw_key") == key and row.pop("raw_value") == value
    assert row == _expected(name)


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_the_decoded_row_encodes_back_to_kafkas_bytes(name: str) -> None:
    assert encode_record(decode_record(*RECORDS[name])) == RECORDS[name]


@pytest.mark.kafka
def test_fixtures_are_what_kafka_writes() -> None:
    """Compile and run the Java programs against Kafka's jars: their output is the fixtures."""
    committed = kafka_records.load()
    for version in kafka_records.PROGRAMS:
        assert kafka_records.run_java(version) == committed[version], version
