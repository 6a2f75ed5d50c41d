#!/usr/bin/env bash
# `infermeter run` against `infermeter serve` on loopback: records agree with
# the server's ground truth, faults become error classes and retries, Ctrl-C
# keeps every finished record. The checks that depend on this machine's
# timing (chunks within 50 ms of the truth, the default run VALID) are in
# timing_run.sh (CTest label `timing`).
. "$(dirname "$0")/lib.sh"
RUN() { "$BIN" run --no-progress "$@"; }

# --- 1. counts, tokens and timestamps against the truth log
start_server --time-scale 20 --truth-log "$TMP/truth.jsonl"
RUN --url "$BASE" --rate 15 --duration 3s --warmup 1s --grace 5s --input-len 128 --output-len 32 \
  --ignore-eos --seed 7 --out "$TMP/r1" --quiet
rc=$?
check "run exits 0 or 3 (self-check) ($rc)" test $rc -eq 0 -o $rc -eq 3
stop_server
J="$TMP/r1/requests.jsonl"
R="$TMP/r1/results.json"
check "results.json schema" jq -e '.schema == "infermeter/results/v1"' "$R"
check "every line of requests.jsonl is JSON" jq -e . "$J"
n_lines=$(wc -l <"$J")
check_eq "one line per attempt" "$n_lines" "$(jq .metrics.client.attempts "$R")"
ok_measured=$(jq -s '[.[] | select(.kind=="measured" and .error==null)] | length' "$J")
check_eq "summary.completed = successful measured records" "$(jq .summary.completed "$R")" "$ok_measured"
check_eq "every success has 32 tokens in 32 chunks" \
  "$(jq -s '[.[] | select(.error==null) | .output_tokens == 32 and .n_chunks == 32 and (.chunks_us|length) == 32] | all' "$J")" true
check_eq "usage is the token source" "$(jq -r -s '[.[] | select(.error==null) | .output_tokens_source] | unique | join(",")' "$J")" usage
client_tokens=$(jq -s '[.[] | select(.error==null) | .output_tokens] | add' "$J")
truth_tokens=$(jq -s '[.[] | select(.type=="chunk" and (.id|startswith("im-"))) | .tokens] | add' "$TMP/truth.jsonl")
check_eq "tokens received = tokens the server wrote" "$client_tokens" "$truth_tokens"
check_eq "one truth request record per client success" \
  "$(jq -s '[.[] | select(.type=="request")] | length' "$TMP/truth.jsonl")" "$(jq -s '[.[] | select(.error==null)] | length' "$J")"
# Causality: each chunk arrives after the server wrote it (µs rounding: 1 µs).
check_eq "every chunk received after it was written" \
  "$(chunk_delays "$TMP/r1" "$TMP/truth.jsonl" | jq 'all(. >= -1000)')" true
check_eq "HDR histogram holds every success" "$(jq '.metrics.histograms.ttft_ns.count' "$R")" "$ok_measured"
check_eq "its exact minimum is the records' minimum TTFT" "$(jq '.metrics.histograms.ttft_ns.min' "$R")" \
  "$(jq -s '[.[] | select(.kind=="measured" and .error==null) | .t_first - .t_start] | min' "$J")"
check "vLLM keys present" jq -e '.summary | has("mean_ttft_ms") and has("p99_itl_ms") and has("request_throughput") and has("output_throughput")' "$R"
check "client check recorded" jq -e '.audit.client_check.verdict | test("VALID|INVALID")' "$R"
# Every figure is recomputable from requests.jsonl: the dispatch lag's p99
# is the nearest rank over the non-warm-up attempts, read from the
# histogram (within its 0.1 %), and the self-check shows the same figure.
p99=$(jq -s '[.[] | select(.kind != "warmup") | (.t_dispatch - .t_sched) / 1e6] | sort | .[((length * 0.99) | ceil) - 1]' "$J")
check "p99 dispatch lag = nearest rank over the records ($p99)" \
  jq -e --argjson p "$p99" '.metrics.client_ms.dispatch_lag.p99 as $h | ($h - $p) | fabs <= $p * 0.001 + 1e-6' "$R"
check "one dispatch-lag p99: the self-check's is the summary's" \
  jq -e '.metrics.client_ms.dispatch_lag.p99 == (.audit.client_check.checks[] | select(.name == "dispatch_lag_late_share") | .dispatch_lag_p99_ms)' "$R"
late=$(jq -s '[.[] | select(.kind != "warmup" and (.t_dispatch - .t_sched) > 1000000)] | length' "$J")
check "late dispatches counted over the same records ($late)" \
  jq -e --argjson n "$late" '.audit.client_check.checks[] | select(.name == "dispatch_lag_late_share") | .late == $n' "$R"
check_eq "summary.completed over measured records" \
  "$(jq '.metrics.counts.completed // .summary.completed' "$R")" "$(jq .summary.completed "$R")"
check "manifest records the seed and target" jq -e '.manifest.seed == 7 and .manifest.target.model == "deepseek-v3"' "$R"

# --- 2. faults become error classes; retries are separate records
start_server --time-scale 20 --fault 429:0.5@retry_after=0
RUN --url "$BASE" --rate 20 --duration 2s --warmup 0s --grace 5s --input-len 32 --output-len 4 \
  --retries 3 --seed 3 --out "$TMP/r2" --quiet
J="$TMP/r2/requests.jsonl"
check_ge "429s recorded" "$(jq -s '[.[] | select(.error=="http_429")] | length' "$J")" 1
check_ge "retries recorded as kind retry" "$(jq -s '[.[] | select(.kind=="retry" and .attempt >= 2)] | length' "$J")" 1
check_eq "a retry keeps its logical id and first schedule" \
  "$(jq -s '[.[] | select(.kind=="retry")] | map(.logical_id != .id and .t_sched_first < .t_sched) | all' "$J")" true
check "effective rate below raw rate" jq -e '.metrics.effective_rate.effective_qps < .metrics.effective_rate.raw_qps' "$TMP/r2/results.json"
stop_server

start_server --time-scale 20
for f in "reset@after_tokens=2:reset" "fin@after_tokens=2:truncated" "error-event@after_tokens=2:error_event" \
         "500:http_5xx" "400:http_4xx" "503:http_5xx"; do
  spec=${f%:*}
  want=${f##*:}
  RUN --url "$BASE" --requests 3 --rate 50 --warmup 0 --grace 5s --input-len 16 --output-len 8 \
    --header "X-Infermeter-Fault: $spec" --out "$TMP/f" --quiet
  check_eq "fault $spec -> $want" "$(jq -r -s 'map(.error) | unique | join(",")' "$TMP/f/requests.jsonl")" "$want"
  keep_outputs "$TMP/f" # $TMP/f is written again: validated against the schema at the end
done
# A stream that delivered tokens is never retried.
RUN --url "$BASE" --requests 2 --rate 50 --warmup 0 --grace 5s --input-len 16 --output-len 8 --retries 3 \
  --header "X-Infermeter-Fault: reset@after_tokens=2" --out "$TMP/f" --quiet
check_eq "no retry after tokens" "$(jq -s '[.[] | select(.kind=="retry")] | length' "$TMP/f/requests.jsonl")" 0

# --- 3. keep-alive off: a connection per request, TIME_WAIT rises
tw() { ss -tan state time-wait "( sport = :$PORT or dport = :$PORT )" 2>/dev/null | tail -n +2 | wc -l; }
before=$(tw)
RUN --url "$BASE" --requests 10 --rate 50 --warmup 0 --grace 5s --input-len 16 --output-len 2 \
  --keepalive off --out "$TMP/k" --quiet
check_eq "every attempt opened its connection" \
  "$(jq -s 'map(.conn_new) | all' "$TMP/k/requests.jsonl")" true
check_eq "10 distinct connections" "$(jq -s 'map(.conn) | unique | length' "$TMP/k/requests.jsonl")" 10
check_ge "TIME_WAIT sockets appear" "$(tw)" $((before + 5))
RUN --url "$BASE" --requests 10 --rate 50 --warmup 0 --grace 5s --input-len 16 --output-len 2 \
  --out "$TMP/k2" --quiet
check "keep-alive reuses connections" test "$(jq -s 'map(.conn) | unique | length' "$TMP/k2/requests.jsonl")" -lt 10

# Connection: close from the server (its connection-close fault): TIME_WAIT
# builds up on the server's side, which closes first.
stop_server
start_server --time-scale 20 --fault connection-close
before=$(tw)
RUN --url "$BASE" --requests 10 --rate 50 --warmup 0 --grace 5s --input-len 16 --output-len 2 \
  --out "$TMP/cc" --quiet
check_eq "server-closed connections: one per request" \
  "$(jq -s 'map(.conn) | unique | length' "$TMP/cc/requests.jsonl")" 10
check_ge "TIME_WAIT rises under Connection: close" "$(tw)" $((before + 5))

# --- threads: the schedule is dealt across loops, ids stay unique
RUN --url "$BASE" --requests 40 --rate 200 --warmup 0 --grace 5s --input-len 16 --output-len 2 \
  --threads 2 --seed 5 --out "$TMP/t" --quiet
check_eq "40 attempts from 2 threads" "$(wc -l <"$TMP/t/requests.jsonl")" 40
check_eq "unique ids" "$(jq -s 'map(.id) | unique | length' "$TMP/t/requests.jsonl")" 40
check_eq "the union is the schedule of one thread with the same seed" \
  "$(jq -s -c 'map(.t_sched) | sort' "$TMP/t/requests.jsonl")" \
  "$(RUN --url "$BASE" --requests 40 --rate 200 --warmup 0 --grace 5s --input-len 16 --output-len 2 \
      --seed 5 --out "$TMP/t1" --quiet >/dev/null; jq -s -c 'map(.t_sched) | sort' "$TMP/t1/requests.jsonl")"

# --- entropy injection (docs/metrics.md §6): per-request parameters, in bounds,
# reproducible from the seed
for k in 1 2; do
  RUN --url "$BASE" --schedule ramp --rate 20 --rate-end 80 --duration 1s --warmup 0 --grace 5s \
    --input-len 16 --output-len 2 --perturb --temperature 0.7 --top-p 0.9 --seed 11 --out "$TMP/pt$k" --quiet
done
P="$TMP/pt1/requests.jsonl"
check "temperature varies across requests" jq -s -e '[.[].temperature] | unique | length > 5' "$P"
check "bounds: temperature in [0.1, 1.0], top_p in [0.1, 0.9]" \
  jq -s -e 'map(.temperature >= 0.1 and .temperature <= 1.0 + 1e-9 and .top_p >= 0.1 and .top_p <= 0.9 + 1e-9) | all' "$P"
check_eq "same seed, same parameters per request" \
  "$(jq -s -c 'sort_by(.id) | map([.temperature, .top_p])' "$P")" \
  "$(jq -s -c 'sort_by(.id) | map([.temperature, .top_p])' "$TMP/pt2/requests.jsonl")"

# --- SLO verdict in the exit status (as k6): 99 when an SLO fails
# (closed loop: its dispatch lag is ~0, so the verdict cannot be INVALID)
RUN --url "$BASE" --requests 5 --concurrency 1 --warmup 0 --input-len 16 --output-len 4 \
  --slo ttft=1us --out "$TMP/s" --quiet
rc=$?
# 3 outranks 99: a client too slow to send on time (a sanitizer build on a
# small machine) is INVALID before any SLO is judged.
check "failed SLO exits 99 (3 when the client self-check was INVALID) ($rc)" test $rc -eq 99 -o $rc -eq 3
check "attainment recorded" jq -e '.metrics.slo.attainment.ttft == 0' "$TMP/s/results.json"

# --- 4. Ctrl-C: dispatching stops, finished records stay, exit 130
"$BIN" run --url "$BASE" --rate 20 --duration 60s --warmup 0 --grace 5s --input-len 16 --output-len 8 \
  --no-progress --quiet --out "$TMP/c" &
pid=$!
# Wait (without sleeping) until three attempts are on disk.
timeout 30 tail -F "$TMP/c/requests.jsonl" 2>/dev/null | head -n 3 >/dev/null
kill -INT $pid
wait $pid
check_eq "interrupted run exits 130" $? 130
check_ge "finished records kept" "$(wc -l <"$TMP/c/requests.jsonl")" 3
check "results.json written and marked interrupted" jq -e '.manifest.interrupted == true' "$TMP/c/results.json"
check "every kept line parses" jq -e . "$TMP/c/requests.jsonl"
# A second signal aborts what is still in flight (recorded as aborted).
"$BIN" run --url "$BASE" --concurrency 2 --duration 60s --warmup 0 --grace 60s --input-len 16 \
  --output-len 100000 --ignore-eos --no-progress --quiet --out "$TMP/c2" &
pid=$!
for _ in $(seq 1 400); do # round trips through the server, not sleeps
  [ "$(metric vllm:num_requests_running)" = 2 ] && break
done
kill -INT $pid
kill -INT $pid
wait $pid
check_eq "second Ctrl-C: exit 130" $? 130
check_eq "second Ctrl-C: in-flight requests recorded aborted" \
  "$(jq -s '[.[] | select(.kind=="aborted" and .error=="aborted")] | length' "$TMP/c2/requests.jsonl")" 2
stop_server

# --- a server that freezes mid-run: the closed loop still ends at
# duration + grace (not at the 30 s idle timeout), stuck requests aborted
start_server --time-scale 20
"$BIN" run --url "$BASE" --concurrency 2 --duration 2s --warmup 0 --grace 1s --input-len 16 \
  --output-len 100000 --ignore-eos --no-progress --quiet --out "$TMP/z" &
pid=$!
for _ in $(seq 1 400); do # round trips through the server, not sleeps
  [ "$(metric vllm:num_requests_running)" = 2 ] && break
done
kill -STOP "$SERVER_PID"
timeout 20 tail --pid=$pid -f /dev/null
check "run against a frozen server ended within 20 s" test $? -eq 0
kill -CONT "$SERVER_PID"
wait $pid
check_ge "the stuck requests are recorded aborted" \
  "$(jq -s '[.[] | select(.kind=="aborted" and .error=="aborted")] | length' "$TMP/z/requests.jsonl")" 1
stop_server

# --- 5. bad input: clear errors, exit 1; an unreachable target: exit 2
# A remote target: the plan is printed, then the reachability check, and
# only a reachable target gets the --yes question (issue 30); no load is
# sent before (192.0.2.1 is TEST-NET-1, never routed: unreachable).
timeout 30 "$BIN" run --url http://192.0.2.1:9 --requests 3 </dev/null >/dev/null 2>"$TMP/err"
check_eq "an unreachable remote target without --yes exits 2" $? 2
check "the plan is printed" grep -q 'plan for http://192.0.2.1:9: 3 requests' "$TMP/err"
check "no question before the reachability check" bash -c "! grep -q -- 'add --yes' '$TMP/err'"
timeout 10 "$BIN" run --url http://192.0.2.1:9 --requests 3 --yes --max-total-tokens 100 </dev/null >/dev/null 2>"$TMP/err"
check_eq "--max-total-tokens refuses a bigger plan" $? 1
RUN --rate -3 >/dev/null 2>"$TMP/err"
check_eq "bad --rate exits 1" $? 1
check "message names the flag" grep -q -- '--rate' "$TMP/err"
RUN --url http://127.0.0.1:1 --requests 1 --out "$TMP/u" >/dev/null 2>"$TMP/err"
check_eq "unreachable target exits 2" $? 2
check "unreachable message" grep -q unreachable "$TMP/err"

finish
