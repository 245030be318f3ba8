"""Client-side assignors against worked examples of Kafka's own assignors (`RangeAssignor`,
`RoundRobinAssignor`, `AbstractStickyAssignor`).

Expected values marked "Java" were checked against kafka-clients 3.9.0 (the assignor sources
are identical in the 4.0.0-SNAPSHOT the reference read) and OpenJDK 17's java.util.HashMap.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.generator.assignors import (
    ASSIGNORS,
    AssignorError,
    Subscription,
    TopicPartition,
    _hashmap_order,
    assign,
)

TWO_TOPICS = ("t0", "t1")
THREE_EACH = {"t0": 3, "t1": 3}


def tps(*names: str) -> tuple[TopicPartition, ...]:
    """tps("t0p1", "t1p0") -> (("t0", 1), ("t1", 0)), sorted like assign's output."""
    parsed = []
    for name in names:
        topic, partition = name.rsplit("p", 1)
        parsed.append((topic, int(partition)))
    return tuple(sorted(parsed))


def sub(member: str, topics: tuple[str, ...] = TWO_TOPICS, *owned: str,
        generation: int = -1, instance: str | None = None) -> Subscription:
    return Subscription(member, topics, instance, tps(*owned), generation)


# --------------------------------------------------------------------------- common rules


def test_unknown_strategy_is_rejected_naming_argument_and_value() -> None:
    with pytest.raises(ValueError, match=r"strategy.*'sticky-ish'"):
        assign("sticky-ish", [sub("C0")], THREE_EACH)


def test_duplicate_member_ids_are_rejected() -> None:
    with pytest.raises(ValueError, match="member ids"):
        assign("range", [sub("C0"), sub("C0")], THREE_EACH)


def test_assignor_names_are_kafkas_protocol_names() -> None:
    assert {"range", "roundrobin", "sticky", "cooperative-sticky"} == ASSIGNORS


@pytest.mark.parametrize("strategy", sorted(ASSIGNORS))
def test_no_members_means_no_assignment(strategy: str) -> None:
    assert assign(strategy, [], THREE_EACH) == {}


@pytest.mark.parametrize("strategy", sorted(ASSIGNORS))
def test_every_member_is_returned_in_input_order_with_sorted_partitions(strategy: str) -> None:
    result = assign(strategy, [sub("C1"), sub("C0"), sub("idle", ("nothing",))], THREE_EACH)
    assert list(result) == ["C1", "C0", "idle"]
    assert result["idle"] == ()
    assert all(list(parts) == sorted(parts) for parts in result.values())


@pytest.mark.parametrize("strategy", sorted(ASSIGNORS))
def test_members_with_no_topics_get_nothing(strategy: str) -> None:
    # "p" hashes to bucket 0 and "a" to bucket 1, so the subscribed "p" is visited first.
    result = assign(strategy, [sub("a", ()), sub("p", ("t0",))], {"t0": 2})
    assert result == {"a": (), "p": tps("t0p0", "t0p1")}


@pytest.mark.parametrize("strategy", sorted(ASSIGNORS))
def test_topics_without_partitions_or_metadata_are_ignored(strategy: str) -> None:
    members = [sub("C0", ("t0", "empty", "gone")), sub("C1", ("t0", "empty", "gone"))]
    result = assign(strategy, members, {"t0": 2, "empty": 0, "unsubscribed": 50})
    assert sorted(result["C0"] + result["C1"]) == list(tps("t0p0", "t0p1"))
    assert len(result["C0"]) == len(result["C1"]) == 1


# --------------------------------------------------------------------------- range


def test_range_gives_first_sorted_members_the_extra_partitions() -> None:
    result = assign("range", [sub("C1"), sub("C0")], THREE_EACH)
    assert result == {"C1": tps("t0p2", "t1p2"), "C0": tps("t0p0", "t0p1", "t1p0", "t1p1")}


def test_range_splits_seven_partitions_three_two_two() -> None:
    members = [sub(m, ("t0",)) for m in ("C2", "C0", "C1")]
    result = assign("range", members, {"t0": 7})
    assert result["C0"] == tps("t0p0", "t0p1", "t0p2")
    assert result["C1"] == tps("t0p3", "t0p4")
    assert result["C2"] == tps("t0p5", "t0p6")


def test_range_puts_static_members_first_ordered_by_instance_id() -> None:
    members = [
        sub("a-1", ("t0",)),
        sub("z-9", ("t0",), instance="inst-A"),
        sub("m-5", ("t0",), instance="inst-B"),
    ]
    result = assign("range", members, {"t0": 5})
    assert result == {
        "a-1": tps("t0p4"),
        "z-9": tps("t0p0", "t0p1"),
        "m-5": tps("t0p2", "t0p3"),
    }


def test_range_divides_each_topic_among_its_own_subscribers_only() -> None:
    members = [sub("C0", ("t0",)), sub("C1", ("t0", "t1")), sub("C2", ("t1",))]
    result = assign("range", members, {"t0": 3, "t1": 2})
    assert result == {
        "C0": tps("t0p0", "t0p1"),
        "C1": tps("t0p2", "t1p0"),
        "C2": tps("t1p1"),
    }


def test_member_order_compares_utf16_code_units_like_java() -> None:
    # By code point U+1F600 sorts after U+FF5E; Java sees its high surrogate D83D, so before.
    members = [sub("\uff5e", ("t0",)), sub("\U0001f600", ("t0",))]
    result = assign("range", members, {"t0": 3})
    assert result["\U0001f600"] == tps("t0p0", "t0p1")
    assert result["\uff5e"] == tps("t0p2")


# --------------------------------------------------------------------------- roundrobin


def test_roundrobin_deals_partitions_alternately_across_topics() -> None:
    result = assign("roundrobin", [sub("C0"), sub("C1")], THREE_EACH)
    assert result == {"C0": tps("t0p0", "t0p2", "t1p1"), "C1": tps("t0p1", "t1p0", "t1p2")}


def test_roundrobin_skips_members_not_subscribed_to_the_topic() -> None:
    members = [sub("C0", ("t0",)), sub("C1", ("t0", "t1")), sub("C2", ("t0", "t1", "t2"))]
    result = assign("roundrobin", members, {"t0": 1, "t1": 2, "t2": 3})
    assert result == {
        "C0": tps("t0p0"),
        "C1": tps("t1p0"),
        "C2": tps("t1p1", "t2p0", "t2p1", "t2p2"),
    }


def test_roundrobin_lists_topics_by_name_not_by_discovery_order() -> None:
    members = [sub("C0", ("b", "a")), sub("C1", ("b", "a"))]
    counts = {"b": 2, "a": 3}
    assert assign("roundrobin", members, counts) == {
        "C0": tps("ap0", "ap2", "bp1"),
        "C1": tps("ap1", "bp0"),
    }
    assert assign("range", members, counts) == {
        "C0": tps("ap0", "ap1", "bp0"),
        "C1": tps("ap2", "bp1"),
    }


def test_roundrobin_puts_static_members_first_ordered_by_instance_id() -> None:
    members = [sub("a-1", ("t0",)), sub("z-9", ("t0",), instance="inst-A")]
    assert assign("roundrobin", members, {"t0": 3}) == {
        "a-1": tps("t0p1"),
        "z-9": tps("t0p0", "t0p2"),
    }


# --------------------------------------------------------------------------- sticky


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_sticky_fresh_group_deals_round_robin(strategy: str) -> None:
    result = assign(strategy, [sub("C0"), sub("C1"), sub("C2")], THREE_EACH)
    assert result == {
        "C0": tps("t0p0", "t1p0"),
        "C1": tps("t0p1", "t1p1"),
        "C2": tps("t0p2", "t1p2"),
    }


C2_JOINS = [
    sub("C0", TWO_TOPICS, "t0p0", "t0p1", "t1p0", generation=1),
    sub("C1", TWO_TOPICS, "t0p2", "t1p1", "t1p2", generation=1),
    sub("C2"),
]


def test_sticky_keeps_owned_partitions_sorted_by_partition_then_topic() -> None:
    assert assign("sticky", C2_JOINS, THREE_EACH) == {
        "C0": tps("t0p0", "t1p0"),
        "C1": tps("t1p1", "t0p2"),
        "C2": tps("t0p1", "t1p2"),
    }


def test_cooperative_round_one_withholds_partitions_still_owned_elsewhere() -> None:
    assert assign("cooperative-sticky", C2_JOINS, THREE_EACH) == {
        "C0": tps("t0p0", "t1p0"),
        "C1": tps("t1p1", "t0p2"),
        "C2": (),
    }


def test_cooperative_round_two_hands_over_the_revoked_partitions() -> None:
    rejoined = [
        sub("C0", TWO_TOPICS, "t0p0", "t1p0", generation=2),
        sub("C1", TWO_TOPICS, "t1p1", "t0p2", generation=2),
        sub("C2", TWO_TOPICS, generation=2),
    ]
    assert assign("cooperative-sticky", rejoined, THREE_EACH) == {
        "C0": tps("t0p0", "t1p0"),
        "C1": tps("t1p1", "t0p2"),
        "C2": tps("t0p1", "t1p2"),
    }


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_sticky_member_leaving_moves_only_its_partitions(strategy: str) -> None:
    members = [
        sub("C0", TWO_TOPICS, "t0p0", "t1p0", generation=3),
        sub("C1", TWO_TOPICS, "t0p1", "t1p1", generation=3),
    ]
    assert assign(strategy, members, THREE_EACH) == {
        "C0": tps("t0p0", "t1p0", "t0p2"),
        "C1": tps("t0p1", "t1p1", "t1p2"),
    }


def test_sticky_uneven_split_gives_the_extra_partition_to_the_first_sorted_member() -> None:
    result = assign("sticky", [sub("C0"), sub("C1"), sub("C2")], {"t0": 4, "t1": 3})
    assert result == {
        "C0": tps("t0p0", "t0p3", "t1p2"),
        "C1": tps("t0p1", "t1p0"),
        "C2": tps("t0p2", "t1p1"),
    }


def test_sticky_visits_owners_in_hashmap_order_c0_first() -> None:
    members = [
        sub("C2", ("t0",)),
        sub("C1", ("t0",), "t0p2", "t0p3", generation=1),
        sub("C0", ("t0",), "t0p0", "t0p1", generation=1),
    ]
    assert assign("sticky", members, {"t0": 4}) == {
        "C2": tps("t0p3"),
        "C1": tps("t0p2"),
        "C0": tps("t0p0", "t0p1"),
    }


def test_sticky_hashmap_order_can_differ_from_sorted_order() -> None:
    # Buckets: "p" -> 0, "a" -> 1, "z" -> 10, so "p" keeps its maxQuota and "a" gives one up.
    members = [
        sub("a", ("t0",), "t0p0", "t0p1", generation=1),
        sub("p", ("t0",), "t0p2", "t0p3", generation=1),
        sub("z", ("t0",)),
    ]
    assert assign("sticky", members, {"t0": 4}) == {
        "a": tps("t0p0"),
        "p": tps("t0p2", "t0p3"),
        "z": tps("t0p1"),
    }


@pytest.mark.parametrize(
    ("extra_members", "keeps_max", "gives_up"), [(10, "p", "a"), (11, "a", "p")]
)
def test_sticky_hashmap_order_changes_when_the_table_grows_past_twelve(
    extra_members: int, keeps_max: str, gives_up: str
) -> None:
    # 12 members fit a 16-bucket table ("p" in bucket 0, "a" in 1); the 13th doubles it to 32,
    # where "a" stays in bucket 1 and "p" moves to bucket 16.
    others = [sub(f"m{i:02d}", ("t0",)) for i in range(extra_members)]
    members = [
        sub("a", ("t0",), "t0p0", "t0p1", generation=1),
        sub("p", ("t0",), "t0p2", "t0p3", generation=1),
        *others,
    ]
    result = assign("sticky", members, {"t0": len(members) + 1})
    assert len(result[keeps_max]) == 2
    assert len(result[gives_up]) == 1


def test_hashmap_order_matches_java_including_resizes() -> None:
    def order(keys: str) -> str:
        return " ".join(s.member_id for s in _hashmap_order([sub(k) for k in keys.split()]))

    # Java: new HashMap<String, ?>() filled in this order, then keySet() (OpenJDK 17).
    assert order("C2 C1 C0") == "C0 C1 C2"
    assert order("a p m00 m01 m02 m03 m04 m05 m06 m07 m08 m09") == (
        "p m04 a m03 m06 m05 m08 m07 m09 m00 m02 m01")
    assert order("a p m00 m01 m02 m03 m04 m05 m06 m07 m08 m09 m10") == (
        "a m00 m10 m02 m01 p m04 m03 m06 m05 m08 m07 m09")
    # Nine keys in one bucket of a table under 64: treeifyBin doubles the table instead.
    assert order("p cc0 cs0 cd1 ct1 ce2 cu2 cf3 cv3 cg4") == (
        "cs0 ct1 cu2 cv3 p cc0 cd1 ce2 cf3 cg4")


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_same_generation_double_claim_is_dropped_from_both_and_transferring(strategy: str) -> None:
    members = [
        sub("C0", ("t0",), "t0p0", generation=4),
        sub("C1", ("t0",), "t0p0", "t0p1", generation=4),
    ]
    result = assign(strategy, members, {"t0": 2})
    assert result["C1"] == tps("t0p1")
    # Eager: t0p0 goes straight to C0. Cooperative: it is transferring, so it waits a round.
    assert result["C0"] == (tps("t0p0") if strategy == "sticky" else ())


@pytest.mark.parametrize("newer_first", [True, False])
def test_higher_generation_keeps_a_partition_claimed_twice(newer_first: bool) -> None:
    older = sub("C0", ("t0",), "t0p0", "t0p2", generation=2)
    newer = sub("C1", ("t0",), "t0p0", "t0p1", generation=3)
    members = [newer, older] if newer_first else [older, newer]
    for strategy in ("sticky", "cooperative-sticky"):
        result = assign(strategy, members, {"t0": 4})
        assert result == {"C0": tps("t0p2", "t0p3"), "C1": tps("t0p0", "t0p1")}


def test_owned_partitions_of_deleted_topics_are_dropped() -> None:
    members = [sub("C0", ("t0",), "t0p0", "gonep0", generation=1), sub("C1", ("t0",))]
    assert assign("sticky", members, {"t0": 2}) == {"C0": tps("t0p0"), "C1": tps("t0p1")}


def test_sticky_general_path_balances_members_with_different_subscriptions() -> None:
    members = [sub("C0", ("t0", "t1"), "t0p0", "t0p1", "t1p0", "t1p1", generation=1),
               sub("C1", ("t0",))]
    assert assign("sticky", members, {"t0": 2, "t1": 2}) == {
        "C0": tps("t1p0", "t1p1"),
        "C1": tps("t0p0", "t0p1"),
    }


def test_cooperative_general_path_withholds_partitions_revoked_from_another_member() -> None:
    counts = {"t0": 2, "t1": 2}
    round_one = [sub("C0", ("t0", "t1"), "t0p0", "t0p1", "t1p0", "t1p1", generation=1),
                 sub("C1", ("t0",))]
    assert assign("cooperative-sticky", round_one, counts) == {
        "C0": tps("t1p0", "t1p1"),
        "C1": (),
    }
    round_two = [sub("C0", ("t0", "t1"), "t1p0", "t1p1", generation=2),
                 sub("C1", ("t0",), generation=2)]
    assert assign("cooperative-sticky", round_two, counts) == {
        "C0": tps("t1p0", "t1p1"),
        "C1": tps("t0p0", "t0p1"),
    }


def test_sticky_general_path_keeps_owned_partitions_when_already_balanced() -> None:
    members = [sub("C0", ("t0", "t1"), "t0p1", "t1p0", generation=1),
               sub("C1", ("t0",), "t0p0", generation=1),
               sub("C2", ("t1",))]
    assert assign("sticky", members, {"t0": 2, "t1": 2}) == {
        "C0": tps("t0p1", "t1p0"),
        "C1": tps("t0p0"),
        "C2": tps("t1p1"),
    }


def test_sticky_empty_topic_member_ahead_in_hashmap_order_gets_partitions_as_kafka_does() -> None:
    # Kafka quirk: allSubscriptionsEqual takes the first non-empty topic list as the reference,
    # so an empty list seen before it ("p", bucket 0) keeps the constrained path, which then
    # counts every member. Java gives "p" a partition of a topic it never subscribed to.
    result = assign("sticky", [sub("a", ("t0",)), sub("p", ())], {"t0": 2})
    assert result == {"a": tps("t0p0"), "p": tps("t0p1")}


def test_general_path_failure_where_kafka_throws_is_an_assignor_error() -> None:
    # An older-generation member that no longer subscribes to what it owned becomes the
    # "previous owner" while it is itself out of reassignment: Java hits a null there.
    members = [sub("C0", ("t0",), "t0p0", "t0p1", "t0p2", generation=5),
               sub("C1", ("t0",), generation=5),
               sub("C2", ("t1",), "t0p0", generation=4)]
    with pytest.raises(AssignorError):
        assign("sticky", members, {"t0": 3, "t1": 1})


# --------------------------------------------------------------------------- properties


TOPIC_NAMES = ("a", "b", "c", "d")
MEMBER_IDS = ("C0", "C1", "C2", "consumer-1-x", "consumer-2-y", "p", "zz")


@st.composite
def groups(draw: st.DrawFn, same_topics: bool = False
           ) -> tuple[list[Subscription], dict[str, int]]:
    counts = {t: draw(st.integers(0, 6)) for t in TOPIC_NAMES}
    members = draw(st.lists(st.sampled_from(MEMBER_IDS), min_size=1, max_size=6, unique=True))
    topic_sets = st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=4, unique=True)
    shared = tuple(draw(topic_sets))
    subscriptions = []
    for member in members:
        topics = shared if same_topics else tuple(draw(topic_sets))
        # Owned partitions come from the member's own topics: what a real member can own.
        candidates = [(t, p) for t in topics for p in range(counts[t])]
        owned = draw(st.lists(st.sampled_from(candidates), max_size=5, unique=True)
                     if candidates else st.just([]))
        generation = draw(st.sampled_from([-1, 1, 2, 2]))
        instance = draw(st.sampled_from([None, None, f"i-{member}"]))
        subscriptions.append(Subscription(member, topics, instance, tuple(owned), generation))
    return subscriptions, counts


@settings(max_examples=150, deadline=None)
@given(groups())
def test_every_assignor_hands_each_partition_to_one_subscribed_member(
    group: tuple[list[Subscription], dict[str, int]],
) -> None:
    subscriptions, counts = group
    topics_of = {s.member_id: set(s.topics) for s in subscriptions}
    expected = {(t, p) for s in subscriptions for t in s.topics for p in range(counts[t])}
    results = {strategy: assign(strategy, subscriptions, counts) for strategy in ASSIGNORS}
    for strategy, result in results.items():
        handed = [tp for parts in result.values() for tp in parts]
        assert len(handed) == len(set(handed)), strategy
        assert all(tp[0] in topics_of[m] for m, parts in result.items() for tp in parts), strategy
        if strategy != "cooperative-sticky":
            assert set(handed) == expected, strategy
    # Cooperative gives the eager target minus the partitions still owned elsewhere.
    for member, parts in results["cooperative-sticky"].items():
        assert set(parts) <= set(results["sticky"][member])


@settings(max_examples=100, deadline=None)
@given(groups(same_topics=True))
def test_sticky_constrained_path_is_balanced_within_one(
    group: tuple[list[Subscription], dict[str, int]],
) -> None:
    subscriptions, counts = group
    sizes = [len(parts) for parts in assign("sticky", subscriptions, counts).values()]
    assert max(sizes) - min(sizes) <= 1
