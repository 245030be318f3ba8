"""What every job shares: the project root on sys.path, logging, and the coordinator config."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pipeline.fold import CoordinatorConfig  # noqa: E402


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s",
                        datefmt="%H:%M:%S", stream=sys.stdout)


def coordinator_config(path: str | None) -> CoordinatorConfig:
    return CoordinatorConfig.from_file(path or ROOT / "conf" / "coordinator.properties")


def add_common_args(p: argparse.ArgumentParser) -> None:
    """The flags every Spark job takes: coordinator settings and the session profile."""
    p.add_argument("--coordinator-conf", help="coordinator .properties (default conf/)")
    p.add_argument("--profile", default="local", help="conf/profiles/<name>.conf")
