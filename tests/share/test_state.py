"""The share coordinator's replay (`pipeline.share.state`) without Spark: the batch
combination against Kafka's own `PersisterStateBatchCombiner` (600 seeded cases,
tests/share/combine_cases.json), and the replay rules on records Kafka's serializers wrote."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.decode.share_state import decode_share_state
from pipeline.share.state import (
    Refused,
    SharePartition,
    StateBatch,
    apply,
    combine,
    key_of,
    replay,
    resumed,
    share_lag,
)
from schemas.share_state import SHARE_PARTITION_STATE
from tests.decode import kafka_records
from tests.share import combine_cases

RECORDS = kafka_records.records(share_state=True)
T = 1_700_000_000_000


def row(name: str) -> dict[str, Any]:
    return decode_share_state(*RECORDS[name])


def test_batches_combine_exactly_as_kafkas_combiner_does() -> None:
    cases = combine_cases.load()
    assert len(cases) == 600
    for case in cases:
        got = combine([StateBatch(*b) for b in case["old"]], [StateBatch(*b) for b in case["new"]],
                      case["start"])
        assert [list(b) for b in got] == case["kafka"], case
    # The cases reach every rule: overlaps owned by the count and by the state, joins of
    # touching batches alike, pruning, and two final batches that touch alike (Kafka's order).
    touching = [c for c in cases if any(a[1] + 1 == b[0] and a[2:] == b[2:] for a, b in
                                        zip(c["kafka"], c["kafka"][1:], strict=False))]
    assert touching, "no case where Kafka leaves two touching batches alike apart"


@pytest.mark.kafka
def test_the_combination_cases_are_what_kafka_computes() -> None:
    """Compile and run tests/share/java/Combine.java against Kafka's jars on the cases."""
    cases = combine_cases.load()
    assert combine_cases.run_java(cases) == [c["kafka"] for c in cases]


def test_a_snapshot_replaces_and_an_update_merges() -> None:
    state = apply(None, row("share_snapshot"))
    assert state == SharePartition(3, 1, 2, 100, 7, T, T + 5_000, (
        StateBatch(100, 104, 2, 1), StateBatch(105, 109, 0, 2), StateBatch(110, 110, 4, 5)))
    # An update that keeps the start offset and leader epoch (-1 each) and carries no count:
    # its batch (105-107 acknowledged, 2nd delivery) takes the range the same count held.
    updated = apply(state, row("share_update"))
    assert updated is not None
    assert (updated.snapshot_epoch, updated.state_epoch, updated.leader_epoch,
            updated.start_offset, updated.delivery_complete_count, updated.create_timestamp,
            updated.write_timestamp) == (3, 1, 2, 100, 7, T, T + 5_000)
    assert updated.batches == (StateBatch(100, 104, 2, 1), StateBatch(105, 107, 2, 2),
                               StateBatch(108, 109, 0, 2), StateBatch(110, 110, 4, 5))
    # One that moves the start offset on: everything below it is pruned.
    moved = apply(updated, row("share_update_start"))
    assert moved is not None
    assert (moved.leader_epoch, moved.start_offset, moved.delivery_complete_count) == (2, 108, 2)
    assert moved.batches == (StateBatch(108, 109, 0, 2), StateBatch(110, 110, 4, 5),
                             StateBatch(111, 115, 2, 1), StateBatch(116, 116, 4, 5))
    assert apply(moved, row("share_snapshot_initialized")) == SharePartition(
        0, 1, 0, -1, -1, T, T, ())  # a snapshot keeps nothing of before


def test_an_update_without_state_starts_one_and_a_tombstone_ends_it() -> None:
    started = apply(None, row("share_update_start"))
    assert started == SharePartition(3, 0, 2, 108, 2, None, None, (
        StateBatch(111, 115, 2, 1), StateBatch(116, 116, 4, 5)))
    assert apply(started, row("share_snapshot_tombstone")) is None
    again = apply(None, row("share_update"))  # after the tombstone: from nothing
    assert again is not None and again.state_epoch == 0 and again.start_offset == -1
    assert again.batches == (StateBatch(105, 107, 2, 2),)  # nothing to prune below -1


def test_what_kafkas_shard_would_not_apply_is_refused_with_a_reason() -> None:
    key, value = RECORDS["share_update"]
    with pytest.raises(Refused, match="ShareUpdate tombstone"):
        apply(None, decode_share_state(key, None))
    with pytest.raises(Refused, match="UNSUPPORTED_RECORD: record type 7"):
        apply(None, decode_share_state(b"\x00\x07" + key[2:], value))
    with pytest.raises(Refused, match="MALFORMED"):
        key_of({"group_id": "g", "topic_id": None, "partition": 0})
    assert key_of(row("share_update")) == ("share-g", "AAECAwQFBgcICQoLDA0ODw", 2)


def test_share_lag_is_kafka_4_2s_and_unknown_until_both_are_known() -> None:
    state = apply(None, row("share_snapshot"))  # start 100, 7 delivered past it
    assert share_lag(150, state) == 150 - 100 - 7
    assert share_lag(None, state) is None
    assert share_lag(150, apply(None, row("share_snapshot_initialized"))) is None  # start -1
    assert share_lag(150, apply(None, row("share_snapshot_40"))) is None  # no count in 4.0
    assert share_lag(150, None) is None


def test_a_log_replayed_gives_a_row_per_record_applied_and_refuses_the_rest() -> None:
    names = ["share_snapshot", "share_update", "share_update_start", "share_update",
             "share_snapshot_tombstone", "share_update_empty"]
    rows = [row(name) | {"log_partition": 3, "log_offset": k, "event_time": T + k}
            for k, name in enumerate(names)]
    rows[3] = dict(rows[1])  # delivered twice
    rows.append(row("share_update") | {"log_partition": None, "log_offset": None})
    rows.append(decode_share_state(RECORDS["share_update"][0], None)
                | {"log_partition": 3, "log_offset": 9})
    done = replay(reversed(rows))  # any order in: the log's order applied
    assert [(r["log_offset"], r["change"]) for r in done.history] == [
        (0, "SNAPSHOT"), (1, "UPDATE"), (2, "UPDATE"), (4, "DELETED"), (5, "UPDATE")]
    assert sorted(reason.split(":")[0] for _, reason in done.rejected) == [
        "DUPLICATE", "MALFORMED", "MALFORMED"]
    first, _, moved, deleted, again = done.history
    assert (first["in_flight"], first["available"], first["acknowledged"],
            first["archived"]) == (11, 5, 5, 1)
    assert (moved["start_offset"], moved["delivery_complete_count"], moved["in_flight"],
            moved["available"], moved["acknowledged"], moved["archived"]) == (
        108, 2, 9, 2, 5, 2)
    assert deleted["start_offset"] is None and deleted["state_batches"] is None
    assert again["state_epoch"] == 0 and again["start_offset"] == 108  # started anew
    assert set(first) == {c.name for c in SHARE_PARTITION_STATE}
    # Cut anywhere, the second half continuing from the first: the same rows and states.
    for cut in range(len(rows)):
        ordered = sorted(rows, key=lambda r: (r["log_partition"] is not None,
                                              r["log_partition"] or 0, r["log_offset"] or 0))
        head = replay(ordered[:cut])
        tail = replay(ordered[cut:], head)
        assert head.history + tail.history == done.history, cut
        assert tail.states == done.states, cut
        # ... and from only each key's last row, as a stream keeps it between batches.
        last = {(r["group_id"], r["topic_id"], r["partition"]): r for r in head.history}
        again = replay(ordered[cut:], resumed(last.values()))
        assert head.history + again.history == done.history, cut
        assert again.states == done.states and again.rejected == tail.rejected, cut


def test_a_record_that_could_not_be_decoded_is_refused_with_the_decoders_reason() -> None:
    bad = {"event_type": "MALFORMED_RECORD", "group_id": "g", "log_partition": 0,
           "log_offset": 1, "decode_error": "ShareUpdateValue: 3 bytes left over"}
    done = replay([bad])
    assert done.history == [] and done.rejected == [
        (bad, "MALFORMED: ShareUpdateValue: 3 bytes left over")]
