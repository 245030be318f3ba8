"""Java's String.hashCode and the group -> __consumer_offsets partition mapping, as Kafka computes them."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from functools import lru_cache
from typing import Generic, TypeVar

_K = TypeVar("_K", bound=Hashable)
_MASK32 = 0xFFFFFFFF
_INITIAL_CAPACITY = 16
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64

_INT_MIN = -(1 << 31)


@lru_cache(maxsize=1 << 16)
def java_string_hash(value: str) -> int:
    """Java `String.hashCode`: 31*h + c over UTF-16 code units, wrapped to a signed int32.

    Cached: every snapshot hashes all its member ids again to rebuild the members HashMap's
    order, and the ids repeat for a group's whole life."""
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
    """Iteration order of a default java.util.HashMap<String, ?> filled with `keys` in order."""
    table: JavaHashOrder[str] = JavaHashOrder()
    for key in keys:
        table.put(key, java_string_hash(key))
    return table.order()


def _spread(java_hash: int) -> int:
    """HashMap.hash: h ^ (h >>> 16), as an unsigned 32-bit value."""
    return (java_hash & _MASK32) ^ ((java_hash & _MASK32) >> 16)


class JavaHashOrder(Generic[_K]):
    """Iteration order of a default-constructed java.util.HashMap/HashSet under puts and removes.

    Java iterates bucket by bucket, bucket = spread(hash) & (capacity - 1) with
    spread(h) = h ^ (h >>> 16); inside a bucket, insertion order (a resize splits a bucket's list
    without reordering it). The table starts at 16 and doubles when the size passes 0.75 *
    capacity, or when a bucket reaches 9 entries while the table is under 64 (treeifyBin resizes
    instead of treeifying). Not modelled: the order inside a treeified bucket (9+ colliding keys
    in a table of 64+), taken here as insertion order.
    """

    def __init__(self, capacity: int = _INITIAL_CAPACITY) -> None:
        self._capacity = capacity
        # A dict keeps insertion order, and a removed-then-re-added key goes last, like a bucket.
        self._spread: dict[_K, int] = {}

    @classmethod
    def holding(cls, keys: Iterable[_K], java_hash: Callable[[_K], int],
                capacity: int) -> JavaHashOrder[_K]:
        """A table of `capacity` that holds `keys`, put in this order (a map that lives on,
        like a group's members: its capacity is what its puts grew it to, never shrunk)."""
        table: JavaHashOrder[_K] = cls(capacity)
        for key in keys:
            table._spread[key] = _spread(java_hash(key))
        return table

    @property
    def capacity(self) -> int:
        return self._capacity

    def put(self, key: _K, java_hash: int) -> None:
        if key in self._spread:
            return  # a put on a present key keeps its place
        spread = _spread(java_hash)
        mask = self._capacity - 1
        in_bucket = sum(1 for s in self._spread.values() if s & mask == spread & mask)
        if in_bucket >= _TREEIFY_THRESHOLD and self._capacity < _MIN_TREEIFY_CAPACITY:
            self._capacity *= 2
        self._spread[key] = spread
        if len(self._spread) > self._capacity * 3 // 4:
            self._capacity *= 2

    def remove(self, key: _K) -> None:
        del self._spread[key]

    def __len__(self) -> int:
        return len(self._spread)

    def order(self) -> list[_K]:
        mask = self._capacity - 1
        # sorted() is stable, so keys of one bucket stay in insertion order.
        return sorted(self._spread, key=lambda k: self._spread[k] & mask)

    def first(self) -> _K:
        mask = self._capacity - 1
        return min(self._spread, key=lambda k: self._spread[k] & mask)


def partition_count_misfit(homes: Iterable[tuple[str, int]], num_partitions: int,
                           search: int = 200) -> str | None:
    """Why `num_partitions` cannot be the log's offsets.topic.num.partitions, or None.

    `homes`: (group id, the partition most of its rows sit on). Kafka writes a group's
    records only to `partition_for(group, num_partitions)`, and the fold refuses rows on any
    other partition, so a wrong count would refuse nearly every row. A few groups off their
    partition are hostile rows, left to the fold; most groups off it mean the setting is not
    the cluster's. The answer then names the counts from the largest partition seen up to
    `search` more that would fit every group, if any does."""
    pairs = [(kafka_abs(java_string_hash(g)), p) for g, p in homes]
    off = sum(1 for h, p in pairs if h % num_partitions != p)
    if not pairs or off * 2 <= len(pairs):
        return None
    least = max(p for _, p in pairs) + 1
    fits = [n for n in range(least, least + search) if all(h % n == p for h, p in pairs)]
    hint = (f"{fits[0]} fits every group: set offsets.topic.num.partitions={fits[0]}" if fits
            else "no count fits every group: is this one cluster's __consumer_offsets?")
    return (f"{off} of {len(pairs)} groups sit on another partition than Kafka's partitionFor "
            f"gives with offsets.topic.num.partitions={num_partitions}; {hint} "
            "in the --coordinator-conf file")
