#!/usr/bin/env bash
# `infermeter compare` and `infermeter history` on real runs against the
# built-in server: repeat directories built by hand (S/run-1 .. S/run-4,
# different seeds), one closed-loop configuration (2 in flight, 20 requests,
# 16 output tokens, time scale 4: about 1 s a run, tokens 5 ms apart so
# that a busy machine's scheduling delays stay small beside them).
#  - two sets of the same configuration, and the same against the server
#    20 % slower (time scale 4 -> 3.333): the tables and JSON are complete
#    and valid (docs/results.schema.json $defs/compare), the exit status of
#    --fail-on-regression follows the verdicts (the verdicts themselves
#    depend on this machine's timing: tests/e2e/timing_compare.sh);
#  - fewer than 3 runs a side: the ratio, but no change called;
#  - different workloads are refused (the differences named) unless --force;
#  - history (a temporary database) lists the runs; ids work in compare;
#    a deleted directory is reported.
. "$(dirname "$0")/lib.sh"
DB="$TMP/history.db"
RUN() {
  "$BIN" run --no-progress --quiet --concurrency 2 --requests 20 --warmup 2 --input-len 64 \
    --output-len "${OUTLEN:-16}" --ignore-eos --slo tpot=50ms --tag suite=compare "$@"
}
mkdir -p "$TMP/A" "$TMP/A2" "$TMP/S"

# Same configuration, twice, interleaved (a machine whose speed drifts
# drifts for both sets alike).
start_server --time-scale 4
for i in 1 2 3 4; do
  RUN --url "$BASE" --seed "$i" --out "$TMP/A/run-$i"
  check "run A/run-$i exits 0 or 3 ($?)" test $? -le 3
  RUN --url "$BASE" --seed "$((i + 10))" --out "$TMP/A2/run-$i"
done
# The same server 20 % slower: time scale 4 / 1.2.
start_server --time-scale 3.333333
for i in 1 2 3 4; do
  RUN --url "$BASE" --seed "$((i + 20))" --out "$TMP/S/run-$i"
done
stop_server
# One run against a server with fewer seats: a server setting differs.
start_server --time-scale 4 --max-num-seqs 64
RUN --url "$BASE" --seed 31 --out "$TMP/seats"
stop_server

"$BIN" compare "$TMP/A" "$TMP/A2" >"$TMP/same.txt"
check_eq "compare A A2 exits 0" $? 0
cat "$TMP/same.txt"
"$BIN" compare "$TMP/A" "$TMP/A2" --json >"$TMP/same.json"
check_eq "same configuration: 4 runs a side" "$(jq '[.a.runs, .b.runs] | map(length)' -c "$TMP/same.json")" "[4,4]"
check_eq "every figure has a verdict" \
  "$(jq '[.stages[0].figures[] | .verdict] | length' "$TMP/same.json")" 17
check "4 + 4 runs: a change can be called (no 'too few runs')" \
  jq -e '[.stages[0].figures[] | .verdict] | all(. != "too few runs")' "$TMP/same.json"
check "a ratio lies inside its interval" \
  jq -e '.stages[0].figures.tpot_p50_ms | .ci_lo <= .ratio and .ratio <= .ci_hi' "$TMP/same.json"

# Server settings are compared, never a reason to refuse: listed as the
# servers declared them (manifest.server), A vs B.
check_eq "same server settings: no server difference" \
  "$(jq -r .server_differences "$TMP/same.json")" ""
"$BIN" compare "$TMP/A/run-1" "$TMP/seats" --json >"$TMP/seats.json"
check_eq "compare against fewer seats exits 0" $? 0
check "the server difference named: max_num_seqs 256 vs 64 ($(jq -r .server_differences "$TMP/seats.json"))" \
  jq -e '.server_differences | test("max_num_seqs.*256.*64")' "$TMP/seats.json"
"$BIN" compare "$TMP/A/run-1" "$TMP/seats" >"$TMP/seats.txt"
check "... and printed" grep -q "^Server settings.*max_num_seqs" "$TMP/seats.txt"

"$BIN" compare "$TMP/A" "$TMP/S" >"$TMP/slow.txt"
check_eq "compare A S exits 0 without --fail-on-regression" $? 0
cat "$TMP/slow.txt"
"$BIN" compare "$TMP/A" "$TMP/S" --json >"$TMP/slow.json"
# Holm's correction (docs/statistics.md): every tested figure has p_holm
# >= p, the family's size is said, and a change is called only on p_holm.
check_eq "Holm over the 17 tested figures" "$(jq -c '.correction' "$TMP/slow.json")" '{"method":"holm","tests":17}'
check "p_holm >= p for every figure" \
  jq -e '[.stages[0].figures[] | .p_holm >= .p] | all' "$TMP/slow.json"
check "a change is called only where p_holm < 0.05" \
  jq -e '[.stages[0].figures[] | select(.verdict == "improved" or .verdict == "regressed") | .p_holm < 0.05] | all' "$TMP/slow.json"
check "the table has the p(Holm) column" grep -q 'p(Holm)' "$TMP/slow.txt"
check_eq "lower is better for TPOT" "$(jq -r '.stages[0].figures.tpot_p50_ms.better' "$TMP/slow.json")" lower
check_eq "each run's value is kept per figure, in the order of the runs" \
  "$(jq -c '.stages[0].figures.tpot_p50_ms | [(.values_a | length), (.values_b | length)]' "$TMP/slow.json")" "[4,4]"
# --html: the same comparison as a page (docs/report.md "The compare page"),
# the table printed as well; rendered in Chromium when it is there.
"$BIN" compare "$TMP/A" "$TMP/S" --html "$TMP/compare.html" >"$TMP/slow2.txt"
check_eq "compare --html exits 0" $? 0
check "and still prints the table" grep -q tpot_p50_ms "$TMP/slow2.txt"
check "the page has the table and the ratio chart" \
  bash -c "grep -q 'Ratio B/A per figure' '$TMP/compare.html' && grep -q '<th>95% CI</th>' '$TMP/compare.html'"
check "no script, nothing fetched" bash -c "! grep -Eqi '<script|(src|href)=\"[^\"#]' '$TMP/compare.html'"
SHOTS=$(cd "$(dirname "$BIN")" && pwd)/test-artifacts/html
IM_NPM_CACHE=$(cd "$(dirname "$BIN")" && pwd)/npm-cache \
  bash "$E2E_DIR/../html/check.sh" "$SHOTS" 10 --need 'Ratio B/A' --need 'tpot_p50_ms' \
  "$TMP/compare.html" >"$TMP/browser.out" 2>&1
rc=$?
cat "$TMP/browser.out"
[ $rc -eq 77 ] || check_eq "the compare page in Chromium: no error, every chart drawn" $rc 0
"$BIN" compare "$TMP/A" "$TMP/S" --fail-on-regression >/dev/null
check_eq "--fail-on-regression exits 1 exactly when something regressed" $? \
  "$(jq 'if .regressed then 1 else 0 end' "$TMP/slow.json")"
# The reverse direction: the ratios invert (Welch on logs is symmetric).
"$BIN" compare "$TMP/S" "$TMP/A" --json --fail-on-regression >"$TMP/fast.json"
check "S -> A: the TPOT ratio is the inverse of A -> S" \
  jq -e --slurpfile s "$TMP/slow.json" '(.stages[0].figures.tpot_p50_ms.ratio * $s[0].stages[0].figures.tpot_p50_ms.ratio - 1) | fabs < 1e-9' "$TMP/fast.json"

# One run a side: a ratio, no change called, and it says why.
"$BIN" compare "$TMP/A/run-1" "$TMP/S/run-1" >"$TMP/one.txt"
check_eq "one run a side exits 0" $? 0
check "one run a side: too few runs" grep -q "Too few runs to call a change: 1 vs 1" "$TMP/one.txt"
check "one run a side: no verdict" grep -q "tpot_p50_ms (-).*too few runs" "$TMP/one.txt"
# Three against one side of more: A B C compares B and C with A.
"$BIN" compare "$TMP/A" "$TMP/A2" "$TMP/S" --json >"$TMP/three.json"
check_eq "A B C: two comparisons" "$(jq 'length' "$TMP/three.json")" 2

# A different workload is refused, naming the difference; --force compares.
start_server --time-scale 4
OUTLEN=8 RUN --url "$BASE" --seed 31 --out "$TMP/other"
stop_server
"$BIN" compare "$TMP/A" "$TMP/other" >"$TMP/diff.out" 2>"$TMP/diff.err"
check_eq "different workloads: exit 2" $? 2
check "the difference is named" grep -q "workload.output_len: 16 vs 8" "$TMP/diff.err"
"$BIN" compare "$TMP/A" "$TMP/other" --force >"$TMP/forced.out"
check_eq "--force compares" $? 0
check "--force warns" grep -q "warning: compared with --force" "$TMP/forced.out"
"$BIN" compare "$TMP/A" "$TMP/nonexistent" 2>"$TMP/missing.err"
check_eq "a missing directory: exit 2" $? 2

# History: index the sets, list, filter, use ids, survive a deleted directory.
"$BIN" history add "$TMP/A" "$TMP/S" "$TMP/other" --history "$DB" >"$TMP/added"
check_eq "history add exits 0" $? 0
"$BIN" history --history "$DB" >"$TMP/hist.txt"
cat "$TMP/hist.txt"
check_eq "history lists three entries" "$("$BIN" history --history "$DB" --json | jq length)" 3
check_eq "--tag filters" "$("$BIN" history --history "$DB" --json --tag suite=compare | jq length)" 3
check_eq "--tag filters out" "$("$BIN" history --history "$DB" --json --tag suite=x | jq length)" 0
check_eq "--model filters" "$("$BIN" history --history "$DB" --json --model nope | jq length)" 0
check_eq "--since filters" "$("$BIN" history --history "$DB" --json --since 2999-01-01 | jq length)" 0
idA=$(awk -v d="$TMP/A" '$2 == d {print $1}' "$TMP/added")
idS=$(awk -v d="$TMP/S" '$2 == d {print $1}' "$TMP/added")
"$BIN" compare "$idA" "$idS" --history "$DB" --json >"$TMP/ids.json"
check_eq "compare by history ids = by directories" \
  "$(jq -c '[.stages, .regressed, .improved]' "$TMP/ids.json")" "$(jq -c '[.stages, .regressed, .improved]' "$TMP/slow.json")"
rm -rf "$TMP/other"
"$BIN" history --history "$DB" >"$TMP/hist2.txt"
check_eq "history survives a deleted directory" $? 0
check "the deleted directory is reported" grep -q "MISSING" "$TMP/hist2.txt"
idO=$("$BIN" history --history "$DB" --json | jq -r '.[] | select(.dir_missing) | .id')
"$BIN" compare "$idA" "$idO" --history "$DB" 2>"$TMP/gone.err"
check_eq "compare with a deleted run's id: exit 2" $? 2
check "it says the directory is gone" grep -q "moved or deleted" "$TMP/gone.err"
# Every --json output against docs/results.schema.json ($defs/compare).
IM_NPM_CACHE=${IM_NPM_CACHE:-$(cd "$(dirname "$BIN")" && pwd)/npm-cache} \
  bash "$E2E_DIR/../schema/validate.sh" "$TMP"/same.json "$TMP"/slow.json "$TMP"/fast.json \
  "$TMP"/three.json "$TMP"/ids.json >"$TMP/v.out" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
  echo "compare schema validation skipped: $(tail -n 1 "$TMP/v.out")" >&2
else
  check_eq "compare --json matches \$defs/compare: $(tail -n 3 "$TMP/v.out")" $rc 0
fi
finish
