"""KIP-1071 streams groups replayed from records 17 and 19-23, as Kafka's coordinator replays them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pipeline.fold import CoordinatorConfig, advance, dumps, fold, group_state_row, loads
from pipeline.fold.events import Task
from pipeline.fold.group_replay import result_tables
from pipeline.fold.model import StreamsGroup, StreamsMember, StreamsTopology
from pipeline.fold.streams_groups import derive_state
from tests.fold.checks import assert_chunking_law, assert_ghost_tombstones_ignored, refused_as_malformed
from tests.fold.consumer_records import ConsumerLog
from tests.fold.records import T0, reasons, states
from tests.fold.share_records import ShareLog
from tests.fold.streams_records import UNRELEASED, UNREVOKED, WORD_COUNT, StreamsLog
from tests.fold.test_columns import columns_of

CONFIG = CoordinatorConfig()
ALL = {"0": [0, 1, 2, 3], "1": [0, 1, 2, 3]}


def two_member_group() -> StreamsLog:
    """m-1 alone at epoch 1, then m-2 (another process) joins: epoch 2 moves tasks 2 and 3 of
    both subtopologies to m-2, which m-1 revokes first while m-2 waits."""
    log = StreamsLog()
    log.stable_with("m-1")
    half, other = {"0": [0, 1], "1": [0, 1]}, {"0": [2, 3], "1": [2, 3]}
    log.at(10_000).joins("m-2", 2, {"m-1": half, "m-2": other}, process="p-2")
    log.current("m-2", 2, {}, state=UNRELEASED, previous=0)
    log.current("m-1", 1, half, state=UNREVOKED, previous=0, pending_active=other)
    log.at(12_000).current("m-1", 2, half, previous=1)
    log.current("m-2", 2, other, previous=0)
    return log


def test_state_is_derived_by_kafka_42s_rule_in_order() -> None:
    m = StreamsMember("m-1", member_epoch=3)
    topo = StreamsTopology(0, WORD_COUNT)
    assert derive_state(StreamsGroup(3, 3, topology=topo)) == "Empty"
    assert derive_state(StreamsGroup(3, 3, members=(m,))) == "NotReady"  # no topology
    assert derive_state(StreamsGroup(3, 3, validated_topology_epoch=-1, members=(m,),
                                     topology=topo)) == "NotReady"
    assert derive_state(StreamsGroup(4, 3, members=(m,), topology=topo)) == "Assigning"
    assert derive_state(StreamsGroup(3, 3, members=(replace(m, member_state=UNREVOKED),),
                                     topology=topo)) == "Reconciling"
    assert derive_state(StreamsGroup(3, 3, members=(replace(m, member_epoch=2),),
                                     topology=topo)) == "Reconciling"
    assert derive_state(StreamsGroup(3, 3, members=(m,), topology=topo)) == "Stable"


def test_first_member_topology_join_assigning_reconciling_then_stable() -> None:
    log = StreamsLog()
    log.stable_with("m-1")
    r = log.replay()
    assert states(r) == [
        (None, "Empty", "GROUP_CREATED"),
        ("Empty", "Stable", "STREAMS_GROUP_MEMBER_METADATA"),
        ("Stable", "Assigning", "STREAMS_GROUP_METADATA"),
        ("Assigning", "Reconciling", "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA"),
        ("Reconciling", "Stable", "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT"),
    ]
    assert r.outputs.transitions[0]["detail"] == "streams group (KIP-1071)"
    (rebalance,) = r.outputs.rebalances
    assert (rebalance["generation_id"], rebalance["outcome"], rebalance["cause"],
            rebalance["members_joined"], rebalance["active_tasks_total"]) == (
        1, "COMPLETED", "STREAMS_GROUP_METADATA", 1, 8)  # 4 tasks of each subtopology
    assert (rebalance["partitions_moved"], rebalance["partitions_total"]) == (None, None)
    g = r.group
    assert (g.group_type, g.protocol_type, g.generation_id) == ("streams", "streams", 1)
    s = g.streams
    assert s is not None and s.topology is not None and s.topology.epoch == 0
    assert s.assignment_configs == (("num.standby.replicas", "0"),)
    row = group_state_row(g, CONFIG)
    assert (row["group_type"], row["state"], row["group_epoch"], row["assignment_epoch"],
            row["member_count"]) == ("streams", "Stable", 1, 1, 1)
    (mr,) = row["members"]
    assert (mr["member_id"], mr["client_id"], mr["rebalance_timeout_ms"], mr["member_epoch"],
            mr["member_state"]) == ("m-1", "p-1-StreamThread-1", 300_000, 1, "STABLE")
    # Its active tasks' partitions: 0-3 of `words` (subtopology 0) and of the repartition
    # topic (1); no partitions by topic id.
    assert mr["assignment"] == [{"topic": t, "partition": p}
                                for t in ("app-repartition", "words") for p in range(4)]
    assert mr["assigned_partitions"] is None
    assert mr["assigned_tasks"]["active"][0]["subtopology_id"] == "0"


def test_a_members_partitions_are_those_its_active_tasks_read() -> None:
    """Kafka's StreamsMembershipManager.topicPartitionsForActiveTasks: task (s, p) reads
    partition p of every source and repartition source topic of subtopology s, counts
    unchecked; standby tasks, and subtopologies the topology lacks, read nothing."""
    topo = StreamsTopology(0, WORD_COUNT)
    tasks = (Task("1", (3, 7)), Task("0", (1,)), Task("9", (0,)))
    assert topo.task_partitions(tasks) == (
        ("app-repartition", 3), ("app-repartition", 7), ("words", 1))
    assert topo.task_partitions(()) == ()
    log = StreamsLog()
    log.stable_with("m-1")
    log.at(10_000).joins("m-2", 2, {"m-1": {"0": [0, 1]}, "m-2": {"0": [2, 3]}},
                         process="p-2")
    log.current("m-2", 2, {"0": [2]}, standby={"1": [0]}, previous=0)
    row = group_state_row(log.replay().group, CONFIG)
    m2 = next(m for m in row["members"] if m["member_id"] == "m-2")
    assert m2["assignment"] == [{"topic": "words", "partition": 2}]  # not its standby task
    log.add("STREAMS_GROUP_TOPOLOGY_TOMBSTONE")
    row = group_state_row(log.replay().group, CONFIG)
    assert all(m["assignment"] == [] for m in row["members"])  # no topology: nothing known


def test_second_member_joins_and_tasks_move_through_revocation() -> None:
    r = two_member_group().replay()
    assert states(r)[5:] == [
        ("Stable", "Reconciling", "STREAMS_GROUP_MEMBER_METADATA"),  # m-2 at epoch 0
        ("Reconciling", "Assigning", "STREAMS_GROUP_METADATA"),
        ("Assigning", "Reconciling", "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA"),
        ("Reconciling", "Stable", "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT"),
    ]
    second = r.outputs.rebalances[-1]
    assert (second["generation_id"], second["members_joined"], second["active_tasks_moved"],
            second["active_tasks_total"], second["duration_ms"]) == (2, 1, 4, 8, 2_000)
    s = r.group.streams
    assert s is not None
    m1, m2 = s.members
    assert m1.assigned.active == (Task("0", (0, 1)), Task("1", (0, 1)))
    assert not m1.pending_revocation and m2.process_id == "p-2"
    assert s.target("m-2") is not None and s.target("m-2").active[0] == Task("0", (2, 3))  # type: ignore[union-attr]


def test_pending_revocation_is_kept_while_the_member_revokes() -> None:
    log = two_member_group()
    log.events = log.events[:-2]  # stop before m-1 has revoked
    r = log.replay()
    assert r.group.state == "Reconciling"
    m1 = r.group.streams.member("m-1")  # type: ignore[union-attr]
    assert m1 is not None and m1.member_state == UNREVOKED
    assert m1.pending_revocation.active == (Task("0", (2, 3)), Task("1", (2, 3)))
    assert group_state_row(r.group, CONFIG)["members"][0]["member_state"] == "UNREVOKED_TASKS"


def test_member_metadata_fields_and_kafkas_defaults() -> None:
    log = StreamsLog()
    log.member("m-1", process="proc-9", topology_epoch=3, instance="inst-1",
               endpoint=("app-host", 8080), tags=(("zone", "eu-1"),))
    (m,) = log.replay().group.streams.members  # type: ignore[union-attr]
    assert (m.process_id, m.topology_epoch, m.group_instance_id, m.user_endpoint,
            m.client_tags, m.client_host, m.rebalance_timeout_ms) == (
        "proc-9", 3, "inst-1", ("app-host", 8080), (("zone", "eu-1"),), "/10.0.0.2", 300_000)
    assert (m.member_epoch, m.previous_member_epoch, m.member_state) == (0, -1, 1)


def test_not_ready_until_the_topology_epoch_is_validated() -> None:
    log = StreamsLog()
    log.topology()
    log.member("m-1")
    log.epoch(1, validated=-1)  # as a Kafka 4.1 record (no tag) reads, too
    log.target("m-1", ALL)
    log.target_epoch(1)
    log.current("m-1", 1, ALL, previous=0)
    r = log.replay()
    assert states(r)[-1] == ("Stable", "NotReady", "STREAMS_GROUP_METADATA")
    assert r.group.state == "NotReady" and r.outputs.rebalances == []
    log.epoch(2, validated=0)
    assert log.replay().group.state == "Assigning"


def test_topology_tombstone_clears_it_and_the_group_is_not_ready() -> None:
    log = StreamsLog()
    log.stable_with("m-1")
    log.tombstone("TOPOLOGY")
    r = log.replay()
    assert r.group.streams is not None and r.group.streams.topology is None
    assert states(r)[-1] == ("Stable", "NotReady", "STREAMS_GROUP_TOPOLOGY_TOMBSTONE")
    assert r.group.subscribed_topics == frozenset()


def test_subscribed_topics_are_the_source_topics_unless_empty() -> None:
    log = StreamsLog()
    log.stable_with("m-1")
    assert log.replay().group.subscribed_topics == frozenset({"words", "app-repartition"})
    log.leaves("m-1")
    assert log.replay().group.subscribed_topics == frozenset()


def test_member_leaves_through_its_tombstones_then_the_epoch_moves_on() -> None:
    log = two_member_group()
    log.at(20_000).leaves("m-2")
    log.epoch(3)
    log.target("m-1", ALL)
    log.target_epoch(3)
    log.current("m-1", 3, ALL, previous=2)
    r = log.replay()
    assert reasons(r) == []
    assert states(r)[-5:] == [
        ("Stable", "Reconciling", "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_TOMBSTONE"),
        ("Reconciling", "Stable", "STREAMS_GROUP_MEMBER_METADATA_TOMBSTONE"),
        ("Stable", "Assigning", "STREAMS_GROUP_METADATA"),
        ("Assigning", "Reconciling", "STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA"),
        ("Reconciling", "Stable", "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT"),
    ]
    assert r.group.member_ids == ("m-1",)
    assert (r.outputs.rebalances[-1]["members_left"], len(r.outputs.rebalances)) == (1, 3)


def test_kafkas_deletion_order_removes_the_group_and_the_id_starts_anew() -> None:
    log = two_member_group()
    log.at(30_000).deleted(("m-1", "m-2"))
    r = log.replay()
    assert r.outputs.rejected == []
    assert states(r)[-2:] == [("Assigning", "Empty", "STREAMS_GROUP_MEMBER_METADATA_TOMBSTONE"),
                              ("Empty", "Dead", "STREAMS_GROUP_METADATA_TOMBSTONE")]
    # The topology tombstone comes after the group is gone: ignored, no new group, so the
    # removed group (Dead since its metadata tombstone, its counters kept) is what stays.
    assert (r.group.exists, r.group.state, r.group.streams) == (False, "Dead", None)
    assert r.group.gone and r.group.state_since == T0 + 30_000 and r.group.rebalance_count == 2
    tables = result_tables(r.group, r.outputs, CONFIG)
    assert [row["state"] for row in tables["group_state"]] == ["Dead"]
    assert r.outputs.rebalances[-1]["outcome"] == "COMPLETED"  # deleting is no rebalance
    log.at(60_000).stable_with("m-9")
    again = log.replay()
    assert again.outputs.rejected == [] and again.group.member_ids == ("m-9",)
    assert again.group.state == "Stable" and again.group.generation_id == 1


def test_tombstones_for_an_unknown_group_or_member_are_ignored() -> None:
    assert_ghost_tombstones_ignored(
        StreamsLog(), ("METADATA", "TARGET_ASSIGNMENT_METADATA", "TOPOLOGY"))


# ------------------------------------------------------------------ one type per group id

def test_a_streams_record_replaces_a_simple_classic_group_and_keeps_its_offsets() -> None:
    log = StreamsLog()
    log.commit("words", 0, 9, generation=None)
    log.stable_with("m-1")
    r = log.replay()
    assert reasons(r) == [] and r.group.group_type == "streams"
    assert r.group.offsets[("words", 0)].committed_offset == 9
    assert r.outputs.transitions[1]["detail"] == (
        "streams group (KIP-1071); replaces the simple classic group that held its offsets")


def test_an_empty_classic_group_converted_by_its_tombstone_then_streams_records() -> None:
    log = StreamsLog()
    log.snapshot(3, {"a-1": [("words", 0)]})
    log.commit("words", 0, 4, generation=None)
    log.snapshot(4, {})  # the classic members left: Empty
    log.at(1_000).add("GROUP_TOMBSTONE")  # written by the streams heartbeat's conversion
    log.stable_with("m-1")
    r = log.replay()
    assert reasons(r) == []
    assert (r.group.group_type, r.group.state) == ("streams", "Stable")
    assert r.group.offsets[("words", 0)].committed_offset == 4


def test_a_streams_record_for_a_live_classic_consumer_or_share_group_is_malformed() -> None:
    log = StreamsLog()
    log.snapshot(3, {"a-1": [("words", 0)]})
    log.topology()
    (reason,) = reasons(log.replay())
    assert reason.startswith("MALFORMED: STREAMS_GROUP_TOPOLOGY for 'app', a classic group (Stable")
    for other in (ConsumerLog(group="app"), ShareLog(group="app")):
        other.stable_with("a-1")
        other.add("STREAMS_GROUP_TOPOLOGY", topology_epoch=0, subtopologies=WORD_COUNT)
        other.add("STREAMS_GROUP_TOPOLOGY_TOMBSTONE")
        r = other.replay()
        kind = r.group.group_type
        assert reasons(r) == [
            f"MALFORMED: STREAMS_GROUP_TOPOLOGY{t} for 'app', a {kind} group (Stable, 1 "
            "members): Kafka's loader fails here" for t in ("", "_TOMBSTONE")]


# ------------------------------------------------------------------ offsets

def test_offset_commit_records_are_ordinary_offsets_of_a_streams_group() -> None:
    log = StreamsLog()
    log.stable_with("m-1")
    log.commit("words", 0, 42, generation=None)
    r = log.replay()
    assert r.group.offsets[("words", 0)].committed_offset == 42 and not r.group.journal
    assert [h["change"] for h in r.outputs.offset_history] == ["COMMIT"]


@pytest.mark.parametrize(("member", "epoch", "api", "producer", "reason"), [
    ("m-1", 1, None, None, None),
    ("m-1", 0, None, None, "STALE_MEMBER_EPOCH"),
    ("zz-9", 1, None, None, "UNKNOWN_MEMBER_ID"),
    ("m-1", 1, 8, None, "UNSUPPORTED_VERSION"),
    ("m-1", 1, 8, 77, None),  # TxnOffsetCommit: no version rule
    ("", -1, None, 77, None),  # a transactional commit naming no member
    ("", -1, None, None, "UNKNOWN_MEMBER_ID"),  # -1 only to an empty group
])
def test_commit_requests_are_checked_as_streams_group_validate_offset_commit(
        member: str, epoch: int, api: int | None, producer: int | None,
        reason: str | None) -> None:
    log = StreamsLog()
    log.stable_with("m-1")
    log.add("OFFSET_COMMIT", member_id=member, generation_id=epoch, topic="words", partition=1,
            committed_offset=7, api_version=api, producer_id=producer)
    r = log.replay()
    assert reasons(r) == ([] if reason is None else [reason])
    stored = ("words", 1) in r.group.offsets or bool(r.group.pending_txns)
    assert stored is (reason is None)


def test_a_generation_less_commit_to_an_empty_streams_group_and_its_expiry() -> None:
    log = StreamsLog()
    log.topology()
    log.commit("words", 0, 5, generation=-1)
    g = log.replay().group
    assert g.offsets[("words", 0)].committed_offset == 5 and g.state == "Empty"
    later = advance(g, T0 + CONFIG.offsets_retention_ms
                    + 2 * CONFIG.offsets_retention_check_interval_ms, CONFIG, records=True)
    assert later.group.offsets == {} and (later.group.exists, later.group.state) == (False, "Dead")
    assert [e.event_type for e in later.outputs.records][-1] == "STREAMS_GROUP_TOPOLOGY_TOMBSTONE"


# ------------------------------------------------------------------ bad rows, state, chunks

@pytest.mark.parametrize("values", [
    {"event_type": "STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT", "member_id": "m-1",
     "member_state": 1},
    {"event_type": "STREAMS_GROUP_METADATA", "group_epoch": -3},
    {"event_type": "STREAMS_GROUP_TOPOLOGY", "subtopologies": []},
    {"event_type": "STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER", "member_id": "m-1",
     "active_tasks": [{"subtopology_id": "0", "partitions": [-2]}]},
    {"event_type": "STREAMS_GROUP_MEMBER_METADATA", "member_id": "m-1",
     "user_endpoint": {"host": "h"}},
])
def test_a_malformed_streams_row_is_rejected_and_changes_nothing(values: dict[str, object]) -> None:
    log = StreamsLog()
    log.stable_with("m-1")
    refused_as_malformed(log, values)


def test_streams_group_state_round_trips_through_bytes() -> None:
    log = two_member_group()
    log.member("m-3", instance="i-3", endpoint=("h", 9), tags=(("rack", "r"),))
    log.epoch(3)
    g = log.replay().group
    assert g.streams is not None and g.rebalance is not None and g.streams.topology is not None
    assert loads(dumps(g)) == g


def test_chunking_law_holds_for_streams_groups() -> None:
    log = two_member_group()
    log.commit("words", 0, 3, generation=None)
    log.at(20_000).leaves("m-2")
    log.tombstone("METADATA")  # malformed: rejected in every split
    log.epoch(3)
    log.target("m-1", ALL)
    log.target_epoch(3)
    log.current("m-1", 3, ALL, previous=2)
    log.deleted(("m-1",))
    log.stable_with("m-4")
    events = log.events
    whole = fold("app", events, CONFIG)
    assert len(reasons(whole)) == 1
    assert_chunking_law(events, whole,
                        ("transitions", "rebalances", "offset_history", "rejected", "history"))


def test_share_and_streams_logs_fold_alike_as_columns_and_as_events() -> None:
    """EventColumns (as the Spark side hands rows over, nested values as plain lists and
    dicts) read back into the same values: same state, same rows."""
    streams = two_member_group()
    streams.commit("words", 0, 1, generation=None)
    streams.at(30_000).deleted(("m-1", "m-2"))
    shares = ShareLog()
    shares.stable_with("a-1")
    shares.deleted(("a-1",))
    for log in (streams, shares):
        as_events = fold(log.group, log.events, CONFIG)
        as_columns = fold(log.group, columns_of(log.events), CONFIG)
        assert as_columns.group == as_events.group
        for table in ("transitions", "rebalances", "offset_history", "rejected", "history"):
            assert getattr(as_columns.outputs, table) == getattr(as_events.outputs, table)
