#!/usr/bin/env bash
# Smoke test of bench/gpu on a CPU: the toy model behind server.py on a
# loopback port, checked against itself (--self-check), then driven by
# `infermeter run` for a few seconds per stage, with the model described by
# --model-config and the GPU by --hardware H200. Passes when every request
# completed, the step log has decode steps with batches above one, the
# usage the server sent is what infermeter counted, and the roofline was
# computed. A bench script, not part of `make test`.
#
#   bench/gpu/smoke.sh [BUILD_DIR]      (default: build)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
im=${INFERMETER:-$build/infermeter}
[ -x "$im" ] || { echo "smoke.sh: no $im (build first)" >&2; exit 1; }
py=${PYTHON:-}
if [ -z "$py" ]; then
  for c in python3 /usr/bin/python3; do
    if "$c" -c 'import torch, aiohttp' 2>/dev/null; then py=$c; break; fi
  done
fi
[ -n "$py" ] || { echo "smoke.sh: needs python3 with torch and aiohttp (apt-get install python3-torch python3-aiohttp)" >&2; exit 1; }
command -v jq >/dev/null || { echo "smoke.sh: needs jq" >&2; exit 1; }

tmp=$(mktemp -d)
srv=""
cleanup() {
  [ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "smoke.sh: FAIL: $*" >&2; exit 1; }
# Exit 3 is infermeter's client self-check INVALID: the generator fell behind
# its schedule, which a small CPU shared with a PyTorch server can cause; the
# figures below are still checked. Any other failure fails the smoke test.
check_exit() {
  [ "$1" = 3 ] || fail "infermeter exit $1"
  echo "smoke.sh: note: client self-check INVALID (a busy CPU); checking the figures anyway"
}

"$py" "$here/server.py" --device cpu --toy --self-check
"$py" "$here/server.py" --device cpu --toy --write-model-config "$tmp/model.json"

# A free loopback port: ask the kernel, then hand it to the server.
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$py" "$here/server.py" --device cpu --toy --slots 16 --max-ctx 1024 --port "$port" \
  --step-log "$tmp/steps.jsonl" >"$tmp/server.log" 2>&1 &
srv=$!
for _ in $(seq 1 100); do
  "$py" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=1)" 2>/dev/null && break
  kill -0 "$srv" 2>/dev/null || { cat "$tmp/server.log" >&2; fail "server exited"; }
  sleep 0.2
done

"$im" run --url "http://127.0.0.1:$port" --backend openai-completions \
  --model-config "$tmp/model.json" --hardware H200 --sweep rate=8,16 \
  --duration 5s --warmup 1s --grace 10s --input-len 64 --output-len 48 --ignore-eos \
  --no-scrape --no-gpu --seed 7 --quiet --out "$tmp/run" || check_exit $?
# The chat endpoint too, one short stage.
"$im" run --url "http://127.0.0.1:$port" --backend openai-chat --rate 4 --duration 3s \
  --warmup 0s --input-len 32 --output-len 8 --ignore-eos --no-scrape --no-gpu --seed 8 \
  --quiet --out "$tmp/chat" || check_exit $?

r=$tmp/run/results.json
for s in 0 1; do
  jq -e ".stages[$s].metrics.counts | .completed > 0 and .failed == 0 and .aborted == 0" "$r" \
    >/dev/null || fail "stage $s: $(jq -c ".stages[$s].metrics.counts" "$r")"
  jq -e ".stages[$s].metrics.roofline.predicted.step_bytes_per_gpu > 0" "$r" >/dev/null ||
    fail "stage $s: no roofline: $(jq -c ".stages[$s].metrics.roofline.not_collected" "$r")"
done
jq -e '.metrics.counts | .completed > 0 and .failed == 0' "$tmp/chat/results.json" \
  >/dev/null || fail "chat: $(jq -c '.metrics.counts' "$tmp/chat/results.json")"
# Every measured request got exactly --output-len tokens, as the server's usage said.
bad=$(jq -s '[.[] | select(.kind == "measured" and .output_tokens != 48)] | length' \
  "$tmp/run/requests.jsonl")
[ "$bad" = 0 ] || fail "$bad requests without 48 output tokens"
decode=$(grep -c '"kind":"decode"' "$tmp/steps.jsonl" || true)
batched=$(jq -s '[.[] | select(.kind == "decode" and .batch > 1)] | length' "$tmp/steps.jsonl")
[ "$decode" -gt 0 ] && [ "$batched" -gt 0 ] || fail "step log: $decode decode steps, $batched batched"
echo "smoke.sh: PASS: $(jq '[.stages[].metrics.counts.completed] | add' "$r") requests over 2 stages," \
  "$decode decode steps ($batched with a batch above one)"
