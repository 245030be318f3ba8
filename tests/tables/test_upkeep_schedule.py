"""The stream's upkeep VACUUMs a few tables at a time, each at most once an hour: without Spark."""

from __future__ import annotations

from pipeline.spark.stream.maintain import (
    VACUUM_EVERY_S,
    VACUUMS_PER_UPKEEP,
    Upkeep,
    maintained_tables,
)


def test_each_upkeep_vacuums_the_longest_unvacuumed_tables_and_none_twice_within_the_hour() -> None:
    tables = maintained_tables()
    assert len(tables) > 2 * VACUUMS_PER_UPKEEP  # the schedule below spans several upkeeps
    upkeep = Upkeep(every=10)
    seen: list[set[str]] = []
    now = 0.0
    while sum(map(len, seen)) < len(tables):  # never-vacuumed tables first, in their order
        picked = upkeep.to_vacuum(tables, now)
        assert len(picked) == VACUUMS_PER_UPKEEP or sum(map(len, seen)) + len(picked) == len(tables)
        assert not any(picked & s for s in seen)  # none again within the hour
        seen.append(picked)
        now += 60.0
    assert set().union(*seen) == set(tables)
    assert seen[0] == set(tables[:VACUUMS_PER_UPKEEP])
    assert upkeep.to_vacuum(tables, now) == set()  # every table done less than an hour ago
    # An hour after the first upkeep, its tables are due again, before the others.
    assert upkeep.to_vacuum(tables, VACUUM_EVERY_S) == seen[0]


def test_the_vacuum_schedule_is_not_a_setting() -> None:
    upkeep = Upkeep(7, 90)
    upkeep.to_vacuum(("group_state",), 0.0)
    assert upkeep == Upkeep(7, 90) and "vacuumed" not in repr(upkeep)
