#!/usr/bin/env bash
# run --shard i/N --start-at TIME and infermeter merge (docs/distributed.md):
# two shards run at once against one server on loopback, then merged, give
# the run of one process with the same seed: the union of the scheduled
# times equals its schedule exactly, the counts are equal, the merged
# histograms' counts are the sums of the shards'; merge refuses other
# plans, names missing shards and merges the rest with --partial. No check
# depends on timing.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || exit 77
# A run ends 0, or 3 when the machine is too busy for a valid self-check.
RUN() { run_ok "$@"; }

start_server --time-scale 50
COMMON=(--url "$BASE" --rate 40 --requests 80 --warmup 0s --grace 5s --input-len 256
        --output-len 8 --ignore-eos --seed 11 --yes)
RUN "${COMMON[@]}" --out "$TMP/one"

# Two shards at once, one agreed start (one as unix seconds, one as RFC 3339).
T=$(( $(date +%s) + 2 ))
RFC=$(date -u -d "@$T" +%Y-%m-%dT%H:%M:%SZ)
RUN "${COMMON[@]}" --shard 1/2 --start-at "$RFC" --out "$TMP/s1" &
P1=$!
RUN "${COMMON[@]}" --shard 0/2 --start-at "$T" --threads 2 --out "$TMP/s0"
wait $P1
"$BIN" merge "$TMP/s0" "$TMP/s1" --out "$TMP/m" --quiet 2>"$TMP/merge.err"
rc=$?
check "merge exits 0 or 3 ($rc): $(head -c 500 "$TMP/merge.err")" test $rc -eq 0 -o $rc -eq 3

sched() { jq -s -c 'map(select(.kind != "retry") | .t_sched) | sort' "$1/requests.jsonl"; }
check_eq "the union of the shards' schedules is the one-process schedule" "$(sched "$TMP/m")" \
  "$(sched "$TMP/one")"
n0=$(wc -l <"$TMP/s0/requests.jsonl")
n1=$(wc -l <"$TMP/s1/requests.jsonl")
check_eq "the shards' records add up to the run's" "$((n0 + n1))" "$(wc -l <"$TMP/one/requests.jsonl")"
check "both shards sent some ($n0, $n1)" test "$n0" -gt 0 -a "$n1" -gt 0
check_eq "each stage 0 started at the agreed instant" \
  "$(jq -r 'select(.event=="t0") | .wall_start_ns' "$TMP/s0/stages.jsonl" "$TMP/s1/stages.jsonl" | sort -u)" \
  "${T}000000000"
check_eq "one plan digest" "$(jq -r .shard.plan_digest "$TMP/s0/manifest.json")" \
  "$(jq -r .shard.plan_digest "$TMP/s1/manifest.json")"
check_eq "merged records carry their shard" \
  "$(jq -s -c 'group_by(.shard) | map([.[0].shard, length])' "$TMP/m/requests.jsonl")" "[[0,$n0],[1,$n1]]"
check_eq "attempt ids are unique over the shards" \
  "$(jq -s 'map(.id) | unique | length' "$TMP/m/requests.jsonl")" "$((n0 + n1))"
check_eq "merged completed = one process's" "$(jq .metrics.counts.completed "$TMP/m/results.json")" \
  "$(jq .metrics.counts.completed "$TMP/one/results.json")"
hist_counts() { jq -c '.metrics.histograms | to_entries | map({(.key): .value.count}) | add' "$1/results.json"; }
check_eq "merged histogram counts = the sum of the shards'" "$(hist_counts "$TMP/m")" \
  "$(jq -c -n --argjson a "$(hist_counts "$TMP/s0")" --argjson b "$(hist_counts "$TMP/s1")" \
     '$a | with_entries(.value += $b[.key])')"
check_eq "merged threads = 2 + 1 (the self-check sees every shard's)" \
  "$(jq -r 'select(.event=="start") | .threads' "$TMP/m/stages.jsonl")" 3
check_eq "manifest.merged names both shards" \
  "$(jq -c '[.manifest.merged.count, [.manifest.merged.shards[].index], .manifest.merged.incomplete]' "$TMP/m/results.json")" \
  '[2,[0,1],null]'
# report OUT recomputes the merged results.
jq -S 'del(.generated_at)' "$TMP/m/results.json" >"$TMP/r1.json"
"$BIN" report "$TMP/m" --quiet --no-html >/dev/null 2>&1
jq -S 'del(.generated_at)' "$TMP/m/results.json" >"$TMP/r2.json"
check "report OUT reproduces merge's results.json" cmp -s "$TMP/r1.json" "$TMP/r2.json"

# A missing shard: named; --partial merges the rest, marked incomplete.
"$BIN" merge "$TMP/s0" --out "$TMP/p" --quiet 2>"$TMP/miss.err"
check_eq "a missing shard: exit 1" "$?" 1
check "the missing shard is named" grep -q "shards missing: 1" "$TMP/miss.err"
"$BIN" merge "$TMP/s0" --out "$TMP/p" --quiet --partial 2>/dev/null
check_eq "--partial: exit 130 (incomplete)" "$?" 130
check_eq "--partial: incomplete names it" "$(jq -r .manifest.merged.incomplete "$TMP/p/results.json")" \
  "shard 1 lost"
check_eq "--partial: shard 0's records" "$(jq .metrics.counts.completed "$TMP/p/results.json")" \
  "$(jq .metrics.counts.completed "$TMP/s0/results.json")"

# Another plan (another seed) is refused.
RUN "${COMMON[@]}" --seed 12 --requests 4 --shard 1/2 --out "$TMP/other"
"$BIN" merge "$TMP/s0" "$TMP/other" --out "$TMP/x" --quiet 2>"$TMP/plan.err"
check_eq "different plans: exit 1" "$?" 1
check "different plans: said" grep -q "different plans" "$TMP/plan.err"
"$BIN" merge "$TMP/one" --out "$TMP/x" --quiet 2>/dev/null
check_eq "not a shard: exit 1" "$?" 1

# A closed loop splits --concurrency and --requests C/N (remainder to shard 0).
CL=(--url "$BASE" --concurrency 3 --requests 9 --warmup 0s --output-len 4 --ignore-eos --seed 3
    --yes)
RUN "${CL[@]}" --shard 0/2 --out "$TMP/c0"
RUN "${CL[@]}" --shard 1/2 --out "$TMP/c1"
check_eq "closed loop: requests split 5 + 4" \
  "$(wc -l <"$TMP/c0/requests.jsonl") $(wc -l <"$TMP/c1/requests.jsonl")" "5 4"

# Bad input: a clear message and exit 1.
for bad in "--shard 2/2 --seed 1" "--shard 0/2" "--shard x --seed 1" "--start-at yesterday" \
           "--start-at 2026-12-02T04:00:00"; do
  # shellcheck disable=SC2086
  "$BIN" run --url "$BASE" --requests 1 --yes $bad --out "$TMP/bad" >/dev/null 2>"$TMP/bad.err"
  check_eq "run $bad: exit 1" "$?" 1
  check "run $bad: says why" grep -qE "shard|start-at" "$TMP/bad.err"
done
"$BIN" merge --out "$TMP/x" >/dev/null 2>&1
check_eq "merge without directories: exit 1" "$?" 1
"$BIN" run --shard 0/2 --seed 1 --requests 1 --out "$TMP/bad" >/dev/null 2>"$TMP/bad.err"
check_eq "--shard without --url (a built-in server per shard): exit 1" "$?" 1
check "... says why" grep -q "share one server" "$TMP/bad.err"
"$BIN" run --url "$BASE" --shard 1/2 --seed 1 --concurrency 3 --threads 2 --requests 4 --yes \
  --out "$TMP/bad" >/dev/null 2>"$TMP/bad.err"
check_eq "a closed-loop share below --threads: exit 1" "$?" 1
"$BIN" run --url "$BASE" --shard 0/2 --seed 1 --sweep rate=1,2 --duration 1s --yes \
  --out "$TMP/bad" >/dev/null 2>"$TMP/bad.err"
check_eq "--shard with a sweep that may stop early (no --sweep-all): exit 1" "$?" 1
check "... says why and the way out" grep -q "give --sweep-all so that every shard runs every stage" \
  "$TMP/bad.err"

stop_server
finish
