"""The stored form of a group's state, and the pure packages' independence from Spark, pandas,
pyarrow: each imports the standard library and the project modules it lists, nothing else."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from pipeline.fold import dumps, loads
from pipeline.fold.serde import FORMAT_VERSION, StateFormatError, document
from tests.fold.records import Log
from tests.imports import foreign_imports

ROOT = Path(__file__).resolve().parents[2]


def busy_group():  # type: ignore[no-untyped-def]
    log = Log().stable_group("a-1", "b-2")
    log.commit("orders", 0, 10, member="a-1", generation=1)
    log.commit("orders", 1, 11, producer_id=5)
    log.at(12_000).join("a-1")
    log.join("c-3", new=True)
    return log.replay().group


def test_state_round_trips_through_bytes_exactly() -> None:
    g = busy_group()
    assert g.rebalance is not None and g.pending_txns and g.pending_members
    assert loads(dumps(g)) == g


def test_state_bytes_are_versioned_json_not_pickle() -> None:
    data = dumps(busy_group())
    doc = json.loads(zlib.decompress(data))
    assert doc["v"] == FORMAT_VERSION
    assert doc == document(busy_group())
    assert len(data) < len(json.dumps(doc)) / 2  # deflated, not JSON as it stands


def test_undeflated_state_bytes_stored_before_still_load() -> None:
    g = busy_group()
    old = json.dumps(document(g), separators=(",", ":")).encode("utf-8")
    assert old[:1] == b"{" and loads(old) == g


@pytest.mark.parametrize("data", [b"\x80\x04K\x01.", b"{}", b'{"v": 99}', b'{"v": 1}', b"\xff", b"",
                                  zlib.compress(b"\x80\x04K\x01."), zlib.compress(b"[1]")])
def test_unreadable_state_is_a_clear_error(data: bytes) -> None:
    with pytest.raises(StateFormatError):
        loads(data)


PURE = ("pipeline.fold", "pipeline.generator", "pipeline.decode", "pipeline.properties", "schemas")


@pytest.mark.parametrize(("package", "allowed"), [
    ("pipeline/fold", PURE), ("pipeline/generator", PURE), ("schemas", PURE),
    # `read_properties`, the group states its causes name, and the group type (share) whose
    # members' assignments give no NO_COMMIT rows; orjson, the states' and rows' JSON codec
    ("pipeline/lag", ("pipeline.lag", "pipeline.fold.config", "pipeline.fold.states",
                     "pipeline.fold.model", "pipeline.properties", "orjson",
                     "schemas.lag", "schemas.columns")),
])
def test_pure_packages_import_only_the_standard_library_and_what_they_list(
        package: str, allowed: tuple[str, ...]) -> None:
    assert foreign_imports(ROOT / package, allowed) == []


def test_evolve_copies_every_field_like_dataclasses_replace() -> None:
    g = busy_group()
    changes = {"generation_id": g.generation_id + 7, "leader_id": "someone", "seq": 3}
    evolved = g.evolve(**changes)
    assert evolved == dataclasses.replace(g, **changes)
    assert g.evolve() == g and g.evolve() is not g
    assert all(getattr(evolved, f.name) is getattr(g, f.name)
               for f in dataclasses.fields(g) if f.name not in changes)
    with pytest.raises(TypeError, match="no field"):
        g.evolve(generation=1)


def test_a_format_2_state_upgrades_to_the_smallest_members_table_that_holds_its_members() -> None:
    doc = document(busy_group())
    del doc["member_capacity"]
    doc["v"] = 2
    g = loads(json.dumps(doc).encode())
    assert g == busy_group() and g.member_capacity == 16


def test_every_fold_module_imports_first_without_a_cycle() -> None:
    # One fresh interpreter imports each module first: a cycle fails only in some orders.
    names = sorted(p.stem for p in (ROOT / "pipeline" / "fold").glob("*.py"))
    script = "; ".join(f"import pipeline.fold.{n}" for n in names)
    for name in names:
        code = f"import pipeline.fold.{name}; {script}"
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, f"pipeline.fold.{name} first: {done.stderr[-400:]}"
