#!/usr/bin/env bash
# Sweeps under mpirun -np 2 (docs/distributed.md "Stages under MPI"):
# every stage starts on both ranks at one agreed instant (its t0 line says
# so, on both ranks, with rank 0's clock even when rank 1's is 3 ms off),
# the merged per-stage schedules equal a one-process sweep's of the same
# seed exactly; --sweep rate=auto is decided on rank 0 from the merged
# figures and both ranks run the rates rank 0 announced, and the sweep ends
# by itself; --shard still refuses rate=auto with the reason; a rank killed
# in the middle of a sweep leaves directories that `merge --partial`
# recovers. Skipped (77) without mpirun or without MPI in the build.
. "$(dirname "$0")/lib.sh"
MPI_TEST=test_mpi_sweep
. "$(dirname "$0")/mpi_lib.sh"

start_server --time-scale 50

# (c) --shard cannot decide rate=auto: no communication between shards.
"$BIN" run --url "$BASE" --sweep rate=auto --shard 0/2 --start-at "$(date +%s)" --seed 1 \
  --duration 2s --yes --quiet --out "$TMP/refused" 2>"$TMP/refused.err"
check_eq "--shard with rate=auto: exit 1" "$?" 1
check "--shard with rate=auto: the reason and the way out ($(cat "$TMP/refused.err"))" \
  grep -q 'give the rates explicitly (--sweep rate=1,2,4), or run the shards as one MPI job' \
  "$TMP/refused.err"

# (a) An explicit sweep over three stages.
COMMON=(--url "$BASE" --sweep rate=20,40,60 --requests 40 --warmup 0s --grace 5s
        --input-len 128 --output-len 8 --ignore-eos --seed 23 --yes --no-progress --quiet)
"$BIN" run "${COMMON[@]}" --out "$TMP/one" 2>"$TMP/one.err"
rc=$?
check "one process: exit 0 or 3 ($rc): $(head -c 300 "$TMP/one.err")" okrc $rc
"${MPIRUN[@]}" -np 2 "$BIN" run "${COMMON[@]}" --out "$TMP/mpi" --clock-offset-inject 3ms \
  >"$TMP/mpi.out" 2>&1
rc=$?
check "mpirun -np 2 sweep: exit 0 or 3 ($rc): $(tail -c 1500 "$TMP/mpi.out")" okrc $rc
t0s() { jq -c -s 'map(select(.event == "t0") | [.stage, .wall_start_ns, .agreed_start])' "$1/stages.jsonl"; }
check_eq "every stage started at the agreed instant on both ranks (rank 0's clock)" \
  "$(t0s "$TMP/mpi/rank-1")" "$(t0s "$TMP/mpi/rank-0")"
check_eq "three stages, each agreed" "$(t0s "$TMP/mpi/rank-0" | jq -c 'map([.[0], .[2]])')" \
  '[[0,true],[1,true],[2,true]]'
check "each stage's instant later than the stage before's end" jq -e -s \
  '[.[] | select(.event == "t0") | .wall_start_ns] | . == sort and (unique | length) == 3' \
  "$TMP/mpi/rank-0/stages.jsonl"
# One machine, one CLOCK_MONOTONIC: rank 1's clock is shifted 3 ms, the
# measured offset corrects it, so each stage starts within the offset's
# error (rtt/2) + 0.5 ms on both ranks.
rtt=$(jq .shard.clock_rtt_ns "$TMP/mpi/rank-1/manifest.json")
mono() { jq -c -s 'map(select(.event == "t0") | .t0_monotonic_ns)' "$1/stages.jsonl"; }
worst=$(jq -n --argjson a "$(mono "$TMP/mpi/rank-0")" --argjson b "$(mono "$TMP/mpi/rank-1")" \
  '[range(0; $a | length) | ($a[.] - $b[.]) | fabs] | max')
check "every stage starts together on the monotonic clock (worst $worst ns, rtt $rtt ns)" \
  test "$worst" -le $(( rtt / 2 + 500000 ))
sched() { jq -s -c 'map(select(.kind != "retry")) | group_by(.stage) | map(map(.t_sched) | sort)' \
  "$1/requests.jsonl"; }
check_eq "MPI sweep: each merged stage's schedule is the one-process stage's" \
  "$(sched "$TMP/mpi")" "$(sched "$TMP/one")"
check_eq "MPI sweep: three stages merged" "$(sched "$TMP/mpi" | jq length)" 3
check_eq "MPI sweep: completed per stage = one process's" \
  "$(jq -c '[.stages[].metrics.counts.completed]' "$TMP/mpi/results.json")" \
  "$(jq -c '[.stages[].metrics.counts.completed]' "$TMP/one/results.json")"

# (b) rate=auto: rank 0 decides from the merged figures and announces each
# stage; both ranks run exactly the stages it announced, and it ends.
"${MPIRUN[@]}" -np 2 "$BIN" run --url "$BASE" --sweep rate=auto --sweep-steps 2 --concurrency 4 \
  --duration 2s --warmup 0s --grace 5s --input-len 64 --output-len 8 --ignore-eos --seed 29 \
  --yes --no-progress --out "$TMP/auto" >"$TMP/auto.out" 2>&1
rc=$?
check "rate=auto under mpirun: exit 0 or 3, within the time limit ($rc): $(tail -c 1500 "$TMP/auto.out")" \
  okrc $rc
labels() { jq -c -s 'map(select(.event == "start") | .label)' "$1/stages.jsonl"; }
announced=$(sed -n 's/^infermeter: MPI: stage [0-9]* \(rate=[^,]*\), on every rank at .*/\1/p' \
  "$TMP/auto.out" | jq -R . | jq -c -s '["throughput,concurrency=4"] + .')
check_eq "rate=auto: rank 0 announced the throughput stage then two rates" \
  "$(jq length <<<"$announced")" 3
check_eq "rate=auto: rank 0 ran the stages it announced" "$(labels "$TMP/auto/rank-0")" "$announced"
check_eq "rate=auto: rank 1 ran the same stages" "$(labels "$TMP/auto/rank-1")" "$announced"
check_eq "rate=auto: the same rates in both ranks' plans" \
  "$(jq -c -s 'map(select(.event == "start") | .params.rate)' "$TMP/auto/rank-1/stages.jsonl")" \
  "$(jq -c -s 'map(select(.event == "start") | .params.rate)' "$TMP/auto/rank-0/stages.jsonl")"
for k in 0 1; do
  check "rate=auto: rank $k's run ended, not interrupted" jq -e -s \
    'map(select(.event == "run_end" and .interrupted == false)) | length == 1' \
    "$TMP/auto/rank-$k/stages.jsonl"
done
# The rates come from the merged throughput stage: 1/3 and 2/3 of the
# throughput the merged results report for it, to 3 significant digits
# (workload/stages.h im_sweep_plan_auto; one rank's own share would give
# about half).
thr=$(jq '.stages[0].summary.request_throughput' "$TMP/auto/results.json")
check "rate=auto: the rates are 1/3 and 2/3 of the merged throughput ($thr req/s): $announced" \
  jq -e -n --argjson t "$thr" --argjson a "$announced" \
  '[1, 2] | all(. as $k | ($a[$k] | ltrimstr("rate=") | tonumber) as $r
                | (($r - $t * $k / 3) | fabs) <= 0.005 * $t * $k / 3)'

# (d) A rank killed during stage 1 of a sweep: the job ends (no hang),
# stage 0 of both ranks is on disk, merge --partial names the rank.
"${MPIRUN[@]}" -np 2 "$BIN" run --url "$BASE" --sweep rate=10,20 --duration 8s --warmup 0s \
  --output-len 8 --ignore-eos --seed 31 --yes --no-progress --quiet --out "$TMP/kill" \
  >"$TMP/kill.out" 2>&1 &
MP=$!
in_stage_1() { jq -e -s 'any(.event == "t0" and .stage == 1)' "$TMP/kill/rank-1/stages.jsonl"; }
pid=$(mpi_kill_when "$TMP/kill" 1 in_stage_1)
check "found rank 1's process in stage 1" test -n "$pid"
mpi_check_aborted $MP sweep
both0=$(jq -s 'map(select(.event == "end" and .stage == 0) | .scheduled) | add' \
  "$TMP/kill/rank-0/stages.jsonl" "$TMP/kill/rank-1/stages.jsonl")
check "merge of an aborted sweep: stage 0 whole, both ranks' ($both0 scheduled)" \
  jq -e --argjson n "$both0" '$n > 0 and .stages[0].metrics.counts.scheduled == $n' \
  "$TMP/kill/results.json"
check "merge of an aborted sweep: stage 0 has both shards' records" jq -e -s \
  'map(select(.stage == 0) | .shard) | unique == [0, 1]' "$TMP/kill/requests.jsonl"

# (e) A rank that cannot run (its directory is taken by a file) leaves at
# once: rank 0 runs stage 0, hears at its end that rank 1 left, stops there
# and says why; the job ends by itself with rank 1's status.
mkdir -p "$TMP/left"
: >"$TMP/left/rank-1"
"${MPIRUN[@]}" -np 2 "$BIN" run --url "$BASE" --sweep rate=20,40 --requests 10 --warmup 0s \
  --output-len 8 --ignore-eos --seed 37 --yes --no-progress --out "$TMP/left" >"$TMP/left.out" 2>&1
rc=$?
check "a rank that left: the job ends with exit 1 ($rc): $(tail -c 600 "$TMP/left.out")" test $rc -eq 1
check "a rank that left: rank 0 says why its sweep stops" \
  grep -q 'the run stops: rank 1 left the run before stage 0 ended' "$TMP/left.out"
check "a rank that left: rank 0 ran stage 0 only, and ended" jq -e -s \
  'map(select(.event == "start")) | length == 1' "$TMP/left/rank-0/stages.jsonl"

stop_server
finish
