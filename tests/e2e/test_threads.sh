#!/usr/bin/env bash
# --threads N runs one schedule on one clock: the same seed gives the same
# set of scheduled times whatever the thread count, every record's times are
# on the stage's origin, and connection ids are unique across threads. No
# check here depends on timing (the bounds below are seconds wide).
. "$(dirname "$0")/lib.sh"
# A run must end 0, or 3 when the self-check finds the machine too busy;
# a sanitizer (make test-tsan runs this file under ThreadSanitizer) exits
# otherwise and prints its report.
RUN() { run_ok "$@"; }
command -v jq >/dev/null || exit 77

start_server --time-scale 50 --truth-log "$TMP/truth.jsonl"
COMMON=(--url "$BASE" --rate 40 --duration 2s --warmup 0s --grace 5s --output-len 8
        --ignore-eos --seed 11 --input-len 2048)
RUN "${COMMON[@]}" --keepalive off --threads 1 --out "$TMP/t1"
RUN "${COMMON[@]}" --keepalive off --threads 2 --out "$TMP/t2"
RUN "${COMMON[@]}" --keepalive off --threads 3 --out "$TMP/t3"
RUN "${COMMON[@]}" --threads 2 --out "$TMP/t2k"
# Sessions on two threads: each loader's builder thread builds first and
# next turns while its loop reads; the tokenizer counts outputs there too.
RUN --url "$BASE" --sessions 4 --turns 3 --context-growth 256:1k --output-len 8 --ignore-eos \
  --requests 24 --duration 10s --warmup 0s --grace 5s --seed 5 --threads 2 --tokenizer built-in \
  --out "$TMP/s2"
# The progress line comes from a thread of the CLI reading the loaders'
# counters (not from a loop): its last line counts every request. (Not
# --quiet: that leaves only errors and the verdict line.)
"$BIN" run "${COMMON[@]}" --requests 20 --threads 2 --out "$TMP/p2" >/dev/null 2>"$TMP/p2.err"
rc=$?
check "progress run exits 0 or 3 ($rc)" test $rc -eq 0 -o $rc -eq 3
check "progress run: no sanitizer report" test -z "$(grep -E 'Sanitizer|runtime error' "$TMP/p2.err")"
check_eq "progress: the last line has sent 20/20 and done + errors 20" \
  "$(grep 'sent ' "$TMP/p2.err" | tail -n1 | sed -E 's/.*sent ([0-9]+)\/([0-9]+).*done ([0-9]+)  errors ([0-9]+).*/\1 \2 \3 \4/' | awk '{print $1, $2, $3 + $4}')" "20 20 20"
stop_server
sched() { jq -s -c '[.[] | select(.attempt == 1) | .t_sched] | sort' "$1/requests.jsonl"; }
s1=$(sched "$TMP/t1")
check "one thread recorded requests" test "$(jq length <<<"$s1")" -gt 10
check_eq "--threads 2 schedules the same t_sched set as --threads 1" "$(sched "$TMP/t2")" "$s1"
check_eq "--threads 3 schedules the same t_sched set as --threads 1" "$(sched "$TMP/t3")" "$s1"
for d in t2 t3; do
  J="$TMP/$d/requests.jsonl"
  # One origin: a shard that started late would dispatch before its t_sched
  # (negative lag) or carry times outside the schedule.
  check_eq "$d: every t_dispatch >= t_sched - 1 ms" \
    "$(jq -s '[.[] | .t_dispatch >= .t_sched - 1000000] | all' "$J")" true
  check_eq "$d: every t_sched in [0, duration]" \
    "$(jq -s '[.[] | .t_sched >= 0 and .t_sched <= 2000000000] | all' "$J")" true
  check_eq "$d: every t_start >= t_dispatch" "$(jq -s '[.[] | .t_start >= .t_dispatch] | all' "$J")" true
  # keepalive off: one connection per attempt, so conn ids are all distinct.
  check_eq "$d: every attempt that got a status has a connection id" \
    "$(jq -s '[.[] | select(.http_status != null and .http_status > 0) | .conn != null] | all' "$J")" true
  check_eq "$d: connection ids unique across threads" \
    "$(jq -s '[.[] | select(.conn != null) | .conn] | (length == (unique | length))' "$J")" true
  # Causality on the stage's one clock: every chunk reaches the client after
  # the server wrote it (the server logs CLOCK_MONOTONIC; 1 µs rounding). A
  # shard with its own, later origin would seem to receive chunks early.
  t0=$(jq .manifest.t0_monotonic_ns "$TMP/$d/results.json")
  check_eq "$d: every chunk received after the server wrote it" \
    "$(jq -s -n --argjson t0 "$t0" --slurpfile c "$J" --slurpfile t "$TMP/truth.jsonl" '
       ($t | map(select(.type == "chunk")) | group_by(.id)
           | map({key: .[0].id, value: (sort_by(.index) | map(.ns))}) | from_entries) as $w
       | [$c[] | select(.error == null) | . as $r | [range(0; $r.chunks_us | length)]
          | map($r.chunks_us[.] * 1000 + $r.t_start + $t0 - $w[$r.request_id][.])[] | . >= -1000]
       | all')" true
  check_eq "$d: attempt ids unique" "$(jq -s '[.[] | .id] | (length == (unique | length))' "$J")" true
done
check_eq "sessions on 2 threads: every turn succeeded" \
  "$(jq -s '[.[] | .error == null] | all and length == 24' "$TMP/s2/requests.jsonl")" true
# Keep-alive: a connection serves one thread only, so the records sharing a
# connection id all come from one shard (attempt id = 1 + shard + 2k).
J="$TMP/t2k/requests.jsonl"
check "t2k: connections were reused" \
  jq -s -e '([.[] | .conn] | unique | length) < length' "$J"
check_eq "t2k: each connection id belongs to one thread" \
  "$(jq -s '[group_by(.conn)[] | map((.id - 1) % 2) | unique | length == 1] | all' "$J")" true
# More threads than closed-loop slots: the spare thread idles, and the
# requests all go to the threads that have slots.
start_server --time-scale 50
RUN --url "$BASE" --concurrency 1 --threads 2 --requests 6 --warmup 0 --output-len 8 --out "$TMP/c1t2"
check_eq "--concurrency 1 --threads 2 --requests 6: 6 completed" \
  "$(jq .summary.completed "$TMP/c1t2/results.json")" 6
RUN --url "$BASE" --concurrency 3 --threads 2 --requests 7 --warmup 0 --output-len 8 --out "$TMP/c3t2"
check_eq "--concurrency 3 --threads 2 --requests 7: 7 completed" \
  "$(jq .summary.completed "$TMP/c3t2/results.json")" 7
stop_server
finish
