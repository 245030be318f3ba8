"""Leader succession as Kafka's `ClassicGroup` does it: when the leader goes, the next one is
the first member in its members java.util.HashMap's iteration order (`ClassicGroup.remove`).

Bucket of each id in a 16-slot table (32 slots once a group has had 13 members):
a-1 4 (4), b-2 6 (6), g-7 0 (16). So with 16 slots g-7 comes first, before a-1 and b-2 that
joined before it; in a table that grew to 32 slots, b-2 comes before g-7.
"""

from __future__ import annotations

from tests.fold.records import Log, reasons
from tests.fold.scenarios import LEADER_PLAN as PLAN
from tests.fold.scenarios import leader_leaves


def test_leader_leaving_hands_leadership_to_the_first_member_in_hashmap_order() -> None:
    # ClassicGroup.remove: leaderId = members.keySet().iterator().next(). Join order would
    # say b-2; with b-2 as leader, g-7's SYNC would be taken as a follower's and the group
    # would end Stable with empty assignments.
    log = leader_leaves(Log())
    r = log.replay(records=True)
    assert reasons(r) == []
    g = r.group
    assert (g.state, g.generation_id, g.leader_id) == ("Stable", 2, "g-7")
    assert {m.member_id: list(m.assignment) for m in g.members} == PLAN
    assert r.outputs.records[-1].leader_id == "g-7"  # the GROUP_METADATA Kafka would write


def test_leader_that_does_not_rejoin_is_replaced_by_the_first_rejoined_member_in_hashmap_order(
) -> None:
    # completeClassicGroupJoin drops the dynamic members that did not rejoin (ClassicGroup.remove
    # re-picks the leader in HashMap order), then maybeElectNewJoinedLeader walks
    # members.values() for the first member awaiting join.
    log = Log().stable_group("a-1", "b-2", "g-7")
    log.at(10_000).join("b-2", protocols=(("range", ("orders", "audit")),))  # rebalance
    log.join("g-7")
    for t in (15_000, 22_000, 29_000, 36_000):
        log.at(t).heartbeat("a-1", 1)  # REBALANCE_IN_PROGRESS: alive, but never rejoins
    log.at(41_000).sync("g-7", 2, PLAN)  # the join phase timed out at 40 s
    log.sync("b-2", 2)
    r = log.replay()
    assert reasons(r) == []
    g = r.group
    assert (g.state, g.generation_id, g.leader_id) == ("Stable", 2, "g-7")
    assert g.member_ids == ("b-2", "g-7")
    assert {m.member_id: list(m.assignment) for m in g.members} == PLAN


def test_leader_expiring_hands_leadership_to_the_first_member_in_hashmap_order() -> None:
    # expireClassicGroupMemberHeartbeat -> removeMemberAndUpdateClassicGroup -> ClassicGroup.remove
    log = Log().stable_group("a-1", "b-2", "g-7")
    for t in (15_000, 22_000):
        log.at(t).heartbeat("b-2", 1)
        log.heartbeat("g-7", 1)  # a-1 is silent since 9 s: expired at 19 s
    r = log.replay()
    expired = [t for t in r.outputs.transitions if t["cause"] == "SESSION_TIMEOUT"]
    assert [t["member_id"] for t in expired] == ["a-1"]
    assert r.group.leader_id == "g-7"


def test_the_members_hashmap_keeps_its_grown_capacity_after_members_leave() -> None:
    # A java.util.HashMap resizes from 16 to 32 slots on its 13th put and never shrinks. After
    # ten members leave, a-1, b-2, g-7 sit in a 32-slot table where b-2 (6) precedes g-7 (16).
    fillers = [f"w-{i}" for i in range(10)]
    log = Log().stable_group("a-1", "b-2", "g-7", *fillers)
    assert log.replay().group.member_capacity == 32
    log.at(10_000)
    for m in fillers:
        log.leave(m)
    for m in ("a-1", "b-2", "g-7"):
        log.join(m)  # all rejoined: CompletingRebalance, generation 2, leader a-1
    log.at(11_000).sync("a-1", 2, {})
    log.sync("b-2", 2)
    log.sync("g-7", 2)
    log.at(12_000).leave("a-1")
    r = log.replay()
    assert reasons(r) == []
    assert r.group.member_capacity == 32
    assert r.group.leader_id == "b-2"
