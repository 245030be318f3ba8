"""KIP-848 consumer groups replayed from records 3-8 and 16, as Kafka's coordinator replays them."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from pipeline.decode import decode_record, encode_record
from pipeline.fold import CoordinatorConfig, Event, advance, dumps, fold, group_state_row, loads
from pipeline.fold.consumer_groups import derive_state
from pipeline.fold.model import ConsumerGroup, ConsumerMember
from pipeline.fold.serde import document
from pipeline.fold.timers import next_deadline
from tests.fold.checks import assert_chunking_law, assert_ghost_tombstones_ignored, refused_as_malformed
from tests.fold.consumer_records import ORDERS_ID, PAYMENTS_ID, UNRELEASED, UNREVOKED, ConsumerLog
from tests.fold.records import T0, Log, reasons, states

CONFIG = CoordinatorConfig()
ORDERS = {ORDERS_ID: [0, 1, 2, 3]}


def two_member_group() -> ConsumerLog:
    """a-1 alone at epoch 1, then b-2 joins: epoch 2 moves partitions 2 and 3 to b-2, which
    a-1 revokes first (UNREVOKED_PARTITIONS) while b-2 waits (UNRELEASED_PARTITIONS)."""
    log = ConsumerLog()
    log.stable_with("a-1")
    log.at(10_000).joins("b-2", 2, {"a-1": {ORDERS_ID: [0, 1]}, "b-2": {ORDERS_ID: [2, 3]}})
    log.current("b-2", 2, {}, state=UNRELEASED, previous=0)
    log.current("a-1", 1, {ORDERS_ID: [0, 1]}, state=UNREVOKED, previous=0,
                pending={ORDERS_ID: [2, 3]})
    log.at(12_000).current("a-1", 2, {ORDERS_ID: [0, 1]}, previous=1)
    log.current("b-2", 2, {ORDERS_ID: [2, 3]}, previous=0)
    return log


def test_state_is_derived_as_kafkas_maybe_update_group_state() -> None:
    member = ConsumerMember("a-1", member_epoch=3)
    assert derive_state(ConsumerGroup(group_epoch=3, assignment_epoch=3)) == "Empty"
    assert derive_state(ConsumerGroup(4, 3, members=(member,))) == "Assigning"
    assert derive_state(ConsumerGroup(3, 3, members=(replace(member, member_epoch=2),))) == (
        "Reconciling")
    assert derive_state(ConsumerGroup(3, 3, members=(replace(member, member_state=1),))) == (
        "Reconciling")
    assert derive_state(ConsumerGroup(3, 3, members=(member,))) == "Stable"


def test_first_member_joins_epoch_bump_assigning_target_reconciling_then_stable() -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    r = log.replay()
    # Records apply one at a time, as Kafka replays them: the member record (5) comes before
    # the epoch bump (3), and a member at epoch 0 in state STABLE is reconciled to epoch 0.
    assert states(r) == [
        (None, "Empty", "GROUP_CREATED"),
        ("Empty", "Stable", "CONSUMER_GROUP_MEMBER_METADATA"),
        ("Stable", "Assigning", "CONSUMER_GROUP_METADATA"),
        ("Assigning", "Reconciling", "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA"),
        ("Reconciling", "Stable", "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT"),
    ]
    (rebalance,) = r.outputs.rebalances
    assert (rebalance["generation_id"], rebalance["outcome"], rebalance["cause"]) == (
        1, "COMPLETED", "CONSUMER_GROUP_METADATA")
    assert (rebalance["members_joined"], rebalance["partitions_total"]) == (1, 4)
    row = group_state_row(r.group, CONFIG)
    assert (row["group_type"], row["state"], row["generation_id"], row["group_epoch"],
            row["assignment_epoch"], row["member_count"]) == ("consumer", "Stable", 1, 1, 1, 1)
    (m,) = row["members"]
    assert m["subscription"] == ["orders"] and m["member_state"] == "STABLE"
    assert [(a["topic"], a["partition"]) for a in m["assignment"]] == [
        ("orders", p) for p in range(4)]
    assert m["target_partitions"] == [{"topic_id": ORDERS_ID, "partitions": [0, 1, 2, 3]}]


def test_second_member_joins_and_partitions_move_through_revocation() -> None:
    r = two_member_group().replay()
    assert states(r)[5:] == [
        ("Stable", "Reconciling", "CONSUMER_GROUP_MEMBER_METADATA"),  # b-2 at epoch 0
        ("Reconciling", "Assigning", "CONSUMER_GROUP_METADATA"),
        ("Assigning", "Reconciling", "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA"),
        ("Reconciling", "Stable", "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT"),
    ]
    second = r.outputs.rebalances[-1]
    assert (second["generation_id"], second["members_joined"], second["partitions_moved"],
            second["member_count"], second["duration_ms"]) == (2, 1, 2, 2, 2_000)
    g = r.group
    assert g.state == "Stable" and g.rebalance_count == 2
    assert {m.member_id: m.assigned_partitions for m in g.consumer.members} == {  # type: ignore[union-attr]
        "a-1": ((ORDERS_ID, (0, 1)),), "b-2": ((ORDERS_ID, (2, 3)),)}


def test_member_leaves_through_its_tombstones_then_the_epoch_moves_on() -> None:
    log = two_member_group()
    log.at(20_000).leaves("b-2")
    log.epoch(3)
    log.target("a-1", ORDERS)
    log.target_epoch(3)
    log.current("a-1", 3, ORDERS, previous=2)
    r = log.replay()
    assert states(r)[-5:] == [
        ("Stable", "Reconciling", "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TOMBSTONE"),
        ("Reconciling", "Stable", "CONSUMER_GROUP_MEMBER_METADATA_TOMBSTONE"),
        ("Stable", "Assigning", "CONSUMER_GROUP_METADATA"),
        ("Assigning", "Reconciling", "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA"),
        ("Reconciling", "Stable", "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT"),
    ]
    assert r.group.member_ids == ("a-1",)
    assert len(r.outputs.rebalances) == 3  # the tombstones alone start none
    last = r.outputs.rebalances[-1]
    assert (last["generation_id"], last["members_left"], last["partitions_moved"]) == (3, 1, 2)
    assert [m["member_id"] for m in group_state_row(r.group, CONFIG)["members"]] == ["a-1"]


def test_member_metadata_tombstone_before_its_assignment_tombstones_is_malformed() -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    before = log.replay().group
    log.tombstone("MEMBER_METADATA", "a-1")
    r = log.replay()
    assert reasons(r) == ["MALFORMED: CONSUMER_GROUP_MEMBER_METADATA_TOMBSTONE for 'a-1' before "
                          "its CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT tombstone"]
    assert r.group.consumer == before.consumer and r.group.state == "Stable"


def test_group_tombstones_delete_the_group_which_ends_dead() -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    log.at(5_000).deleted(("a-1",))
    r = log.replay()
    assert r.outputs.rejected == []
    # Derived after each record as Kafka does: the target epoch tombstone (-1) leaves the
    # group epoch above it while a member is left, which reads as Assigning.
    assert states(r)[-4:] == [
        ("Stable", "Reconciling", "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_TOMBSTONE"),
        ("Reconciling", "Assigning", "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_TOMBSTONE"),
        ("Assigning", "Empty", "CONSUMER_GROUP_MEMBER_METADATA_TOMBSTONE"),
        ("Empty", "Dead", "CONSUMER_GROUP_METADATA_TOMBSTONE"),
    ]
    assert (r.group.exists, r.group.consumer, r.group.state) == (False, None, "Dead")
    assert group_state_row(r.group, CONFIG)["state"] == "Dead"
    assert len(r.outputs.rebalances) == 1  # deleting the group is no rebalance


def test_group_tombstone_while_members_remain_is_malformed_and_changes_nothing() -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    before = log.replay().group
    log.tombstone("METADATA")
    r = log.replay()
    assert reasons(r) == ["MALFORMED: CONSUMER_GROUP_METADATA_TOMBSTONE while the group still "
                          "has 1 members"]
    assert r.group.consumer == before.consumer


def test_tombstones_for_an_unknown_group_or_member_are_ignored() -> None:
    assert_ghost_tombstones_ignored(
        ConsumerLog(), ("METADATA", "PARTITION_METADATA", "TARGET_ASSIGNMENT_METADATA"),
        ("CURRENT_MEMBER_ASSIGNMENT",))


def test_records_only_commits_are_applied_to_a_consumer_group() -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    log.record_commit("orders", 0, 42)
    r = log.replay()
    assert r.group.offsets[("orders", 0)].committed_offset == 42
    assert r.group.journal is False


@pytest.mark.parametrize(("member", "epoch", "api", "reason"), [
    ("a-1", 1, None, None),
    ("a-1", 0, None, "STALE_MEMBER_EPOCH"),
    ("zz-9", 1, None, "UNKNOWN_MEMBER_ID"),
    ("a-1", 1, 8, "UNSUPPORTED_VERSION"),
])
def test_commit_requests_are_checked_against_the_member_epoch(
        member: str, epoch: int, api: int | None, reason: str | None) -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    log.add("OFFSET_COMMIT", member_id=member, generation_id=epoch, topic="orders", partition=1,
            committed_offset=7, api_version=api)
    r = log.replay()
    assert reasons(r) == ([] if reason is None else [reason])
    assert (("orders", 1) in r.group.offsets) is (reason is None)


def test_generation_less_commit_to_an_empty_consumer_group_is_accepted() -> None:
    log = ConsumerLog()
    log.epoch(1)
    log.commit("orders", 0, 5, generation=-1)
    assert log.replay().group.offsets[("orders", 0)].committed_offset == 5


def test_no_timer_expires_a_member_of_a_records_only_consumer_group() -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    g = log.replay().group
    assert next_deadline(g, CONFIG) is None
    later = advance(g, T0 + 365 * 86_400_000, CONFIG)
    assert later.group == g and not later.outputs.transitions


def test_commit_requests_make_expiry_run_on_unsubscribed_topics_only() -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    for topic in ("orders", "old-topic"):
        log.add("OFFSET_COMMIT", member_id="a-1", generation_id=1, topic=topic, partition=0,
                committed_offset=1)
    g = log.replay().group
    assert g.journal
    week = CONFIG.offsets_retention_ms
    later = advance(g, T0 + week + CONFIG.offsets_retention_check_interval_ms + 1, CONFIG)
    assert set(later.group.offsets) == {("orders", 0)}
    assert [h["change"] for h in later.outputs.offset_history] == ["EXPIRED"]
    assert later.group.state == "Stable"


def test_an_empty_consumer_group_dies_once_its_offsets_expired() -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    log.add("OFFSET_COMMIT", member_id="a-1", generation_id=1, topic="orders", partition=0,
            committed_offset=1)
    log.leaves("a-1")
    g = log.replay().group
    assert g.state == "Empty"
    r = advance(g, T0 + CONFIG.offsets_retention_ms + 2 * CONFIG.offsets_retention_check_interval_ms,
                CONFIG, records=True)
    assert (r.group.exists, r.group.state, r.group.consumer, r.group.offsets) == (
        False, "Dead", None, {})
    assert [e.event_type for e in r.outputs.records][-1] == "CONSUMER_GROUP_METADATA_TOMBSTONE"


def test_regex_topics_count_as_subscribed() -> None:
    log = ConsumerLog()
    log.member("a-1", topics=(), regex="pay.*")
    log.regex("pay.*", ("payments",))
    g = log.replay().group
    assert g.subscribed_topics == frozenset({"payments"})
    log.tombstone("REGULAR_EXPRESSION")
    log.events[-1] = replace(log.events[-1], regular_expression="pay.*")
    assert log.replay().group.subscribed_topics == frozenset()


# ------------------------------------------------------------------ classic <-> consumer

def test_consumer_records_replace_a_simple_classic_group_and_keep_its_offsets() -> None:
    log = ConsumerLog()
    log.record_commit("orders", 0, 9)
    log.stable_with("a-1")
    r = log.replay()
    assert r.group.group_type == "consumer" and r.group.state == "Stable"
    assert r.group.offsets[("orders", 0)].committed_offset == 9
    assert r.outputs.transitions[1]["detail"] == (
        "consumer group (KIP-848); replaces the simple classic group that held its offsets")


def test_consumer_record_for_a_live_classic_group_is_malformed() -> None:
    log = ConsumerLog()
    log.snapshot(3, {"a-1": [("orders", 0)]})
    log.epoch(1)
    r = log.replay()
    (reason,) = reasons(r)
    assert reason.startswith("MALFORMED: CONSUMER_GROUP_METADATA for 'cg', a classic group (Stable")
    assert r.group.group_type == "classic" and r.group.generation_id == 3


def test_online_upgrade_classic_tombstone_then_consumer_records() -> None:
    log = ConsumerLog()
    log.snapshot(3, {"a-1": [("orders", 0)]})
    log.record_commit("orders", 0, 1)
    log.at(1_000).add("GROUP_TOMBSTONE")
    log.stable_with("a-1")
    r = log.replay()
    assert reasons(r) == []
    assert (r.group.group_type, r.group.state, r.group.generation_id) == ("consumer", "Stable", 1)
    assert r.group.offsets[("orders", 0)].committed_offset == 1


def test_group_metadata_replaces_a_consumer_group_with_a_classic_one() -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    log.snapshot(5, {"a-1": [("orders", 0)]})
    r = log.replay()
    assert states(r)[-2:] == [("Stable", "Dead", "GROUP_REPLACED"), (None, "Stable", "SNAPSHOT")]
    assert (r.group.group_type, r.group.generation_id, r.group.member_ids) == (
        "classic", 5, ("a-1",))


def test_group_tombstone_removes_a_consumer_group_in_any_state() -> None:
    log = ConsumerLog()
    log.joins("a-1", 1, {"a-1": ORDERS})  # Reconciling: a-1 is not at epoch 1 yet
    log.add("GROUP_TOMBSTONE")
    r = log.replay()
    assert states(r)[-1] == ("Reconciling", "Dead", "GROUP_TOMBSTONE")
    assert r.outputs.rebalances[-1]["outcome"] == "ABANDONED"
    assert not r.group.exists


@pytest.mark.parametrize("request_type", ["JOIN", "SYNC", "HEARTBEAT", "LEAVE"])
def test_classic_protocol_requests_to_a_consumer_group_are_unsupported(request_type: str) -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    if request_type == "JOIN":
        log.join("a-1", new=True)
    else:
        log.add(request_type, member_id="a-1", generation_id=1)
    r = log.replay()
    (reason,) = reasons(r)
    assert reason.startswith(f"UNSUPPORTED_RECORD: {request_type} to a consumer (KIP-848) group")
    assert r.group.journal is False and r.group.state == "Stable"


# ------------------------------------------------------------------ bad rows, state, chunks

@pytest.mark.parametrize("values", [
    {"event_type": "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT", "member_id": "a-1",
     "member_state": 0, "assigned_partitions": []},
    {"event_type": "CONSUMER_GROUP_METADATA", "group_epoch": -3},
    {"event_type": "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER", "member_id": "",
     "assigned_partitions": []},
    {"event_type": "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER", "member_id": "a-1",
     "assigned_partitions": [{"topic_id": ORDERS_ID, "partitions": ["x"]}]},
    {"event_type": "CONSUMER_GROUP_PARTITION_METADATA", "topics_metadata": [{"topic_id": 1}]},
])
def test_a_malformed_kip848_row_is_rejected_and_changes_nothing(values: dict[str, object]) -> None:
    log = ConsumerLog()
    log.stable_with("a-1")
    r = refused_as_malformed(log, values)
    assert r.outputs.rejected[0]["event_type"] == values["event_type"]


def test_consumer_group_state_round_trips_through_bytes() -> None:
    log = two_member_group()
    log.regex("pay.*", ("payments",))
    log.add("CONSUMER_GROUP_MEMBER_METADATA", member_id="c-3", session_timeout_ms=45_000,
            protocols=(), client_id="c", client_host="h")
    log.partition_metadata((ORDERS_ID, PAYMENTS_ID))
    log.epoch(3)
    g = log.replay().group
    assert g.consumer is not None and g.consumer.regexes and g.rebalance is not None
    assert loads(dumps(g)) == g


def test_a_format_1_state_still_loads_as_a_classic_group() -> None:
    log = Log().stable_group("a-1", "b-2")
    g = log.replay().group
    doc = document(g)
    del doc["consumer"]
    doc["v"] = 1
    assert loads(json.dumps(doc).encode()) == g


def test_chunking_law_holds_for_consumer_groups() -> None:
    log = two_member_group()
    log.record_commit("orders", 0, 3)
    log.at(20_000).leaves("b-2")
    log.epoch(3)
    log.tombstone("MEMBER_METADATA", "a-1")  # malformed: rejected in every split
    log.target("a-1", ORDERS)
    log.target_epoch(3)
    log.current("a-1", 3, ORDERS, previous=2)
    log.deleted(("a-1",))
    events = log.events
    whole = fold("cg", events, CONFIG)
    assert_chunking_law(events, whole,
                        ("transitions", "rebalances", "offset_history", "rejected"))


def test_decoded_kafka_records_fold_like_the_rows_they_were_written_from() -> None:
    """Rows -> Kafka's bytes (pipeline.decode) -> decoded rows -> the fold: decoder and fold
    agree on every KIP-848 column name."""
    log = two_member_group()
    log.regex("pay.*", ("payments",))
    log.leaves("b-2")
    decoded = []
    for e in log.events:
        row = decode_record(*encode_record(e.to_row()))
        row.update(log_partition=e.log_partition, log_offset=e.log_offset,
                   event_time=e.event_time)
        decoded.append(Event.from_row(row))
    theirs, ours = fold("cg", decoded, CONFIG), log.replay()
    assert theirs.outputs.rejected == []
    assert theirs.group == ours.group
    assert theirs.outputs.transitions == ours.outputs.transitions
