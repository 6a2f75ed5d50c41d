#!/usr/bin/env bash
# Checks that depend on this machine's timing (CTest label `timing`, left
# out of the sanitizer build, where everything runs several times slower):
# every chunk reaches the client within 50 ms of the server's write, and the
# default run (built-in server, real time), shortened, is VALID and exits 0.
# The self-check judges dispatch lag by a binomial test (docs/metrics.md
# §10), so one scheduler hiccup of a shared machine does not fail it: no
# retries here.
. "$(dirname "$0")/lib.sh"
RUN() { "$BIN" run --no-progress "$@"; }

start_server --time-scale 20 --truth-log "$TMP/truth.jsonl"
RUN --url "$BASE" --rate 15 --duration 3s --warmup 1s --grace 5s --input-len 128 --output-len 32 \
  --ignore-eos --seed 7 --out "$TMP/r1" --quiet
stop_server
check_eq "every chunk received within 50 ms of its write" \
  "$(chunk_delays "$TMP/r1" "$TMP/truth.jsonl" | jq 'length > 0 and all(. < 50000000)')" true

RUN --duration 4s --warmup 1s --output-len 16 --out "$TMP/d" >"$TMP/d.out" 2>&1
rc=$?
check_eq "default run exits 0" "$rc" 0
check_eq "default run VALID" "$(jq -r .audit.client_check.verdict "$TMP/d/results.json")" VALID
check "summary printed" grep -q 'Serving Benchmark Result' "$TMP/d.out"
check "built-in server recorded" jq -e '.manifest.target.builtin_server == true' "$TMP/d/results.json"

# vLLM's default rate, inf: a burst of 20 requests with prompts long enough
# for a TTFT of tens of ms; the client reads the 20 answers that come at
# once without falling behind: VALID, exit 0 (tests/e2e/test_vllm_compat.sh
# checks the rest of the burst's shape in every build).
start_server
"$BIN" run --base-url "$BASE" --backend openai-chat --endpoint /v1/chat/completions \
  --dataset-name random --random-input-len 2048 --random-output-len 4 --request-rate inf \
  --num-prompts 20 --num-warmups 0 --out "$TMP/inf" >/dev/null 2>"$TMP/errinf"
rc=$?
check "--request-rate inf: VALID, exit 0 ($rc): $(tail -n 3 "$TMP/errinf")" test $rc -eq 0
stop_server

finish
