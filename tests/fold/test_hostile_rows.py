"""Rows a hostile producer could append: each is applied as Kafka would, or rejected with a
reason, and none moves the group where Kafka would not."""

from __future__ import annotations

from dataclasses import replace

from pipeline.fold import Event, SnapshotMember, fold
from pipeline.fold.model import next_generation
from pipeline.fold.partitioning import partition_for
from tests.fold.records import NO_DELAY, T0, Log, reasons

INT32_MAX, INT32_MIN = 2**31 - 1, -(2**31)


def test_the_generation_wraps_past_int32_as_kafkas_generation_id_plus_plus() -> None:
    assert next_generation(INT32_MAX) == INT32_MIN
    assert next_generation(-1) == 0
    assert next_generation(5) == 6


def test_a_rebalance_after_a_snapshot_at_int32_max_gives_int32_min() -> None:
    log = Log()
    log.snapshot(INT32_MAX, {"a-1": [("orders", 0)]})
    log.at(1_000).join("a-1")  # the leader rejoins: a rebalance, complete at once
    r = log.replay(NO_DELAY)
    gens = [t["generation_id"] for t in r.outputs.transitions] + [r.group.generation_id]
    assert all(INT32_MIN <= g <= INT32_MAX for g in gens)
    assert r.group.generation_id == INT32_MIN
    sync = log.at(3_000).sync("a-1", INT32_MIN, {"a-1": [("orders", 0)]})
    after = fold(r.group, [sync], NO_DELAY)
    assert reasons(after) == []
    assert after.group.state == "Stable"


def test_a_row_on_a_foreign_partition_is_malformed_and_leaves_the_position() -> None:
    log = Log()
    home = partition_for("g")
    log.stable_group("a-1")
    genuine = log.replay().group
    foreign = replace(log.at(20_000).commit("orders", 0, 5, member="a-1", generation=1),
                      log_partition=home + 1, log_offset=0)
    r = fold(genuine, [foreign])
    assert reasons(r) == [f"MALFORMED: group g belongs to partition {home} "
                          f"(offsets.topic.num.partitions=50), not {home + 1}"]
    assert r.group.position == genuine.position
    assert r.group.offsets == genuine.offsets


def test_foreign_rows_change_nothing_under_any_batching() -> None:
    """Foreign rows on a lower and a higher partition, first in the log or mid-way: every cut
    of the log into batches gives the same group and the same rejected rows."""
    log = Log()
    home = log.partition
    log.stable_group("a-1")
    for i in range(6):
        log.at(10_000 + i * 1000).commit("orders", i % 4, 100 + i, member="a-1", generation=1)
    genuine = list(log.events)
    low = Event(home - 1, 0, T0 + 15_000, "g", "OFFSET_COMMIT", member_id="x", generation_id=1,
                topic="orders", partition=0, committed_offset=1)
    high = replace(low, log_partition=home + 1, log_offset=7)
    rows = [low, *genuine[:3], high, *genuine[3:]]
    whole = fold("g", rows)
    for cut in range(1, len(rows)):
        first = fold("g", rows[:cut])
        second = fold(first.group, rows[cut:])
        assert second.group == whole.group, cut
        assert reasons(first) + reasons(second) == reasons(whole), cut
    assert sum(r.startswith("MALFORMED: group g belongs") for r in reasons(whole)) == 2
    clean = fold("g", genuine).group
    assert replace(whole.group, rejected_count=0) == replace(clean, rejected_count=0)


def test_a_snapshot_listing_one_member_id_twice_is_malformed() -> None:
    log = Log()
    e = log.add("GROUP_METADATA", generation_id=3, protocol_type="consumer", protocol="range",
                leader_id="a-1", members=(
                    SnapshotMember("a-1", None, "a", "/h", 10_000, 30_000, ("orders",), ()),
                    SnapshotMember("a-1", None, "b", "/h", 10_000, 30_000, ("orders",), ())))
    r = fold("g", [e])
    assert reasons(r) == ["MALFORMED: GROUP_METADATA lists member a-1 more than once"]
    assert not r.group.exists
