"""What share and streams groups add to the tables: group_state and group_history carry a
streams group's topology, validated topology epoch and assignment configs and its members'
process, endpoint, client tags, topology epoch and tasks (current, pending revocation,
target), and a share group's state partitions; classic and consumer groups keep every value
they had, the new columns null. From the fold's records and from the bytes Kafka's own
classes wrote (tests/decode/kafka_records.json)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from pipeline.fold import CoordinatorConfig, dumps, fold, group_state_row, loads
from pipeline.fold.group_replay import replay_group
from pipeline.fold.serde import document
from schemas.tables import SHARE_STREAMS_GROUP, STATE_MEMBER_FIELDS
from tests.fold.consumer_records import ORDERS_ID, PAYMENTS_ID, ConsumerLog
from tests.fold.records import Log
from tests.fold.share_records import ShareLog
from tests.fold.streams_records import StreamsLog
from tests.fold.test_share_streams_from_kafka import SHARE_LIFE, STREAMS_LIFE, _events
from tests.fold.test_streams_groups import two_member_group

CONFIG = CoordinatorConfig()
GROUP_COLUMNS = tuple(c.name for c in SHARE_STREAMS_GROUP)
STREAMS_MEMBER_FIELDS = ("process_id", "user_endpoint", "client_tags", "topology_epoch",
                         "assigned_tasks", "tasks_pending_revocation", "target_tasks")


def _tasks(active: dict[str, list[int]], standby: dict[str, list[int]] | None = None
           ) -> dict[str, Any]:
    """A STREAMS_TASKS value as the fold's test records write it (no assignment epochs)."""
    def rows(tasks: dict[str, list[int]] | None) -> list[dict[str, Any]]:
        return [{"subtopology_id": s, "partitions": ps, "assignment_epochs": None}
                for s, ps in (tasks or {}).items()]
    return {"active": rows(active), "standby": rows(standby), "warmup": []}


def test_streams_members_carry_process_endpoint_tags_topology_epoch_and_tasks() -> None:
    log = StreamsLog()
    log.stable_with("m-1")
    log.member("m-1", endpoint=("app-host", 8080), tags=(("zone", "eu-1"),), topology_epoch=0)
    row = group_state_row(log.replay().group, CONFIG)
    (m,) = row["members"]
    owned = {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}
    assert {f: m[f] for f in STREAMS_MEMBER_FIELDS} == {
        "process_id": "p-1",
        "user_endpoint": {"host": "app-host", "port": 8080},
        "client_tags": [{"key": "zone", "value": "eu-1"}],
        "topology_epoch": 0,
        "assigned_tasks": _tasks(owned),
        "tasks_pending_revocation": _tasks({}),
        "target_tasks": _tasks(owned),
    }
    # A streams member owns tasks: by name, the partitions its active tasks read (both
    # subtopologies' topics, tasks 0-3); nothing by topic id.
    assert m["assignment"] == [{"topic": t, "partition": p}
                               for t in ("app-repartition", "words") for p in range(4)]
    assert (m["assigned_partitions"], m["target_partitions"]) == (None, None)


def test_tasks_pending_revocation_and_targets_as_tasks_move_between_members() -> None:
    log = two_member_group()
    log.events = log.events[:-2]  # m-1 still revokes tasks 2 and 3 for m-2
    row = group_state_row(log.replay().group, CONFIG)
    m1, m2 = row["members"]
    half, other = {"0": [0, 1], "1": [0, 1]}, {"0": [2, 3], "1": [2, 3]}
    assert (m1["member_state"], m1["assigned_tasks"], m1["tasks_pending_revocation"],
            m1["target_tasks"]) == ("UNREVOKED_TASKS", _tasks(half), _tasks(other), _tasks(half))
    assert (m2["process_id"], m2["member_state"], m2["assigned_tasks"], m2["target_tasks"]) == (
        "p-2", "UNRELEASED_TASKS", _tasks({}), _tasks(other))


def test_the_streams_group_carries_its_topology_validated_epoch_and_assignment_configs() -> None:
    log = StreamsLog()
    log.stable_with("m-1")
    row = group_state_row(log.replay().group, CONFIG)
    assert row["topology"]["epoch"] == 0
    sub0, sub1 = row["topology"]["subtopologies"]
    assert (sub0["subtopology_id"], sub0["source_topics"], sub0["repartition_sink_topics"]) == (
        "0", ["words"], ["app-repartition"])
    assert sub1["repartition_source_topics"] == [
        {"name": "app-repartition", "partitions": 4, "replication_factor": 3, "topic_configs": []}]
    assert sub1["state_changelog_topics"] == [
        {"name": "app-counts-changelog", "partitions": 0, "replication_factor": 0,
         "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}]
    assert (row["validated_topology_epoch"], row["assignment_configs"]) == (
        0, [{"key": "num.standby.replicas", "value": "0"}])
    assert row["share_state_partitions"] is None


def test_group_history_follows_the_topology_and_its_tombstone() -> None:
    log = StreamsLog()
    log.topology()
    log.member("m-1")
    log.epoch(1, validated=-1)  # not validated: NotReady
    log.add("STREAMS_GROUP_TOPOLOGY_TOMBSTONE")
    history = log.replay().outputs.history
    shown = [(h["state"], h["topology"] and h["topology"]["epoch"], h["validated_topology_epoch"])
             for h in history]
    # Kafka's StreamsGroup starts its validated topology epoch at 0, so a topology of epoch
    # 0 is ready before any metadata record; the record's -1 makes it NotReady.
    assert shown == [("Empty", 0, 0), ("Stable", 0, 0), ("NotReady", 0, -1),
                     ("NotReady", None, -1)]


def test_share_groups_carry_their_state_partitions_until_the_tombstone() -> None:
    log = ShareLog()
    log.stable_with("a-1")
    log.state_partitions(initializing={PAYMENTS_ID: [0]}, initialized={ORDERS_ID: [0, 1]},
                         deleting=(PAYMENTS_ID,))
    r = log.replay()
    row = group_state_row(r.group, CONFIG)
    assert row["share_state_partitions"] == {
        "initializing": [{"topic_id": PAYMENTS_ID, "topic_name": "payments", "partitions": [0]}],
        "initialized": [{"topic_id": ORDERS_ID, "topic_name": "orders", "partitions": [0, 1]}],
        "deleting": [{"topic_id": PAYMENTS_ID, "topic_name": "payments"}],
    }
    assert r.outputs.history[-1]["share_state_partitions"] == row["share_state_partitions"]
    assert {c: row[c] for c in GROUP_COLUMNS if c != "share_state_partitions"} == dict.fromkeys(
        ("topology", "validated_topology_epoch", "assignment_configs"))
    assert all(row["members"][0][f] is None for f in STREAMS_MEMBER_FIELDS)
    log.tombstone("STATE_PARTITION_METADATA")
    r = log.replay()
    assert group_state_row(r.group, CONFIG)["share_state_partitions"] is None
    assert r.outputs.history[-1]["share_state_partitions"] is None  # a change of shape: a row


def test_classic_and_consumer_groups_keep_their_values_and_the_new_columns_are_null() -> None:
    classic = Log("classic").stable_group("a-1", "b-2")
    consumer = ConsumerLog()
    consumer.stable_with("a-1")
    for log in (classic, consumer):
        tables = replay_group(log.group, None, log.events, None, CONFIG).tables
        rows = tables["group_state"] + tables["group_history"]
        assert any(row["members"] for row in rows)
        for row in rows:
            assert all(row[c] is None for c in GROUP_COLUMNS), log.group
            for m in row["members"]:
                assert set(m) == {f.name for f in STATE_MEMBER_FIELDS}
                assert all(m[f] is None for f in STREAMS_MEMBER_FIELDS), log.group


def test_kafkas_streams_records_fill_the_columns() -> None:
    row = group_state_row(fold("app", _events("app", STREAMS_LIFE)).group, CONFIG)
    assert (row["group_type"], row["validated_topology_epoch"], row["assignment_configs"]) == (
        "streams", 0, [{"key": "num.standby.replicas", "value": "1"}])
    topology = row["topology"]
    assert (topology["epoch"], [s["subtopology_id"] for s in topology["subtopologies"]]) == (
        0, ["0", "1"])
    assert topology["subtopologies"][1]["source_topic_regex"] == ["in-.*"]
    (m,) = row["members"]
    assert (m["process_id"], m["topology_epoch"], m["user_endpoint"], m["client_tags"]) == (
        "proc-1", 0, None, [])
    # Kafka 4.2+ writes the epoch each current task was assigned in; a target has none.
    assert m["assigned_tasks"]["active"] == [
        {"subtopology_id": "0", "partitions": [0, 1], "assignment_epochs": [3, 4]}]
    assert m["tasks_pending_revocation"]["active"] == [
        {"subtopology_id": "1", "partitions": [2], "assignment_epochs": [3]}]
    assert m["target_tasks"]["active"] == [
        {"subtopology_id": "0", "partitions": [0, 1], "assignment_epochs": None},
        {"subtopology_id": "1", "partitions": [2], "assignment_epochs": None}]


def test_kafkas_share_records_fill_the_state_partitions() -> None:
    row = group_state_row(fold("share-g", _events("share-g", SHARE_LIFE)).group, CONFIG)
    sp = row["share_state_partitions"]
    assert [(t["topic_name"], t["partitions"]) for t in sp["initialized"]] == [("orders", [0, 1, 2])]
    assert [(t["topic_name"], t["partitions"]) for t in sp["initializing"]] == [("payments", [3])]
    assert [t["topic_name"] for t in sp["deleting"]] == ["old"]
    assert row["topology"] is None


def test_every_row_of_a_group_says_its_type_from_its_group_created_row_on() -> None:
    share, streams, consumer = ShareLog(), StreamsLog(), ConsumerLog()
    share.stable_with("a-1")
    share.commit("orders", 0, 1, generation=None)  # refused: a share group takes no offsets
    streams.stable_with("m-1")
    consumer.stable_with("a-1")
    classic = Log("classic").stable_group("a-1")
    classic.join("b-2", new=True)  # answered MEMBER_ID_REQUIRED: an error_responses row
    for log, kind in ((share, "share"), (streams, "streams"), (consumer, "consumer"),
                      (classic, "classic")):
        tables = replay_group(log.group, None, log.events, None, CONFIG).tables
        typed = {t: {r["group_type"] for r in rows} for t, rows in tables.items()
                 if t not in ("committed_offsets", "offset_history")}
        assert tables["group_transitions"][0]["cause"] == "GROUP_CREATED"
        assert {frozenset(types) for types in typed.values()} == {frozenset({kind})}, typed
    assert "rejected_events" in replay_group(share.group, None, share.events, None,
                                             CONFIG).tables
    assert "error_responses" in replay_group(classic.group, None, classic.events, None,
                                             CONFIG).tables


def test_a_deleted_group_dies_as_its_type_and_its_offsets_live_on_in_a_classic_one() -> None:
    log = StreamsLog()
    log.commit("words", 0, 10)  # a simple classic group, which the streams records replace
    log.stable_with("m-1")
    log.at(5_000).deleted(("m-1",))
    r = log.replay()
    shown = [(t["from_state"], t["to_state"], t["group_type"]) for t in r.outputs.transitions]
    assert shown[0] == (None, "Empty", "classic")
    assert shown[1] == ("Empty", "Empty", "streams")  # GROUP_CREATED: the streams group
    assert shown[-2:] == [("Empty", "Dead", "streams"), (None, "Empty", "classic")]


def test_a_rejected_row_without_a_group_says_no_type() -> None:
    log = ShareLog()
    log.tombstone("METADATA")  # ignored: no group
    log.add("SHARE_GROUP_METADATA", group_epoch=-5, metadata_hash=0)  # malformed, no group
    (row,) = replay_group(log.group, None, log.events, None, CONFIG).tables["rejected_events"]
    assert (row["group_state"], row["group_type"]) == (None, None)


def test_a_streams_rebalance_counts_active_tasks_and_names_no_partition() -> None:
    rebalances = two_member_group().replay().outputs.rebalances
    counted = [(r["group_type"], r["active_tasks_moved"], r["active_tasks_total"],
                r["partitions_moved"], r["partitions_total"]) for r in rebalances]
    # m-1 takes all eight tasks, then four of them move to m-2.
    assert counted == [("streams", 8, 8, None, None), ("streams", 4, 8, None, None)]


def test_classic_and_consumer_rebalances_count_partitions_and_no_tasks() -> None:
    classic = Log("classic").stable_group("a-1", "b-2")
    consumer = ConsumerLog()
    consumer.stable_with("a-1")
    for log, kind in ((classic, "classic"), (consumer, "consumer")):
        (r,) = log.replay().outputs.rebalances
        assert (r["group_type"], r["partitions_moved"], r["partitions_total"],
                r["active_tasks_moved"], r["active_tasks_total"]) == (kind, 4, 4, None, None)


def test_a_removed_group_rows_show_the_type_it_was_removed_as() -> None:
    """Kafka removes a deleted share, streams or consumer group; its last group_history and
    group_state rows (Dead) say the type that died, as its Dead transition does, and the
    id's next record starts a group of whatever type that record makes."""
    share = ShareLog()
    share.stable_with("a-1")
    share.at(4_000).deleted(("a-1",))
    consumer = ConsumerLog()
    consumer.stable_with("a-1")
    consumer.deleted(("a-1",))
    streams = StreamsLog()
    streams.stable_with("m-1")
    streams.deleted(("m-1",))
    for log, kind in ((share, "share"), (consumer, "consumer"), (streams, "streams")):
        r = log.replay()
        assert not r.group.exists and r.group.group_type == "classic"  # no part is left
        assert r.outputs.transitions[-1]["to_state"] == "Dead"
        last = r.outputs.history[-1]
        row = group_state_row(r.group, CONFIG)
        assert ([r.outputs.transitions[-1]["group_type"], last["group_type"], row["group_type"]]
                == [kind] * 3), kind
        assert (last["state"], row["state"]) == ("Dead", "Dead")
        assert loads(dumps(r.group)) == r.group
    again = ShareLog()
    again.events = list(share.events)
    again.next_offset = share.next_offset
    again.at(9_000).add("GROUP_METADATA", generation_id=1, protocol_type="consumer",
                        protocol=None, leader_id=None, members=())
    r = again.replay()
    assert (r.group.group_type, r.group.shown_type, r.group.removed_as) == (
        "classic", "classic", None)


def test_a_format_4_state_loads_with_no_removed_type() -> None:
    log = ShareLog()
    log.stable_with("a-1")
    log.deleted(("a-1",))
    g = log.replay().group
    doc = document(g)
    assert (doc["v"], doc["removed_as"]) == (5, "share")
    del doc["removed_as"]
    doc["v"] = 4
    old = loads(json.dumps(doc).encode())
    assert old == replace(g, removed_as=None) and old.shown_type == "classic"
