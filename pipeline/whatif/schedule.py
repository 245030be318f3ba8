"""The what-if's clock, as both its players (`simulate` for classic groups, `consumer` for the
consumer protocol) run it: what each client does next, in time order, and past the window's
end only what finishes the rebalance under way."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Schedule(Generic[T]):
    """Things to do at times, done in time order (ties in the order they were planned). Past
    the window's `end` only the `finishing` kind runs (a client's next turn, its next
    heartbeat), until `deadline` or until the group has `settled`; `until` is the last time
    a run reached."""

    def __init__(self, end: int, deadline: int) -> None:
        self.end, self.deadline, self.until = end, deadline, end
        self._queue: list[tuple[int, int, str, T]] = []
        self._order = itertools.count()

    def at(self, t: int, what: str, item: T) -> None:
        heapq.heappush(self._queue, (t, next(self._order), what, item))

    def run(self, finishing: str, settled: Callable[[], bool]) -> Iterator[tuple[int, str, T]]:
        while self._queue:
            t, _, what, item = heapq.heappop(self._queue)
            if t > self.end:
                if t > self.deadline or settled():
                    return
                if what != finishing:
                    continue
                self.until = t
            yield t, what, item
