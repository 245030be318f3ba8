"""pipeline.decode imports nothing outside the standard library and pipeline.decode itself."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.imports import foreign_imports, imports

DECODE = Path(__file__).resolve().parents[2] / "pipeline" / "decode"


def test_decode_package_imports_only_the_standard_library_and_itself() -> None:
    assert len(sorted(DECODE.glob("*.py"))) >= 5
    assert foreign_imports(DECODE, ["pipeline.decode"]) == []


def test_decode_package_never_evaluates_or_unpickles() -> None:
    for path in DECODE.glob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        called = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert not called & {"eval", "exec", "compile", "__import__"}, path.name
        assert not imports(path) & {"pickle", "marshal", "shelve", "importlib"}, path.name


def test_importing_the_package_loads_no_third_party_module() -> None:
    code = (
        "import sys, pipeline.decode\n"
        "extra = [m for m in sys.modules if m.split('.')[0] not in sys.stdlib_module_names\n"
        "         and m.split('.')[0] not in ('pipeline', '__main__')]\n"
        "print(','.join(extra))\n"
    )
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=DECODE.parents[1],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
