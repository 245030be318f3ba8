"""Regenerate the golden tables under `tests/data/golden/`.

    PYTHONPATH=. .venv/bin/python -m tests.golden.regenerate            # outputs from stored inputs
    PYTHONPATH=. .venv/bin/python -m tests.golden.regenerate --inputs   # re-freeze inputs too
    PYTHONPATH=. .venv/bin/python -m tests.golden.regenerate --case kip848-by-hand

By default each case's stored input log is replayed with its stored settings (`case.json`)
and every output table, every group's final state and the summary are written again: what
a commit that changes the engine's output on purpose runs (its message argues the change
with Kafka's source). `--inputs` first makes the logs again from `cases.py` (the generator,
or the hand-written records) and rewrites the settings: only to re-freeze deliberately.
The same inputs give byte-identical files. A summary of each case is printed.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from pipeline.fold import CoordinatorConfig
from pipeline.fold.serde import document
from tests.golden.cases import CASES, Case
from tests.golden.coverage import REQUIRED, summary
from tests.golden.files import (
    CASE,
    GOLDEN,
    GROUPS,
    INPUT,
    config_properties,
    read_events,
    read_meta,
    write_json,
    write_lines,
)
from tests.golden.tables import encode_event, encode_tables, replay


def batch_sizes(total: int, batches: int) -> list[int]:
    """`total` rows cut into `batches` contiguous micro-batches, as equal as they come."""
    return [total // batches + (1 if i < total % batches else 0) for i in range(batches)]


def freeze_input(case: Case) -> None:
    folder = GOLDEN / case.name
    folder.mkdir(parents=True, exist_ok=True)
    events = case.make()
    write_lines(folder / INPUT, (encode_event(e) for e in events))
    write_json(folder / CASE, {
        "name": case.name,
        "about": case.about,
        "source": case.source,
        "config": config_properties(case.config),
        "watermark_delay_ms": case.delay_ms,
        "batches": batch_sizes(len(events), case.batches),
    })


def regenerate(case: Case) -> dict[str, Any]:
    """The outputs of the stored log; the features the case claims come from `cases.py`."""
    name = case.name
    folder = GOLDEN / name
    if not (folder / INPUT).exists() or not (folder / CASE).exists():
        raise SystemExit(f"{name}: no stored log in {folder}; freeze one with --inputs")
    meta = read_meta(name)
    events = read_events(name)
    cfg = CoordinatorConfig.from_properties({k: str(v) for k, v in meta["config"].items()})
    replayed = replay(events, meta["batches"], cfg, meta["watermark_delay_ms"])
    tables = encode_tables(replayed.tables)
    for table, rows in tables.items():
        write_lines(folder / f"{table}.jsonl.gz", rows)
    write_lines(folder / GROUPS, ({"group_id": g, "state": document(replayed.groups[g])}
                                  for g in sorted(replayed.groups)))
    unknown = sorted(set(case.covers) - REQUIRED)
    if unknown:
        raise ValueError(f"{name}: covers unknown features {unknown}; known: {sorted(REQUIRED)}")
    meta = {k: v for k, v in meta.items() if k not in ("covers", "summary")}  # fixed key order
    meta["covers"] = sorted(case.covers)
    meta["summary"] = summary(events, tables)
    write_json(folder / CASE, meta)
    return meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", action="store_true",
                        help="make the input logs again from tests/golden/cases.py first")
    parser.add_argument("--case", action="append", help="only this case (repeatable)")
    args = parser.parse_args(argv)
    known = {c.name: c for c in CASES}
    names = args.case or list(known)
    unknown = sorted(set(names) - set(known))
    if unknown:
        parser.error(f"unknown case {unknown}; cases are {sorted(known)}")
    covered: set[str] = set()
    failed = False
    for name in names:
        start = time.monotonic()
        if args.inputs:
            freeze_input(known[name])
        meta = regenerate(known[name])
        found = set(meta["summary"]["features"])
        covered |= found
        lost = sorted(set(meta["covers"]) - found)
        if lost:
            print(f"!! {name} no longer shows {lost}", file=sys.stderr)
            failed = True
        size = sum(p.stat().st_size for p in (GOLDEN / name).iterdir())
        print(f"== {name}: {time.monotonic() - start:.1f} s, {size / 1024:.0f} KiB")
        for key, value in meta["summary"].items():
            print(f"   {key}: {value}")
    missing = sorted(REQUIRED - covered)
    if not args.case and missing:
        print(f"!! no case covers {missing}", file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
