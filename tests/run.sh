#!/usr/bin/env bash
# The test command: installs everything the suite needs (venv, packages, JARs), then runs
# lint, types and the whole suite. Extra arguments go to pytest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash jobs/bootstrap.sh
.venv/bin/ruff check pipeline schemas jobs tests
.venv/bin/mypy
# Two workers: a Spark test waits on its JVM and on Delta's commits more than it computes,
# so two sessions side by side finish sooner on two cores (tests/conftest.py keeps a file's
# tests, and all of tests/kafka, on one worker).
.venv/bin/python -m pytest -n 2 --dist loadgroup --durations=25 "$@"
