"""OffsetCommit acceptance (`ClassicGroup.validateOffsetCommit`), transactional commits,
tombstones and KIP-211 expiry (`OffsetMetadataManager.cleanupExpiredOffsets`)."""

from __future__ import annotations

from pipeline.fold import CoordinatorConfig
from pipeline.fold.offsets import java_length, metadata_too_large
from tests.fold.records import T0, Log, reasons

WEEK = 7 * 24 * 3600 * 1000


def committed(log: Log, config: CoordinatorConfig | None = None) -> dict[tuple[str, int], int]:
    return {tp: o.committed_offset for tp, o in log.replay(config).group.offsets.items()}


def test_standalone_commit_with_generation_minus_one_creates_a_simple_empty_group() -> None:
    log = Log()
    log.commit("orders", 0, 42)
    r = log.replay()
    assert r.group.state == "Empty" and r.group.protocol_type is None
    assert committed(log) == {("orders", 0): 42}
    assert r.outputs.offset_history[0]["change"] == "COMMIT"


def test_commit_with_a_generation_to_an_unknown_group_is_refused() -> None:
    log = Log()
    log.commit("orders", 0, 1, member="a-1", generation=3)
    log.add("OFFSET_COMMIT", member_id="a-1", generation_id=3, topic="orders", partition=0,
            committed_offset=1, api_version=8)
    assert reasons(log.replay()) == ["GROUP_ID_NOT_FOUND", "ILLEGAL_GENERATION"]


def test_member_commits_with_the_current_generation_in_stable_and_preparing_rebalance() -> None:
    log = Log().stable_group("a-1", "b-2")
    log.commit("orders", 0, 10, member="a-1", generation=1)
    log.at(12_000).join("a-1")  # PreparingRebalance: generation not bumped yet
    log.commit("orders", 1, 11, member="b-2", generation=1)
    assert committed(log) == {("orders", 0): 10, ("orders", 1): 11}
    assert reasons(log.replay()) == []


def test_commit_refusals_follow_kafkas_order() -> None:
    log = Log().stable_group("a-1", "b-2")
    log.commit("orders", 0, 1, member="zz", generation=1)          # not a member
    log.commit("orders", 0, 1, member="a-1", generation=0)         # stale generation
    log.commit("orders", 0, 1)                                     # generation-less, live group
    log.commit("orders", 0, 1, member="a-1", generation=1, metadata="x" * 4097)
    log.at(12_000).join("a-1")
    log.join("b-2")                                                # -> CompletingRebalance
    log.commit("orders", 0, 1, member="a-1", generation=2)
    assert reasons(log.replay()) == [
        "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID",
        "OFFSET_METADATA_TOO_LARGE", "REBALANCE_IN_PROGRESS",
    ]
    assert committed(log) == {}


def test_refused_commit_changes_nothing() -> None:
    log = Log().stable_group("a-1")
    before = log.replay().group
    log.commit("orders", 0, 1, member="a-1", generation=9)
    after = log.replay().group
    assert after.offsets == before.offsets and after.members == before.members
    assert after.rejected_count == before.rejected_count + 1


def test_transactional_commit_is_pending_until_its_commit_marker() -> None:
    log = Log()
    log.commit("orders", 0, 5, producer_id=77)
    assert committed(log) == {}
    assert log.replay().group.pending_txns
    log.marker(77, "COMMIT")
    assert committed(log) == {("orders", 0): 5}
    assert log.replay().group.pending_txns == {}


def test_aborted_transactional_commit_is_discarded_and_recorded() -> None:
    log = Log()
    log.commit("orders", 0, 3)
    log.commit("orders", 0, 9, producer_id=77)
    log.marker(77, "ABORT")
    r = log.replay()
    assert committed(log) == {("orders", 0): 3}
    assert [h["change"] for h in r.outputs.offset_history] == ["COMMIT", "TXN_ABORTED"]


def test_marker_materialises_only_over_an_older_record() -> None:
    log = Log()
    log.commit("orders", 0, 5, producer_id=77)   # position 0
    log.commit("orders", 0, 8)                   # position 1: newer plain commit
    log.marker(77, "COMMIT")
    assert committed(log) == {("orders", 0): 8}


def test_transactional_commit_is_accepted_generation_less_on_a_live_group() -> None:
    log = Log().stable_group("a-1")
    log.commit("orders", 0, 5, producer_id=7)
    log.marker(7, "COMMIT")
    assert reasons(log.replay()) == []
    assert committed(log) == {("orders", 0): 5}


def test_offset_tombstone_deletes_the_offset_and_pending_ones_and_is_lenient() -> None:
    log = Log()
    log.commit("orders", 0, 5)
    log.commit("orders", 1, 6, producer_id=3)
    log.add("OFFSET_TOMBSTONE", topic="orders", partition=0)
    log.add("OFFSET_TOMBSTONE", topic="orders", partition=1)
    log.add("OFFSET_TOMBSTONE", topic="gone", partition=0)
    r = log.replay()
    assert r.group.offsets == {} and r.group.pending_txns == {}
    assert reasons(r) == []
    assert [h["change"] for h in r.outputs.offset_history] == ["COMMIT", "TOMBSTONE"]


def test_offsets_of_an_empty_group_expire_retention_after_it_became_empty() -> None:
    config = CoordinatorConfig(offsets_retention_check_interval_ms=1000)
    log = Log().stable_group("a-1")
    log.commit("orders", 0, 5, member="a-1", generation=1)
    log.at(10_000).leave("a-1")  # Empty at T0+10s
    log.at(10_000 + WEEK - 1).commit("other", 0, 1)  # still there just before
    r = log.replay(config)
    assert ("orders", 0) in r.group.offsets
    log.at(10_000 + WEEK + 1).commit("other", 1, 1)
    r = log.replay(config)
    assert ("orders", 0) not in r.group.offsets
    expired = [h for h in r.outputs.offset_history if h["change"] == "EXPIRED"]
    assert expired[0]["event_time"] == T0 + 10_000 + WEEK


def test_stable_consumer_group_expires_only_offsets_of_topics_it_does_not_subscribe_to() -> None:
    config = CoordinatorConfig(offsets_retention_ms=60_000,
                               offsets_retention_check_interval_ms=1000)
    log = Log().stable_group("a-1")
    log.commit("orders", 0, 5, member="a-1", generation=1)
    log.commit("legacy", 0, 5, member="a-1", generation=1)
    for t in range(14_000, 120_000, 5_000):
        log.at(t).heartbeat("a-1", 1)
    r = log.replay(config)
    assert set(r.group.offsets) == {("orders", 0)}
    assert r.group.state == "Stable"


def test_explicit_expire_timestamp_does_not_expire_a_subscribed_topic_of_a_stable_group() -> None:
    # OffsetMetadataManager.cleanupExpiredOffsets checks group.isSubscribedToTopic(topic)
    # before OffsetExpirationConditionImpl.isOffsetExpired looks at the expire timestamp
    # (the old GroupMetadata.removeExpiredOffsets did the same). This test used to expect
    # the subscribed offset to expire "whatever the state": that was wrong.
    config = CoordinatorConfig(offsets_retention_check_interval_ms=1000)
    log = Log().stable_group("a-1")
    log.commit("orders", 0, 5, member="a-1", generation=1, expire=T0 + 20_000)
    log.commit("legacy", 0, 5, member="a-1", generation=1, expire=T0 + 20_000)
    for t in range(14_000, 40_000, 5_000):
        log.at(t).heartbeat("a-1", 1)
    r = log.replay(config)
    assert set(r.group.offsets) == {("orders", 0)}  # "legacy" is not subscribed: it expires
    assert r.group.state == "Stable"
    expired = [h for h in r.outputs.offset_history if h["change"] == "EXPIRED"]
    assert [(h["topic"], h["event_time"]) for h in expired] == [("legacy", T0 + 20_000)]


def test_explicit_expire_timestamp_applies_once_the_group_is_empty() -> None:
    # ClassicGroup.offsetExpirationCondition: an Empty group's offsets are all eligible; the
    # explicit timestamp then replaces "retention after the group became Empty".
    config = CoordinatorConfig(offsets_retention_check_interval_ms=1000)
    log = Log().stable_group("a-1")
    log.commit("orders", 0, 5, member="a-1", generation=1, expire=T0 + 20_000)
    log.at(15_000).leave("a-1")
    log.at(30_000).commit("other", 0, 1)
    r = log.replay(config)
    assert ("orders", 0) not in r.group.offsets
    expired = [h for h in r.outputs.offset_history if h["change"] == "EXPIRED"]
    assert [h["event_time"] for h in expired] == [T0 + 20_000]


def test_nothing_expires_while_the_group_rebalances_even_with_an_explicit_timestamp() -> None:
    # ClassicGroup.offsetExpirationCondition is empty in PreparingRebalance and
    # CompletingRebalance, so cleanupExpiredOffsets expires nothing, explicit timestamp or not.
    config = CoordinatorConfig(offsets_retention_check_interval_ms=1000)
    log = Log().stable_group("a-1", "b-2")
    log.commit("legacy", 0, 5, member="a-1", generation=1, expire=T0 + 20_000)
    log.at(12_000).join("a-1")  # PreparingRebalance until b-2 rejoins or the timeout
    for t in range(14_000, 30_000, 5_000):
        log.at(t).heartbeat("b-2", 1)  # REBALANCE_IN_PROGRESS, but b-2's session stays alive
    r = log.replay(config)
    assert r.group.state == "PreparingRebalance"
    assert ("legacy", 0) in r.group.offsets


def test_offset_metadata_max_bytes_counts_utf16_code_units_not_utf8_bytes() -> None:
    # OffsetMetadataManager.isMetadataInvalid: metadata.length() > offsetMetadataMaxSize,
    # Java's String.length(): 3,000 x "é" is 3,000 chars (6,000 UTF-8 bytes) and is accepted;
    # 2,049 x U+1F600 is 4,098 UTF-16 code units (surrogate pairs) and is refused.
    log = Log().stable_group("a-1")
    log.commit("orders", 0, 1, member="a-1", generation=1, metadata="é" * 3000)
    log.commit("orders", 1, 1, member="a-1", generation=1, metadata="\U0001F600" * 2049)
    log.commit("orders", 2, 1, member="a-1", generation=1, metadata="x" * 4096)
    r = log.replay()
    assert reasons(r) == ["OFFSET_METADATA_TOO_LARGE"]
    assert committed(log) == {("orders", 0): 1, ("orders", 2): 1}


def test_metadata_too_large_reads_the_length_only_where_the_length_decides() -> None:
    # n characters are n to 2n UTF-16 code units: only between the two is the string encoded.
    cfg = CoordinatorConfig(offset_metadata_max_bytes=8)
    cases = ["", "x" * 4, "x" * 8, "x" * 9, "é" * 8, "\U0001F600" * 4, "\U0001F600" * 4 + "x",
             "x" * 7 + "\U0001F600", "x" * 6 + "\U0001F600"]
    assert [metadata_too_large(m, cfg) for m in cases] == [java_length(m) > 8 for m in cases]
    assert [java_length(m) > 8 for m in cases] == [False] * 3 + [True, False, False, True,
                                                                 True, False]
    assert not metadata_too_large(None, cfg)


def test_empty_group_without_offsets_dies_at_the_next_expiration_sweep() -> None:
    log = Log().stable_group("a-1")
    log.at(10_000).leave("a-1")
    log.at(700_000).commit("other", 0, 1)
    r = log.replay(records=True)
    assert log.replay().outputs.records == []  # opt-in: only the generator reads them
    dead = [t for t in r.outputs.transitions if t["to_state"] == "Dead"]
    next_sweep = -(-(T0 + 10_000) // 600_000) * 600_000
    assert [t["event_time"] for t in dead] == [next_sweep]
    assert [e.event_type for e in r.outputs.records][-2:] == ["GROUP_TOMBSTONE", "OFFSET_COMMIT"]
    assert r.group.state == "Empty" and r.group.generation_id == 0  # a new simple group


def test_records_only_groups_never_expire_anything_by_themselves() -> None:
    log = Log()
    log.commit("orders", 0, 5, generation=None)
    log.at(WEEK * 3).commit("orders", 1, 5, generation=None)
    assert committed(log) == {("orders", 0): 5, ("orders", 1): 5}
