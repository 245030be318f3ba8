#!/usr/bin/env bash
# The test command: installs everything the suite needs (venv, packages, JARs), then runs
# lint, types and the whole suite. Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash jobs/bootstrap.sh
.venv/bin/ruff check pipeline schemas jobs tests
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
