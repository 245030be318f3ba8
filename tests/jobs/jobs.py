"""The jobs as modules, loaded from their files the way spark-submit runs them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
JOBS = ("generate", "replay", "backfill", "ingest", "query", "report", "export_offsets",
        "serve", "maintain", "whatif")


def job_file(name: str) -> Path:
    """The file spark-submit runs for job `name`."""
    return ROOT / "jobs" / f"{name}.py"


def load_job(name: str) -> ModuleType:
    if str(ROOT / "jobs") not in sys.path:
        sys.path.insert(0, str(ROOT / "jobs"))
    spec = importlib.util.spec_from_file_location(f"job_{name}", job_file(name))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
