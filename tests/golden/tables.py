"""The engine's tables without Spark: a log replayed micro-batch by micro-batch through the
pure fold, as the streaming job drives it, and its rows as exact, typed JSON values.

`replay` is `stateful_fold` and the sinks in one process: per batch each group with rows goes
through `replay_group`, as in the stream, from its stored state (rows behind the watermark
counted late) with its timers up to the watermark; a silent group whose deadline the
watermark passed is advanced (Spark's event-time timeout); history tables are appended,
`group_state` and `committed_offsets` are merged on their keys (an offset row marked
`_deleted` deletes). At the end every group's timers run up to the final watermark, the
latest event time minus the delay, where a stream over the log ends (and where
`tests/spark/backends.py` `pure_tables` stops: one batch here is exactly that function's
tables). `encode`/`decode` turn a row into JSON and back, driven by the column types in
`schemas/`: times as epoch milliseconds, binary as hex.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pipeline.fold import CoordinatorConfig, Event, Group, next_deadline
from pipeline.fold.context import Row
from pipeline.fold.group_replay import DELETES_KEY, FAILED, Replay, replay_group
from schemas import EVENT_COLUMNS, OUTPUT_TABLES, TABLE_KEYS, Column
from tests.grouping import by_group

Current = dict[str, dict[tuple[Any, ...], Row]]  # table -> key -> row, as the sinks merge


@dataclass
class Replayed:
    tables: dict[str, list[Row]] = field(default_factory=lambda: {t: [] for t in OUTPUT_TABLES})
    groups: dict[str, Group] = field(default_factory=dict)


def replay(events: Sequence[Event], batches: Sequence[int], cfg: CoordinatorConfig,
           delay_ms: int) -> Replayed:
    """`batches`: how many rows of `events`, in their stored order, each micro-batch reads."""
    if sum(batches) != len(events):
        raise ValueError(f"batches cover {sum(batches)} rows, the log has {len(events)}")
    out = Replayed()
    current: Current = {t: {} for t in TABLE_KEYS}
    watermark, latest, start = 0, None, 0
    for size in batches:
        chunk = events[start:start + size]
        start += size
        _batch(out, current, chunk, watermark, cfg)
        times = [e.event_time for e in chunk if e.event_time is not None]
        latest = max(times + ([] if latest is None else [latest]), default=None)
        if latest is not None:
            watermark = max(watermark, latest - delay_ms)
    for group_id in sorted(out.groups):
        _keep(out, current, replay_group(group_id, out.groups[group_id], [], watermark, cfg))
    for table, rows in current.items():
        out.tables[table] = [r for r in rows.values() if not r.get(DELETES_KEY)]
    return out


def _batch(out: Replayed, current: Current, chunk: Sequence[Event], watermark: int,
           cfg: CoordinatorConfig) -> None:
    groups = by_group(chunk, unkeyed=True)
    until = watermark if watermark > 0 else None
    for group_id, rows in groups.items():
        stored = None if group_id is None else out.groups.get(group_id)
        _keep(out, current, replay_group(group_id, stored, rows, until, cfg, until))
    for group_id, g in sorted(out.groups.items()):
        deadline = next_deadline(g, cfg)
        if group_id not in groups and deadline is not None and deadline < watermark:
            _keep(out, current, replay_group(group_id, g, [], watermark, cfg))


def _keep(out: Replayed, current: Current, replayed: Replay) -> None:
    """A replay_group call's rows into the tables, as the sinks write them."""
    g, tables, _ = replayed
    if FAILED in tables:
        raise AssertionError(f"the fold raised: {tables[FAILED][0]['reason']}")
    if g is not None:
        out.groups[g.group_id] = g
    for table, rows in tables.items():
        if table not in TABLE_KEYS:
            out.tables[table] += rows
            continue
        for row in rows:
            current[table][tuple(row[k] for k in TABLE_KEYS[table])] = row


# ----------------------------------------------------------------------- typed JSON values

def parse_type(ddl: str) -> Any:
    """A Spark DDL type as nested tuples: ("array", t), ("struct", ((name, t), ...)) or a name."""
    ddl = ddl.strip()
    if ddl.startswith("array<"):
        return ("array", parse_type(ddl[6:-1]))
    if ddl.startswith("struct<"):
        fields = []
        for part in _top_level_split(ddl[7:-1]):
            name, _, inner = part.partition(":")
            fields.append((name.strip(), parse_type(inner)))
        return ("struct", tuple(fields))
    return ddl


def _top_level_split(body: str) -> list[str]:
    parts, depth, begin = [], 0, 0
    for i, ch in enumerate(body):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(body[begin:i])
            begin = i + 1
    parts.append(body[begin:])
    return parts


_INTS = {"smallint": 2**15, "int": 2**31, "bigint": 2**63}


def encode_value(value: Any, kind: Any, where: str) -> Any:
    """A fold value as the exact JSON value of its column: what Spark would store."""
    if value is None:
        return None
    if isinstance(kind, tuple):
        if kind[0] == "array":
            return [encode_value(v, kind[1], where) for v in value]
        return {name: encode_value(value.get(name), t, f"{where}.{name}") for name, t in kind[1]}
    if kind in _INTS or kind == "timestamp":  # timestamps: epoch milliseconds, as in the fold
        bound = _INTS.get(kind, 2**63)
        if isinstance(value, bool) or not isinstance(value, int) or not -bound <= value < bound:
            raise TypeError(f"{where}: {kind} column holds {value!r}")
        return value
    if kind == "binary":
        return bytes(value).hex()
    if kind == "boolean":
        if not isinstance(value, bool):
            raise TypeError(f"{where}: boolean column holds {value!r}")
        return value
    if not isinstance(value, str):
        raise TypeError(f"{where}: {kind} column holds {value!r}")
    return value


def decode_value(value: Any, kind: Any) -> Any:
    if value is None:
        return None
    if isinstance(kind, tuple):
        if kind[0] == "array":
            return [decode_value(v, kind[1]) for v in value]
        return {name: decode_value(value.get(name), t) for name, t in kind[1]}
    return bytes.fromhex(value) if kind == "binary" else value


def _types(columns: Iterable[Column]) -> dict[str, Any]:
    return {c.name: parse_type(c.type) for c in columns}


EVENT_TYPES = _types(EVENT_COLUMNS)
TABLE_TYPES = {table: _types(columns) for table, columns in OUTPUT_TABLES.items()}


def encode_row(row: Row, types: dict[str, Any], where: str) -> dict[str, Any]:
    """The row's columns in schema order, null columns left out (a missing key is null)."""
    encoded = {name: encode_value(row.get(name), kind, f"{where}.{name}")
               for name, kind in types.items()}
    return {k: v for k, v in encoded.items() if v is not None}


def encode_event(e: Event) -> dict[str, Any]:
    return encode_row(e.to_row(), EVENT_TYPES, "event")


def decode_event(row: dict[str, Any]) -> Event:
    return Event.from_row({name: decode_value(row.get(name), kind)
                           for name, kind in EVENT_TYPES.items()})


def encode_tables(tables: dict[str, list[Row]]) -> dict[str, list[dict[str, Any]]]:
    return {t: sort_rows(t, [encode_row(r, TABLE_TYPES[t], t) for r in rows])
            for t, rows in tables.items()}


# The order rows are stored and compared in; ties are broken by the whole row.
SORT_KEYS = {
    "group_state": ("group_id",),
    "committed_offsets": ("group_id", "topic", "partition"),
    "offset_history": ("group_id", "event_time", "log_partition", "log_offset", "topic",
                       "partition", "change"),
    "group_transitions": ("group_id", "event_time", "log_partition", "log_offset", "seq"),
    "rebalances": ("group_id", "completed_at", "generation_id", "log_partition", "log_offset"),
    "rebalance_cost": ("group_id", "completed_at", "generation_id", "log_partition",
                       "log_offset"),
    "rejected_events": ("group_id", "log_partition", "log_offset", "event_time", "reason"),
    "error_responses": ("group_id", "log_partition", "log_offset", "event_time", "response"),
    "group_history": ("group_id", "event_time", "log_partition", "log_offset", "seq"),
}


def sort_key(table: str, row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple((0, 0) if row.get(k) is None else (1, row[k]) for k in SORT_KEYS[table])


def sort_rows(table: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (sort_key(table, r), line(r)))


def line(value: Any) -> str:
    """One JSON Lines line: compact, keys in the order given (schema order), never ASCII-escaped."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
