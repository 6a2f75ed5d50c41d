#!/usr/bin/env bash
# Engine behaviour seen from outside: prefix caching, queueing with
# keep-alive comments, client disconnects, reasoning output, MTP chunks.
. "$(dirname "$0")/lib.sh"

# --- prefix caching: the same long prompt twice; the second hits and its
# prefill is shorter (engine-modelled times from the truth log).
start_server --time-scale 2 --truth-log "$TMP/truth.jsonl"
prompt=$(for i in $(seq 1 1500); do printf 'The quick brown fox %d jumps over the lazy dog. ' "$i"; done)
body=$(jq -cn --arg p "$prompt" '{prompt:$p, max_tokens:2, ignore_eos:true}')
r1=$(post /v1/completions "$body" -H 'X-Request-Id: pfx-1')
r2=$(post /v1/completions "$body" -H 'X-Request-Id: pfx-2')
p1=$(jq .usage.prompt_tokens <<<"$r1")
c1=$(jq .usage.prompt_tokens_details.cached_tokens <<<"$r1")
c2=$(jq .usage.prompt_tokens_details.cached_tokens <<<"$r2")
check_ge "long prompt" "$p1" 8000
check_eq "first request: nothing cached" "$c1" 0
check_ge "second request: most of the prompt cached" "$c2" $((p1 * 9 / 10))
salted=$(jq -cn --arg p "$prompt" '{prompt:$p, max_tokens:2, ignore_eos:true, cache_salt:"run-2"}')
c3=$(post /v1/completions "$salted" | jq .usage.prompt_tokens_details.cached_tokens)
check_eq "a different cache_salt does not hit" "$c3" 0
hits=$(metric vllm:prefix_cache_hits_total)
check_ge "prefix_cache_hits_total counts the hit" "${hits%.*}" "$c2"
stop_server
prefill() { jq -r "select(.type==\"request\" and .id==\"$1\") | .first_token_ns - .queue_exit_ns" "$TMP/truth.jsonl"; }
f1=$(prefill pfx-1)
f2=$(prefill pfx-2)
check "cached prefill at least 3x shorter ($f2 vs $f1 ns)" test $((f2 * 3)) -lt "$f1"

# --- queueing: one seat; the second stream waits and gets keep-alive comments
start_server --time-scale 20 --max-num-seqs 1 --keepalive-interval 100ms
long='{"messages":[{"role":"user","content":"a"}],"max_tokens":300,"ignore_eos":true,"stream":true}'
# A holds the only seat once its first event has arrived; then B is sent.
exec 4< <(curl -sN -H 'Content-Type: application/json' -d "$long" "$BASE/v1/chat/completions")
read -r -t 20 first_a <&4
post /v1/chat/completions '{"messages":[{"role":"user","content":"b"}],"max_tokens":3,"ignore_eos":true,"stream":true}' >"$TMP/b.sse"
{ echo "$first_a"; cat <&4; } >"$TMP/a.sse"
exec 4<&-
check_ge "queued stream received keep-alive comments" "$(grep -c '^: keep-alive' "$TMP/b.sse")" 1
check_eq "queued stream still completes" "$(grep -v '^$' "$TMP/b.sse" | tail -n1)" "data: [DONE]"
check_eq "running stream got no keep-alive" "$(grep -c '^: keep-alive' "$TMP/a.sse")" 0

# --- a client that disconnects aborts its request and frees its blocks
curl -sN -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"a"}],"max_tokens":100000,"ignore_eos":true,"stream":true}' \
  "$BASE/v1/chat/completions" | head -n 4 >/dev/null
aborts=0
for _ in $(seq 1 200); do # each try is a round trip through the server's loop, not a sleep
  aborts=$(metric infermeter_sim_client_aborts_total)
  [ "${aborts%.*}" -ge 1 ] && break
done
check_ge "client abort counted" "${aborts%.*}" 1
freed=$(metric infermeter_sim_aborted_kv_blocks_freed_total)
check_ge "its KV blocks freed" "${freed%.*}" 1
running=1
for _ in $(seq 1 200); do
  running=$(metric vllm:num_requests_running)
  [ "$running" = 0 ] && break
done
check_eq "nothing left running" "$running" 0
stop_server

# --- reasoning profile: reasoning_content first, then content
start_server --time-scale 50 --profile deepseek-r1-8xh200
resp=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"why?"}],"max_tokens":30,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}')
kinds=$(grep '^data: {' <<<"$resp" | sed 's/^data: //' | jq -r 'select((.choices|length)>0) | .choices[0].delta | if (.reasoning_content // "") != "" then "r" elif (.content // "") != "" then "c" else empty end' | uniq | tr -d '\n')
check_eq "reasoning then answer" "$kinds" rc
rt=$(grep '^data: {' <<<"$resp" | tail -n1 | sed 's/^data: //' | jq .usage.completion_tokens_details.reasoning_tokens)
check_ge "reasoning_tokens reported" "$rt" 1
check_eq "model id of the R1 profile" "$(curl -s "$BASE/v1/models" | jq -r '.data[0].id')" deepseek-r1
stop_server
start_server --time-scale 50 --profile deepseek-r1-8xh200 --reasoning-field reasoning
resp=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"why?"}],"max_tokens":10,"ignore_eos":true,"stream":true}')
check "newer vLLM field name 'reasoning'" grep -q '"delta":{"reasoning":' <<<"$resp"
stop_server

# --- MTP: several tokens per chunk
start_server --time-scale 50 --mtp 3 --mtp-accept 1 --truth-log "$TMP/mtp.jsonl"
resp=$(post /v1/chat/completions '{"messages":[{"role":"user","content":"go"}],"max_tokens":41,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' -H 'X-Request-Id: mtp-1')
chunks=$(grep -c '"delta":{"content":"[^"]' <<<"$resp")
check_eq "41 tokens in 11 chunks (1 + 10 x 4)" "$chunks" 11
check_eq "usage counts tokens, not chunks" "$(grep '^data: {' <<<"$resp" | tail -n1 | sed 's/^data: //' | jq .usage.completion_tokens)" 41
stop_server
check_eq "truth log chunk sizes" "$(jq -r 'select(.type=="chunk") | .tokens' "$TMP/mtp.jsonl" | sort -n | uniq -c | awk '{print $1"x"$2}' | tr '\n' ' ')" "1x1 10x4 "

finish
