#!/usr/bin/env bash
# deploy/grafana/infermeter.json: what make_dashboard.py writes (the JSON is
# generated, never edited by hand); valid JSON with the job and model
# variables; every division guarded against a zero denominator (divides by
# a `(... > 0)` filter); one row per blind spot plus the vLLM rows. Its
# PromQL is evaluated against a live run by tests/e2e/test_prometheus.sh.
set -euo pipefail
cd "$(dirname "$0")/../../deploy/grafana"
command -v jq >/dev/null && command -v python3 >/dev/null || exit 77
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
fail=0
python3 make_dashboard.py "$tmp"
cmp -s "$tmp" infermeter.json || { echo "FAIL: infermeter.json differs from make_dashboard.py's output (run it)"; fail=1; }
for v in job model server_job datasource; do
  jq -e --arg v "$v" '[.templating.list[].name] | index($v)' infermeter.json >/dev/null ||
    { echo "FAIL: no variable $v"; fail=1; }
done
# Divisions: every " / " must be followed by a filter "((...) > 0)".
while IFS= read -r e; do
  rest=$e
  while [[ $rest == *" / "* ]]; do
    rest=${rest#*" / "}
    [[ $rest == "(("* ]] || { echo "FAIL: unguarded division in: $e"; fail=1; break; }
    [[ $rest == *") > 0)"* ]] || { echo "FAIL: unguarded division in: $e"; fail=1; break; }
  done
done < <(jq -r '.panels[] | select(.targets) | .targets[].expr' infermeter.json)
rows=$(jq '[.panels[] | select(.type == "row")] | length' infermeter.json)
[ "$rows" -ge 10 ] || { echo "FAIL: $rows rows, want 7 blind spots + the client + 3 vLLM rows"; fail=1; }
for t in "Effective vs raw" "Token latency" "KV cache usage vs prefix" "TCP states" "Temperature and top_p" \
         "MoE expert" "Bandwidth" "vLLM: latency" "vLLM: throughput" "vLLM: queue"; do
  jq -e --arg t "$t" '[.panels[] | select(.type == "row") | .title | startswith($t)] | any' infermeter.json \
    >/dev/null || { echo "FAIL: no row '$t'"; fail=1; }
done
[ $fail -eq 0 ] && echo "infermeter.json: generated, guarded, $rows rows"
exit $fail
