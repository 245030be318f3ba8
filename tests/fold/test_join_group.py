"""JoinGroup as Kafka's classic coordinator handles it (`GroupMetadataManager.classicGroupJoin`,
the join phase it starts, and `ClassicGroup.selectProtocol`)."""

from __future__ import annotations

from pipeline.fold import CoordinatorConfig
from tests.fold.records import T0, Log, reasons, states


def test_new_dynamic_member_gets_member_id_required_and_is_pending_not_a_member() -> None:
    log = Log()
    log.join("a-1", new=True)
    g = log.replay().group
    assert g.state == "Empty"
    assert [p.member_id for p in g.pending_members] == ["a-1"]
    assert g.members == ()


def test_old_join_version_adds_a_new_member_at_once() -> None:
    log = Log()
    log.join("a-1", new=True, api_version=3)
    g = log.replay().group
    assert [m.member_id for m in g.members] == ["a-1"]
    assert g.state == "PreparingRebalance"


def test_first_member_becomes_leader_and_the_join_waits_for_the_initial_delay() -> None:
    log = Log()
    log.join("a-1", new=True)
    log.join("a-1")
    log.at(2_999).heartbeat("a-1", 0)  # before the delay ends: still preparing
    r = log.replay()
    assert r.group.leader_id == "a-1"
    assert r.group.state == "PreparingRebalance"
    assert reasons(r) == []


def test_initial_delay_is_extended_while_new_members_keep_joining() -> None:
    log = Log()
    log.join("a-1", new=True)
    log.join("a-1")
    log.at(2_000).join("b-2", new=True)
    log.join("b-2")
    log.at(3_500).heartbeat("a-1", 0)  # first delay over, but b joined: waits 3 s more
    assert log.replay().group.state == "PreparingRebalance"
    log.at(6_001).heartbeat("a-1", 0)
    r = log.replay()
    assert r.group.state == "CompletingRebalance"
    assert r.outputs.transitions[-1]["event_time"] == T0 + 6_000


def test_join_phase_completes_early_once_every_member_rejoined_outside_the_initial_delay() -> None:
    log = Log().stable_group("a-1", "b-2")
    log.at(15_000).join("b-2", protocols=(("range", ("orders", "payments")),))
    log.join("a-1")
    r = log.replay()
    assert r.group.state == "CompletingRebalance"
    assert r.group.generation_id == 2
    assert states(r)[-2:] == [
        ("Stable", "PreparingRebalance", "METADATA_CHANGED"),
        ("PreparingRebalance", "CompletingRebalance", "ALL_MEMBERS_JOINED"),
    ]


def test_pending_member_expiring_in_the_initial_delay_completes_the_join_at_once() -> None:
    # Kafka 4.x: expireClassicGroupMemberHeartbeat -> removePendingMemberAndUpdateClassicGroup
    # completes the join when hasAllMembersJoined, with no "started from Empty" guard (the old
    # Scala coordinator's InitialDelayedJoin waited for the delay). b-2 got MEMBER_ID_REQUIRED
    # at 0.1 s and never came back: it expires at 6.1 s, inside the 10 s initial delay.
    config = CoordinatorConfig(initial_rebalance_delay_ms=10_000)
    log = Log()
    log.join("a-1", new=True, session=6_000)
    log.join("a-1", session=6_000)
    log.at(100).join("b-2", new=True, session=6_000)
    log.at(8_000).sync("a-1", 1, {"a-1": [("orders", 0)]})
    r = log.replay(config)
    assert reasons(r) == []
    completed = r.outputs.transitions[-2]
    assert (completed["to_state"], completed["cause"], completed["event_time"]) == (
        "CompletingRebalance", "ALL_MEMBERS_JOINED", T0 + 6_100)
    assert r.group.state == "Stable" and r.group.pending_members == ()


def test_a_leave_in_the_initial_delay_still_waits_for_the_delay() -> None:
    # LeaveGroup goes through maybePrepareRebalanceOrCompleteJoin -> maybeCompleteJoinPhase,
    # which does not complete a rebalance that started from Empty early (both coordinators).
    config = CoordinatorConfig(initial_rebalance_delay_ms=10_000)
    log = Log()
    log.join("a-1", new=True)
    log.join("a-1")
    log.at(100).join("b-2", new=True)
    log.at(200).leave("b-2")  # a pending member leaving
    log.at(9_000).heartbeat("a-1", 0)
    r = log.replay(config)
    assert r.group.state == "PreparingRebalance" and r.group.pending_members == ()


def test_session_timeout_outside_the_broker_bounds_is_invalid_session_timeout() -> None:
    log = Log()
    log.join("a-1", new=True, session=5_999)
    log.join("b-2", new=True, session=1_800_001)
    r = log.replay()
    assert reasons(r) == ["INVALID_SESSION_TIMEOUT", "INVALID_SESSION_TIMEOUT"]
    assert not r.group.exists


def test_unknown_group_with_a_member_id_is_unknown_member_id() -> None:
    log = Log()
    log.join("a-1")
    assert reasons(log.replay()) == ["UNKNOWN_MEMBER_ID"]


def test_member_needs_a_protocol_every_current_member_supports() -> None:
    log = Log().stable_group("a-1")
    log.join("b-2", new=True, api_version=3, protocols=(("roundrobin", ("orders",)),))
    log.join("c-3", new=True, api_version=3, protocol_type="connect")
    r = log.replay()
    assert reasons(r) == ["INCONSISTENT_GROUP_PROTOCOL", "INCONSISTENT_GROUP_PROTOCOL"]
    assert [m.member_id for m in r.group.members] == ["a-1"]


def test_empty_group_needs_a_protocol_type_and_at_least_one_protocol() -> None:
    log = Log()
    log.join("a-1", new=True, protocols=())
    assert reasons(log.replay()) == ["INCONSISTENT_GROUP_PROTOCOL"]


def test_group_max_size_refuses_the_member_past_the_limit() -> None:
    log = Log()
    for m in ("a-1", "b-2", "c-3"):
        log.join(m, new=True)
        log.join(m)
    r = log.replay(CoordinatorConfig(max_size=2))
    # Both the MEMBER_ID_REQUIRED round and the retry with the id are refused.
    assert reasons(r) == ["GROUP_MAX_SIZE_REACHED", "GROUP_MAX_SIZE_REACHED"]
    assert [m.member_id for m in r.group.members] == ["a-1", "b-2"]


def test_leader_rejoining_a_stable_group_always_rebalances() -> None:
    log = Log().stable_group("a-1", "b-2")
    log.at(15_000).join("a-1")
    assert states(log.replay())[-1] == ("Stable", "PreparingRebalance", "LEADER_REJOINED")


def test_unchanged_follower_rejoining_a_stable_group_gets_the_current_generation() -> None:
    log = Log().stable_group("a-1", "b-2")
    log.at(15_000).join("b-2")
    r = log.replay()
    assert r.group.state == "Stable"
    assert r.group.generation_id == 1


def test_protocol_vote_picks_the_most_preferred_common_protocol() -> None:
    log = Log()
    both = (("cooperative-sticky", ("orders",)), ("range", ("orders",)))
    only_range = (("range", ("orders",)), ("cooperative-sticky", ("orders",)))
    log.join("a-1", new=True, api_version=3, protocols=both)
    log.join("b-2", new=True, api_version=3, protocols=both)
    log.join("c-3", new=True, api_version=3, protocols=only_range)
    log.at(10_000).heartbeat("a-1", 0)
    assert log.replay().group.protocol == "cooperative-sticky"


def test_protocol_vote_tie_goes_to_range_before_cooperative_sticky() -> None:
    log = Log()
    log.join("a-1", new=True, api_version=3,
             protocols=(("cooperative-sticky", ("t",)), ("range", ("t",))))
    log.join("b-2", new=True, api_version=3,
             protocols=(("range", ("t",)), ("cooperative-sticky", ("t",))))
    log.at(10_000).heartbeat("a-1", 0)
    assert log.replay().group.protocol == "range"


def test_static_member_rejoining_a_stable_group_unchanged_keeps_the_generation() -> None:
    log = Log()
    log.join("a-1", new=True, instance="inst-a")
    log.join("b-2", new=True, instance="inst-b")
    log.at(9_000).sync("a-1", 1, {"a-1": [("orders", 0)], "b-2": [("orders", 1)]})
    log.sync("b-2", 1)
    log.at(10_000).join("b-9", new=True, instance="inst-b")  # restarted: new member id
    r = log.replay(records=True)
    assert r.group.state == "Stable"
    assert r.group.generation_id == 1
    assert [m.member_id for m in r.group.members] == ["a-1", "b-9"]
    assert r.group.member("b-9").assignment == (("orders", 1),)  # type: ignore[union-attr]
    assert r.outputs.records[-1].event_type == "GROUP_METADATA"
    assert r.outputs.records[-1].generation_id == 1


def test_static_member_fenced_old_member_id_is_refused() -> None:
    log = Log()
    log.join("a-1", new=True, instance="inst-a")
    log.at(9_000).sync("a-1", 1, {"a-1": [("orders", 0)]})
    log.at(10_000).join("a-2", new=True, instance="inst-a")
    log.heartbeat("a-1", 1)
    log.add("HEARTBEAT", member_id="a-1", generation_id=1, group_instance_id="inst-a")
    assert reasons(log.replay()) == ["UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID"]


def test_static_members_are_kept_when_they_miss_the_rejoin_but_dynamic_ones_are_dropped() -> None:
    log = Log()
    log.join("s-1", new=True, instance="inst-s", session=60_000)
    log.join("d-2", new=True, api_version=3, session=60_000)
    log.at(9_000).sync("s-1", 1, {"s-1": [("orders", 0)], "d-2": [("orders", 1)]})
    log.sync("d-2", 1)
    log.at(10_000).join("n-3", new=True, api_version=3, session=60_000)  # a third member triggers a rebalance
    log.at(41_000).heartbeat("s-1", 1)  # nobody else rejoins before the rebalance timeout
    r = log.replay()
    assert r.group.state == "CompletingRebalance"
    assert sorted(m.member_id for m in r.group.members) == ["n-3", "s-1"]
    assert r.group.leader_id == "n-3"  # the old leader s-1 did not rejoin
