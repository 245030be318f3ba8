"""Properties of the fold over generated logs, and the chunking law that makes micro-batches safe."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from functools import lru_cache

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.fold import CoordinatorConfig, Event, Group, advance, dumps, fold, loads
from pipeline.generator import LogSpec, generate
from tests.grouping import by_group

CONFIG = CoordinatorConfig()
SEEDS = st.integers(min_value=0, max_value=10_000)


@lru_cache(maxsize=64)
def log_of(seed: int, kind: str = "journal", bad: float = 0.0) -> dict[str | None, list[Event]]:
    return by_group(generate(LogSpec(groups=4, events=600, seed=seed, log_kind=kind,
                                     bad_rows=bad)), unkeyed=True)


def steps_of(seed: int, kind: str = "journal", bad: float = 0.0,
             ) -> Iterator[tuple[Group, Event, Group, bool]]:
    """`step_through` over every group of the generated log (not the rows without a group)."""
    for group_id, events in log_of(seed, kind, bad).items():
        if group_id is not None:
            yield from step_through(events)


def step_through(events: list[Event]) -> list[tuple[Group, Event, Group, bool]]:
    """(before, event, after, refused) for each event, in log order."""
    group_id = events[0].group_id
    assert group_id is not None
    g = Group(group_id)
    steps = []
    for e in sorted(events, key=lambda e: (e.log_partition or 0, e.log_offset or 0)):
        r = fold(g, [e], CONFIG)
        steps.append((g, e, r.group, bool(r.outputs.rejected)))
        g = r.group
    return steps


BOOKKEEPING = dict(position=None, recent=(), seq=0, clock=None, last_event_time=None,
                   journal=False, rejected_count=0, duplicate_count=0, out_of_order_count=0)


@settings(max_examples=12, deadline=None)
@given(SEEDS)
def test_generation_never_decreases_within_a_groups_life(seed: int) -> None:
    for before, _, after, _ in steps_of(seed):
        if before.exists and after.exists:
            assert after.generation_id >= before.generation_id


@settings(max_examples=12, deadline=None)
@given(SEEDS)
def test_leader_is_a_member_and_assignments_are_disjoint_and_name_only_members(seed: int) -> None:
    for _, _, g, _ in steps_of(seed):
        ids = {m.member_id for m in g.members}
        if ids:
            assert g.leader_id in ids
        owners: dict[tuple[str, int], str] = {}
        for m in g.members:
            for tp in m.assignment:
                assert tp not in owners, f"{tp} assigned twice in {g.group_id}"
                owners[tp] = m.member_id


@settings(max_examples=12, deadline=None)
@given(SEEDS)
def test_stable_only_after_the_leaders_sync(seed: int) -> None:
    for before, e, after, _ in steps_of(seed):
        if after.state == "Stable" and before.state != "Stable":
            assert e.event_type in ("SYNC", "GROUP_METADATA")
            if e.event_type == "SYNC":
                assert e.member_id == after.leader_id


@settings(max_examples=12, deadline=None)
@given(SEEDS, st.sampled_from(["journal", "offsets-topic"]))
def test_a_refused_event_leaves_the_state_unchanged(seed: int, kind: str) -> None:
    for before, e, after, refused in steps_of(seed, kind, 0.05):
        if not refused or e.event_time is None:
            continue
        timed = advance(before, e.event_time, CONFIG).group if e.position else before
        assert replace(after, **BOOKKEEPING) == replace(timed, **BOOKKEEPING)


@settings(max_examples=25, deadline=None)
@given(SEEDS, st.sampled_from(["journal", "offsets-topic"]), st.lists(
    st.integers(min_value=1, max_value=400), max_size=6))
def test_chunking_law_any_split_with_state_stored_between_calls_gives_the_same_result(
        seed: int, kind: str, cuts: list[int]) -> None:
    for group_id, events in log_of(seed, kind, 0.05).items():
        if group_id is None:
            continue
        ordered = sorted(events, key=lambda e: (e.log_partition or 0, e.log_offset or 0))
        whole = fold(group_id, ordered, CONFIG)
        bounds = sorted({0, len(ordered), *(c % (len(ordered) + 1) for c in cuts)})
        g: Group | str = group_id
        rows = []
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            r = fold(g, ordered[lo:hi], CONFIG)
            g = loads(dumps(r.group))
            rows.append(r.outputs)
        assert g == whole.group
        for table in ("transitions", "rebalances", "offset_history", "rejected"):
            assert [row for o in rows for row in getattr(o, table)] == getattr(
                whole.outputs, table)


@settings(max_examples=10, deadline=None)
@given(SEEDS)
def test_journal_replay_agrees_with_every_snapshot_the_coordinator_wrote(seed: int) -> None:
    for group_id, events in log_of(seed).items():
        if group_id is None:
            continue
        g = fold(group_id, events, CONFIG).group
        assert g.snapshot_mismatch_count == 0


@settings(max_examples=10, deadline=None)
@given(SEEDS)
def test_offsets_topic_view_of_a_history_commits_what_the_journal_commits(seed: int) -> None:
    # Both kinds come from the same simulation; each stops at its own row count, so compare
    # the history both cover.
    journal, records = log_of(seed, "journal"), log_of(seed, "offsets-topic")
    cutoff = min(max(e.event_time or 0 for es in log.values() for e in es)
                 for log in (journal, records))
    for group_id, events in journal.items():
        if group_id is None or group_id not in records:
            continue
        ours = fold(group_id, [e for e in events if (e.event_time or 0) <= cutoff], CONFIG).group
        theirs = fold(group_id, [e for e in records[group_id] if (e.event_time or 0) <= cutoff],
                      CONFIG).group
        assert {tp: o.committed_offset for tp, o in ours.offsets.items()} == {
            tp: o.committed_offset for tp, o in theirs.offsets.items()}
