#!/usr/bin/env bash
# `serve --dialect deepseek-api` and the client reading it (docs/deepseek.md,
# "The DeepSeek API's dialect"): usage with prompt_cache_hit_tokens /
# prompt_cache_miss_tokens read as cached tokens, reasoning_content as
# reasoning tokens, `: keep-alive` comments while queued never taken for the
# first token, and finish_reason insufficient_system_resource as its own
# error class, counted and named by the audit.
. "$(dirname "$0")/lib.sh"
ran_ok() { [ "$1" -eq 0 ] || [ "$1" -eq 3 ]; }
KA_MS=20
# Two running sequences at most: the others wait in the queue and receive
# keep-alive comments every 20 ms.
start_server --dialect deepseek-api --profile deepseek-r1-8xh200 --time-scale 20 --max-num-seqs 2 \
  --keepalive-interval ${KA_MS}ms
MODEL=$(curl -sS "$BASE/v1/models" | jq -r '.data[0].id')
REQ='{"model":"'$MODEL'","messages":[{"role":"user","content":"a prompt long enough to fill more than one block of the cache, repeated twice so that the second request hits the blocks the first one left, word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word word"}],"max_tokens":12,"stream":true,"stream_options":{"include_usage":true}}'
for i in 1 2; do
  curl -sSN -H 'Content-Type: application/json' --data-binary "$REQ" "$BASE/v1/chat/completions" >"$TMP/s$i"
done
usage() { grep '^data: {' "$TMP/$1" | sed 's/^data: //' | jq -c 'select(.usage) | .usage'; }
u1=$(usage s1)
u2=$(usage s2)
check_eq "hit + miss = prompt_tokens" "$(jq '.prompt_cache_hit_tokens + .prompt_cache_miss_tokens' <<<"$u2")" \
  "$(jq .prompt_tokens <<<"$u2")"
check_eq "first request: no hit" "$(jq .prompt_cache_hit_tokens <<<"$u1")" 0
check "second request hits the cache: $u2" jq -e '.prompt_cache_hit_tokens > 0' <<<"$u2"
check "reasoning_content streamed" grep -q '"reasoning_content":"' "$TMP/s1"
check "reasoning tokens in usage: $u1" jq -e '.completion_tokens_details.reasoning_tokens > 0' <<<"$u1"
# Overload (a 503 for capacity elsewhere): a 200 stream cut short.
code=$(curl -sSN -o "$TMP/s3" -w '%{http_code}' -H 'Content-Type: application/json' \
  -H 'X-Infermeter-Fault: 503' --data-binary "$REQ" "$BASE/v1/chat/completions")
check_eq "overload answers 200" "$code" 200
check "overload ends with insufficient_system_resource" \
  grep -q '"finish_reason":"insufficient_system_resource"' "$TMP/s3"
check "overload stream ends with [DONE]" grep -q '^data: \[DONE\]' "$TMP/s3"

# The client against it: shared prefixes (cache hits), a queue (keep-alives).
"$BIN" run --url "$BASE" --concurrency 8 --requests 32 --warmup 0 --input-len 300 --output-len 24 \
  --prefix-groups 1 --prefix-len 200 --prefix-share 1 --retries 0 --yes --no-history \
  --out "$TMP/ds" >"$TMP/ds.out" 2>"$TMP/ds.err"
rc=$?
check "run exits 0 or 3: rc $rc $(tail -3 "$TMP/ds.err")" ran_ok $rc
R="$TMP/ds/requests.jsonl"
check_eq "every request answered" "$(jq -s 'map(select(.error==null)) | length' "$R")" 32
check "cached tokens read from prompt_cache_hit_tokens" jq -s -e 'map(.cached_tokens) | add > 0' "$R"
check "reasoning tokens counted" jq -s -e 'map(.reasoning_tokens) | add > 0' "$R"
check "the results' client-side cache hit rate is over 0" jq -e ".metrics.cache_client.hit_rate > 0" "$TMP/ds/results.json"
# Keep-alives are only sent to queued streams (no preemption here), each at
# least KA_MS after the previous one, the first at least KA_MS after the
# request arrived: a stream with k of them got its first token at least
# k * KA_MS after it was sent. Taking a keep-alive for the first token would
# give about KA_MS whatever k.
check_eq "no preemption (keep-alives precede every token)" \
  "$(metric vllm:num_preemptions_total | cut -d. -f1)" 0
check_ge "queued streams received keep-alives" "$(jq -s 'map(select(.keepalives > 0)) | length' "$R")" 1
check_eq "TTFT of each stream with k keep-alives >= k x ${KA_MS} ms" \
  "$(jq -s --argjson ka $((KA_MS * 1000000)) \
      '[.[] | select(.keepalives > 0 and .t_first != null) | select(.t_first - .t_send < .keepalives * $ka)] | length' "$R")" 0
check "keep-alives are no chunks" jq -s -e 'all(.[]; .n_chunks <= .output_tokens)' "$R"

# Overload through the client: its own error class, counted and audited.
"$BIN" run --url "$BASE" --requests 3 --rate 50 --warmup 0 --input-len 64 --output-len 8 --retries 0 \
  --header "X-Infermeter-Fault: 503" --yes --no-history --out "$TMP/ins" >/dev/null 2>"$TMP/ins.err"
check_eq "insufficient_system_resource is its own error class" \
  "$(jq -r -s 'map(.error) | unique | join(",")' "$TMP/ins/requests.jsonl")" insufficient_resource
check "the finish reason is kept" jq -s -e 'all(.[]; .finish_reason == "insufficient_system_resource")' \
  "$TMP/ins/requests.jsonl"
check "the audit names it" jq -e '[.. | strings | select(test("3 attempts ended with finish_reason insufficient_system_resource"))] | length > 0' \
  "$TMP/ins/results.json"
"$BIN" serve --dialect openai-ish --port 0 >/dev/null 2>"$TMP/bad.err"
check_eq "an unknown dialect exits 1" $? 1
check "the message lists the dialects" grep -q 'vllm or deepseek-api' "$TMP/bad.err"
finish
