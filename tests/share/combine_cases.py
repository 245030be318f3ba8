"""Kafka's own `PersisterStateBatchCombiner` on random cases, as a fixture: `combine_cases.json`
holds {start, old, new, kafka} for each of the seeded cases `cases()` makes, `kafka` being
what tests/share/java/Combine.java printed for it against kafka-share-coordinator 4.2.1.
`python -m tests.share.combine_cases` compiles and runs it and rewrites the JSON;
tests/share/test_combine_kafka.py (marked kafka) checks the JSON is still its output."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "combine_cases.json"
KAFKA = "4.2.1"
Batch = list[int]  # first, last, state, count


def _batches(rng: random.Random, base: int) -> list[Batch]:
    out = []
    for _ in range(rng.choice((0, 1, 2, 3, 5, 8))):
        first = base + rng.randrange(40)
        out.append([first, first + rng.choice((0, 0, 1, 3, 9, 20)), rng.choice((0, 2, 4)),
                    rng.choice((1, 1, 2, 3, 5))])
    return out


def cases(n: int = 600, seed: int = 5) -> list[dict[str, Any]]:
    """Old and new batches that overlap, touch and repeat, with start offsets before, inside
    and after them, or -1."""
    rng = random.Random(seed)
    made = []
    for _ in range(n):
        base = rng.randrange(1_000)
        made.append({"start": rng.choice((-1, base, base + rng.randrange(50), base + 60)),
                     "old": _batches(rng, base), "new": _batches(rng, base)})
    return made


def _text(batches: list[Batch]) -> str:
    return ";".join(",".join(map(str, b)) for b in batches) or "-"


def _parsed(text: str) -> list[Batch]:
    return [] if text == "-" else [[int(v) for v in b.split(",")] for b in text.split(";")]


def run_java(made: list[dict[str, Any]]) -> list[list[Batch]]:
    """Kafka's combination of each case."""
    from tests.java_programs import kafka_classpath, program_output

    lines = "".join(f"{c['start']} {_text(c['old'])} {_text(c['new'])}\n" for c in made)
    printed = program_output(kafka_classpath("kafka-share-coordinator", KAFKA),
                             [HERE / "java" / "Combine.java"], "Combine", stdin=lines)
    return [_parsed(line) for line in printed.splitlines()]


def load() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(FIXTURE.read_text())
    return data


def main() -> int:
    made = cases()
    for case, kafka in zip(made, run_java(made), strict=True):
        case["kafka"] = kafka
    FIXTURE.write_text(json.dumps(made) + "\n")
    print(f"wrote {len(made)} cases to {FIXTURE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
