#!/usr/bin/env bash
# `make run` (until `infermeter run` lands): start the built-in server on a
# free loopback port, stream one chat request through it, show what came
# back and what the server's /metrics says, then stop the server.
set -euo pipefail
BIN=${1:-build/infermeter}
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$tmp"' EXIT
mkfifo "$tmp/out"
"$BIN" serve --port 0 --truth-log "$tmp/truth.jsonl" >"$tmp/out" &
pid=$!
exec 3<"$tmp/out"
read -r -t 20 line <&3
base="http://${line#listening on http://}"
echo "$line  (simulated DeepSeek-V3 on 8xH200, real time)"
echo
echo "POST $base/v1/chat/completions  stream=true max_tokens=64:"
body='{"model":"deepseek-v3","stream":true,"max_tokens":64,"ignore_eos":true,
       "stream_options":{"include_usage":true},
       "messages":[{"role":"user","content":"Explain continuous batching in one paragraph."}]}'
start=$(date +%s%N)
curl -sN -H 'Content-Type: application/json' -d "$body" "$base/v1/chat/completions" |
  tee "$tmp/stream.sse" | grep --line-buffered '^data: {' | sed -u 's/^data: //' |
  jq --unbuffered -j 'if (.choices | length) > 0 then (.choices[0].delta.content // "")
                      else "\n\nusage: " + (.usage | tojson) + "\n" end'
echo "$(grep -v '^$' "$tmp/stream.sse" | tail -n1)"
end=$(date +%s%N)
echo "wall time: $(((end - start) / 1000000)) ms"
echo
echo "server /metrics (excerpt):"
curl -s "$base/metrics" | grep -E '^vllm:(generation_tokens_total|prompt_tokens_total|time_to_first_token_seconds_sum|kv_cache_usage_perc|cache_config_info)' | sed 's/^/  /'
kill -TERM $pid
wait $pid || true
echo
echo "ground truth (first 3 chunks, CLOCK_MONOTONIC ns):"
head -n 3 "$tmp/truth.jsonl" | sed 's/^/  /'
