"""The generated logs: realistic, seeded, and faithful to the coordinator that made them."""

from __future__ import annotations

from collections import Counter

import pytest

from pipeline.fold import CoordinatorConfig, Event, fold
from pipeline.generator import LogSpec, generate
from pipeline.generator.log import T0


def test_same_seed_same_log_and_another_seed_another() -> None:
    spec = LogSpec(groups=3, events=400, seed=4)
    assert generate(spec) == generate(spec)
    assert generate(spec) != generate(LogSpec(groups=3, events=400, seed=5))


def test_journal_logs_carry_the_protocol_and_offsets_topic_logs_only_records() -> None:
    journal = Counter(e.event_type for e in generate(LogSpec(groups=8, events=3000, seed=2)))
    records = Counter(e.event_type for e in generate(
        LogSpec(groups=8, events=3000, seed=2, log_kind="offsets-topic")))
    assert {"JOIN", "SYNC", "HEARTBEAT", "OFFSET_COMMIT", "GROUP_METADATA"} <= set(journal)
    assert set(records) <= {"GROUP_METADATA", "OFFSET_COMMIT", "TXN_MARKER",
                            "OFFSET_TOMBSTONE", "GROUP_TOMBSTONE"}


def test_positions_rise_per_partition_and_each_group_keeps_its_partition() -> None:
    events = generate(LogSpec(groups=6, events=1500, seed=9))
    last: dict[int, int] = {}
    partition_of: dict[str, int] = {}
    for e in events:
        assert e.log_partition is not None and e.log_offset is not None
        assert e.log_offset > last.get(e.log_partition, -1)
        last[e.log_partition] = e.log_offset
        assert partition_of.setdefault(e.group_id or "", e.log_partition) == e.log_partition


def test_a_log_in_parts_holds_each_position_once_and_each_group_in_one_part() -> None:
    spec = LogSpec(groups=9, events=3000, seed=3, log_kind="offsets-topic")
    parts = [generate(spec, k, 3) for k in range(3)]
    positions = Counter((e.log_partition, e.log_offset) for part in parts for e in part)
    assert set(positions.values()) == {1}
    owners = [{e.group_id for e in part if e.group_id is not None} for part in parts]
    assert all(owners) and sum(map(len, owners)) == len(set().union(*owners)) == 9
    assert sum(map(len, parts)) >= spec.events
    assert parts[1] == generate(spec, 1, 3) and parts[1] != parts[2]
    with pytest.raises(ValueError, match="part must be in"):
        generate(spec, 3, 3)


def test_retired_groups_go_empty_and_with_short_retention_expire_and_die() -> None:
    config = CoordinatorConfig(offsets_retention_ms=60_000,
                               offsets_retention_check_interval_ms=10_000)
    events = generate(LogSpec(groups=10, events=20_000, seed=1, config=config,
                              log_kind="offsets-topic"))
    kinds = Counter(e.event_type for e in events)
    assert kinds["OFFSET_TOMBSTONE"] > 0 and kinds["GROUP_TOMBSTONE"] > 0
    assert max(e.event_time or 0 for e in events) > T0


def test_out_of_order_rows_are_rejected_only_by_a_replay_that_saw_later_rows_first() -> None:
    plain = generate(LogSpec(groups=3, events=500, seed=8))
    delayed = generate(LogSpec(groups=3, events=500, seed=8, out_of_order=0.05))
    assert delayed != plain
    assert sorted(delayed, key=_position) == sorted(plain, key=_position)
    for group_id in {e.group_id for e in plain if e.group_id}:
        mine = [e for e in delayed if e.group_id == group_id]
        whole = fold(group_id, mine)  # one batch: sorted back into place
        assert whole.group == fold(group_id, [e for e in plain if e.group_id == group_id]).group
        first = fold(group_id, mine[: len(mine) - 1])  # as delivered: the late ones last
        late = fold(first.group, mine[len(mine) - 1:])
        behind = first.group.position is not None and _position(mine[-1]) < first.group.position
        assert [r["reason"] for r in late.outputs.rejected] == (["OUT_OF_ORDER"] if behind else [])


def _position(e: Event) -> tuple[int, int]:
    return (e.log_partition or 0, e.log_offset or 0)


@pytest.mark.parametrize("bad", [{"bad_rows": 1.5}, {"out_of_order": -0.1},
                                 {"log_kind": "kafka"}, {"groups": 0},
                                 {"sample_interval_ms": 0}])
def test_bad_specs_are_refused_naming_the_field(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        LogSpec(**bad)  # type: ignore[arg-type]
