#!/usr/bin/env bash
# Fault injection: statuses, stream faults by header, rate limiting,
# connection-close, engine-wide faults, and their counters.
. "$(dirname "$0")/lib.sh"
req='{"messages":[{"role":"user","content":"x"}],"max_tokens":20,"ignore_eos":true,"stream":true}'

start_server --time-scale 50 --fault 429:1@retry_after=7
curl -s -D "$TMP/h" -o "$TMP/body" -H 'Content-Type: application/json' -d "$req" "$BASE/v1/chat/completions"
check "429 status" grep -q '^HTTP/1.1 429' "$TMP/h"
check "Retry-After header" grep -qi '^Retry-After: 7' "$TMP/h"
check_eq "429 body" "$(jq -r .error.type "$TMP/body")" RateLimitError
check_eq "counted" "$(metric infermeter_sim_faults_injected_total 'kind="429"')" 1
stop_server

start_server --time-scale 50
for code in 500 503 400; do
  post /v1/chat/completions "$req" -H "X-Infermeter-Fault: $code" >/dev/null
  check_eq "header fault $code" "$(status)" "$code"
done
post /v1/chat/completions "$req" -H 'X-Infermeter-Fault: nonsense' >/dev/null
check_eq "bad fault header -> 400" "$(status)" 400

# reset after 3 tokens: curl sees a reset (exit 56), no [DONE]
post /v1/chat/completions "$req" -H 'X-Infermeter-Fault: reset@after_tokens=3' >"$TMP/reset.sse"
check_eq "reset: curl recv error" "$(cat "$TMP/curl.rc")" 56
check_eq "reset: 3 tokens arrived" "$(grep -c '"delta":{"content":"[^"]' "$TMP/reset.sse")" 3
check_eq "reset: no [DONE]" "$(grep -c 'DONE' "$TMP/reset.sse")" 0
# fin after 5 tokens: orderly close in the middle of the chunked body (curl 18)
post /v1/chat/completions "$req" -H 'X-Infermeter-Fault: fin@after_tokens=5' >"$TMP/fin.sse"
check_eq "fin: curl partial-transfer error" "$(cat "$TMP/curl.rc")" 18
check_eq "fin: 5 tokens" "$(grep -c '"delta":{"content":"[^"]' "$TMP/fin.sse")" 5
check_eq "fin: no [DONE]" "$(grep -c 'DONE' "$TMP/fin.sse")" 0
# error event after 2 tokens: an error object in the stream, then [DONE]
post /v1/chat/completions "$req" -H 'X-Infermeter-Fault: error-event@after_tokens=2' >"$TMP/err.sse"
check_eq "error-event: curl ok" "$(cat "$TMP/curl.rc")" 0
check_eq "error-event: error object" "$(grep '^data: {"error"' "$TMP/err.sse" | sed 's/^data: //' | jq .error.code)" 500
check_eq "error-event: then [DONE]" "$(grep -v '^$' "$TMP/err.sse" | tail -n1)" "data: [DONE]"
# stall: a pause before token 5 shows in the truth-free way: count is intact
post /v1/chat/completions "$req" -H 'X-Infermeter-Fault: stall@token=5,ms=200' >"$TMP/stall.sse"
check_eq "stall: all tokens arrive" "$(grep -c '"delta":{"content":"[^"]' "$TMP/stall.sse")" 20
check_eq "fault counters by kind" \
  "$(for k in reset fin error-event stall 500 503 400; do metric infermeter_sim_faults_injected_total "kind=\"$k\""; done | tr '\n' ' ')" \
  "1 1 1 1 1 1 1 "
check_eq "server alive" "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/health")" 200
stop_server

# rate limit: burst of 2, then 429 (time scale 1, so the bucket refills slowly)
start_server --rate-limit 0.01:2
codes=$(for i in 1 2 3; do curl -s -o /dev/null -w '%{http_code} ' -H 'Content-Type: application/json' -d '{"prompt":"x","max_tokens":1}' "$BASE/v1/completions"; done)
check_eq "token bucket" "$codes" "200 200 429 "
stop_server

# connection-close: every response says so and the server closes
start_server --time-scale 50 --fault connection-close
curl -s -D "$TMP/h" -o /dev/null "$BASE/health"
check "Connection: close header" grep -qi '^Connection: close' "$TMP/h"
n=$(curl -s -o /dev/null -w '%{num_connects}\n' "$BASE/health" "$BASE/health" | awk '{s+=$1} END {print s}')
check_eq "a new connection per request" "$n" 2
stop_server

# engine-wide faults are counted; kv-shrink forces preemptions under load
start_server --time-scale 20 --kv-blocks 64 --block-size 16 --fault kv-shrink@at=0s,fraction=0.25 \
  --fault hiccup@every=100ms,ms=10
pids=()
for i in 1 2 3 4 5 6; do
  curl -s -o /dev/null -H 'Content-Type: application/json' \
    -d '{"prompt":"hello there","max_tokens":120,"ignore_eos":true}' "$BASE/v1/completions" &
  pids+=($!)
done
wait "${pids[@]}"
check_ge "preemptions under a shrunken KV cache" "$(metric vllm:num_preemptions_total)" 1
check_eq "kv-shrink counted" "$(metric infermeter_sim_faults_injected_total 'kind="kv-shrink"')" 1
check_ge "hiccups counted" "$(metric infermeter_sim_faults_injected_total 'kind="hiccup"')" 1
check_eq "all six finished" "$(metric vllm:request_success_total 'finished_reason="length"')" 6
stop_server

finish
