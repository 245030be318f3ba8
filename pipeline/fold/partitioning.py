"""Java's String.hashCode and the group -> __consumer_offsets partition mapping, as Kafka computes them."""

from __future__ import annotations

_INT_MIN = -(1 << 31)


def java_string_hash(value: str) -> int:
    """Java `String.hashCode`: 31*h + c over UTF-16 code units, wrapped to a signed int32."""
    h = 0
    data = value.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's `Utils.abs`: 0 for Integer.MIN_VALUE (where Math.abs would stay negative)."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(group_id: str, num_partitions: int = 50) -> int:
    """The `__consumer_offsets` partition that owns `group_id` (offsets.topic.num.partitions)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions!r}")
    return kafka_abs(java_string_hash(group_id)) % num_partitions


def java_hashmap_order(keys: list[str]) -> list[str]:
    """Iteration order of a default java.util.HashMap<String, ?> filled with `keys` in order.

    Buckets are `(h ^ (h >>> 16)) & (capacity - 1)`; the table starts at 16 and doubles when
    the size passes 0.75 * capacity; within a bucket, insertion order (no treeified bins
    below 8 collisions, which these small maps never reach in practice). DERIVED, see reference §5.4.
    """
    unique = list(dict.fromkeys(keys))
    capacity = 16
    while len(unique) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    indexed = sorted(enumerate(unique), key=lambda item: (bucket(item[1]), item[0]))
    return [key for _, key in indexed]
