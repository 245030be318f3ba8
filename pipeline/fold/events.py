"""The fold's input: one event-log row as an immutable value, read from and written back to a dict.

`Event.from_row` never raises: a row whose nested values cannot be read keeps what it can
and names the defect, so the fold can reject it as MALFORMED instead of the job dying.
Times are integer milliseconds since the epoch; the Spark adapter converts at the edge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

TopicPartition = tuple[str, int]
TopicIdPartitions = tuple[tuple[str, tuple[int, ...]], ...]  # KIP-848: ((topic id, partitions), ...)
# One group's rows column-wise, keyed by `Event`'s field names: times int ms, nested values as
# plain lists and dicts (as a row dict holds them). A missing column is all nulls. The fold
# reads plain commits straight from the columns and builds an `Event` only for other rows.
EventColumns = dict[str, list[Any]]


@dataclass(frozen=True, slots=True)
class Protocol:
    name: str
    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SnapshotMember:
    """A member as a GROUP_METADATA record lists it."""

    member_id: str
    group_instance_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    subscription: tuple[str, ...] = ()
    assignment: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """One topic of a CONSUMER_GROUP_PARTITION_METADATA record (KIP-848)."""

    topic_id: str
    topic_name: str
    num_partitions: int
    partition_racks: tuple[tuple[int, tuple[str, ...]], ...] = ()


# Share groups (KIP-932): (topic id, topic name, partitions) of a state-partition record's
# initializing or initialized topics, and (topic id, topic name) of its deleting ones.
ShareTopics = tuple[tuple[str, str, tuple[int, ...]], ...]
TopicNames = tuple[tuple[str, str], ...]
KeyValues = tuple[tuple[str, str], ...]  # client tags, assignment configs, topic configs


@dataclass(frozen=True, slots=True)
class Task:
    """Streams groups (KIP-1071): one subtopology's task partitions; a current assignment's
    entries carry the epoch each was assigned in (Kafka 4.2+), else None."""

    subtopology_id: str
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None = None


Tasks = tuple[Task, ...]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """An internal topic of a streams topology (changelog or repartition source)."""

    name: str
    partitions: int
    replication_factor: int
    topic_configs: KeyValues = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    """One subtopology of a STREAMS_GROUP_TOPOLOGY record, field for field."""

    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    # (source topics, source topic regex, repartition source topics), as indexes
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = ()


_T = TypeVar("_T")


def evolved(obj: _T, names: frozenset[str], changes: Mapping[str, Any]) -> _T:
    """A copy of the dataclass instance `obj` (one with a `__dict__`, no `__post_init__`)
    with `changes`, as `dataclasses.replace` but one dict copy instead of a frozen `__init__`
    setting every field again (docs/performance.md, the small figures). `names` are its
    fields; a change naming another is refused as `replace` refuses it."""
    if not names.issuperset(changes):
        raise TypeError(f"{type(obj).__name__} has no field {sorted(set(changes) - names)}")
    new = object.__new__(type(obj))
    values = new.__dict__
    values.update(obj.__dict__)
    values.update(changes)
    return new


@dataclass(frozen=True)
class Event:
    log_partition: int | None
    log_offset: int | None
    event_time: int | None
    group_id: str | None
    event_type: str | None
    member_id: str | None = None
    group_instance_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    protocol_type: str | None = None
    protocols: tuple[Protocol, ...] | None = None
    generation_id: int | None = None
    protocol: str | None = None
    leader_id: str | None = None
    assignments: tuple[tuple[str, tuple[TopicPartition, ...]], ...] | None = None
    members: tuple[SnapshotMember, ...] | None = None
    topic: str | None = None
    partition: int | None = None
    committed_offset: int | None = None
    leader_epoch: int | None = None
    commit_metadata: str | None = None
    commit_timestamp: int | None = None
    expire_timestamp: int | None = None
    producer_id: int | None = None
    txn_result: str | None = None
    raw_key: bytes | None = None
    raw_value: bytes | None = None
    decode_error: str | None = None
    request_member_id: str | None = None
    api_version: int | None = None
    current_state_timestamp: int | None = None
    topic_id: str | None = None
    group_epoch: int | None = None
    metadata_hash: int | None = None
    topics_metadata: tuple[TopicMetadata, ...] | None = None
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    classic_protocols: tuple[tuple[str, bytes], ...] | None = None
    assignment_epoch: int | None = None
    assigned_partitions: TopicIdPartitions | None = None
    member_epoch: int | None = None
    previous_member_epoch: int | None = None
    member_state: int | None = None
    member_state_name: str | None = None
    partitions_pending_revocation: TopicIdPartitions | None = None
    regular_expression: str | None = None
    regex_topics: tuple[str, ...] | None = None
    regex_version: int | None = None
    regex_timestamp_ms: int | None = None
    # Share-group (types 10-15) and streams-group (17, 19-23) columns.
    record_layout: str | None = None
    initializing_topics: ShareTopics | None = None
    initialized_topics: ShareTopics | None = None
    deleting_topics: TopicNames | None = None
    validated_topology_epoch: int | None = None
    assignment_configs: KeyValues | None = None
    stored_description_topology_epoch: int | None = None
    failed_description_topology_epoch: int | None = None
    assignment_timestamp_ms: int | None = None
    topology_epoch: int | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None  # (host, port)
    client_tags: KeyValues | None = None
    active_tasks: Tasks | None = None
    active_tasks_pending_revocation: Tasks | None = None
    standby_tasks: Tasks | None = None
    standby_tasks_pending_revocation: Tasks | None = None
    warmup_tasks: Tasks | None = None
    warmup_tasks_pending_revocation: Tasks | None = None
    subtopologies: tuple[Subtopology, ...] | None = None
    defect: str | None = None  # why the row could not be read whole; not a column

    def evolve(self, **changes: Any) -> Event:
        """A copy with `changes` (`evolved`): the generator moves every event it makes."""
        return evolved(self, _FIELDS, changes)

    @property
    def position(self) -> tuple[int, int] | None:
        if self.log_partition is None or self.log_offset is None:
            return None
        return (self.log_partition, self.log_offset)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Event:
        # Every field starts null and only the row's non-null values are read: a row holds
        # a handful of the 52 columns, and this runs for every row that is not a plain commit.
        values = _BLANK.copy()
        for name, value in row.items():
            if value is not None and name in _SCALAR_SET:
                values[name] = value
        defect = None
        for name, reader in _NESTED.items():
            value = row.get(name)
            if value is not None:
                try:
                    values[name] = reader(value)
                except (TypeError, ValueError, KeyError, AttributeError) as exc:
                    defect = defect or f"{name} cannot be read ({exc.__class__.__name__})"
        values["defect"] = defect
        event = object.__new__(cls)  # every field is in `values`: one dict, no 52 setattrs
        event.__dict__.update(values)
        return event

    def to_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {name: getattr(self, name) for name in _SCALARS}
        row["protocols"] = (
            None if self.protocols is None
            else [{"name": p.name, "topics": list(p.topics)} for p in self.protocols]
        )
        row["assignments"] = (
            None if self.assignments is None
            else [{"member_id": m, "partitions": tp_rows(tps)} for m, tps in self.assignments]
        )
        row["members"] = None if self.members is None else [_member_row(m) for m in self.members]
        row["topics_metadata"] = None if self.topics_metadata is None else [
            {"topic_id": t.topic_id, "topic_name": t.topic_name,
             "num_partitions": t.num_partitions,
             "partition_metadata": [{"partition": p, "racks": list(r)}
                                    for p, r in t.partition_racks]}
            for t in self.topics_metadata]
        for name in ("subscribed_topic_names", "regex_topics"):
            names = getattr(self, name)
            row[name] = None if names is None else list(names)
        row["classic_protocols"] = None if self.classic_protocols is None else [
            {"name": n, "metadata": m} for n, m in self.classic_protocols]
        for name in ("assigned_partitions", "partitions_pending_revocation"):
            row[name] = topic_id_rows(getattr(self, name))
        for name in ("initializing_topics", "initialized_topics"):
            row[name] = share_topic_rows(getattr(self, name))
        row["deleting_topics"] = topic_name_rows(self.deleting_topics)
        for name in ("assignment_configs", "client_tags"):
            row[name] = key_value_rows(getattr(self, name))
        row["user_endpoint"] = endpoint_row(self.user_endpoint)
        for name in TASK_COLUMNS:
            row[name] = task_rows(getattr(self, name))
        row["subtopologies"] = None if self.subtopologies is None else [
            subtopology_row(s) for s in self.subtopologies]
        return row


def events_of(columns: EventColumns) -> list[Event]:
    """`EventColumns` as `Event`s (absent columns read as null)."""
    names = list(columns)
    return [Event.from_row(dict(zip(names, row, strict=True)))
            for row in zip(*columns.values(), strict=True)]


def topic_id_rows(value: TopicIdPartitions | None) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    return [{"topic_id": t, "partitions": list(ps)} for t, ps in value]


def share_topic_rows(value: ShareTopics | None) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    return [{"topic_id": t, "topic_name": n, "partitions": list(ps)} for t, n, ps in value]


def topic_name_rows(value: TopicNames | None) -> list[dict[str, Any]] | None:
    return None if value is None else [{"topic_id": t, "topic_name": n} for t, n in value]


def endpoint_row(value: tuple[str, int] | None) -> dict[str, Any] | None:
    return None if value is None else {"host": value[0], "port": value[1]}


def key_value_rows(value: KeyValues | None) -> list[dict[str, Any]] | None:
    return None if value is None else [{"key": k, "value": v} for k, v in value]


def task_rows(value: Tasks | None) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    return [{"subtopology_id": t.subtopology_id, "partitions": list(t.partitions),
             "assignment_epochs": None if t.assignment_epochs is None
             else list(t.assignment_epochs)} for t in value]


def _topic_info_row(t: TopicInfo) -> dict[str, Any]:
    return {"name": t.name, "partitions": t.partitions,
            "replication_factor": t.replication_factor,
            "topic_configs": key_value_rows(t.topic_configs)}


def subtopology_row(s: Subtopology) -> dict[str, Any]:
    return {
        "subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
        "source_topic_regex": list(s.source_topic_regex),
        "state_changelog_topics": [_topic_info_row(t) for t in s.state_changelog_topics],
        "repartition_sink_topics": list(s.repartition_sink_topics),
        "repartition_source_topics": [_topic_info_row(t) for t in s.repartition_source_topics],
        "copartition_groups": [
            {"source_topics": list(a), "source_topic_regex": list(b),
             "repartition_source_topics": list(c)} for a, b, c in s.copartition_groups],
    }


def tp_rows(tps: tuple[TopicPartition, ...]) -> list[dict[str, Any]]:
    return [{"topic": t, "partition": p} for t, p in tps]


def member_identity(m: Any) -> dict[str, Any]:
    """The columns every member struct starts with (snapshot, classic and KIP-848 members
    all carry these attributes)."""
    return {
        "member_id": m.member_id,
        "group_instance_id": m.group_instance_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "session_timeout_ms": m.session_timeout_ms,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
    }


def _member_row(m: SnapshotMember) -> dict[str, Any]:
    return {**member_identity(m), "subscription": list(m.subscription),
            "assignment": tp_rows(m.assignment)}


def _read_tps(value: Any) -> tuple[TopicPartition, ...]:
    if value is None:
        return ()
    return tuple((_str(tp.get("topic")), _int(tp.get("partition"))) for tp in value)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _int(value: Any) -> int:
    if value is None or isinstance(value, bool):
        raise TypeError("expected an integer")
    return int(value)


def _opt_int(value: Any) -> int | None:
    return None if value is None else _int(value)


def _read_protocols(value: Any) -> tuple[Protocol, ...] | None:
    if value is None:
        return None
    return tuple(
        Protocol(_str(p.get("name")), tuple(_str(t) for t in (p.get("topics") or ()))) for p in value
    )


def _read_assignments(value: Any) -> tuple[tuple[str, tuple[TopicPartition, ...]], ...] | None:
    if value is None:
        return None
    return tuple((_str(a.get("member_id")), _read_tps(a.get("partitions"))) for a in value)


def _read_members(value: Any) -> tuple[SnapshotMember, ...] | None:
    if value is None:
        return None
    return tuple(
        SnapshotMember(
            member_id=_str(m.get("member_id")),
            group_instance_id=m.get("group_instance_id"),
            client_id=m.get("client_id"),
            client_host=m.get("client_host"),
            session_timeout_ms=_opt_int(m.get("session_timeout_ms")),
            rebalance_timeout_ms=_opt_int(m.get("rebalance_timeout_ms")),
            subscription=tuple(_str(t) for t in (m.get("subscription") or ())),
            assignment=_read_tps(m.get("assignment")),
        )
        for m in value
    )


def _read_strings(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(_str(v) for v in value)


def _read_topics_metadata(value: Any) -> tuple[TopicMetadata, ...] | None:
    if value is None:
        return None
    return tuple(
        TopicMetadata(
            _str(t.get("topic_id")), _str(t.get("topic_name")), _int(t.get("num_partitions")),
            tuple((_int(p.get("partition")), _read_strings(p.get("racks")) or ())
                  for p in (t.get("partition_metadata") or ())),
        )
        for t in value
    )


def _read_classic_protocols(value: Any) -> tuple[tuple[str, bytes], ...] | None:
    if value is None:
        return None
    return tuple((_str(p.get("name")), _bytes(p.get("metadata"))) for p in value)


def _bytes(value: Any) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError(f"expected bytes, got {type(value).__name__}")
    return bytes(value)


def _read_topic_ids(value: Any) -> TopicIdPartitions | None:
    if value is None:
        return None
    return tuple((_str(t.get("topic_id")), tuple(_int(p) for p in (t.get("partitions") or ())))
                 for t in value)


def _read_share_topics(value: Any) -> ShareTopics | None:
    if value is None:
        return None
    return tuple((_str(t.get("topic_id")), _str(t.get("topic_name")),
                  tuple(_int(p) for p in (t.get("partitions") or ()))) for t in value)


def _read_topic_names(value: Any) -> TopicNames | None:
    if value is None:
        return None
    return tuple((_str(t.get("topic_id")), _str(t.get("topic_name"))) for t in value)


def _read_key_values(value: Any) -> KeyValues | None:
    if value is None:
        return None
    return tuple((_str(kv.get("key")), _str(kv.get("value"))) for kv in value)


def _read_endpoint(value: Any) -> tuple[str, int] | None:
    return None if value is None else (_str(value.get("host")), _int(value.get("port")))


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(_int(v) for v in (value or ()))


def _read_tasks(value: Any) -> Tasks | None:
    if value is None:
        return None
    return tuple(Task(_str(t.get("subtopology_id")), _ints(t.get("partitions")),
                      None if t.get("assignment_epochs") is None
                      else _ints(t.get("assignment_epochs")))
                 for t in value)


def _read_topic_infos(value: Any) -> tuple[TopicInfo, ...]:
    return tuple(TopicInfo(_str(t.get("name")), _int(t.get("partitions")),
                           _int(t.get("replication_factor")),
                           _read_key_values(t.get("topic_configs")) or ())
                 for t in (value or ()))


def _read_subtopologies(value: Any) -> tuple[Subtopology, ...] | None:
    if value is None:
        return None
    return tuple(
        Subtopology(
            _str(s.get("subtopology_id")),
            _read_strings(s.get("source_topics")) or (),
            _read_strings(s.get("source_topic_regex")) or (),
            _read_topic_infos(s.get("state_changelog_topics")),
            _read_strings(s.get("repartition_sink_topics")) or (),
            _read_topic_infos(s.get("repartition_source_topics")),
            tuple((_ints(c.get("source_topics")), _ints(c.get("source_topic_regex")),
                   _ints(c.get("repartition_source_topics")))
                  for c in (s.get("copartition_groups") or ())),
        )
        for s in value)


TASK_COLUMNS = tuple(f"{kind}_tasks{suffix}" for kind in ("active", "standby", "warmup")
                     for suffix in ("", "_pending_revocation"))

_NESTED = {
    "protocols": _read_protocols,
    "assignments": _read_assignments,
    "members": _read_members,
    "topics_metadata": _read_topics_metadata,
    "subscribed_topic_names": _read_strings,
    "classic_protocols": _read_classic_protocols,
    "assigned_partitions": _read_topic_ids,
    "partitions_pending_revocation": _read_topic_ids,
    "regex_topics": _read_strings,
    "initializing_topics": _read_share_topics,
    "initialized_topics": _read_share_topics,
    "deleting_topics": _read_topic_names,
    "assignment_configs": _read_key_values,
    "client_tags": _read_key_values,
    "user_endpoint": _read_endpoint,
    **dict.fromkeys(TASK_COLUMNS, _read_tasks),
    "subtopologies": _read_subtopologies,
}
# The columns `Event.from_row` reads into values: only one of these can make a row's defect.
NESTED_COLUMNS = tuple(_NESTED)
_SCALARS = tuple(
    f.name for f in fields(Event) if f.name not in _NESTED and f.name != "defect"
)
EVENT_COLUMNS = (*_SCALARS, *_NESTED)  # the column names `EventColumns` may hold
_SCALAR_SET = frozenset(_SCALARS)
_BLANK: dict[str, Any] = dict.fromkeys(f.name for f in fields(Event))
_FIELDS = frozenset(_BLANK)
