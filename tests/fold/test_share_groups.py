"""KIP-932 share groups replayed from records 10-15, as Kafka's coordinator replays them."""

from __future__ import annotations

import json

import pytest

from pipeline.fold import CoordinatorConfig, advance, dumps, fold, group_state_row, loads
from pipeline.fold.model import ShareGroup, ShareMember, ShareStatePartitions
from pipeline.fold.serde import document
from pipeline.fold.share_groups import derive_state
from pipeline.fold.timers import next_deadline
from tests.fold.checks import assert_chunking_law, assert_ghost_tombstones_ignored, refused_as_malformed
from tests.fold.consumer_records import ORDERS_ID, PAYMENTS_ID, ConsumerLog
from tests.fold.records import T0, Log, reasons, states
from tests.fold.share_records import ShareLog

CONFIG = CoordinatorConfig()
ORDERS = {ORDERS_ID: [0, 1, 2, 3]}


def two_member_group() -> ShareLog:
    """a-1 alone at epoch 1, then b-2 joins at epoch 2: a share group's members share the
    partitions, and each moves straight to its target (no revocation, no Reconciling)."""
    log = ShareLog()
    log.stable_with("a-1")
    log.at(10_000).joins("b-2", 2, {"a-1": {ORDERS_ID: [0, 1]}, "b-2": {ORDERS_ID: [2, 3]}})
    log.current("a-1", 2, {ORDERS_ID: [0, 1]}, previous=1)
    return log


def test_state_is_derived_as_kafkas_share_group_maybe_update_group_state() -> None:
    assert derive_state(ShareGroup()) == "Empty"
    # Epochs do not matter: a share group has no Assigning or Reconciling state.
    assert derive_state(ShareGroup(5, 3, members=(ShareMember("a-1", member_epoch=1),))) == "Stable"


def test_first_member_joins_empty_then_stable_with_epochs_and_no_rebalance() -> None:
    log = ShareLog()
    log.stable_with("a-1")
    r = log.replay()
    assert states(r) == [
        (None, "Empty", "GROUP_CREATED"),
        ("Empty", "Stable", "SHARE_GROUP_MEMBER_METADATA"),
    ]
    assert r.outputs.transitions[0]["detail"] == "share group (KIP-932)"
    assert r.outputs.rebalances == [] and r.group.rebalance_count == 0
    g = r.group
    assert (g.group_type, g.state, g.generation_id, g.protocol_type) == (
        "share", "Stable", 1, "share")
    s = g.share
    assert s is not None and (s.group_epoch, s.assignment_epoch) == (1, 1)
    (m,) = s.members
    assert (m.member_epoch, m.previous_member_epoch, m.member_state) == (1, 0, 0)
    assert m.assigned_partitions == ((ORDERS_ID, (0, 1, 2, 3)),)
    row = group_state_row(g, CONFIG)
    assert (row["group_type"], row["state"], row["generation_id"], row["group_epoch"],
            row["assignment_epoch"], row["member_count"]) == ("share", "Stable", 1, 1, 1, 1)
    (mr,) = row["members"]
    assert (mr["member_id"], mr["client_id"], mr["subscription"], mr["member_state"]) == (
        "a-1", "a", ["orders"], "STABLE")
    # The share state partitions name the topic, so the assignment shows by name too.
    assert [(a["topic"], a["partition"]) for a in mr["assignment"]] == [
        ("orders", p) for p in range(4)]
    assert mr["assigned_partitions"] == mr["target_partitions"] == [
        {"topic_id": ORDERS_ID, "partitions": [0, 1, 2, 3]}]


def test_second_member_takes_its_target_at_once_and_history_follows_each_record() -> None:
    r = two_member_group().replay()
    assert [s for s in states(r) if s[0] is not None] == [
        ("Empty", "Stable", "SHARE_GROUP_MEMBER_METADATA")]  # b-2's join changes no state
    g = r.group
    assert g.share is not None and g.generation_id == 2
    assert {m.member_id: (m.member_epoch, m.assigned_partitions) for m in g.share.members} == {
        "a-1": (2, ((ORDERS_ID, (0, 1)),)), "b-2": (2, ((ORDERS_ID, (2, 3)),))}
    last = r.outputs.history[-1]
    assert (last["group_type"], last["group_epoch"], last["member_count"]) == ("share", 2, 2)
    # every record changed the shape: one history row each (a GROUP_CREATED row shares one)
    assert len(r.outputs.history) == len(two_member_group().events)


def test_member_record_fields_and_defaults_as_kafkas_builder() -> None:
    log = ShareLog()
    log.member("a-1", topics=("orders", "payments"), rack="rack-a")
    (m,) = log.replay().group.share.members  # type: ignore[union-attr]
    assert (m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names) == (
        "rack-a", "a", "/10.0.0.1", ("orders", "payments"))
    assert (m.member_epoch, m.previous_member_epoch, m.member_state) == (0, -1, 0)
    assert log.replay().group.subscribed_topics == frozenset({"orders", "payments"})


def test_state_partition_values_replace_the_whole_and_the_tombstone_removes_them() -> None:
    log = ShareLog()
    log.stable_with("a-1")
    log.state_partitions(initializing={PAYMENTS_ID: [0, 1]}, initialized=ORDERS)
    first = log.replay().group.share
    assert first is not None and first.state_partitions == ShareStatePartitions(
        ((PAYMENTS_ID, "payments", (0, 1)),), ((ORDERS_ID, "orders", (0, 1, 2, 3)),), ())
    log.state_partitions(initialized={PAYMENTS_ID: [0, 1]}, deleting=(ORDERS_ID,))
    second = log.replay().group.share
    assert second is not None and second.state_partitions == ShareStatePartitions(
        (), ((PAYMENTS_ID, "payments", (0, 1)),), ((ORDERS_ID, "orders"),))
    log.tombstone("STATE_PARTITION_METADATA")
    r = log.replay()
    assert r.group.share is not None and r.group.share.state_partitions is None
    assert r.group.state == "Stable" and r.outputs.rejected == []
    # No state partitions name the topic now: the member row keeps its ids, shows no names.
    (mr,) = group_state_row(r.group, CONFIG)["members"]
    assert mr["assignment"] == [] and mr["assigned_partitions"] is not None


def test_a_kafka_40_state_partition_record_without_initializing_topics_reads_as_none() -> None:
    log = ShareLog()
    log.add("SHARE_GROUP_STATE_PARTITION_METADATA", record_layout="kafka-4.0",
            initialized_topics=((ORDERS_ID, "orders", (0,)),), deleting_topics=())
    s = log.replay().group.share
    assert s is not None and s.state_partitions is not None
    assert s.state_partitions.initializing == () and len(s.state_partitions.initialized) == 1


def test_member_leaves_through_its_tombstones_and_the_group_empties() -> None:
    log = ShareLog()
    log.stable_with("a-1")
    log.at(5_000).leaves("a-1")
    log.epoch(2)
    r = log.replay()
    assert reasons(r) == []
    assert states(r)[-1] == ("Stable", "Empty", "SHARE_GROUP_MEMBER_METADATA_TOMBSTONE")
    assert r.group.member_ids == () and r.group.generation_id == 2
    hist = r.outputs.history
    # the current-assignment tombstone keeps the member, at epoch -1 with nothing assigned
    left = next(h for h in hist if h["members"] and h["members"][0]["member_epoch"] == -1)
    assert left["members"][0]["assigned_partitions"] == []


def test_group_tombstone_needs_the_target_gone_and_the_epoch_at_minus_one() -> None:
    log = ShareLog()
    log.stable_with("a-1")
    log.leaves("a-1")
    log.tombstone("METADATA")  # the target epoch is still 1
    r = log.replay()
    assert reasons(r) == ["MALFORMED: SHARE_GROUP_METADATA_TOMBSTONE before the "
                          "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA tombstone"]
    assert r.group.exists and r.group.state == "Empty"
    log = ShareLog()
    log.target("ghost", ORDERS)
    log.tombstone("METADATA")
    assert reasons(log.replay()) == ["MALFORMED: SHARE_GROUP_METADATA_TOMBSTONE while the "
                                     "target assignment still has 1 members"]


def test_kafkas_deletion_order_removes_the_group_which_ends_dead() -> None:
    log = two_member_group()
    log.at(30_000).deleted(("a-1", "b-2"))
    r = log.replay()
    assert r.outputs.rejected == []
    assert states(r)[-2:] == [("Stable", "Empty", "SHARE_GROUP_MEMBER_METADATA_TOMBSTONE"),
                              ("Empty", "Dead", "SHARE_GROUP_METADATA_TOMBSTONE")]
    g = r.group
    assert (g.exists, g.state, g.share, g.gone) == (False, "Dead", None, True)
    assert group_state_row(g, CONFIG)["state"] == "Dead"


def test_a_deleted_group_id_starts_a_new_group_at_its_next_record() -> None:
    log = ShareLog()
    log.stable_with("a-1")
    log.deleted(("a-1",))
    log.at(60_000).stable_with("c-3")
    r = log.replay()
    assert r.outputs.rejected == []
    assert states(r)[-2:] == [(None, "Empty", "GROUP_CREATED"),
                              ("Empty", "Stable", "SHARE_GROUP_MEMBER_METADATA")]
    assert r.group.member_ids == ("c-3",) and r.group.state_since == T0 + 60_000


def test_tombstones_for_an_unknown_group_or_member_are_ignored() -> None:
    assert_ghost_tombstones_ignored(
        ShareLog(), ("METADATA", "TARGET_ASSIGNMENT_METADATA", "STATE_PARTITION_METADATA"))
    log = ShareLog()
    log.stable_with("a-1")
    before = log.replay().group.share
    for record in ("CURRENT_MEMBER_ASSIGNMENT", "MEMBER_METADATA"):
        log.tombstone(record, "ghost")
    after = log.replay()
    assert after.outputs.rejected == [] and after.group.share == before


# ------------------------------------------------------------------ one type per group id

def test_a_share_record_for_a_consumer_group_is_malformed() -> None:
    log = ConsumerLog(group="sg")
    log.stable_with("a-1")
    log.add("SHARE_GROUP_MEMBER_METADATA", member_id="s-1", client_id="s", client_host="h",
            subscribed_topic_names=("orders",))
    r = log.replay()
    assert reasons(r) == ["MALFORMED: SHARE_GROUP_MEMBER_METADATA for 'sg', a consumer group "
                          "(Stable, 1 members): Kafka's loader fails here"]
    assert r.group.group_type == "consumer"


def test_a_share_record_does_not_replace_a_simple_classic_group() -> None:
    # Kafka's getOrMaybeCreatePersistedShareGroup has no simple-group exception.
    log = ShareLog()
    log.commit("orders", 0, 5, generation=None)
    log.member("a-1")
    r = log.replay()
    (reason,) = reasons(r)
    assert reason.startswith("MALFORMED: SHARE_GROUP_MEMBER_METADATA for 'sg', a classic group "
                             "(Empty, protocol type None, 0 members)")
    assert r.group.group_type == "classic" and r.group.offsets


def test_consumer_and_classic_records_for_a_share_group() -> None:
    log = ShareLog()
    log.stable_with("a-1")
    log.add("CONSUMER_GROUP_METADATA", group_epoch=1, metadata_hash=0)
    log.join("x-1", new=True)
    r = log.replay()
    assert reasons(r) == [
        "MALFORMED: CONSUMER_GROUP_METADATA for 'sg', a share group (Stable, 1 members): "
        "Kafka's loader fails here",
        "UNSUPPORTED_RECORD: JOIN to a share group: classic-protocol requests to share and "
        "streams groups are not modelled"]
    assert r.group.group_type == "share" and r.group.journal is False


def test_group_metadata_replaces_a_share_group_and_a_group_tombstone_removes_one() -> None:
    log = ShareLog()
    log.stable_with("a-1")
    log.snapshot(4, {"x-1": [("orders", 0)]})
    r = log.replay()
    assert states(r)[-2:] == [("Stable", "Dead", "GROUP_REPLACED"), (None, "Stable", "SNAPSHOT")]
    assert r.outputs.transitions[-2]["detail"] == (
        "GROUP_METADATA replaces the share group with a classic one")
    assert (r.group.group_type, r.group.share) == ("classic", None)
    log = ShareLog()
    log.stable_with("a-1")
    log.add("GROUP_TOMBSTONE")
    r = log.replay()
    assert states(r)[-1] == ("Stable", "Dead", "GROUP_TOMBSTONE") and r.group.gone


# ------------------------------------------------------------------ offsets, timers

@pytest.mark.parametrize("generation", [None, -1, 1])
def test_a_share_group_takes_no_offset_commit(generation: int | None) -> None:
    log = ShareLog()
    log.stable_with("a-1")
    log.commit("orders", 0, 5, member="a-1", generation=generation)
    log.commit("orders", 1, 6, member="a-1", generation=generation)
    r = log.replay()
    # ShareGroup.validateOffsetCommit: GroupIdNotFoundException, for a record too.
    assert reasons(r) == ["GROUP_ID_NOT_FOUND", "GROUP_ID_NOT_FOUND"]
    assert r.group.offsets == {} and r.outputs.offset_history == []
    assert [row["group_state"] for row in r.outputs.rejected] == ["Stable", "Stable"]


def test_an_empty_share_group_never_expires() -> None:
    log = ShareLog()
    log.member("a-1")
    log.add("OFFSET_COMMIT", member_id="a-1", generation_id=0, topic="orders", partition=0,
            committed_offset=1)  # a request: refused, yet it turns the group's timers on
    log.tombstone("CURRENT_MEMBER_ASSIGNMENT", "a-1")
    log.tombstone("MEMBER_METADATA", "a-1")
    g = log.replay().group
    assert g.journal and g.state == "Empty"
    assert next_deadline(g, CONFIG) is None
    later = advance(g, T0 + 10 * CONFIG.offsets_retention_ms, CONFIG)
    assert later.group == g and later.outputs.transitions == []


# ------------------------------------------------------------------ bad rows, state, chunks

@pytest.mark.parametrize("values", [
    {"event_type": "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT", "member_id": "a-1",
     "member_state": 0, "assigned_partitions": []},
    {"event_type": "SHARE_GROUP_METADATA", "group_epoch": -3},
    {"event_type": "SHARE_GROUP_MEMBER_METADATA", "member_id": ""},
    {"event_type": "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER", "member_id": "a-1",
     "assigned_partitions": [{"topic_id": ORDERS_ID, "partitions": [-1]}]},
    {"event_type": "SHARE_GROUP_STATE_PARTITION_METADATA", "initialized_topics": [],
     "deleting_topics": [{"topic_id": ORDERS_ID}]},
    {"event_type": "SHARE_GROUP_STATE_PARTITION_METADATA", "deleting_topics": []},
])
def test_a_malformed_share_row_is_rejected_and_changes_nothing(values: dict[str, object]) -> None:
    log = ShareLog()
    log.stable_with("a-1")
    refused_as_malformed(log, values)


def test_share_group_state_round_trips_through_bytes() -> None:
    log = two_member_group()
    log.state_partitions(initializing={PAYMENTS_ID: [1]}, initialized=ORDERS,
                         deleting=(PAYMENTS_ID,))
    log.member("c-3", rack="r1")
    g = log.replay().group
    assert g.share is not None and g.share.state_partitions is not None
    assert loads(dumps(g)) == g
    assert document(g)["v"] == 5 and document(g)["streams"] is None


def test_a_format_3_state_upgrades_to_no_share_or_streams_part() -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    g = log.replay().group
    doc = document(g)
    del doc["share"], doc["streams"]
    doc["v"] = 3
    assert loads(json.dumps(doc).encode()) == g
    classic = Log().stable_group("a-1").replay().group
    doc = document(classic)
    del doc["share"], doc["streams"]
    doc["v"] = 3
    assert loads(json.dumps(doc).encode()) == classic


def test_chunking_law_holds_for_share_groups() -> None:
    log = two_member_group()
    log.tombstone("METADATA")  # malformed: rejected in every split
    log.state_partitions(initialized={ORDERS_ID: [0, 1, 2, 3], PAYMENTS_ID: [0]})
    log.at(20_000).leaves("b-2")
    log.epoch(3)
    log.deleted(("a-1",))
    log.stable_with("d-4")
    events = log.events
    whole = fold("sg", events, CONFIG)
    assert reasons(whole) == ["MALFORMED: SHARE_GROUP_METADATA_TOMBSTONE while the group still "
                              "has 2 members"]
    assert_chunking_law(events, whole, ("transitions", "rebalances", "rejected", "history"))
