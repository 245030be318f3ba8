"""A group's state as versioned, compact JSON, deflated to bytes, and back: what the streaming
job stores (and the backfill hands it as a seed).

Never pickle: the state is a JSON document with a format version `v` (`document`), and its
bytes are that document's UTF-8 deflated with zlib (RFC 1950), which keeps a group's state
near the size of its own GROUP_METADATA record (bench_fold prints both; docs/performance.md).
Bytes that start with `{` are read as the undeflated JSON that states were stored as before.

Records are positional lists in the field order of their dataclass, named once per format
version; an older format is upgraded by explicit steps in `_UPGRADES` before it is read.
Format 2 added `consumer`, the KIP-848 part of a group (null for classic groups); a format-1
state upgrades to null. Format 3 added `member_capacity`, the table size of Kafka's members
HashMap (leader succession follows its order); a format-2 state gets the smallest table its
members fit.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from pipeline.fold.events import Protocol, TopicIdPartitions, TopicMetadata
from pipeline.fold.model import (
    ConsumerGroup,
    ConsumerMember,
    Group,
    Member,
    Offset,
    PendingMember,
    Rebalance,
    ResolvedRegex,
)

FORMAT_VERSION = 3
_LEVEL = 6  # zlib's default: level 9 saves <1 % more on a group's state

_MEMBER = [f.name for f in fields(Member)]
_OFFSET = [f.name for f in fields(Offset)]
_PENDING = [f.name for f in fields(PendingMember)]
_REBALANCE = [f.name for f in fields(Rebalance)]
_CONSUMER_MEMBER = [f.name for f in fields(ConsumerMember)]
_REGEX = [f.name for f in fields(ResolvedRegex)]
_GROUP_SCALARS = [
    f.name for f in fields(Group)
    if f.name not in ("members", "pending_members", "pending_sync", "rebalance",
                      "stable_owners", "stable_members", "offsets", "pending_txns",
                      "position", "recent", "consumer")
]


class StateFormatError(ValueError):
    """The bytes are not a group state this version can read."""


def dumps(g: Group) -> bytes:
    return zlib.compress(_json(document(g)), _LEVEL)


def document(g: Group) -> dict[str, Any]:
    """The state as its JSON document (what `dumps` deflates)."""
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
    doc["consumer"] = None if g.consumer is None else _consumer_doc(g.consumer)
    return doc


def _json(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def loads(data: bytes) -> Group:
    try:
        text = data if data[:1] == b"{" else zlib.decompress(data)
        doc = json.loads(text.decode("utf-8"))
    except zlib.error as exc:
        raise StateFormatError(f"group state is neither JSON nor deflated JSON: {exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StateFormatError(f"group state is not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("v"), int):
        raise StateFormatError("group state has no format version 'v'")
    while doc["v"] < FORMAT_VERSION:
        upgrade = _UPGRADES.get(doc["v"])
        if upgrade is None:
            raise StateFormatError(f"group state format {doc['v']} is unknown")
        doc = upgrade(doc)
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


def _consumer_doc(c: ConsumerGroup) -> dict[str, Any]:
    return {
        "group_epoch": c.group_epoch,
        "assignment_epoch": c.assignment_epoch,
        "metadata_hash": c.metadata_hash,
        "members": [_consumer_member_list(m) for m in c.members],
        "targets": [[m, _tid_list(t)] for m, t in c.targets],
        "subscription_metadata": [
            [t.topic_id, t.topic_name, t.num_partitions, [[p, list(r)] for p, r in t.partition_racks]]
            for t in c.subscription_metadata],
        "regexes": [[getattr(r, n) for n in _REGEX] for r in c.regexes],
    }


def _consumer(doc: dict[str, Any]) -> ConsumerGroup:
    return ConsumerGroup(
        group_epoch=doc["group_epoch"],
        assignment_epoch=doc["assignment_epoch"],
        metadata_hash=doc["metadata_hash"],
        members=tuple(_consumer_member(m) for m in doc["members"]),
        targets=tuple((m, _tid(t)) for m, t in doc["targets"]),
        subscription_metadata=tuple(
            TopicMetadata(i, n, k, tuple((p, tuple(r)) for p, r in racks))
            for i, n, k, racks in doc["subscription_metadata"]),
        regexes=tuple(_regex(r) for r in doc["regexes"]),
    )


def _consumer_member_list(m: ConsumerMember) -> list[Any]:
    values = [getattr(m, n) for n in _CONSUMER_MEMBER]
    for name in ("subscribed_topic_names",):
        values[_CONSUMER_MEMBER.index(name)] = list(getattr(m, name))
    protocols = m.classic_protocols
    values[_CONSUMER_MEMBER.index("classic_protocols")] = None if protocols is None else [
        [p.name, list(p.topics)] for p in protocols]
    for name in ("assigned_partitions", "partitions_pending_revocation"):
        values[_CONSUMER_MEMBER.index(name)] = _tid_list(getattr(m, name))
    return values


def _consumer_member(values: list[Any]) -> ConsumerMember:
    kw = dict(zip(_CONSUMER_MEMBER, values, strict=True))
    kw["subscribed_topic_names"] = tuple(kw["subscribed_topic_names"])
    if kw["classic_protocols"] is not None:
        kw["classic_protocols"] = tuple(Protocol(n, tuple(t)) for n, t in kw["classic_protocols"])
    for name in ("assigned_partitions", "partitions_pending_revocation"):
        kw[name] = _tid(kw[name])
    return ConsumerMember(**kw)


def _regex(values: list[Any]) -> ResolvedRegex:
    kw = dict(zip(_REGEX, values, strict=True))
    kw["topics"] = tuple(kw["topics"])
    return ResolvedRegex(**kw)


def _tid_list(partitions: TopicIdPartitions) -> list[Any]:
    return [[t, list(ps)] for t, ps in partitions]


def _tid(rows: list[Any]) -> TopicIdPartitions:
    return tuple((t, tuple(ps)) for t, ps in rows)


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
        consumer=None if doc["consumer"] is None else _consumer(doc["consumer"]),
    )


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """Format 1 had no KIP-848 groups: every group is classic."""
    return {**doc, "v": 2, "consumer": None}


def _v2_to_v3(doc: dict[str, Any]) -> dict[str, Any]:
    """Format 2 did not keep the members HashMap's capacity: take the smallest table that
    holds the members now (exact unless the group was once larger than 12)."""
    capacity = 16
    while len(doc.get("members") or ()) > capacity * 3 // 4:
        capacity *= 2
    return {**doc, "v": 3, "member_capacity": capacity}


# format version -> step that rewrites a document of that version into the next one.
_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2, 2: _v2_to_v3}
