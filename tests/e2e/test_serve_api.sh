#!/usr/bin/env bash
# The OpenAI-compatible API of `infermeter serve`: shapes, usage, SSE
# framing, errors, /metrics, /tokenize, truth log.
. "$(dirname "$0")/lib.sh"

start_server --time-scale 50 --truth-log "$TMP/truth.jsonl"

# --- plain endpoints
check_eq "/health status" "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/health")" 200
models=$(curl -s "$BASE/v1/models")
check_eq "/v1/models id" "$(jq -r '.data[0].id' <<<"$models")" deepseek-v3
check_eq "/v1/models object" "$(jq -r '.object' <<<"$models")" list
check_eq "/version engine" "$(curl -s "$BASE/version" | jq -r .engine)" infermeter-sim

# --- streaming chat with usage: valid SSE, ends in [DONE], usage is right
post /v1/chat/completions '{"model":"deepseek-v3","messages":[{"role":"user","content":"Tell me a story about a robot."}],"stream":true,"max_tokens":40,"ignore_eos":true,"stream_options":{"include_usage":true}}' \
  -H 'X-Request-Id: chat-1' >"$TMP/chat.sse"
check_eq "stream status" "$(status)" 200
check_eq "last line is [DONE]" "$(grep -v '^$' "$TMP/chat.sse" | tail -n1)" "data: [DONE]"
grep '^data: {' "$TMP/chat.sse" | sed 's/^data: //' >"$TMP/chat.json"
check "every data event is JSON" jq -e . "$TMP/chat.json" >/dev/null
check_eq "objects are chat.completion.chunk" \
  "$(jq -r .object "$TMP/chat.json" | sort -u)" chat.completion.chunk
check_eq "first chunk carries the role" "$(head -n1 "$TMP/chat.json" | jq -r '.choices[0].delta.role')" assistant
usage=$(tail -n1 "$TMP/chat.json")
check_eq "usage chunk has empty choices" "$(jq '.choices | length' <<<"$usage")" 0
check_eq "completion_tokens = max_tokens under ignore_eos" "$(jq .usage.completion_tokens <<<"$usage")" 40
check_ge "prompt_tokens counted" "$(jq .usage.prompt_tokens <<<"$usage")" 5
check_eq "total = prompt + completion" "$(jq '.usage.total_tokens == .usage.prompt_tokens + .usage.completion_tokens' <<<"$usage")" true
content_chunks=$(jq -r 'select(.choices[0].delta.content != null and .choices[0].delta.content != "") | .choices[0].delta.content' "$TMP/chat.json" | wc -l)
check_eq "one content chunk per token" "$content_chunks" 40
check_eq "finish_reason length on the last token chunk" \
  "$(jq -r 'select((.choices|length) > 0 and .choices[0].finish_reason != null) | .choices[0].finish_reason' "$TMP/chat.json")" length
text=$(jq -rj '.choices[0].delta.content // empty' "$TMP/chat.json")
check "generated text has words" grep -qE '[a-z]+ [a-z]+' <<<"$text"

# truth log: one chunk record per content chunk of chat-1, tokens sum to 40
sync_truth() { curl -s "$BASE/health" >/dev/null; }
sync_truth
# The log is block-buffered; the server flushes it when it stops (checked below).

# --- non-streaming chat and completions
resp=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":12,"ignore_eos":true}')
check_eq "non-stream object" "$(jq -r .object <<<"$resp")" chat.completion
check_eq "non-stream completion_tokens" "$(jq .usage.completion_tokens <<<"$resp")" 12
check "non-stream content is a non-empty string" jq -e '.choices[0].message.content | length > 0' <<<"$resp" >/dev/null
resp=$(post /v1/completions '{"prompt":"def fib(n):","max_tokens":7,"ignore_eos":true,"stream":true}')
check_eq "completions stream object" "$(grep '^data: {' <<<"$resp" | head -n1 | sed 's/^data: //' | jq -r .object)" text_completion
check_eq "completions stream token chunks" "$(grep -c '"text":"[^"]' <<<"$resp")" 7
resp=$(post /v1/completions '{"prompt":[1000,2000,3000,4000],"max_tokens":3,"ignore_eos":true}')
check_eq "token-id prompt counted" "$(jq .usage.prompt_tokens <<<"$resp")" 4

# continuous_usage_stats: every token chunk carries usage
resp=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}')
check_eq "continuous usage on each content chunk" \
  "$(grep '^data: {' <<<"$resp" | sed 's/^data: //' | jq -r 'select((.choices|length)>0 and .choices[0].delta.content != null and .choices[0].delta.content != "") | .usage.completion_tokens' | tr '\n' ' ')" "1 2 3 4 5 "

# Without ignore_eos the length is sampled (seeded) and finish_reason is stop or length
resp=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2000,"seed":3}')
n=$(jq .usage.completion_tokens <<<"$resp")
check "sampled length within bounds" test "$n" -ge 1 -a "$n" -le 2000
check_eq "finish_reason stop when below max_tokens" "$(jq -r .choices[0].finish_reason <<<"$resp")" stop
resp2=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2000,"seed":3}')
check_eq "same seed, same output" "$(jq -c .choices <<<"$resp2")" "$(jq -c .choices <<<"$resp")"

# --- errors: OpenAI-shaped JSON and the right status
post /v1/chat/completions '{"messages": [' >/dev/null
check_eq "bad JSON -> 400" "$(status)" 400
check_eq "error body shape" "$(jq -r '.error.type' "$TMP/body")" BadRequestError
post /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}' >/dev/null
check_eq "wrong type -> 400" "$(status)" 400
check "message names the field" grep -q temperature "$TMP/body"
post /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"n":2}' >/dev/null
check_eq "n=2 -> 400" "$(status)" 400
post /v1/chat/completions '{"model":"gpt-4","messages":[{"role":"user","content":"x"}]}' >/dev/null
check_eq "unknown model -> 404" "$(status)" 404
check_eq "unknown path -> 404" "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v2/nothing")" 404
check_eq "wrong method -> 405" "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/v1/completions")" 405
post /v1/completions '{"prompt":"hello","max_tokens":200000}' >/dev/null
check_eq "beyond max_model_len -> 400" "$(status)" 400
check "context-length message" grep -q "maximum context length" "$TMP/body"
head -c 5000000 /dev/zero | tr '\0' 'a' >"$TMP/big"
code=$(curl -s -o "$TMP/body" -w '%{http_code}' -H 'Expect: 100-continue' -H 'Content-Type: application/json' \
  --data-binary @"$TMP/big" "$BASE/v1/completions")
check_eq "body over --max-body with Expect -> 413" "$code" 413
code=$(curl -s -o "$TMP/body" -w '%{http_code}' -H 'Expect:' -H 'Content-Type: application/json' \
  --data-binary @"$TMP/big" "$BASE/v1/completions")
check_eq "body over --max-body without Expect -> 413, no reset" "$code" 413
# Garbage on a raw socket gets a 400 and the server lives on.
exec 5<>"/dev/tcp/127.0.0.1/$PORT"
printf 'HELLO WORLD\r\n\r\n' >&5
read -r -t 10 first <&5
exec 5<&- 5>&-
check_eq "garbage request -> 400" "${first%$'\r'}" "HTTP/1.1 400 Bad Request"
exec 5<>"/dev/tcp/127.0.0.1/$PORT"
printf 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n{"pr' >&5
exec 5<&- 5>&-
check_eq "server alive after abuse" "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/health")" 200

# --- pipelining and keep-alive on one connection
exec 5<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&5
resp=$(timeout 10 cat <&5)
exec 5<&- 5>&-
check_eq "two pipelined responses" "$(grep -c '^HTTP/1.1 200' <<<"$resp")" 2

# --- /tokenize
tok=$(post /tokenize '{"prompt":"Hello world, hello world."}')
check_eq "/tokenize count = len(tokens)" "$(jq '.count == (.tokens|length)' <<<"$tok")" true
check_ge "/tokenize count" "$(jq .count <<<"$tok")" 4

# --- /metrics: vLLM names and values that match what we did
m=$(curl -s "$BASE/metrics")
for name in vllm:num_requests_running vllm:num_requests_waiting vllm:kv_cache_usage_perc \
  vllm:prefix_cache_queries_total vllm:prefix_cache_hits_total vllm:num_preemptions_total \
  vllm:prompt_tokens_total vllm:generation_tokens_total vllm:request_success_total \
  vllm:time_to_first_token_seconds_bucket vllm:inter_token_latency_seconds_bucket \
  vllm:e2e_request_latency_seconds_count vllm:request_queue_time_seconds_sum \
  vllm:request_prefill_time_seconds_count vllm:request_decode_time_seconds_count \
  vllm:cache_config_info infermeter_sim_step_duration_seconds_count \
  infermeter_sim_hbm_bandwidth_utilization infermeter_sim_experts_touched \
  infermeter_sim_expert_imbalance infermeter_sim_faults_injected_total; do
  check "metric $name present" grep -q "^$name{" <<<"$m"
done
check_eq "running is 0 when idle" "$(grep '^vllm:num_requests_running{' <<<"$m" | awk '{print $2}')" 0
check "model_name label" grep -q 'model_name="deepseek-v3"' <<<"$m"
gen=$(grep '^vllm:generation_tokens_total{' <<<"$m" | awk '{print $2}')
check_ge "generation tokens counted" "$gen" 70
if command -v promtool >/dev/null; then
  promtool check metrics <<<"$m" >"$TMP/promtool.out" 2>&1
  other=$(grep -v 'metric names should not contain' "$TMP/promtool.out" | grep -v '^$' || true)
  check_eq "promtool finds no problem but vLLM's colons" "$other" ""
else
  fail "promtool not installed (Debian package prometheus)"
fi

# --- the truth log, complete once the server stops
stop_server
check "server exits 0 on SIGTERM" test $? -eq 0
n_chunks=$(jq -r 'select(.type=="chunk" and .id=="chat-1") | .tokens' "$TMP/truth.jsonl" | wc -l)
sum=$(jq -s '[.[] | select(.type=="chunk" and .id=="chat-1") | .tokens] | add' "$TMP/truth.jsonl")
check_eq "truth log: chunks of chat-1" "$n_chunks" 40
check_eq "truth log: tokens of chat-1" "$sum" 40
check_eq "truth log: request record" \
  "$(jq -r 'select(.type=="request" and .id=="chat-1") | .output_tokens' "$TMP/truth.jsonl")" 40
check "truth log: writes after deadlines" \
  jq -e -s '[.[] | select(.type=="chunk") | .ns >= .deadline_ns] | all' "$TMP/truth.jsonl"

finish
