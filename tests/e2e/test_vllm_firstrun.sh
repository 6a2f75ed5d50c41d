#!/usr/bin/env bash
# The first runs of a vLLM user (docs/migrating.md): a command line that
# leaves the load to vLLM's defaults gets them (--request-rate inf,
# --num-prompts 1000, --dataset-name random, --backend openai), and the
# notice says so;
# `report` and `audit` read a --repeat set's directory; a rate=auto sweep
# whose throughput stage measured nothing says why and what to change,
# prints no nan and reports no SLO failure.
. "$(dirname "$0")/lib.sh"
start_server --time-scale 20
cd "$TMP" || exit 1

# ---- vLLM's defaults: no --request-rate, no --num-prompts, no dataset, no
# backend.
"$BIN" run --base-url "$BASE" --random-input-len 16 --random-output-len 2 --max-concurrency 64 \
  --disable-tqdm --out "$TMP/dflt" >"$TMP/dflt.out" 2>"$TMP/dflt.err"
rc=$?
check "a vLLM line on vLLM's defaults runs ($rc): $(tail -n 2 "$TMP/dflt.err")" test $rc -eq 0 -o $rc -eq 3
check "1000 measured requests (vLLM's --num-prompts default)" \
  jq -e '.summary.completed + .summary.failed == 1000' "$TMP/dflt/results.json"
check "all due at once (vLLM's --request-rate inf), at most 64 in flight" \
  jq -e '.manifest.schedule.kind == "burst" and .manifest.schedule.max_concurrency == 64
    and .summary.max_concurrent_requests <= 64' "$TMP/dflt/results.json"
check "random prompts with EOS ignored: every output 2 tokens" \
  jq -e '.manifest.workload.ignore_eos and .summary.total_output_tokens == 2 * .summary.completed' \
  "$TMP/dflt/results.json"
check "no warm-up (vLLM's --num-warmups 0)" \
  jq -es 'map(select(.kind == "warmup")) | length == 0' "$TMP/dflt/requests.jsonl"
check "the completions endpoint (vLLM's default --backend openai)" \
  jq -e '.manifest.target.backend == "openai-completions"' "$TMP/dflt/results.json"
for said in "every request at once, at most 64 in flight (vLLM's default --request-rate inf)" \
  "/v1/completions (vLLM's default --backend openai)" \
  "1000 requests (vLLM's default --num-prompts)" "vLLM's default --dataset-name random"; do
  check "the notice says: $said" grep -qF "$said" "$TMP/dflt.err"
done
check "... in one line" test "$(grep -c "vLLM's command line" "$TMP/dflt.err")" -eq 1
# infermeter's own load flags keep infermeter's defaults, and the notice says
# which warm-up applies.
"$BIN" run --base-url "$BASE" --rate 40 --requests 20 --input-len 16 --output-len 2 \
  --disable-tqdm --out "$TMP/own" >/dev/null 2>"$TMP/own.err"
check "own flags: infermeter's warm-up (the first tenth of --requests)" \
  jq -es 'map(select(.kind == "warmup")) | length == 2' "$TMP/own/requests.jsonl"
check "... said" grep -q "infermeter's own warm-up applies" "$TMP/own.err"

# ---- report and audit of a --repeat set.
"$BIN" run --url "$BASE" --rate 40 --requests 12 --warmup 0 --input-len 16 --output-len 2 \
  --repeat 2 --cooldown 0s --no-progress --out "$TMP/set" >/dev/null 2>"$TMP/set.err"
rc=$?
check "a --repeat 2 set ($rc)" test $rc -eq 0 -o $rc -eq 3
"$BIN" report "$TMP/set" --no-html >"$TMP/rep.out" 2>"$TMP/rep.err"
rc=$?
check "report SET reads it ($rc): $(head -c 300 "$TMP/rep.err")" test $rc -eq 0 -o $rc -eq 3
check "... and gives the set's verdict" grep -q "the worst of 2 runs" "$TMP/rep.out"
"$BIN" audit "$TMP/set" >"$TMP/aud.out" 2>"$TMP/aud.err"
rc=$?
check "audit SET reads it ($rc): $(head -c 300 "$TMP/aud.err")" test $rc -eq 0 -o $rc -eq 3
check "... printing the set's audit" grep -q "Publishable (the set):" "$TMP/aud.out"
check "... with its repeats check" grep -qE "^  (PASS|WARN|FAIL) repeats" "$TMP/aud.out"
"$BIN" audit "$TMP/nothing-here" >/dev/null 2>"$TMP/aud2.err"
check_eq "audit of a missing directory: exit 1" $? 1
check "... its message prefixed 'infermeter audit:'" grep -q "^infermeter audit: " "$TMP/aud2.err"
check "... and never 'infermeter report:'" test -z "$(grep "infermeter report" "$TMP/aud2.err")"

# ---- rate=auto with a duration shorter than the warm-up: the throughput
# stage measures nothing.
"$BIN" run --url "$BASE" --sweep rate=auto --duration 1s --warmup 3s --input-len 16 \
  --output-len 2 --no-progress --out "$TMP/auto" >"$TMP/auto.out" 2>"$TMP/auto.err"
rc=$?
check "rate=auto, all warm-up: exit 0 or 3 (the self-check), never 99 ($rc)" test $rc -eq 0 -o $rc -eq 3
check "it says why and what to change" \
  grep -q "its 1 s were all warm-up (--warmup 3 s); give a --duration longer" "$TMP/auto.err"
check "no nan in the table" test -z "$(grep -i nan "$TMP/auto.out")"
check "the stage's line says it measured nothing" grep -q "no measured request" "$TMP/auto.out"
check "no saturation point searched, and said" grep -q "not searched (no rate was swept)" "$TMP/auto.out"
check "no 'an SLO failed' (none was given)" grep -q "no SLO failed" "$TMP/auto.out"
# Wide enough for the directory column (80 columns show target and tags).
COLUMNS=200 "$BIN" history >"$TMP/hist.out" 2>&1
check "history lists the run without nan" test -z "$(grep "$TMP/auto" "$TMP/hist.out" | grep -i nan)"
check "... its figures as -" grep -qE " +- +- +- .*$TMP/auto" "$TMP/hist.out"
finish
