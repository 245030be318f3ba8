from __future__ import annotations

import pytest

from pipeline.fold.partitioning import (
    java_string_hash,
    kafka_abs,
    partition_count_misfit,
    partition_for,
)


@pytest.mark.parametrize(
    ("group_id", "hash_code", "p50", "p10"),
    [
        ("my-group", -1906497762, 12, 2),
        ("test", 3556498, 48, 8),
        ("group-1", 293427299, 49, 9),
        ("console-consumer-12345", 158455506, 6, 6),
        ("", 0, 0, 0),
        ("日本", 835047, 47, 7),
        ("polygenelubricants", -2147483648, 0, 0),
    ],
)
def test_partition_matches_kafkas_worked_examples(group_id: str, hash_code: int, p50: int, p10: int) -> None:
    assert java_string_hash(group_id) == hash_code
    assert partition_for(group_id) == p50
    assert partition_for(group_id, 10) == p10


@pytest.mark.parametrize("group_id", ["polygenelubricants", "GydZG_", "DESIGNING WORKHOUSES"])
def test_integer_min_value_hash_maps_to_partition_zero_not_48(group_id: str) -> None:
    assert java_string_hash(group_id) == -(2**31)
    assert kafka_abs(java_string_hash(group_id)) == 0
    assert partition_for(group_id) == 0


def test_supplementary_characters_hash_as_two_utf16_surrogates() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16.
    assert java_string_hash("\U0001F600") == (31 * 0xD83D + 0xDE00)


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="num_partitions"):
        partition_for("g", 0)


def test_a_partition_count_that_fits_the_log_passes_with_a_few_foreign_rows() -> None:
    groups = [f"group-{i}" for i in range(40)]
    homes = [(g, partition_for(g, 3)) for g in groups]
    assert partition_count_misfit(homes, 3) is None
    hostile = homes[:15] + [(g, (p + 1) % 3) for g, p in homes[15:20]]  # a quarter off
    assert partition_count_misfit(hostile, 3) is None


def test_a_partition_count_that_is_not_the_clusters_is_named_with_the_one_that_fits() -> None:
    homes = [(f"group-{i}", partition_for(f"group-{i}", 3)) for i in range(40)]
    problem = partition_count_misfit(homes, 50)
    assert problem is not None
    assert "groups sit on another partition than Kafka's partitionFor gives" in problem
    assert "offsets.topic.num.partitions=50" in problem
    assert "3 fits every group: set offsets.topic.num.partitions=3" in problem


def test_no_count_fits_groups_from_two_clusters() -> None:
    homes = [(f"g{i}", partition_for(f"g{i}", 3 if i % 2 else 7)) for i in range(60)]
    problem = partition_count_misfit(homes, 50)
    assert problem is not None and "no count fits every group" in problem
