"""A group's state as versioned, compact JSON bytes, and back: what the streaming job stores.

Never pickle: the bytes are plain JSON with a format version `v`. Records are positional
lists in the field order of their dataclass, named once per format version; an older format
is upgraded by explicit steps in `_UPGRADES` before it is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from pipeline.fold.events import Protocol
from pipeline.fold.model import Group, Member, Offset, PendingMember, Rebalance

FORMAT_VERSION = 1

_MEMBER = [f.name for f in fields(Member)]
_OFFSET = [f.name for f in fields(Offset)]
_PENDING = [f.name for f in fields(PendingMember)]
_REBALANCE = [f.name for f in fields(Rebalance)]
_GROUP_SCALARS = [
    f.name for f in fields(Group)
    if f.name not in ("members", "pending_members", "pending_sync", "rebalance",
                      "stable_owners", "stable_members", "offsets", "pending_txns",
                      "position", "recent")
]


class StateFormatError(ValueError):
    """The bytes are not a group state this version can read."""


def dumps(g: Group) -> bytes:
    doc: dict[str, Any] = {"v": FORMAT_VERSION}
    doc.update({name: getattr(g, name) for name in _GROUP_SCALARS})
    doc["members"] = [_member_list(m) for m in g.members]
    doc["pending_members"] = [[getattr(p, n) for n in _PENDING] for p in g.pending_members]
    doc["pending_sync"] = sorted(g.pending_sync)
    doc["rebalance"] = None if g.rebalance is None else [
        getattr(g.rebalance, n) for n in _REBALANCE]
    doc["stable_owners"] = [[t, p, m] for (t, p), m in g.stable_owners]
    doc["stable_members"] = list(g.stable_members)
    doc["offsets"] = _offsets_list(g.offsets)
    doc["pending_txns"] = [[pid, _offsets_list(o)] for pid, o in sorted(g.pending_txns.items())]
    doc["position"] = None if g.position is None else list(g.position)
    doc["recent"] = [list(p) for p in g.recent]
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def loads(data: bytes) -> Group:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StateFormatError(f"group state is not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("v"), int):
        raise StateFormatError("group state has no format version 'v'")
    while doc["v"] < FORMAT_VERSION:
        doc = _UPGRADES[doc["v"]](doc)
    if doc["v"] != FORMAT_VERSION:
        raise StateFormatError(f"group state format {doc['v']} is newer than {FORMAT_VERSION}")
    try:
        return _group(doc)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise StateFormatError(f"group state format {FORMAT_VERSION} is damaged: {exc!r}") from None


def _member_list(m: Member) -> list[Any]:
    values = [getattr(m, n) for n in _MEMBER]
    values[_MEMBER.index("protocols")] = [[p.name, list(p.topics)] for p in m.protocols]
    values[_MEMBER.index("assignment")] = [list(tp) for tp in m.assignment]
    return values


def _member(values: list[Any]) -> Member:
    kw = dict(zip(_MEMBER, values, strict=True))
    kw["protocols"] = tuple(Protocol(n, tuple(t)) for n, t in kw["protocols"])
    kw["assignment"] = tuple((t, p) for t, p in kw["assignment"])
    return Member(**kw)


def _offsets_list(offsets: Any) -> list[Any]:
    return [[t, p, *(getattr(o, n) for n in _OFFSET)] for (t, p), o in sorted(offsets.items())]


def _offsets(rows: list[Any]) -> dict[tuple[str, int], Offset]:
    return {(r[0], r[1]): Offset(**dict(zip(_OFFSET, r[2:], strict=True))) for r in rows}


def _group(doc: dict[str, Any]) -> Group:
    kw = {name: doc[name] for name in _GROUP_SCALARS}
    return Group(
        **kw,
        members=tuple(_member(m) for m in doc["members"]),
        pending_members=tuple(PendingMember(*p) for p in doc["pending_members"]),
        pending_sync=frozenset(doc["pending_sync"]),
        rebalance=None if doc["rebalance"] is None else Rebalance(*doc["rebalance"]),
        stable_owners=tuple(((t, p), m) for t, p, m in doc["stable_owners"]),
        stable_members=tuple(doc["stable_members"]),
        offsets=_offsets(doc["offsets"]),
        pending_txns={pid: _offsets(o) for pid, o in doc["pending_txns"]},
        position=None if doc["position"] is None else tuple(doc["position"]),
        recent=tuple(tuple(p) for p in doc["recent"]),
    )


# format version -> step that rewrites a document of that version into the next one.
_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
