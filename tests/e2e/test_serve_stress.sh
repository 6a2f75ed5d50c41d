#!/usr/bin/env bash
# The server under churn: many streams queued and receiving keep-alive
# comments while clients give up mid-stream (short client timeouts), so
# writes fail inside token and keep-alive callbacks. Under the sanitizer
# build any use-after-free or leak fails the test (lib.sh checks the server's
# exit and stderr).
. "$(dirname "$0")/lib.sh"

start_server --time-scale 50 --max-num-seqs 8 --keepalive-interval 20ms
"$BIN" run --url "$BASE" --rate 400 --duration 3s --warmup 0 --grace 2s --input-len 64 \
  --output-len 200 --ignore-eos --timeout ttft=40ms,idle=20ms --no-progress --quiet --out "$TMP/r"
check_ge "client timeouts happened" \
  "$(jq -s '[.[] | select(.error=="timeout_ttft" or .error=="timeout_idle")] | length' "$TMP/r/requests.jsonl")" 10
check_ge "some requests still succeeded" \
  "$(jq -s '[.[] | select(.error==null)] | length' "$TMP/r/requests.jsonl")" 1
aborts=0
for _ in $(seq 1 200); do # each try is a round trip through the server's loop
  aborts=$(metric infermeter_sim_client_aborts_total)
  [ "${aborts%.*}" -ge 10 ] && break
done
check_ge "server saw the clients leave" "${aborts%.*}" 10
check_eq "server healthy" "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/health")" 200
running=1
for _ in $(seq 1 400); do
  running=$(metric vllm:num_requests_running)
  waiting=$(metric vllm:num_requests_waiting)
  [ "$running" = 0 ] && [ "$waiting" = 0 ] && break
done
check_eq "every abandoned request left the engine" "$running/$waiting" "0/0"
stop_server

finish
