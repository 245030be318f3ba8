"""One golden case on disk, under `tests/data/golden/<case>/`:

- `case.json`: how the log is replayed (coordinator settings by Kafka's property names, the
  watermark delay, the micro-batch sizes), where the log came from, and a summary of what
  it holds (counts by event type, rejection reason, transition cause, ...), kept readable
  so that a regeneration shows in `git diff`;
- `input.jsonl.gz`: the event log, one row per line in delivery order, null columns left out;
- `<table>.jsonl.gz` for each output table: its rows, sorted (`tables.SORT_KEYS`);
- `groups.jsonl.gz`: each group's final state, the fold's versioned JSON (`serde.dumps`)
  parsed, one group per line by group id.

Values are exact: integers as JSON integers, times as epoch milliseconds, binary as hex.
Files are gzip'd with no name and mtime 0, so the same content gives the same bytes.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pipeline.fold import CoordinatorConfig, Event
from pipeline.fold.config import PROPERTY_NAMES
from tests.golden.tables import decode_event, line

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
INPUT, GROUPS, CASE = "input.jsonl.gz", "groups.jsonl.gz", "case.json"


def write_lines(path: Path, rows: Iterable[Any]) -> None:
    text = "".join(line(r) + "\n" for r in rows)
    path.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


def read_lines(path: Path) -> list[Any]:
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    return [json.loads(r) for r in text.splitlines()]


def write_json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def config_properties(cfg: CoordinatorConfig) -> dict[str, int]:
    """The settings by Kafka's property names (every one the fold reads from a file)."""
    named = {field: (key, scale) for key, (field, scale) in PROPERTY_NAMES.items()}
    default = CoordinatorConfig()
    props = {}
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        if f.name not in named:
            if value != getattr(default, f.name):
                raise ValueError(f"{f.name} has no property name: a case must keep its default")
            continue
        key, scale = named[f.name]
        if value % scale:
            raise ValueError(f"{f.name}={value} is not a whole number of {key}")
        props[key] = value // scale
    return props


@dataclass
class StoredCase:
    """A case as read back: the log and how to replay it, and what it produced."""

    name: str
    meta: dict[str, Any]
    events: list[Event]
    tables: dict[str, list[dict[str, Any]]]
    groups: dict[str, Any]

    @property
    def config(self) -> CoordinatorConfig:
        return CoordinatorConfig.from_properties(
            {k: str(v) for k, v in self.meta["config"].items()})

    @property
    def delay_ms(self) -> int:
        return int(self.meta["watermark_delay_ms"])

    @property
    def batches(self) -> list[int]:
        return [int(b) for b in self.meta["batches"]]


def case_names() -> list[str]:
    return sorted(p.parent.name for p in GOLDEN.glob(f"*/{CASE}"))


def read_meta(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((GOLDEN / name / CASE).read_text(encoding="utf-8"))
    return doc


def read_events(name: str) -> list[Event]:
    return [decode_event(r) for r in read_lines(GOLDEN / name / INPUT)]


def read_case(name: str, tables: Iterable[str]) -> StoredCase:
    folder = GOLDEN / name
    return StoredCase(
        name=name,
        meta=read_meta(name),
        events=read_events(name),
        tables={t: read_lines(folder / f"{t}.jsonl.gz") for t in tables},
        groups={r["group_id"]: r["state"] for r in read_lines(folder / GROUPS)},
    )
