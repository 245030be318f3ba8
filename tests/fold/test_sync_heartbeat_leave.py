"""SyncGroup, Heartbeat, LeaveGroup, session expiry and the pending-sync timeout (Kafka's
`GroupMetadataManager.classicGroupSync`, `classicGroupHeartbeat`, `classicGroupLeave`)."""

from __future__ import annotations

from tests.fold.records import T0, Log, reasons, states
from tests.fold.scenarios import slow_leader, slow_leader_syncs


def test_stable_only_after_the_leaders_sync_and_followers_get_the_leaders_assignment() -> None:
    log = Log()
    for m in ("a-1", "b-2"):
        log.join(m, new=True)
        log.join(m)
    log.at(9_000).sync("b-2", 1)
    mid = log.replay().group
    assert mid.state == "CompletingRebalance"
    log.sync("a-1", 1, {"a-1": [("orders", 0)], "b-2": [("orders", 1)]})
    g = log.replay().group
    assert g.state == "Stable"
    assert g.member("b-2").assignment == (("orders", 1),)  # type: ignore[union-attr]


def test_members_left_out_of_the_leaders_assignment_get_an_empty_one() -> None:
    log = Log()
    for m in ("a-1", "b-2"):
        log.join(m, new=True)
        log.join(m)
    log.at(9_000).sync("a-1", 1, {"a-1": [("orders", 0)]})
    assert log.replay().group.member("b-2").assignment == ()  # type: ignore[union-attr]


def test_sync_with_the_wrong_generation_is_illegal_generation() -> None:
    log = Log().stable_group("a-1")
    log.sync("a-1", 7)
    log.heartbeat("a-1", 0)
    assert reasons(log.replay()) == ["ILLEGAL_GENERATION", "ILLEGAL_GENERATION"]


def test_sync_during_preparing_rebalance_is_rebalance_in_progress() -> None:
    log = Log().stable_group("a-1", "b-2")
    log.at(12_000).join("a-1")
    log.sync("b-2", 1)
    assert reasons(log.replay()) == ["REBALANCE_IN_PROGRESS"]


def test_sync_from_an_unknown_member_or_group_is_unknown_member_id() -> None:
    log = Log()
    log.sync("x-1", 0)
    log.stable_group("a-1")
    log.sync("x-1", 1)
    assert reasons(log.replay()) == ["UNKNOWN_MEMBER_ID", "UNKNOWN_MEMBER_ID"]


def test_session_expiry_removes_a_silent_member_and_rebalances() -> None:
    log = Log().stable_group("a-1", "b-2")  # synced at 9 s, session 10 s
    log.at(15_000).heartbeat("a-1", 1)
    log.at(25_000).heartbeat("a-1", 1)  # b-2 has been silent since 9 s
    r = log.replay()
    expired = [t for t in r.outputs.transitions if t["cause"] == "SESSION_TIMEOUT"]
    assert expired[0]["member_id"] == "b-2"
    assert expired[0]["event_time"] == T0 + 19_000
    assert r.group.state == "PreparingRebalance"  # waiting for a-1 to rejoin
    assert [m.member_id for m in r.group.members] == ["a-1"]
    log.join("a-1")
    r = log.replay()
    assert (r.group.state, r.group.generation_id) == ("CompletingRebalance", 2)


def test_heartbeats_keep_a_member_alive_past_its_session_timeout() -> None:
    log = Log().stable_group("a-1")
    for t in range(14_000, 60_000, 5_000):
        log.at(t).heartbeat("a-1", 1)
    r = log.replay()
    assert r.group.state == "Stable"
    assert "SESSION_TIMEOUT" not in [t["cause"] for t in r.outputs.transitions]


def test_last_member_leaving_empties_the_group_with_the_next_generation() -> None:
    log = Log().stable_group("a-1")
    log.at(10_000).leave("a-1")
    r = log.replay()
    assert r.group.state == "Empty"
    assert r.group.generation_id == 2
    assert r.group.protocol is None and r.group.leader_id is None
    assert r.group.protocol_type == "consumer"
    assert states(r)[-2:] == [
        ("Stable", "PreparingRebalance", "MEMBER_LEFT"),
        ("PreparingRebalance", "Empty", "ALL_MEMBERS_JOINED"),
    ]
    assert r.outputs.rebalances[-1]["outcome"] == "EMPTIED"


def test_leader_leaving_hands_leadership_to_a_remaining_member() -> None:
    log = Log().stable_group("a-1", "b-2")
    log.at(10_000).leave("a-1")
    assert log.replay().group.leader_id == "b-2"


def test_admin_removes_a_static_member_by_instance_id() -> None:
    log = Log()
    log.join("s-1", new=True, instance="inst-s")
    log.at(9_000).sync("s-1", 1, {"s-1": [("orders", 0)]})
    log.at(10_000).leave("", instance="inst-s")
    log.leave("", instance="inst-unknown")
    r = log.replay()
    assert r.group.members == ()
    assert reasons(r) == ["UNKNOWN_MEMBER_ID"]
    assert "STATIC_MEMBER_REMOVED" in [t["cause"] for t in r.outputs.transitions]


def test_pending_member_leaving_is_dropped_quietly() -> None:
    log = Log()
    log.join("a-1", new=True)
    log.leave("a-1")
    r = log.replay()
    assert r.group.pending_members == ()
    assert reasons(r) == []


def test_pending_member_that_never_returns_expires_after_its_session_timeout() -> None:
    log = Log()
    log.join("a-1", new=True)
    log.at(11_000).join("b-2", new=True)
    assert [p.member_id for p in log.replay().group.pending_members] == ["b-2"]


def test_followers_that_never_sync_are_removed_at_the_pending_sync_timeout() -> None:
    log = Log()
    for m in ("a-1", "b-2"):
        log.join(m, new=True, session=60_000)
        log.join(m, session=60_000)
    log.at(9_000).sync("a-1", 1, {"a-1": [("orders", 0)], "b-2": [("orders", 1)]})
    log.at(50_000).heartbeat("a-1", 1)  # join completed at 6 s; rebalance timeout 30 s
    r = log.replay()
    timeouts = [t for t in r.outputs.transitions if t["cause"] == "PENDING_SYNC_TIMEOUT"]
    assert timeouts and timeouts[0]["event_time"] == T0 + 36_000
    assert timeouts[0]["member_id"] == "b-2"
    assert [m.member_id for m in r.group.members] == ["a-1"]


def test_heartbeat_during_a_rebalance_keeps_the_session_alive() -> None:
    log = Log().stable_group("a-1", "b-2")
    log.at(12_000).join("a-1")  # leader rejoins: PreparingRebalance until b-2 rejoins
    log.at(18_000).heartbeat("b-2", 1)
    log.at(26_000).heartbeat("b-2", 1)
    log.join("b-2")
    r = log.replay()
    assert reasons(r) == []
    assert r.group.state == "CompletingRebalance"
    assert r.group.generation_id == 2


def test_propagate_assignment_gives_a_follower_parked_in_sync_a_fresh_session() -> None:
    # GroupMetadataManager.propagateAssignment -> rescheduleClassicGroupMemberHeartbeat for
    # every member whose SyncGroup it answers (the old coordinator: propagateAssignment ->
    # completeAndScheduleNextHeartbeatExpiration). b-2 waited 13 s > its 10 s session for the
    # leader; its session restarts at the leader's sync, so its heartbeat, commit and leave
    # are accepted.
    log = slow_leader_syncs(Log())
    r = log.replay()
    assert reasons(r) == []
    assert [c for _, _, c in states(r)][-2:] == ["LEADER_SYNC", "MEMBER_LEFT"]
    assert all(t["cause"] != "SESSION_TIMEOUT" for t in r.outputs.transitions)
    assert r.group.offsets[("orders", 1)].committed_offset == 5


def test_pending_sync_timeout_error_gives_a_parked_follower_a_fresh_session() -> None:
    # expirePendingSync removes the leader that never synced, then prepareRebalance ->
    # resetAndPropagateAssignmentWithError(REBALANCE_IN_PROGRESS) -> propagateAssignment
    # reschedules b-2's heartbeat: b-2 is not expired and the group does not go Empty.
    log = slow_leader(Log())
    log.at(20_000).heartbeat("a-1", 1)
    log.at(28_000).heartbeat("a-1", 1)  # a-1 never syncs: removed at 6 s + 30 s
    log.at(40_000).join("b-2")
    r = log.replay()
    assert reasons(r) == []
    assert states(r)[-2:] == [
        ("CompletingRebalance", "PreparingRebalance", "PENDING_SYNC_TIMEOUT"),
        ("PreparingRebalance", "CompletingRebalance", "ALL_MEMBERS_JOINED"),
    ]
    assert r.group.generation_id == 2 and r.group.leader_id == "b-2"
    assert r.group.member_ids == ("b-2",)


def test_applied_requests_answered_with_an_error_are_error_responses_not_refusals() -> None:
    # classicGroupJoinToClassicGroup: a new dynamic member (JoinGroup v4+) is recorded as
    # pending and answered MEMBER_ID_REQUIRED; classicGroupHeartbeat in PreparingRebalance
    # reschedules the heartbeat and answers REBALANCE_IN_PROGRESS. Both change the group.
    log = Log().stable_group("a-1", "b-2")
    log.at(12_000).join("a-1")  # PreparingRebalance
    log.heartbeat("b-2", 1)
    log.at(13_000).join("c-3", new=True)
    r = log.replay()
    assert reasons(r) == []
    answered = [(a["event_type"], a["member_id"], a["response"], a["group_state"])
                for a in r.outputs.answered]
    assert answered == [
        ("JOIN", "a-1", "MEMBER_ID_REQUIRED", "Empty"),
        ("JOIN", "b-2", "MEMBER_ID_REQUIRED", "PreparingRebalance"),
        ("HEARTBEAT", "b-2", "REBALANCE_IN_PROGRESS", "PreparingRebalance"),
        ("JOIN", "c-3", "MEMBER_ID_REQUIRED", "PreparingRebalance"),
    ]
    assert r.group.pending("c-3") is not None
