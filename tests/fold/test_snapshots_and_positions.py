"""GROUP_METADATA snapshots, group tombstones, log positions and malformed rows."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pipeline.fold import Event, Group, Protocol, dumps, fold, reject_unkeyed
from tests.fold.records import T0, Log, reasons, states


def test_snapshot_replaces_the_group_stable_with_members() -> None:
    log = Log()
    log.snapshot(4, {"a-1": [("orders", 0)], "b-2": [("orders", 1)]}, leader="b-2")
    g = log.replay().group
    assert (g.state, g.generation_id, g.leader_id, g.protocol) == ("Stable", 4, "b-2", "range")
    assert g.member("a-1").assignment == (("orders", 0),)  # type: ignore[union-attr]


def test_snapshot_without_members_is_an_empty_group() -> None:
    log = Log()
    log.snapshot(4, {})
    g = log.replay().group
    assert (g.state, g.generation_id, g.members) == ("Empty", 4, ())


def test_records_only_log_infers_a_rebalance_from_each_generation_step() -> None:
    log = Log()
    log.snapshot(4, {"a-1": [("orders", 0), ("orders", 1)]})
    log.at(60_000).snapshot(5, {"a-1": [("orders", 0)], "b-2": [("orders", 1)]})
    r = log.replay()
    (rebalance,) = r.outputs.rebalances
    assert rebalance["generation_id"] == 5
    assert rebalance["started_at"] is None
    assert (rebalance["members_joined"], rebalance["partitions_moved"]) == (1, 1)
    assert r.group.rebalance_count == 1
    assert r.group.snapshot_mismatch_count == 0


def test_records_only_members_are_never_expired_for_silence() -> None:
    log = Log()
    log.snapshot(4, {"a-1": [("orders", 0)]})
    log.at(3_600_000).commit("orders", 0, 1, generation=None)
    g = log.replay().group
    assert [m.member_id for m in g.members] == ["a-1"]
    assert g.state == "Stable"


def test_snapshot_agreeing_with_the_replayed_journal_is_silent() -> None:
    log = Log().stable_group("a-1", "b-2")
    for record in log.replay().outputs.records:
        if record.event_type == "GROUP_METADATA" and record.generation_id == 1:
            log.add("GROUP_METADATA", **{
                k: getattr(record, k) for k in
                ("generation_id", "protocol_type", "protocol", "leader_id", "members",
                 "current_state_timestamp")})
    r = log.replay()
    assert r.group.snapshot_mismatch_count == 0
    assert "SNAPSHOT_MISMATCH" not in [t["cause"] for t in r.outputs.transitions]


def test_snapshot_disagreeing_with_the_journal_wins_and_the_disagreement_is_recorded() -> None:
    log = Log().stable_group("a-1", "b-2")
    log.snapshot(3, {"a-1": [("orders", 0)]})
    r = log.replay()
    assert (r.group.generation_id, len(r.group.members)) == (3, 1)
    assert r.group.snapshot_mismatch_count == 1
    row = r.outputs.transitions[-1]
    assert row["cause"] == "SNAPSHOT_MISMATCH"
    assert "generation_id: replayed 1, snapshot 3" in row["detail"]


def test_group_tombstone_kills_the_group_but_its_offsets_outlive_it() -> None:
    log = Log()
    log.snapshot(2, {})
    log.commit("orders", 0, 9, generation=None)
    log.add("GROUP_TOMBSTONE")
    r = log.replay()
    assert states(r) == [
        (None, "Empty", "SNAPSHOT"),
        ("Empty", "Dead", "GROUP_TOMBSTONE"),
        (None, "Empty", "GROUP_CREATED"),
    ]
    assert r.group.offsets[("orders", 0)].committed_offset == 9


def test_group_tombstone_for_an_unknown_group_changes_nothing() -> None:
    log = Log()
    log.add("GROUP_TOMBSTONE")
    r = log.replay()
    assert not r.group.exists and reasons(r) == [] and r.outputs.transitions == []


def test_rows_are_applied_in_log_order_whatever_order_they_arrive_in() -> None:
    log = Log().stable_group("a-1")
    log.commit("orders", 0, 1, member="a-1", generation=1)
    log.commit("orders", 0, 2, member="a-1", generation=1)
    shuffled = list(reversed(log.events))
    assert fold("g", shuffled).group == log.replay().group


def test_same_position_again_is_duplicate_and_behind_it_is_out_of_order() -> None:
    log = Log()
    log.commit("orders", 0, 1)
    log.commit("orders", 0, 2)
    first = log.replay().group
    again = fold(first, [log.events[1]])
    assert reasons(again) == ["DUPLICATE"]
    assert again.group.duplicate_count == 1
    assert again.group.offsets == first.offsets
    # A position older than the remembered window cannot be told from a gap being filled.
    forgetful = replace(first, recent=first.recent[-1:])
    behind = fold(forgetful, [log.events[0]])
    assert reasons(behind) == ["OUT_OF_ORDER"]
    assert behind.group.out_of_order_count == 1


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"event_type": None}, "MALFORMED: event_type is null"),
        ({"event_type": "JOINN"}, "MALFORMED: unknown event_type 'JOINN'"),
        ({"event_type": "SYNC", "member_id": "a"}, "MALFORMED: generation_id is required for SYNC"),
        ({"event_type": "OFFSET_COMMIT", "topic": "t", "partition": -1, "committed_offset": 1},
         "MALFORMED: partition must not be negative, got -1"),
        ({"event_type": "TXN_MARKER", "producer_id": 1, "txn_result": "MAYBE"},
         "MALFORMED: txn_result must be COMMIT or ABORT, got 'MAYBE'"),
        ({"event_type": "LEAVE"}, "MALFORMED: LEAVE needs member_id or group_instance_id"),
        ({"event_type": "UNSUPPORTED_RECORD"}, "UNSUPPORTED_RECORD"),
        ({"event_type": "MALFORMED_RECORD", "decode_error": "OffsetCommitValue v9: truncated"},
         "MALFORMED: OffsetCommitValue v9: truncated"),
        ({"event_type": "MALFORMED_RECORD"},
         "MALFORMED: an undecodable record (its decode_error is null)"),
        ({"event_type": "OFFSET_COMMIT", "topic": "t", "partition": 0, "committed_offset": 1,
          "decode_error": "commit_timestamp is outside 1677-2262"},
         "MALFORMED: commit_timestamp is outside 1677-2262"),
    ],
)
def test_malformed_rows_are_rejected_with_what_is_wrong(values: dict[str, object],
                                                        reason: str) -> None:
    e = Event(**{"log_partition": 3, "log_offset": 5, "event_time": T0, "group_id": "g",
                 "event_type": None, **values})  # type: ignore[arg-type]
    r = fold("g", [e])
    assert reasons(r) == [reason]
    assert r.group.position == (3, 5)  # the position is used up: a re-delivery is a duplicate


def test_rows_without_a_position_are_malformed_and_touch_nothing() -> None:
    e = Event(None, 3, T0, "g", "HEARTBEAT", member_id="a", generation_id=0)
    r = fold("g", [e])
    assert reasons(r) == ["MALFORMED: log_partition and log_offset are required"]
    assert r.group.position is None


def test_a_row_whose_time_could_not_be_read_says_why_and_touches_nothing() -> None:
    e = Event(0, 3, None, "g", "HEARTBEAT", member_id="a", generation_id=0,
              decode_error="event_time is outside 1677-2262")
    r = fold("g", [e])
    assert reasons(r) == ["MALFORMED: event_time is outside 1677-2262"]
    assert r.group.position is None


def test_rows_without_a_group_are_rejected_outside_any_group() -> None:
    e = Event(0, 1, T0, None, "JOIN")
    (row,) = reject_unkeyed([e])
    assert row["reason"] == "MALFORMED: group_id is null"
    assert row["group_state"] is None
    undecodable = replace(e, event_type="MALFORMED_RECORD", decode_error="key: truncated")
    assert reject_unkeyed([undecodable])[0]["reason"] == "MALFORMED: key: truncated"


def test_nested_values_that_cannot_be_read_make_a_malformed_row_not_a_crash() -> None:
    e = Event.from_row({"log_partition": 3, "log_offset": 1, "event_time": T0, "group_id": "g",
                        "event_type": "JOIN", "protocols": [{"name": None, "topics": []}]})
    assert e.defect is not None
    assert reasons(fold("g", [e]))[0].startswith("MALFORMED: protocols cannot be read")


def test_event_rows_round_trip_through_dicts() -> None:
    e = Event(1, 2, T0, "g", "JOIN", member_id="m", protocols=(Protocol("range", ("a", "b")),),
              assignments=(("m", (("a", 0),)),), raw_key=b"\x00\x01")
    assert Event.from_row(e.to_row()) == e


def _deleted_then_back() -> Log:
    """A group that rebalances twice (a-1 joins, times out) and is deleted (GROUP_TOMBSTONE,
    no offsets left), then a member joins a group of the same id."""
    log = Log()
    log.stable_group("a-1")
    log.at(20_000).join("a-1")  # a second rebalance: generation 2
    log.sync("a-1", 2, {"a-1": [("orders", 0)]})
    log.leave("a-1")
    log.at(30_000).add("GROUP_TOMBSTONE")
    log.at(40_000).stable_group("b-1")
    return log


def test_a_removed_group_is_gone_and_its_next_record_starts_a_new_group() -> None:
    log = _deleted_then_back()
    tombstone = next(i for i, e in enumerate(log.events) if e.event_type == "GROUP_TOMBSTONE")
    before = fold(log.group, log.events[:tombstone + 1])
    assert before.group.gone and before.group.rebalance_count == 2
    r = log.replay()
    assert (r.group.state, r.group.generation_id, r.group.rebalance_count) == ("Stable", 1, 1)
    assert [m.member_id for m in r.group.members] == ["b-1"]
    # The new life starts from no state, not from the Dead one.
    assert states(r)[6:8] == [("Empty", "Dead", "GROUP_TOMBSTONE"), (None, "Empty", "GROUP_CREATED")]
    # Any cut of the log, each part folded onto the state the last left: the same group.
    for cut in range(1, len(log.events)):
        first = fold(log.group, log.events[:cut])
        rest = fold(first.group, log.events[cut:])
        assert dumps(rest.group) == dumps(r.group), f"cut at {cut}"


def test_a_dead_group_with_offsets_left_is_not_gone() -> None:
    log = Log()
    log.snapshot(2, {})
    log.commit("orders", 0, 9, generation=None)
    log.add("GROUP_TOMBSTONE")
    assert not log.replay().group.gone  # Kafka keeps an Empty group holding the offsets
    assert not Group(group_id="never-seen").gone
