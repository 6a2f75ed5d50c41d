#!/usr/bin/env bash
# --repeat K against `infermeter serve`: K complete run directories, each
# with its own seed and salt, and an aggregate whose 95 % CI holds every
# run's value; each run's audit knows the configuration ran K times.
. "$(dirname "$0")/lib.sh"
start_server --time-scale 20
"$BIN" run --no-progress --quiet --url "$BASE" --repeat 3 --cooldown 5s --rate 20 --duration 1.5s \
  --warmup 0.2s --input-len 64 --output-len 16 --range-ratio 0.5 --seed 41 --out "$TMP/rep"
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
check_eq "the set's repeats check passes" "$(jq -r '.audit.checks[] | select(.id=="repeats") | .status' "$A")" PASS
grep -v '"generated_at"' "$TMP/rep/run-2/results.json" >"$TMP/before"
"$BIN" report --quiet "$TMP/rep/run-2"
grep -v '"generated_at"' "$TMP/rep/run-2/results.json" >"$TMP/after"
check "each run's report reproduces it" cmp -s "$TMP/before" "$TMP/after"
"$BIN" run --quiet --repeat 2 --sweep rate=1,2 2>"$TMP/err"
check_eq "--repeat with a sweep: refused" $? 1
check "and says why" grep -q -- '--repeat runs one stage' "$TMP/err"
finish
