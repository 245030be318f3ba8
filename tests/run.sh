#!/usr/bin/env bash
# The test command: installs everything the suite needs (venv, packages, JARs), then runs
# lint, types and the whole suite. Extra arguments go to pytest.
# `bash tests/run.sh --fast [pytest args]`, the loop while editing: the same, but only the
# tests marked neither spark, kafka nor cluster (pyproject.toml), and with no Java reachable:
# JAVA_HOME names a folder that does not exist (Spark's launcher, Maven and the test broker
# take $JAVA_HOME/bin/java when it is set), so an unmarked test that starts a JVM fails
# there instead of slowing the loop (tests/conftest.py stops the collection sooner for
# one that uses the spark or broker fixture). Tests marked `prometheus` start a real Prometheus
# server (Go, no JVM; jobs/bootstrap.sh installs it) and run in both.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi
# Kept for --fast too: once installed it only checks (a stamp, the JAR cache's manifest),
# and it runs with Java, which fills the JAR cache the settings tests read on a first run.
bash jobs/bootstrap.sh
# The Kafka JARs whose record schemas tests/decode/test_kafka_specs.py parametrizes over at
# collection: fetched here, with Java, so a first --fast run (no Java) finds them cached.
.venv/bin/python -c 'from tests.decode.kafka_specs import NEWEST, specs; specs(NEWEST)'
.venv/bin/ruff check pipeline schemas jobs tests
.venv/bin/mypy
# Workers: a Spark test waits on its JVM and on Delta's commits more than it computes, and
# the broker tests (all of tests/kafka on one worker: tests/conftest.py keeps a file's tests
# together) wait on real-time workloads, so the full suite runs three workers on two cores
# (docs/performance.md, "The suite"); the pure-Python tests of --fast two.
if [ "$fast" = 1 ]; then
  JAVA_HOME="$root/.no-java-in-the-fast-loop" exec .venv/bin/python -m pytest -n 2 \
    --dist loadgroup --durations=10 -m "not spark and not kafka and not cluster" "$@"
fi
.venv/bin/python -m pytest -n 3 --dist loadgroup --durations=25 "$@"
