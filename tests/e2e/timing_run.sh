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
J="$TMP/r1/requests.jsonl"
t0=$(jq .manifest.t0_monotonic_ns "$TMP/r1/results.json")
jq -c --argjson t0 "$t0" 'select(.error==null) | {id: .request_id, t: [.chunks_us[] * 1000 + .t_start + $t0]}' "$J" >"$TMP/client_chunks"
jq -c -s 'map(select(.type=="chunk")) | group_by(.id) | map({id: .[0].id, t: (sort_by(.index) | map(.ns))}) | .[]' \
  "$TMP/truth.jsonl" >"$TMP/truth_chunks"
check_eq "every chunk received within 50 ms of its write" \
  "$(jq -s -n --slurpfile c "$TMP/client_chunks" --slurpfile t "$TMP/truth_chunks" \
     '($t | map({key: .id, value: .t}) | from_entries) as $w
      | [$c[] | . as $r | [range(0; $r.t|length)] | map($r.t[.] - $w[$r.id][.])[]
         | . < 50000000] | all')" true

RUN --duration 4s --warmup 1s --output-len 16 --out "$TMP/d" >"$TMP/d.out" 2>&1
rc=$?
check_eq "default run exits 0" "$rc" 0
check_eq "default run VALID" "$(jq -r .audit.client_check.verdict "$TMP/d/results.json")" VALID
check "summary printed" grep -q 'Serving Benchmark Result' "$TMP/d.out"
check "built-in server recorded" jq -e '.manifest.target.builtin_server == true' "$TMP/d/results.json"

finish
