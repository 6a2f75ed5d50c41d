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

finish
