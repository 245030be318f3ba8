"""A log's events group by group, as the pipeline hands each group its rows: the one helper
every test that folds a generated or recorded log uses."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Literal, overload

from pipeline.fold import Event

Unkeyed = dict[str | None, list[Event]]  # with the rows of no group under None


@overload
def by_group(events: Iterable[Event]) -> dict[str, list[Event]]: ...


@overload
def by_group(events: Iterable[Event], *, unkeyed: Literal[True]) -> Unkeyed: ...


def by_group(events: Iterable[Event], *, unkeyed: bool = False) -> dict[Any, list[Event]]:
    """Each group's events, in the order given. A row without a group id belongs to no
    group: it is left out, or with `unkeyed` kept under None (the pipeline rejects such rows
    on their own: `fold.reject_unkeyed`)."""
    groups: Unkeyed = defaultdict(list)
    for e in events:
        if unkeyed or e.group_id is not None:
            groups[e.group_id].append(e)
    return dict(groups)
