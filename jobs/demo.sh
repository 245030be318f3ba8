#!/usr/bin/env bash
# The demo, end to end on a fresh machine: install, generate a log, replay it as a stream,
# show the groups and a few SQL answers. Everything lands under ./out/demo.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash jobs/bootstrap.sh
py=.venv/bin/python
out="${DEMO_OUT:-out/demo}"
rm -rf "$out"
start=$(date +%s)
$py jobs/generate.py --output "$out/events" --groups "${DEMO_GROUPS:-40}" \
    --events "${DEMO_EVENTS:-30000}" --seed 7 --bad-rows 0.01 --commits 3
$py jobs/replay.py --events "$out/events" --warehouse "$out/warehouse" \
    --checkpoint "$out/checkpoint" --trigger available-now
$py jobs/query.py --warehouse "$out/warehouse" --demo
echo "demo finished in $(( $(date +%s) - start )) s; tables under $out/warehouse"
