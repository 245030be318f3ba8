"""The package runs on its own dependencies: every module that `pipeline/` or `schemas/` imports
is the standard library's, the project's, or comes from a distribution that the project's
`dependencies` install (directly or as theirs), never from the `test` extra alone. Read from
the syntax trees and the installed distributions' metadata; nothing is imported."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipeline", "schemas")


def _name(requirement: str) -> str:
    """A requirement's distribution name, normalized (PEP 503)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def installed_by_dependencies() -> set[str]:
    """The distributions `pip install .` brings: the dependencies and, transitively, theirs
    (a requirement whose environment marker is false here, or names an extra, is not
    followed: deltalake's `deprecated` wants `inspect2` only on Python 2)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [_name(r) for r in project["dependencies"]]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(name) or []:
            requirement = Requirement(text)  # installed here: not for an extra, marker true
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(_name(text))
    return seen


def top_level_imports() -> dict[str, set[str]]:
    """Each top-level module imported anywhere in the packages (in functions too) -> the files."""
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


def test_the_package_imports_only_what_its_dependencies_install() -> None:
    allowed = installed_by_dependencies()
    providers = metadata.packages_distributions()
    wrong = []
    for module, files in sorted(top_level_imports().items()):
        if module in sys.stdlib_module_names or module in PACKAGES or module == "__future__":
            continue
        dists = {_name(d) for d in providers.get(module, [])}
        if not dists & allowed:
            wrong.append(f"{module} (from {sorted(dists) or 'nothing installed'}) in {sorted(files)}")
    assert not wrong, "imports the package's dependencies do not install:\n" + "\n".join(wrong)


def test_the_check_sees_a_test_extra_import() -> None:
    """The check can fail: confluent_kafka, which the tests use, is not among them."""
    assert "confluent_kafka" in metadata.packages_distributions()
    assert "confluent-kafka" not in installed_by_dependencies()
