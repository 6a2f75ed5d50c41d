#!/usr/bin/env bash
# `infermeter report DIR`: recomputes results.json from the run directory
# alone. On a directory `run` wrote it gives the same file byte for byte
# (apart from generated_at): a one-stage run, a sweep, a --threads 2 run.
# After kill -9 (no results.json) it writes one from the records on disk,
# marked interrupted. Bad lines are skipped and named by their number.
. "$(dirname "$0")/lib.sh"
RUN() { "$BIN" run --no-progress --quiet "$@"; }
# The observers run too: their figures are recomputed from series.jsonl.

same_results() { # DIR: results.json before and after `report DIR`, generated_at aside
  local d=$1
  grep -v '"generated_at"' "$d/results.json" >"$d/before"
  "$BIN" report --quiet "$d"
  local rc=$?
  grep -v '"generated_at"' "$d/results.json" >"$d/after"
  cmp -s "$d/before" "$d/after" && echo "same:$rc" || { diff "$d/before" "$d/after" | head -20 >&2; echo "differ:$rc"; }
}

# The default run (built-in server, real time), shortened.
RUN --duration 3s --warmup 1s --out "$TMP/default"
rc=$?
check_eq "report reproduces the default run's results.json" "$(same_results "$TMP/default")" "same:$rc"
check "its server figures came from series.jsonl" jq -e '.metrics.server.scrapes > 0' "$TMP/default/results.json"

start_server --time-scale 20
RUN --url "$BASE" --rate 20 --duration 2s --warmup 0.5s --input-len 64 --output-len 16 \
  --seed 11 --out "$TMP/one"
rc=$?
# 0, or 3 when this machine was too busy for the client to keep up: the
# report must give the same verdict either way.
check "one-stage run exits 0 or 3 ($rc)" test $rc -eq 0 -o $rc -eq 3
check_eq "report reproduces a one-stage run's results.json" "$(same_results "$TMP/one")" "same:$rc"

RUN --url "$BASE" --sweep rate=5,15 --duration 1.5s --warmup 0.5s --input-len 64 \
  --output-len 8 --seed 12 --out "$TMP/sweep"
rc=$?
check "sweep run exits 0, 99 or 3 (a busy or sanitized client) ($rc)" test $rc -eq 0 -o $rc -eq 99 -o $rc -eq 3
check_eq "report reproduces a sweep's results.json" "$(same_results "$TMP/sweep")" "same:$rc"
check_eq "two stages" "$(jq '.stages | length' "$TMP/sweep/results.json")" 2

RUN --url "$BASE" --threads 2 --rate 20 --duration 2s --warmup 0.5s --input-len 64 \
  --output-len 8 --seed 13 --out "$TMP/threads"
rc=$?
check_eq "report reproduces a --threads 2 run's results.json" "$(same_results "$TMP/threads")" "same:$rc"

# kill -9 in the middle of a run: no results.json; report writes one.
"$BIN" run --no-progress --quiet --url "$BASE" --rate 20 --duration 60s --warmup 0s \
  --input-len 32 --output-len 8 --seed 14 --out "$TMP/killed" &
pid=$!
# Blocks until ten records are on disk (tail waits for the file and the lines).
timeout 60 tail -F -n +1 "$TMP/killed/requests.jsonl" 2>/dev/null | head -n 10 >/dev/null
kill -9 $pid
wait $pid 2>/dev/null
check "no results.json after kill -9" test ! -e "$TMP/killed/results.json"
"$BIN" report --quiet "$TMP/killed"
check_eq "report of a killed run exits 130 (interrupted)" $? 130
R="$TMP/killed/results.json"
check "results.json written" test -s "$R"
check "marked interrupted" jq -e '.manifest.interrupted == true and .interrupted == true' "$R"
ok_recs=$(jq -s '[.[] | select(.kind=="measured" and .error==null)] | length' "$TMP/killed/requests.jsonl")
check_ge "at least ten records" "$(wc -l <"$TMP/killed/requests.jsonl")" 10
check_eq "every completed record counted" "$(jq .summary.completed "$R")" "$ok_recs"

# A corrupt line and a cut last line: skipped, named, the rest counted.
cp -r "$TMP/one" "$TMP/bad"
J="$TMP/bad/requests.jsonl"
n=$(wc -l <"$J")
{ head -n 2 "$J"; echo '{"id": "not a record"'; tail -n +3 "$J"; head -n 1 "$J" | head -c 100; } >"$TMP/bad/j2"
mv "$TMP/bad/j2" "$J"
"$BIN" report --quiet "$TMP/bad" 2>"$TMP/bad.err"
brc=$?
check "report of a damaged file exits 0 or 3 (not 1: it is read) ($brc)" test $brc -eq 0 -o $brc -eq 3
check "the corrupt line is named (line 3)" grep -q 'requests.jsonl: line 3:' "$TMP/bad.err"
check "the cut last line is named" grep -q "line $((n + 2)): cut short" "$TMP/bad.err"
check_eq "skipped lines in the manifest" \
  "$(jq '.manifest.input | [.requests_skipped, .requests_truncated_tail] | tostring' "$TMP/bad/results.json")" '"[2,true]"'
check_eq "the other records all counted" "$(jq .summary.completed "$TMP/bad/results.json")" \
  "$(jq .summary.completed "$TMP/one/results.json")"
rm -rf "$TMP/bad" # damaged on purpose: not for the schema check at the end

# Not a run directory.
mkdir -p "$TMP/empty"
"$BIN" report "$TMP/empty" 2>"$TMP/empty.err"
check_eq "report of a directory without a run exits 1" $? 1
check "says why" grep -q 'no manifest.json' "$TMP/empty.err"
"$BIN" report 2>/dev/null
check_eq "report without DIR exits 1" $? 1

finish
