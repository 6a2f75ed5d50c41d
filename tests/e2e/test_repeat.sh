#!/usr/bin/env bash
# --repeat K against `infermeter serve`: K complete run directories, each
# with its own seed and salt, and an aggregate whose 95 % CI holds every
# run's value; each run's audit knows the configuration ran K times;
# --reference (metric=value and FILE) gives a t-test per figure; with
# --sweep every stage runs K times in a seeded random order.
. "$(dirname "$0")/lib.sh"
start_server --time-scale 20
"$BIN" run --no-progress --url "$BASE" --repeat 3 --cooldown 5s --rate 20 --duration 1.5s \
  --warmup 0.2s --input-len 64 --output-len 16 --range-ratio 0.5 --seed 41 --out "$TMP/rep" \
  --reference request_throughput=1000 --reference tpot_p50_ms=0.001 >"$TMP/rep.txt"
rc=$?
check "exit 0 or 3 (a busy machine's client verdict) ($rc)" test $rc -eq 0 -o $rc -eq 3
A="$TMP/rep/results.json"
for k in 1 2 3; do
  check "run-$k is a run directory" test -s "$TMP/rep/run-$k/results.json" -a -s "$TMP/rep/run-$k/requests.jsonl"
  check_eq "run-$k knows it is one of 3" "$(jq -c .manifest.repeat "$TMP/rep/run-$k/results.json")" '{"index":'$k',"of":3}'
  check_eq "run-$k: repeats PASS" \
    "$(jq -r '.audit.publishable.checks[] | select(.id=="repeats") | .status' "$TMP/rep/run-$k/results.json")" PASS
done
check_eq "three seeds, all different" "$(jq '[.runs[].seed] | unique | length' "$A")" 3
check_eq "three salts, all different" \
  "$(cat "$TMP"/rep/run-*/results.json | jq -s '[.[].manifest.run_salt] | unique | length')" 3
check "the aggregate's CI holds every run's throughput" \
  jq -e '.figures.request_throughput | . as $f | [.values[] | select(. != null) | . >= $f.ci95_lo and . <= $f.ci95_hi] | all and $f.n == 3' "$A"
check "its mean is the runs' mean" \
  jq -e '.figures.output_throughput | ((.values | add / length) - .mean) | fabs < 1e-6' "$A"
check "pooled percentiles from every run's histograms" jq -e '.pooled_ms.ttft.p50 > 0' "$A"
check "the pool holds every run's requests" \
  jq -e --argjson n "$(cat "$TMP"/rep/run-*/results.json | jq -s 'map(.metrics.latency_ms.ttft.n) | add')" '.pooled_ms.ttft.n == $n' "$A"
check "pooled percentiles carry their interval" \
  jq -e '.pooled_ms.tpot | .p50_ci.lo <= .p50 and .p50 <= .p50_ci.hi and .p50_ci.coverage >= 0.95' "$A"
check_eq "the set's repeats check passes" "$(jq -r '.audit.checks[] | select(.id=="repeats") | .status' "$A")" PASS
check "the set's report.html shows each figure's CI and the pooled percentiles' in its tiles" \
  bash -c "grep -q 'Headline (mean over the runs, 95% CI of the mean)' '$TMP/rep/report.html' &&
           grep -q 'TTFT p50 (ms)<br>95% CI [0-9]' '$TMP/rep/report.html'"
check "one forest plot of every figure, not a chart per figure" \
  test "$(grep -o '<figcaption>' "$TMP/rep/report.html" | wc -l)" -eq 1
check "no goodput or SLO attainment card without an SLO" \
  bash -c "! grep -q '<div class=\"k\">Goodput' '$TMP/rep/report.html'"
IM_NPM_CACHE=$(cd "$(dirname "$BIN")" && pwd)/npm-cache \
  bash "$E2E_DIR/../html/check.sh" "$(cd "$(dirname "$BIN")" && pwd)/test-artifacts/html" 1 \
  --need 'Every figure: mean and 95% CI' "$TMP/rep/report.html" >"$TMP/browser.out" 2>&1
rc=$?
cat "$TMP/browser.out"
[ $rc -eq 77 ] || check_eq "the set's report in Chromium: no error, every chart drawn" $rc 0
# --reference: a one-sample t-test per figure against the value given.
check_eq "reference source recorded" "$(jq -r .reference_source "$A")" "request_throughput=1000, tpot_p50_ms=0.001"
check "throughput far below 1000 req/s: significant, ratio < 0.1" \
  jq -e '.figures.request_throughput.reference | .significant and .ratio < 0.1 and .p < 0.05 and .df == 2 and .t < 0' "$A"
check "no reference for ttft: null" jq -e '.figures.ttft_p50_ms.reference == null' "$A"
check "the table shows the reference column" grep -q 'reference   ratio' "$TMP/rep.txt"
check "the table with a reference fits 80 columns" bash -c "! awk 'length > 80' '$TMP/rep.txt' | grep -q ."
check "and marks the difference" grep -Eq '^request_throughput .* differs' "$TMP/rep.txt"
# A FILE reference: the set above (its aggregate's means), one figure overridden.
echo '{"ttft_p50_ms": 1e6}' >"$TMP/ref.json"
"$BIN" run --no-progress --quiet --url "$BASE" --repeat 2 --cooldown 5s --rate 20 --duration 0.5s \
  --warmup 0 --input-len 64 --output-len 16 --range-ratio 0.5 --seed 43 --out "$TMP/rep2" \
  --reference "$TMP/rep" --reference "$TMP/ref.json" --max-ci-width 12.5
rc=$?
check_eq "--max-ci-width recorded" "$(jq .max_ci_width "$TMP/rep2/results.json")" 0.125
check "and used by the ci_width check" \
  jq -e '.audit.checks[] | select(.id == "ci_width") | .evidence + (.fix // "") | test("12.5%")' "$TMP/rep2/results.json"
check "a second set with FILE references: exit 0 or 3 ($rc)" test $rc -eq 0 -o $rc -eq 3
check "the aggregate's means are its references" \
  jq -e --slurpfile a "$A" '.figures.output_throughput.reference.value == $a[0].figures.output_throughput.mean' "$TMP/rep2/results.json"
check_eq "the later FILE overrides one figure" "$(jq .figures.ttft_p50_ms.reference.value "$TMP/rep2/results.json")" 1000000
"$BIN" run --quiet --reference ttft_p50_ms=5 2>"$TMP/err"
check_eq "--reference without --repeat: refused" $? 1
check "and says why" grep -q -- '--reference tests the runs of --repeat' "$TMP/err"
"$BIN" run --quiet --repeat 2 --reference nosuch=5 2>"$TMP/err"
check_eq "--reference with an unknown figure: refused" $? 1
check "and lists the figures" grep -q 'figures: request_throughput' "$TMP/err"
"$BIN" run --quiet --repeat 2 --reference ttft_p50_ms=abc 2>"$TMP/err"
check_eq "--reference with a non-number: refused" $? 1
echo '{"ttft": 3}' >"$TMP/bad.json"
"$BIN" run --quiet --repeat 2 --reference "$TMP/bad.json" 2>"$TMP/err"
check_eq "--reference FILE with an unknown key: refused" $? 1
check "and names it" grep -q "'ttft' is not a headline figure" "$TMP/err"
"$BIN" run --quiet --repeat 2 --reference "$TMP/nonexistent.json" 2>"$TMP/err"
check_eq "--reference with a missing FILE: refused" $? 1
# --min-requests auto: sized before the run for a p90 SLO (44 measured,
# MLPerf's minimum) plus the 2 warm-up requests; the verdict is decided.
"$BIN" run --no-progress --url "$BASE" --requests 10 --rate 100 --warmup 2 --input-len 16 \
  --output-len 4 --slo ttft=10s --slo-target 0.9 --min-requests auto --seed 3 \
  --out "$TMP/mr" >/dev/null 2>"$TMP/mr.err"
rc=$?
check "--min-requests auto: exit 0, 3 or 99 ($rc)" test $rc -eq 0 -o $rc -eq 3 -o $rc -eq 99
check "it says what it raised" grep -q -- '--requests 10 -> 46 (44 measured + 2 warm-up)' "$TMP/mr.err"
check_eq "the manifest has the sized count" "$(jq .manifest.schedule.requests "$TMP/mr/results.json")" 46
check "the TTFT verdict is decided (not INCONCLUSIVE)" \
  jq -e '.analysis.slo[] | select(.slo == "ttft") | .requests == 44 and .verdict != "INCONCLUSIVE"' "$TMP/mr/results.json"
"$BIN" run --quiet --requests 5 --min-requests auto 2>"$TMP/err"
check_eq "--min-requests auto without an SLO: refused" $? 1
check "and says why" grep -q 'give --slo' "$TMP/err"
"$BIN" run --quiet --concurrency 2 --duration 5s --slo ttft=1s --min-requests auto 2>"$TMP/err"
check_eq "--min-requests auto, closed loop by time: refused" $? 1
check "and says what to give" grep -q 'give --requests' "$TMP/err"
grep -v '"generated_at"' "$TMP/rep/run-2/results.json" >"$TMP/before"
"$BIN" report --quiet "$TMP/rep/run-2"
grep -v '"generated_at"' "$TMP/rep/run-2/results.json" >"$TMP/after"
check "each run's report reproduces it" cmp -s "$TMP/before" "$TMP/after"
# With stages: every stage K times, in a seeded random order of stage x repeat.
"$BIN" run --no-progress --quiet --url "$BASE" --repeat 2 --cooldown 5s --sweep rate=10,20 \
  --duration 0.5s --warmup 0 --input-len 32 --output-len 8 --seed 7 --out "$TMP/rs"
rc=$?
check "--repeat 2 --sweep: exit 0 or 3 ($rc)" test $rc -eq 0 -o $rc -eq 3
R="$TMP/rs/results.json"
check_eq "the top level names the layout" "$(jq -r .schema "$R")" infermeter/repeat-stages/v1
check_eq "every (stage, run) ran once" "$(jq -c '[.order[] | [.stage, .run]] | sort' "$R")" '[[1,1],[1,2],[2,1],[2,2]]'
check_eq "the order is the seeded shuffle (--seed 7), not stage by stage" \
  "$(jq -c '[.order[] | [.stage, .run]]' "$R")" '[[1,2],[2,2],[2,1],[1,1]]'
for s in 1 2; do
  rate=$((s * 10))
  check_eq "stage $s is labelled" "$(jq -r ".stages[$((s - 1))].label" "$R")" "rate=$rate"
  check_eq "stage $s: its aggregate, 2 runs" "$(jq -r .completed "$TMP/rs/stage-$s/results.json")" 2
  for k in 1 2; do
    d="$TMP/rs/stage-$s/run-$k"
    check_eq "stage-$s/run-$k: a one-stage run at rate $rate" "$(jq -c '[.manifest.schedule.rate, (.stages|length)]' "$d/results.json")" "[$rate,0]"
    check_eq "stage-$s/run-$k knows its place" "$(jq -c .manifest.repeat "$d/results.json")" \
      '{"index":'$k',"of":2,"stage":{"index":'$s',"label":"rate='$rate'"}}'
  done
done
check "the top level holds each stage's aggregate" \
  jq -e '.stages[1].results.figures.request_throughput.n == 2' "$R"
"$BIN" audit "$TMP/rs/stage-2/run-1" >"$TMP/audit.txt"
check "audit works on a stage's run" grep -q 'Publishable' "$TMP/audit.txt"
"$BIN" compare "$TMP/rs" "$TMP/rs" --json >"$TMP/rs-cmp.json"
check_eq "compare takes the set of stages: stage by stage" \
  "$(jq -c '[[.stages[] | .label], .stages[1].figures.request_throughput.n_a, .stages[1].figures.request_throughput.ratio]' "$TMP/rs-cmp.json")" \
  '[["rate=10","rate=20"],2,1]'
"$BIN" compare "$TMP/rs" "$TMP/rs/stage-1" >/dev/null 2>"$TMP/err"
check_eq "the set of stages against one stage: refused" $? 2
"$BIN" compare "$TMP/rs/stage-1" "$TMP/rs/stage-2" >/dev/null 2>"$TMP/err"
check_eq "compare: two stages are two configurations (exit 2)" $? 2
check "and names the rate" grep -q 'schedule.rate: 10.0 vs 20.0' "$TMP/err"
"$BIN" run --quiet --repeat 2 --sweep rate=auto 2>"$TMP/err"
check_eq "--repeat with --sweep rate=auto: refused" $? 1
check "and says why" grep -q -- 'give the rates' "$TMP/err"
grep -v '"generated_at"' "$TMP/rs/stage-1/run-2/results.json" >"$TMP/before"
"$BIN" report --quiet "$TMP/rs/stage-1/run-2"
grep -v '"generated_at"' "$TMP/rs/stage-1/run-2/results.json" >"$TMP/after"
check "a stage run's report reproduces it" cmp -s "$TMP/before" "$TMP/after"
finish
