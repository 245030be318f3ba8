"""Every test that starts a JVM carries a marker: `spark`, `kafka` or `cluster` (pyproject.toml).

`tests/run.sh --fast` runs `-m "not spark and not kafka and not cluster"` with no Java
reachable, so an unmarked test that starts one fails there, loudly. This guard catches the
commonest miss before that run does, reading the test files' syntax trees (nothing is run):
a test that asks for a fixture which starts a JVM in this process (the suite's `spark`
session, the Kafka broker), directly or through other fixtures, must be marked on itself,
its class or its module (`pytestmark`). Importing pyspark alone needs no marker: it starts
nothing, and tests of pyspark's types or of the session's settings are pure Python.
A test that starts a JVM in a subprocess (a job, `spark-submit`) is out of its reach: the
fast run without Java is that check.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
MARKS = frozenset({"spark", "kafka", "cluster"})
# A fixture whose body calls one of these starts a JVM in the test's own process.
STARTS_A_JVM = frozenset({"build_session", "getOrCreate", "kafka_broker"})


@dataclass
class Fixture:
    needs: tuple[str, ...]  # the fixtures it asks for
    starts_a_jvm: bool


@dataclass
class Module:
    path: Path
    tree: ast.Module
    fixtures: dict[str, Fixture] = field(default_factory=dict)


def _mark_names(node: ast.expr) -> set[str]:
    """The X of every `pytest.mark.X` / `pytest.mark.X(...)` inside `node` (lists included)."""
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Attribute) and n.value.attr == "mark"}


def _is_fixture(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "fixture"
               for d in fn.decorator_list for n in ast.walk(d))


def _params(fn: ast.FunctionDef) -> tuple[str, ...]:
    args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
    return tuple(a.arg for a in args if a.arg not in ("self", "request"))


def _calls(fn: ast.FunctionDef) -> set[str]:
    names = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Call):
            f = n.func
            names.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return names


_modules: dict[Path, Module] = {}


def _module(path: Path) -> Module:
    if path not in _modules:
        _modules[path] = _read(path, path.read_text())
    return _modules[path]


def _read(path: Path, text: str) -> Module:
    """A file's own fixtures, and those it takes from another conftest by name
    (`from tests.spark.conftest import spark`, `spark = spark_conftest.spark`)."""
    mod = Module(path, ast.parse(text, str(path)))
    tree = mod.tree
    aliases: dict[str, Path] = {}  # a name bound to another conftest module -> its file
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tests"):
            for a in node.names:
                target = ROOT / Path(*node.module.split("."))
                if (target / f"{a.name}.py").is_file():
                    aliases[a.asname or a.name] = target / f"{a.name}.py"
                elif target.with_suffix(".py").name == "conftest.py":
                    other = _module(target.with_suffix(".py")).fixtures
                    if a.name in other:
                        mod.fixtures[a.asname or a.name] = other[a.name]
        elif (isinstance(node, ast.Assign) and len(node.targets) == 1
              and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Attribute)
              and isinstance(node.value.value, ast.Name) and node.value.value.id in aliases):
            other = _module(aliases[node.value.value.id]).fixtures
            if node.value.attr in other:
                mod.fixtures[node.targets[0].id] = other[node.value.attr]
        elif isinstance(node, ast.FunctionDef) and _is_fixture(node):
            mod.fixtures[node.name] = Fixture(_params(node), bool(_calls(node) & STARTS_A_JVM))
    return mod


def _scope(path: Path) -> dict[str, Fixture]:
    """The fixtures a test file sees: the conftests from tests/ down, then its own."""
    scope: dict[str, Fixture] = {}
    for d in reversed([path.parent, *path.parent.parents]):
        if (d == TESTS or TESTS in d.parents) and (d / "conftest.py").is_file():
            scope.update(_module(d / "conftest.py").fixtures)
    scope.update(_module(path).fixtures)
    return scope


def _jvm_path(names: tuple[str, ...], scope: dict[str, Fixture], seen: set[str]) -> list[str]:
    """A chain of fixtures from `names` to one that starts a JVM, or [] if none does."""
    for name in names:
        if name in seen or name not in scope:
            continue
        seen.add(name)
        fixture = scope[name]
        if fixture.starts_a_jvm:
            return [name]
        rest = _jvm_path(fixture.needs, scope, seen)
        if rest:
            return [name, *rest]
    return []


def unmarked_jvm_tests(path: Path) -> list[str]:
    """Each test of `path` that reaches a JVM-starting fixture (or starts one itself) without
    a spark/kafka/cluster marker, as "<file>::<test> (via a -> b)"."""
    mod = _module(path)
    scope = _scope(path)
    module_marks: set[str] = set()
    for node in mod.tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets) and node.value:
                module_marks |= _mark_names(node.value)
    tests: list[tuple[ast.FunctionDef, set[str]]] = []
    for node in mod.tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            tests.append((node, set()))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            class_marks = set().union(*(_mark_names(d) for d in node.decorator_list))
            tests += [(fn, class_marks) for fn in node.body
                      if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test")]
    missing = []
    for fn, class_marks in tests:
        marks = module_marks | class_marks | set().union(*(_mark_names(d) for d in fn.decorator_list))
        if marks & MARKS:
            continue
        chain = ["(its own body)"] if _calls(fn) & STARTS_A_JVM else _jvm_path(_params(fn), scope, set())
        if chain:
            missing.append(f"{path.relative_to(ROOT)}::{fn.name} (via {' -> '.join(chain)})")
    return missing


def test_every_test_that_starts_a_jvm_in_process_is_marked() -> None:
    files = sorted(TESTS.rglob("test_*.py"))
    assert len(files) > 50, files
    missing = [m for f in files for m in unmarked_jvm_tests(f)]
    assert not missing, ("these tests start a JVM but carry no spark/kafka/cluster marker, so "
                         "`tests/run.sh --fast` would run them:\n" + "\n".join(missing))


def test_the_guard_sees_the_fixtures_that_start_a_jvm() -> None:
    """Fixtures are followed through conftests, imports and aliases: the guard is not vacuous."""
    assert _jvm_path(("spark",), _scope(TESTS / "spark" / "test_replay.py"), set()) == ["spark"]
    assert _jvm_path(("spark",), _scope(TESTS / "report" / "test_lag.py"), set()) == ["spark"]
    assert _jvm_path(("spark",), _scope(TESTS / "deploy" / "test_names.py"), set()) == ["spark"]
    assert _jvm_path(("workload",), _scope(TESTS / "kafka" / "test_real_broker.py"), set()) == [
        "workload", "broker"]
    forgot = TESTS / "spark" / "test_zz_markers_probe.py"  # a newcomer's file, never written
    _modules[forgot] = _read(forgot, "import pytest\n\n"
                             "@pytest.fixture\ndef table(spark): ...\n\n"
                             "def test_pure(): ...\n\n"
                             "def test_forgot(table): ...\n\n"
                             "@pytest.mark.spark\ndef test_marked(spark): ...\n")
    try:
        assert unmarked_jvm_tests(forgot) == [
            "tests/spark/test_zz_markers_probe.py::test_forgot (via table -> spark)"]
    finally:
        del _modules[forgot]
