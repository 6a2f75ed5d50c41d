#!/usr/bin/env bash
# `infermeter import` (docs/import.md): other tools' results as run
# directories that report, audit and compare read.
# - vLLM: a run saved with --save-result --save-detailed, imported back, has
#   the same figures (the round trip: run -> vLLM file -> import -> report);
#   one saved without --save-detailed (a summary) imports with its figures
#   as vLLM wrote them, and the audit says what it cannot judge;
# - GuideLLM, AIPerf: the fixtures of tests/fixtures/import/ (written from
#   the documented formats, not produced by those tools), with the figures
#   they were built with; GuideLLM's schedule judges its client;
# - OTLP traces: the retries found (37 % of the spans), the class table,
#   and the user requests' trace replayed by `infermeter run`;
# - what is not collected is said; bad input is refused with a message.
. "$(dirname "$0")/lib.sh"
FIX=$(cd "$(dirname "$0")/../fixtures/import" && pwd)
start_server --time-scale 20
cd "$TMP" || exit 1

# ---- vLLM: the round trip
"$BIN" run --base-url "$BASE" --dataset-name random --random-input-len 128 --random-output-len 16 \
  --request-rate 20 --num-prompts 30 --num-warmups 0 --save-result --save-detailed \
  --result-dir "$TMP/res" --disable-tqdm --out "$TMP/run" >/dev/null 2>"$TMP/err"
rc=$?
check "the vLLM-style run (exit 0, or 3 on a busy machine) ($rc)" test $rc -eq 0 -o $rc -eq 3
F=$(ls "$TMP"/res/*.json 2>/dev/null | head -n 1)
"$BIN" import "$F" --out "$TMP/vllm" >"$TMP/out" 2>"$TMP/err"
check_eq "import of the vLLM file: exit 0 ($(head -c 300 "$TMP/err"))" $? 0
check "the imported run directory" test -s "$TMP/vllm/requests.jsonl" -a -s "$TMP/vllm/results.json"
check "manifest: imported_from vllm and the file" jq -e --arg f "$F" \
  '.manifest.imported_from.tool == "vllm" and .manifest.imported_from.file == $f' "$TMP/vllm/results.json"
# The figures vLLM's file can carry agree with the run's (its keys, computed
# as vLLM computes them): token times are kept to the microsecond.
for k in completed failed total_input_tokens total_output_tokens mean_ttft_ms p99_ttft_ms \
  mean_itl_ms p99_itl_ms median_itl_ms; do
  a=$(jq ".summary.$k" "$TMP/run/results.json")
  b=$(jq ".summary.$k" "$TMP/vllm/results.json")
  check_eq "round trip: $k" "$b" "$a"
done
for k in mean_tpot_ms mean_e2el_ms p99_e2el_ms request_throughput output_throughput; do
  check "round trip: $k within 0.01 % ($(jq ".summary.$k" "$TMP/run/results.json") vs $(jq ".summary.$k" "$TMP/vllm/results.json"))" \
    jq -e -n --slurpfile a "$TMP/run/results.json" --slurpfile b "$TMP/vllm/results.json" \
    "(\$a[0].summary.$k - \$b[0].summary.$k) | fabs <= 1e-4 * (\$a[0].summary.$k | fabs) + 1e-9"
done
check "no schedule in vLLM's file: the self-check is not judged" jq -e \
  '.audit.client_check.verdict == "NOT_JUDGED" and (.audit.client_check.not_collected | test("coordinated omission"))' \
  "$TMP/vllm/results.json"
check "not collected: schedule, server metrics, the generator" jq -e \
  '[.manifest.imported_from.not_collected[].what] == ["schedule", "server_metrics", "client_self_check"]' \
  "$TMP/vllm/results.json"
check "the audit's imported check" jq -e \
  '[.audit.publishable.checks[] | select(.id == "imported" and .status == "WARN")] | length == 1' \
  "$TMP/vllm/results.json"
check "the terminal says NOT_JUDGED" grep -q "Client self-check: *NOT_JUDGED" "$TMP/out"
"$BIN" audit "$TMP/vllm" >"$TMP/audit" 2>&1
check_eq "infermeter audit on it: exit 0" $? 0
check "... saying what was not judged" grep -q "not judged: imported from vllm" "$TMP/audit"
jq -S 'del(.generated_at)' "$TMP/vllm/results.json" >"$TMP/before"
"$BIN" report "$TMP/vllm" --quiet --no-html
check_eq "infermeter report on it: exit 0" $? 0
jq -S 'del(.generated_at)' "$TMP/vllm/results.json" >"$TMP/after"
check "report recomputes the same results.json" cmp -s "$TMP/before" "$TMP/after"
"$BIN" compare --force "$TMP/run" "$TMP/vllm" >"$TMP/cmp" 2>&1
rc=$?
check "compare reads the imported run beside the original ($rc)" test $rc -eq 0 -a -s "$TMP/cmp"

# ---- GuideLLM: two benchmarks, the second one's client 40 ms behind
mkdir -p "$TMP/gldir" && cp "$FIX/guidellm_benchmarks.json" "$TMP/gldir/benchmarks.json"
"$BIN" import "$TMP/gldir" --out "$TMP/gl" --no-html >"$TMP/out" 2>"$TMP/err"
# Exit 6 (a failing server: 2 of 14 requests per stage errored or cut
# short, above --max-error-rate's 5 %) outranks 3; the client that fell
# behind is still judged INVALID in the second stage.
check_eq "GuideLLM (a directory holding benchmarks.json): exit 6, a failing server" $? 6
check "the second stage's client fell behind: INVALID" jq -e \
  '.stages[1].audit.client_check.verdict == "INVALID" and .stages[0].audit.client_check.verdict == "VALID"' \
  "$TMP/gl/results.json"
check "two stages, labelled by strategy" jq -e \
  '[.stages[].label] == ["constant 4", "poisson 8"] and .manifest.imported_from.version == "0.4.0"
   and .manifest.target.model == "Qwen/Qwen3-8B"' "$TMP/gl/results.json"
check "per stage: 12 completed, 1 failed, 1 aborted" jq -e \
  '[.stages[].metrics.counts | [.completed, .failed, .aborted]] == [[12, 1, 1], [12, 1, 1]]' \
  "$TMP/gl/results.json"
check "targeted_start is a schedule: stage 0 VALID, stage 1 INVALID (40 ms dispatch lag)" jq -e \
  '[.stages[].audit.client_check.verdict] == ["VALID", "INVALID"]
   and (.stages[1].audit.client_check.checks[0].dispatch_lag_max_ms | . > 39 and . < 41)' \
  "$TMP/gl/results.json"
check "TTFT 150-190 ms, TPOT 20 ms as written" jq -e \
  '.stages[0].summary | (.p50_ttft_ms | . > 149 and . < 171) and (.mean_tpot_ms | . > 19.99 and . < 20.01)' \
  "$TMP/gl/results.json"
check "no per-token times: said" jq -e \
  '[.manifest.imported_from.not_collected[].what] | index("token_times") != null and index("schedule") == null' \
  "$TMP/gl/results.json"

# ---- AIPerf
"$BIN" import "$FIX/aiperf_profile_export.jsonl" --out "$TMP/ap" --no-html >"$TMP/out" 2>"$TMP/err"
check_eq "AIPerf: exit 0 ($(head -c 300 "$TMP/err"))" $? 0
check "18 completed, 1 failed (HTTP 500), 1 cancelled" jq -e \
  '.metrics.counts.completed == 18 and .metrics.errors.http_5xx == 1 and .metrics.kinds.cancelled.count == 1' \
  "$TMP/ap/results.json"
check "TTFT mean 89.444 ms, ITL mean 11 ms, from inter_chunk_latency" jq -e \
  '(.summary.mean_ttft_ms - 89.4444) | fabs < 0.001' "$TMP/ap/results.json"
check "... ITL" jq -e '(.summary.mean_itl_ms - 11) | fabs < 0.001' "$TMP/ap/results.json"
check "x_request_id kept" grep -q '"request_id":"ap-0003"' "$TMP/ap/requests.jsonl"

# ---- OTLP traces: the retries of real traffic
"$BIN" import --otlp-traces "$FIX/otlp_traces.json" --out "$TMP/otlp" --no-html >"$TMP/out" 2>"$TMP/err"
check_eq "OTLP traces: exit 0 ($(head -c 300 "$TMP/err"))" $? 0
check "37 % of the requests are client retries, 8 % health checks" jq -e \
  '.metrics.effective_rate | .classes.retry.count == 37 and .classes.retry.share == 0.37
   and .classes.health.count == 8 and .classes.measured.count == 55 and .effective_ratio == 0.55' \
  "$TMP/otlp/results.json"
check "CLIENT and INTERNAL spans not counted" jq -e \
  '.manifest.imported_from.spans == 210 and .manifest.imported_from.spans_skipped == 110' \
  "$TMP/otlp/results.json"
check "the class table on the terminal" grep -qE "^retries +37 +37.0%" "$TMP/out"
check "... and the errors" grep -qE "^errors +37 " "$TMP/out"
check_eq "the user requests' trace: a header and 55 lines" "$(wc -l <"$TMP/otlp/user-requests.csv")" 56
check "gen_ai.usage token counts in the trace" grep -q "^0.400000,210,128$" "$TMP/otlp/user-requests.csv"
"$BIN" run --url "$BASE" --dataset azure --dataset-path "$TMP/otlp/user-requests.csv" \
  --trace-speed 20 --requests 10 --warmup 0s --no-progress --out "$TMP/replay" >/dev/null 2>"$TMP/err"
rc=$?
check "the trace replays with infermeter run ($rc: $(head -c 300 "$TMP/err"))" test $rc -eq 0 -o $rc -eq 3
check "... 10 requests at the trace's times" jq -e '.metrics.counts.completed == 10' "$TMP/replay/results.json"

# ---- vLLM: a summary-only file (--save-result without --save-detailed)
"$BIN" run --base-url "$BASE" --dataset-name random --random-input-len 64 --random-output-len 8 \
  --request-rate 20 --num-prompts 12 --save-result --result-dir "$TMP/ressum" --disable-tqdm \
  --out "$TMP/runsum" >/dev/null 2>"$TMP/err"
F=$(ls "$TMP"/ressum/*.json 2>/dev/null | head -n 1)
check "vLLM's summary file has no per-request arrays" jq -e 'has("ttfts") | not' "$F"
"$BIN" import "$F" --out "$TMP/vsum" >"$TMP/out" 2>"$TMP/err"
check_eq "import of a summary-only file: exit 0 ($(head -c 300 "$TMP/err"))" $? 0
check "its figures as vLLM wrote them, in the manifest" jq -e --slurpfile v "$F" \
  '.manifest.imported_from.figures | .completed == 12 and .p99_ttft_ms == $v[0].p99_ttft_ms
   and .request_throughput == $v[0].request_throughput' "$TMP/vsum/results.json"
check "... and on the terminal" grep -qE "^  p99_ttft_ms: +[0-9]" "$TMP/out"
check "not collected: the per-request records" jq -e \
  '[.manifest.imported_from.not_collected[].what] | index("per_request_records") != null' \
  "$TMP/vsum/results.json"
check "the audit says the record checks are not judged" jq -e \
  '[.audit.publishable.checks[] | select(.id == "samples" or .id == "steady_state"
    or .id == "workload" or .id == "errors") | select(.status == "WARN"
    and (.evidence | test("summary figures only")))] | length == 4' "$TMP/vsum/results.json"
check "... and prints it" grep -q "not judged: the vllm file holds summary figures only" "$TMP/out"
"$BIN" audit "$TMP/vsum" >"$TMP/audit" 2>&1
check_eq "infermeter audit on it: exit 0" $? 0
"$BIN" report "$TMP/vsum" --quiet --no-html
check_eq "infermeter report on it: exit 0" $? 0

# ---- bad input
printf '{"ttfts": [0.1], "oops' >"$TMP/corrupt.json"
"$BIN" import "$TMP/corrupt.json" --out "$TMP/bad1" 2>"$TMP/err"
check_eq "corrupt JSON: exit 1" $? 1
check "... with the place" grep -q "not JSON: line 1" "$TMP/err"
echo '{"hello": "world"}' >"$TMP/unknown.json"
"$BIN" import "$TMP/unknown.json" --out "$TMP/bad2" 2>"$TMP/err"
check_eq "an unknown format: exit 1" $? 1
check "... naming the formats" grep -q "not a format infermeter imports" "$TMP/err"
"$BIN" import "$FIX/aiperf_profile_export.jsonl" --format vllm --out "$TMP/bad3" 2>"$TMP/err"
check_eq "the wrong --format: exit 1" $? 1
"$BIN" import "$FIX/aiperf_profile_export.jsonl" --out "$TMP/ap" 2>"$TMP/err"
check_eq "an --out that is not empty: exit 1" $? 1
check "... said" grep -q "not empty" "$TMP/err"
"$BIN" import "$TMP/nonexistent.json" --out "$TMP/bad4" 2>"$TMP/err"
check_eq "a missing file: exit 1" $? 1
check "no directory left for refused input" test ! -e "$TMP/bad1" -a ! -e "$TMP/bad2"
finish
