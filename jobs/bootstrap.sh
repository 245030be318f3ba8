#!/usr/bin/env bash
# Makes the project's own environment on a fresh machine: a venv in .venv with the packages
# at the versions constraints.txt pins, the JVM artifacts (Delta, Kafka) cached under
# .cache/, and a Prometheus server for the metrics tests (jobs/prometheus.sh, into
# .cache/prometheus/). Idempotent: a second run with an unchanged pyproject.toml and
# constraints.txt does nothing but check.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null 2>&1 || py=python3
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv
fi
stamp=".venv/.installed-$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "installing the project and its packages into .venv (once) ..."
  # pip's and setuptools' notes (the editable build's deprecation banner) say nothing a user
  # acts on: shown only if the install fails.
  if ! out=$( { .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip \
                && .venv/bin/python -m pip install --quiet --disable-pip-version-check \
                   -c constraints.txt -e ".[test]"; } 2>&1 ); then
    printf '%s\n' "$out" >&2
    exit 1
  fi
  rm -f .venv/.installed-* && touch "$stamp"
fi
if [ -f pipeline/spark/runtime/jars.py ]; then
  .venv/bin/python -m pipeline.spark.runtime.jars --quiet
fi
bash jobs/prometheus.sh
