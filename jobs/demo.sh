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
$py jobs/generate.py --output "$out/events" --end-offsets "$out/end_offsets" \
    --groups "${DEMO_GROUPS:-40}" --events "${DEMO_EVENTS:-30000}" --seed 7 --bad-rows 0.01 \
    --commits 3
# The log is five minutes long: a one-minute watermark delay lets lag cover most of it.
$py jobs/replay.py --events "$out/events" --end-offsets "$out/end_offsets" \
    --warehouse "$out/warehouse" --checkpoint "$out/checkpoint" --trigger available-now \
    --watermark-delay "1 minute"
$py jobs/query.py --warehouse "$out/warehouse" --demo
echo "demo finished in $(( $(date +%s) - start )) s; tables under $out/warehouse"
echo "Prometheus metrics of them: $py jobs/serve.py --warehouse $out/warehouse --metrics-port 9308," \
     "then http://127.0.0.1:9308/metrics (docs/metrics.md)"
