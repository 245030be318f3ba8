#!/usr/bin/env bash
# The demo, end to end on a fresh machine: install, generate a log and its topics' end
# offsets, replay it as a stream, show the groups, their lag and a few SQL answers.
# Everything lands under ./out/demo.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash jobs/bootstrap.sh
py=.venv/bin/python
out="${DEMO_OUT:-out/demo}"
rm -rf "$out"
start=$(date +%s)
# generate, replay (a stream, with lag) and query --demo, in one Spark session: the
# command lines are in pipeline/jobs/demo.py, the README's steps 1-3 print them one by one.
$py -m pipeline.jobs.demo --output "$out" --groups "${DEMO_GROUPS:-40}" --events "${DEMO_EVENTS:-30000}"
echo "demo finished in $(( $(date +%s) - start )) s; tables under $out/warehouse"
echo "Prometheus metrics of them: $py jobs/serve.py --warehouse $out/warehouse --metrics-port 9308," \
     "then http://127.0.0.1:9308/metrics (docs/metrics.md: the group and lag series; a running" \
     "replay's own --metrics-port adds the cgr_replay_* series its alerts watch)"
