"""What the modules of a package import, read from their syntax trees (nothing is run)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path


def imports(path: Path) -> set[str]:
    """The modules `path` imports, by full name (`from a.b import c` names `a.b`). The
    packages checked here import their own modules by full name: a relative import fails."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import"
            names.add(node.module or "")
    return names


def foreign_imports(package: Path, allowed: Iterable[str]) -> list[str]:
    """Every import, by a module of `package`, of a module neither of the standard library
    nor `allowed` (a module, or a package with all its modules), as "<file> imports <name>"."""
    prefixes = tuple(allowed)
    files = sorted(package.glob("*.py"))
    assert files, f"no modules in {package}"
    return [f"{path.name} imports {name}" for path in files for name in sorted(imports(path))
            if name.split(".")[0] not in sys.stdlib_module_names
            and not any(name == p or name.startswith(f"{p}.") for p in prefixes)]
