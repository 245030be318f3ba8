"""pipeline/spark/'s rooms import only downward (pipeline/spark/__init__.py lists them), and no
module of the package reaches back to one that imports it: read from the syntax trees."""

from __future__ import annotations

import ast
from pathlib import Path

SPARK = Path(__file__).resolve().parents[1] / "pipeline" / "spark"
# Lowest first; a room may import its own and those before it. Rooms of equal rank (the
# jobs' own libraries) import none of each other.
RANK = {"runtime": 0, "tables": 1, "events": 2, "fold": 3, "lag": 4, "newest_rows": 4, "share": 5,
        "stream": 6, "backfill": 6, "ingest": 6, "serve": 6}


def _module(path: Path) -> str:
    parts = path.relative_to(SPARK.parents[1]).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Each module of pipeline.spark -> the modules of pipeline.spark it imports, type-only too."""
    found: dict[str, set[str]] = {}
    for path in SPARK.rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pipeline.spark"):
                names |= {f"{node.module}.{a.name}" for a in node.names}
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names if a.name.startswith("pipeline.spark")}
        found[_module(path)] = names
    modules = set(found)
    return {m: {n for n in names if n in modules and n != m} for m, names in found.items()}


def room(module: str) -> str:
    return module.split(".")[2] if module.count(".") >= 2 else ""


def test_every_room_is_ranked_and_imports_only_downward() -> None:
    graph = imports()
    assert {room(m) for m in graph} - {""} == set(RANK)
    upward = [f"{m} -> {n}" for m, names in graph.items() for n in names
              if room(m) and room(n) and room(n) != room(m) and RANK[room(n)] >= RANK[room(m)]]
    assert not upward, "imports across or up the rooms:\n" + "\n".join(sorted(upward))


def test_no_module_imports_itself_back() -> None:
    graph = imports()
    done: set[str] = set()

    def visit(m: str, path: tuple[str, ...]) -> None:
        assert m not in path, "an import cycle: " + " -> ".join((*path, m))
        if m in done:
            return
        for n in sorted(graph[m]):
            visit(n, (*path, m))
        done.add(m)

    for m in sorted(graph):
        visit(m, ())
