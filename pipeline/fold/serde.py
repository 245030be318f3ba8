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
members fit. Format 4 added `share` and `streams`, the KIP-932 and KIP-1071 parts of a group
(null for other types); a format-3 state upgrades to null for both. Format 5 added
`removed_as`, the type a removed group was removed as (what its rows show); a format-4 state
upgrades to null (a removed group then shows as classic, as format 4's rows did).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, Generic, TypeVar

from pipeline.fold.events import (
    Protocol,
    Subtopology,
    Task,
    Tasks,
    TopicIdPartitions,
    TopicInfo,
    TopicMetadata,
)
from pipeline.fold.model import (
    ConsumerGroup,
    ConsumerMember,
    Group,
    Member,
    Offset,
    PendingMember,
    Rebalance,
    ResolvedRegex,
    ShareGroup,
    ShareMember,
    ShareStatePartitions,
    StreamsGroup,
    StreamsMember,
    StreamsTasks,
    StreamsTopology,
)

T = TypeVar("T")  # a dataclass
Convert = Callable[[Any], Any]
FORMAT_VERSION = 5
_LEVEL = 6  # zlib's default: level 9 saves <1 % more on a group's state

_OFFSET = [f.name for f in fields(Offset)]
_PENDING = [f.name for f in fields(PendingMember)]
_REBALANCE = [f.name for f in fields(Rebalance)]
_REGEX = [f.name for f in fields(ResolvedRegex)]
_GROUP_SCALARS = [
    f.name for f in fields(Group)
    if f.name not in ("members", "pending_members", "pending_sync", "rebalance",
                      "stable_owners", "stable_members", "offsets", "pending_txns",
                      "position", "recent", "consumer", "share", "streams")
]


class _Fields(Generic[T]):
    """A dataclass as the list of its fields' values in their order, and back; the fields in
    `convert` through their (to the list, from the list) pair, the rest as they are."""

    def __init__(self, cls: type[T], convert: Mapping[str, tuple[Convert, Convert]]) -> None:
        self.cls = cls
        self.names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        self.convert = [(self.names.index(n), n, out, back) for n, (out, back) in convert.items()]

    def to_list(self, value: T) -> list[Any]:
        values = [getattr(value, n) for n in self.names]
        for i, _, out, _ in self.convert:
            values[i] = out(values[i])
        return values

    def from_list(self, values: list[Any]) -> T:
        kw = dict(zip(self.names, values, strict=True))
        for _, name, _, back in self.convert:
            kw[name] = back(kw[name])
        return self.cls(**kw)


def _optional(convert: Convert) -> Convert:
    return lambda v: None if v is None else convert(v)


class StateFormatError(ValueError):
    """The bytes are not a group state this version can read."""


def dumps(g: Group) -> bytes:
    return zlib.compress(_json(document(g)), _LEVEL)


def document(g: Group) -> dict[str, Any]:
    """The state as its JSON document (what `dumps` deflates)."""
    doc: dict[str, Any] = {"v": FORMAT_VERSION}
    doc.update({name: getattr(g, name) for name in _GROUP_SCALARS})
    doc["members"] = [_MEMBER.to_list(m) for m in g.members]
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
    doc["share"] = None if g.share is None else _share_doc(g.share)
    doc["streams"] = None if g.streams is None else _streams_doc(g.streams)
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


def _modern_doc(part: ConsumerGroup | ShareGroup | StreamsGroup, members: _Fields[Any],
                target: Convert) -> dict[str, Any]:
    """What the three modern parts hold alike: epochs, metadata hash, members, targets."""
    return {
        "group_epoch": part.group_epoch,
        "assignment_epoch": part.assignment_epoch,
        "metadata_hash": part.metadata_hash,
        "members": [members.to_list(m) for m in part.members],
        "targets": [[m, target(t)] for m, t in part.targets],
    }


def _modern_fields(doc: dict[str, Any], members: _Fields[Any], target: Convert
                   ) -> dict[str, Any]:
    """`_modern_doc` read back, as the part's constructor takes it."""
    return {
        "group_epoch": doc["group_epoch"],
        "assignment_epoch": doc["assignment_epoch"],
        "metadata_hash": doc["metadata_hash"],
        "members": tuple(members.from_list(m) for m in doc["members"]),
        "targets": tuple((m, target(t)) for m, t in doc["targets"]),
    }


def _consumer_doc(c: ConsumerGroup) -> dict[str, Any]:
    return {
        **_modern_doc(c, _CONSUMER_MEMBER, _tid_list),
        "subscription_metadata": [
            [t.topic_id, t.topic_name, t.num_partitions, [[p, list(r)] for p, r in t.partition_racks]]
            for t in c.subscription_metadata],
        "regexes": [[getattr(r, n) for n in _REGEX] for r in c.regexes],
    }


def _consumer(doc: dict[str, Any]) -> ConsumerGroup:
    return ConsumerGroup(
        **_modern_fields(doc, _CONSUMER_MEMBER, _tid),
        subscription_metadata=tuple(
            TopicMetadata(i, n, k, tuple((p, tuple(r)) for p, r in racks))
            for i, n, k, racks in doc["subscription_metadata"]),
        regexes=tuple(_regex(r) for r in doc["regexes"]),
    )


def _share_doc(s: ShareGroup) -> dict[str, Any]:
    sp = s.state_partitions
    return {
        **_modern_doc(s, _SHARE_MEMBER, _tid_list),
        "state_partitions": None if sp is None else [
            [[t, n, list(ps)] for t, n, ps in sp.initializing],
            [[t, n, list(ps)] for t, n, ps in sp.initialized],
            [[t, n] for t, n in sp.deleting]],
    }


def _share(doc: dict[str, Any]) -> ShareGroup:
    sp = doc["state_partitions"]
    return ShareGroup(
        **_modern_fields(doc, _SHARE_MEMBER, _tid),
        state_partitions=None if sp is None else ShareStatePartitions(
            tuple((t, n, tuple(ps)) for t, n, ps in sp[0]),
            tuple((t, n, tuple(ps)) for t, n, ps in sp[1]),
            tuple((t, n) for t, n in sp[2])),
    )


def _streams_doc(s: StreamsGroup) -> dict[str, Any]:
    return {
        **_modern_doc(s, _STREAMS_MEMBER, _stasks_list),
        "validated_topology_epoch": s.validated_topology_epoch,
        "assignment_configs": [list(kv) for kv in s.assignment_configs],
        "topology": None if s.topology is None else [
            s.topology.epoch, [_subtopology_list(x) for x in s.topology.subtopologies]],
    }


def _streams(doc: dict[str, Any]) -> StreamsGroup:
    topology = doc["topology"]
    return StreamsGroup(
        **_modern_fields(doc, _STREAMS_MEMBER, _stasks),
        validated_topology_epoch=doc["validated_topology_epoch"],
        assignment_configs=tuple((k, v) for k, v in doc["assignment_configs"]),
        topology=None if topology is None else StreamsTopology(
            topology[0], tuple(_subtopology(x) for x in topology[1])),
    )


def _tasks_list(tasks: Tasks) -> list[Any]:
    return [[t.subtopology_id, list(t.partitions),
             None if t.assignment_epochs is None else list(t.assignment_epochs)] for t in tasks]


def _tasks(rows: list[Any]) -> Tasks:
    return tuple(Task(i, tuple(ps), None if es is None else tuple(es)) for i, ps, es in rows)


def _stasks_list(t: StreamsTasks) -> list[Any]:
    return [_tasks_list(t.active), _tasks_list(t.standby), _tasks_list(t.warmup)]


def _stasks(rows: list[Any]) -> StreamsTasks:
    return StreamsTasks(*(_tasks(r) for r in rows))


def _topic_info_list(t: TopicInfo) -> list[Any]:
    return [t.name, t.partitions, t.replication_factor, [list(kv) for kv in t.topic_configs]]


def _topic_info(v: list[Any]) -> TopicInfo:
    return TopicInfo(v[0], v[1], v[2], tuple((k, x) for k, x in v[3]))


def _subtopology_list(s: Subtopology) -> list[Any]:
    return [s.subtopology_id, list(s.source_topics), list(s.source_topic_regex),
            [_topic_info_list(t) for t in s.state_changelog_topics],
            list(s.repartition_sink_topics),
            [_topic_info_list(t) for t in s.repartition_source_topics],
            [[list(a), list(b), list(c)] for a, b, c in s.copartition_groups]]


def _subtopology(v: list[Any]) -> Subtopology:
    return Subtopology(v[0], tuple(v[1]), tuple(v[2]), tuple(_topic_info(t) for t in v[3]),
                       tuple(v[4]), tuple(_topic_info(t) for t in v[5]),
                       tuple((tuple(a), tuple(b), tuple(c)) for a, b, c in v[6]))


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


_PROTOCOLS: tuple[Convert, Convert] = (
    lambda ps: [[p.name, list(p.topics)] for p in ps],
    lambda v: tuple(Protocol(n, tuple(t)) for n, t in v))
_NAMES: tuple[Convert, Convert] = (list, tuple)
_TOPIC_IDS: tuple[Convert, Convert] = (lambda ps: _tid_list(ps), lambda v: _tid(v))
_STREAMS_TASKS: tuple[Convert, Convert] = (lambda t: _stasks_list(t), lambda v: _stasks(v))
_MEMBER = _Fields(Member, {
    "protocols": _PROTOCOLS,
    "assignment": (lambda a: [list(tp) for tp in a], lambda v: tuple((t, p) for t, p in v))})
_CONSUMER_MEMBER = _Fields(ConsumerMember, {
    "subscribed_topic_names": _NAMES,
    "classic_protocols": (_optional(_PROTOCOLS[0]), _optional(_PROTOCOLS[1])),
    "assigned_partitions": _TOPIC_IDS, "partitions_pending_revocation": _TOPIC_IDS})
_SHARE_MEMBER = _Fields(ShareMember, {
    "subscribed_topic_names": _NAMES, "assigned_partitions": _TOPIC_IDS})
_STREAMS_MEMBER = _Fields(StreamsMember, {
    "user_endpoint": (_optional(list), _optional(tuple)),
    "client_tags": (lambda kvs: [list(kv) for kv in kvs], lambda v: tuple((k, x) for k, x in v)),
    "assigned": _STREAMS_TASKS, "pending_revocation": _STREAMS_TASKS})


def _group(doc: dict[str, Any]) -> Group:
    kw = {name: doc[name] for name in _GROUP_SCALARS}
    return Group(
        **kw,
        members=tuple(_MEMBER.from_list(m) for m in doc["members"]),
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
        share=None if doc["share"] is None else _share(doc["share"]),
        streams=None if doc["streams"] is None else _streams(doc["streams"]),
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


def _v3_to_v4(doc: dict[str, Any]) -> dict[str, Any]:
    """Format 3 had no share or streams groups."""
    return {**doc, "v": 4, "share": None, "streams": None}


def _v4_to_v5(doc: dict[str, Any]) -> dict[str, Any]:
    """Format 4 did not keep the type a removed group was removed as."""
    return {**doc, "v": 5, "removed_as": None}


# format version -> step that rewrites a document of that version into the next one.
_UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5}
