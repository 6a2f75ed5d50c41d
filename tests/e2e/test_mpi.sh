#!/usr/bin/env bash
# mpirun -np 2 infermeter run (docs/distributed.md) against one server on
# loopback: the merged scheduled times equal a one-process run's of the same
# seed exactly, the counts are equal, --shard 0/2 + --shard 1/2 + merge give
# the MPI result, an injected clock offset is measured within its stated
# error (half the round trip) and corrected, and a rank killed mid-run
# leaves directories that `merge --partial` turns into results marked
# incomplete. Skipped (77) without mpirun or without MPI in the build. The
# latency comparison (medians within 20 %) is in timing_mpi.sh.
. "$(dirname "$0")/lib.sh"
MPI_TEST=test_mpi
. "$(dirname "$0")/mpi_lib.sh"

start_server --time-scale 50
COMMON=(--url "$BASE" --rate 40 --requests 80 --warmup 0s --grace 5s --input-len 256
        --output-len 8 --ignore-eos --seed 11 --yes --no-progress --quiet)
"$BIN" run "${COMMON[@]}" --out "$TMP/one" 2>"$TMP/one.err"
rc=$?
check "one process: exit 0 or 3 ($rc): $(head -c 300 "$TMP/one.err")" okrc $rc

"${MPIRUN[@]}" -np 2 "$BIN" run "${COMMON[@]}" --out "$TMP/mpi" --clock-offset-inject 3ms \
  >"$TMP/mpi.out" 2>&1
rc=$?
check "mpirun -np 2: exit 0 or 3 ($rc): $(tail -c 1500 "$TMP/mpi.out")" okrc $rc
check_eq "--quiet under MPI: one Verdict line (the merged run's), with its exit status" \
  "$(sed 's/\x1b\[[0-9;]*m//g' "$TMP/mpi.out" | grep '^Verdict: ' | sed 's/(exit \([0-9]*\)).*/\1/')" \
  "$( [ $rc -eq 0 ] && echo "Verdict: PASS $rc" || echo "Verdict: FAIL $rc")"
check "each rank wrote its directory" test -s "$TMP/mpi/rank-0/requests.jsonl" -a \
  -s "$TMP/mpi/rank-1/requests.jsonl"
sched() { jq -s -c 'map(select(.kind != "retry") | .t_sched) | sort' "$1/requests.jsonl"; }
check_eq "MPI: the merged schedule is the one-process schedule" "$(sched "$TMP/mpi")" \
  "$(sched "$TMP/one")"
check_eq "MPI: completed = one process's" "$(jq .metrics.counts.completed "$TMP/mpi/results.json")" \
  "$(jq .metrics.counts.completed "$TMP/one/results.json")"
check_eq "MPI: manifest.merged, clock mpi" \
  "$(jq -c '[.manifest.merged.count, [.manifest.merged.shards[] | .index, .clock]]' "$TMP/mpi/results.json")" \
  '[2,[0,"mpi",1,"mpi"]]'
# The injected +3 ms on rank 1: its offset to rank 0 is -3 ms within rtt/2
# (+ 50 µs for the reads of the clock).
off=$(jq .shard.clock_offset_ns "$TMP/mpi/rank-1/manifest.json")
rtt=$(jq .shard.clock_rtt_ns "$TMP/mpi/rank-1/manifest.json")
err=$(( off + 3000000 ))
check "injected offset recovered: offset $off ns, rtt $rtt ns" test "${err#-}" -le $(( rtt / 2 + 50000 ))
# ... and corrected: both ranks (one machine, one CLOCK_MONOTONIC) started
# stage 0 within the measurement's error (rtt/2) + 0.5 ms of each other.
d=$(jq -s '(.[0] - .[1])' <(jq 'select(.event=="t0") | .t0_monotonic_ns' "$TMP/mpi/rank-0/stages.jsonl") \
  <(jq 'select(.event=="t0") | .t0_monotonic_ns' "$TMP/mpi/rank-1/stages.jsonl"))
check "the ranks' starts agree on the monotonic clock ($d ns apart, rtt $rtt ns)" \
  test "${d#-}" -le $(( rtt / 2 + 500000 ))

# --shard 0/2 + --shard 1/2 + merge: the MPI result.
T=$(( $(date +%s) + 2 ))
"$BIN" run "${COMMON[@]}" --shard 1/2 --start-at "$T" --out "$TMP/s1" 2>/dev/null &
P1=$!
"$BIN" run "${COMMON[@]}" --shard 0/2 --start-at "$T" --out "$TMP/s0" 2>/dev/null
wait $P1
"$BIN" merge "$TMP/s0" "$TMP/s1" --out "$TMP/m" --quiet 2>/dev/null
ids() { jq -s -c 'map(select(.kind != "retry") | [.shard, .id, .t_sched]) | sort' "$1/requests.jsonl"; }
check_eq "shards + merge = MPI: every (shard, id, scheduled time)" "$(ids "$TMP/m")" "$(ids "$TMP/mpi")"
check_eq "shards + merge = MPI: plan digest" "$(jq -r .manifest.merged.plan_digest "$TMP/m/results.json")" \
  "$(jq -r .manifest.merged.plan_digest "$TMP/mpi/results.json")"

# A rank killed mid-run: the job ends (no hang), the directories remain,
# merge --partial names the rank and exits 130 (incomplete).
"${MPIRUN[@]}" -np 2 "$BIN" run --url "$BASE" --rate 20 --duration 30s --warmup 0s --seed 5 \
  --output-len 8 --ignore-eos --yes --no-progress --quiet --out "$TMP/kill" >"$TMP/kill.out" 2>&1 &
MP=$!
pid=$(mpi_kill_when "$TMP/kill" 1 test -s "$TMP/kill/rank-1/requests.jsonl")
check "found rank 1's process" test -n "$pid"
mpi_check_aborted $MP job
check "merge of an aborted job: rank 0's records kept" \
  jq -e '.metrics.counts.scheduled > 0' "$TMP/kill/results.json"

stop_server
finish
