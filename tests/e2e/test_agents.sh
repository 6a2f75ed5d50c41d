#!/usr/bin/env bash
# Reasoning and agent workloads against `infermeter serve` (docs/agents.md):
#   - --reasoning-effort / --thinking reach the server (thinking off: no
#     reasoning at all; effort high reasons longer than low) and are
#     recorded per request;
#   - metrics.reasoning (TTFT vs TTFA, reasoning vs answer tokens, TPOT per
#     phase, share of E2E) is present, per context bucket, and `report DIR`
#     recomputes results.json byte for byte.
# Exit 3 (client self-check INVALID) is accepted: this machine is shared.
. "$(dirname "$0")/lib.sh"
RUN() { "$BIN" run --no-progress --quiet --no-history --url "$BASE" "$@"; }
ok_rc() { [ "$1" -eq 0 ] || [ "$1" -eq 3 ]; }

same_results() { # DIR: results.json before and after `report DIR`, generated_at aside
  grep -v '"generated_at"' "$1/results.json" >"$1/before"
  "$BIN" report --quiet "$1"
  grep -v '"generated_at"' "$1/results.json" >"$1/after"
  cmp -s "$1/before" "$1/after" && echo same || { diff "$1/before" "$1/after" | head -20 >&2; echo differ; }
}

start_server --time-scale 200 --profile deepseek-r1-8xh200

# --- reasoning: effort high vs low, thinking off
common=(--rate 20 --requests 40 --warmup 0 --output-len 600 --input-len 3000 --range-ratio 0.9)
RUN "${common[@]}" --reasoning-effort high --thinking on --out "$TMP/high"
rc=$?
check "reasoning run (high) exits 0 or 3 ($rc)" ok_rc $rc
RUN "${common[@]}" --reasoning-effort low --out "$TMP/low"
rc=$?
check "reasoning run (low) exits 0 or 3 ($rc)" ok_rc $rc
RUN "${common[@]}" --thinking off --out "$TMP/off"
rc=$?
check "reasoning run (off) exits 0 or 3 ($rc)" ok_rc $rc

check_eq "effort recorded per request" \
  "$(jq -r '.reasoning_effort' "$TMP/high/requests.jsonl" | sort -u)" high
check_eq "thinking recorded per request" "$(jq -r '.thinking' "$TMP/high/requests.jsonl" | sort -u)" true
check_eq "thinking off: no reasoning token anywhere" \
  "$(jq -s 'map(.reasoning_tokens) | add' "$TMP/off/requests.jsonl")" 0
check_eq "thinking off: no metrics.reasoning" "$(jq '.metrics.reasoning' "$TMP/off/results.json")" null
hi=$(jq '.metrics.reasoning.all.reasoning_tokens.mean' "$TMP/high/results.json")
lo=$(jq '.metrics.reasoning.all.reasoning_tokens.mean' "$TMP/low/results.json")
check "effort high reasons longer than low ($hi > $lo)" awk -v a="$hi" -v b="$lo" 'BEGIN { exit !(a > b) }'
R=$TMP/high/results.json
check_eq "every completed request reasoned" "$(jq '.metrics.reasoning | .requests == .completed' "$R")" true
check "TTFA after TTFT" jq -e '.metrics.reasoning.all | .ttfa_ms.p50 > .ttft_ms.p50' "$R"
check "reasoning share in (0, 1)" jq -e '.metrics.reasoning.all.reasoning_share | .p50 > 0 and .p50 < 1' "$R"
check "both phases have a TPOT" jq -e '.metrics.reasoning.all | .tpot_reasoning_ms.p50 > 0 and .tpot_answer_ms.p50 > 0' "$R"
check_eq "buckets 0-4K and 4-8K both hold requests" \
  "$(jq '[.metrics.reasoning.by_context[] | select(.n > 0) | .bucket] | join(",")' "$R")" '"0-4K,4-8K"'
check "reasoning + answer tokens = output tokens (usage)" jq -e '.metrics.reasoning.all | (.reasoning_tokens.mean + .answer_tokens.mean) > 0' "$R"
check_eq "report DIR recomputes results.json" "$(same_results "$TMP/high")" same

# --- agent chains: 3 hops, then a final answer, per session
start_server --time-scale 100
RUN --sessions 3 --agent-hops 3 --requests 24 --warmup 0 --input-len 300 --output-len 64 \
  --tool-latency 100ms --tool-result-len 200 --out "$TMP/agent"
rc=$?
check "agent run exits 0 or 3 ($rc)" ok_rc $rc
A=$TMP/agent/results.json
J=$TMP/agent/requests.jsonl
check_eq "6 chains of 4 turns" "$(jq -s 'group_by(.session) | map(length) | unique' "$J" | jq -c .)" "[4]"
check_eq "every chain: 3 tool-call turns, then a final answer" \
  "$(jq -s -c 'group_by(.session) | map(sort_by(.turn) | map(.finish_reason)) | unique' "$J")" \
  '[["tool_calls","tool_calls","tool_calls","length"]]'
check_eq "tools recorded per turn" "$(jq -r .tools "$J" | sort -u)" 2
check "each hop's prompt holds the previous one plus a tool result" jq -s -e \
  'group_by(.session) | map(sort_by(.turn) | . as $t | [range(1; length) | $t[.].prompt_tokens - $t[. - 1].prompt_tokens >= 200] | all) | all' "$J"
check_eq "metrics.agents: 6 complete chains, 18 tool calls" \
  "$(jq -c '.metrics.agents | [.chains, .chains_complete, .tool_calls]' "$A")" "[6,6,18]"
check_eq "per-hop rows 1..3 with 6 each" "$(jq -c '[.metrics.agents.per_hop[] | [.hop, .n]]' "$A")" \
  "[[1,6],[2,6],[3,6]]"
check "tool-call arguments have tokens" jq -e '.metrics.agents.per_hop | all(.args_tokens.p50 >= 4)' "$A"
check "time in tools >= 3 x 100 ms per chain" jq -e '.metrics.agents.per_chain.tool_ms.p50 >= 300' "$A"
check "model share in (0, 1)" jq -e '.metrics.agents.per_chain.model_share | .p50 > 0 and .p50 < 1' "$A"
check_eq "report DIR recomputes the agent run" "$(same_results "$TMP/agent")" same
# A server that answers at once (--tool-call-prob 0): chains of one turn.
start_server --time-scale 100 --tool-call-prob 0
RUN --sessions 2 --agent-hops 3 --requests 6 --warmup 0 --input-len 200 --output-len 16 --out "$TMP/agent0"
check_eq "no tool call: one-turn chains ending in text" \
  "$(jq -c '.metrics.agents | [.chains_complete, .tool_calls, .per_chain.hops.p50]' "$TMP/agent0/results.json")" "[6,0,0]"
"$BIN" run --agent-hops 2 --url "$BASE" 2>"$TMP/err"
check_eq "--agent-hops without sessions exits 1" $? 1
check "the message says why" grep -q -- "--sessions" "$TMP/err"

# --- cancellation: half the requests abandoned after 20 tokens
start_server --time-scale 20
RUN --rate 20 --requests 60 --warmup 0 --input-len 200 --output-len 200 --cancel-after 20t:0.5 \
  --out "$TMP/cancel"
rc=$?
check "cancel run exits 0 or 3 ($rc)" ok_rc $rc
C=$TMP/cancel/results.json
ncan=$(jq -s 'map(select(.kind == "cancelled")) | length' "$TMP/cancel/requests.jsonl")
check "some but not all requests cancelled ($ncan of 60)" test "$ncan" -gt 10 -a "$ncan" -lt 50
check_eq "cancelled records: no error, exactly 20 tokens" \
  "$(jq -s -c 'map(select(.kind == "cancelled") | [.error, .output_tokens]) | unique' "$TMP/cancel/requests.jsonl")" '[[null,20]]'
check_eq "metrics.cancelled counts them" "$(jq '.metrics.cancelled | [.requests, .cancelled] | @csv' "$C")" "\"60,$ncan\""
check_eq "cancelled are neither completed nor failed" \
  "$(jq '.summary.completed + (.metrics.counts.failed // 0)' "$C" 2>/dev/null || echo x)" "$((60 - ncan))"
# One more request first: by the time the server has answered it, its loop
# has read the disconnects that came before (the last cancelled stream's
# FIN arrives before this request's bytes).
curl -s "$BASE/v1/completions" -d '{"prompt": "x", "max_tokens": 1}' >/dev/null
running=$(curl -s "$BASE/metrics" | awk '/^vllm:num_requests_running/ {print $2}')
aborts=$(curl -s "$BASE/metrics" | awk -F'} ' '/^vllm:request_success_total.*finished_reason="abort"/ {print $2}')
check_eq "the server runs nothing after the run" "$running" 0
check_eq "the server aborted each cancelled request (client disconnect)" "$aborts" "$ncan"
# PASS, or WARN when the last scrape raced the last disconnect (the /metrics
# check above is the exact one).
check "the audit's cancelled_freed check reports the running counts" jq -e \
  '[.. | objects | select(.id? == "cancelled_freed")] | .[0] | (.status == "PASS" or .status == "WARN") and (.evidence | test("cancelled"))' "$C"
check_eq "report DIR recomputes the cancel run" "$(same_results "$TMP/cancel")" same
"$BIN" run --cancel-after 2parsecs --url "$BASE" 2>"$TMP/err"
check_eq "bad --cancel-after exits 1" $? 1
check "the message names the flag" grep -q -- "--cancel-after" "$TMP/err"

# --- structured output: valid JSON of the schema; planted invalid JSON counted
cat >"$TMP/schema.json" <<'JSON'
{"type": "object", "properties": {"title": {"type": "string"}, "score": {"type": "integer"},
 "ok": {"type": "boolean"}}, "required": ["title", "score"], "additionalProperties": false}
JSON
start_server --time-scale 100
RUN --rate 20 --requests 30 --warmup 0 --input-len 100 --output-len 4000 \
  --response-format "json_schema:$TMP/schema.json" --out "$TMP/json"
rc=$?
check "json_schema run exits 0 or 3 ($rc)" ok_rc $rc
check_eq "every answer fits the schema" "$(jq -s -c 'map(.error) | unique' "$TMP/json/requests.jsonl")" '[null]'
start_server --time-scale 100 --invalid-json-rate 0.3
RUN --rate 20 --requests 40 --warmup 0 --input-len 100 --output-len 4000 \
  --response-format json_object --out "$TMP/badjson"
bad=$(jq -s 'map(select(.error == "invalid_json")) | length' "$TMP/badjson/requests.jsonl")
check "planted invalid JSON counted as invalid_json ($bad of 40)" test "$bad" -ge 4 -a "$bad" -le 24
check_eq "the summary's error table counts them" "$(jq '.metrics.errors.invalid_json // .summary.errors.invalid_json' "$TMP/badjson/results.json")" "$bad"
check_eq "no other error" "$(jq -s -c 'map(.error) | unique' "$TMP/badjson/requests.jsonl")" '[null,"invalid_json"]'
check_eq "report DIR recomputes the structured-output run" "$(same_results "$TMP/badjson")" same
echo '[1, 2]' >"$TMP/notobj.json"
"$BIN" run --response-format "json_schema:$TMP/notobj.json" --url "$BASE" 2>"$TMP/err"
check_eq "a schema that is not an object exits 1" $? 1
check "the message names the file" grep -q "notobj.json" "$TMP/err"

# --- model mix over LoRA adapters
start_server --time-scale 20 --lora-modules a=/m/a,b=/m/b --lora-modules c=/m/c --max-loras 1
check_eq "adapters listed after the base model, their parent" \
  "$(curl -s "$BASE/v1/models" | jq -c '[.data[] | [.id, .parent]]')" \
  '[["deepseek-v3",null],["a","deepseek-v3"],["b","deepseek-v3"],["c","deepseek-v3"]]'
RUN --rate 20 --requests 40 --warmup 0 --input-len 100 --output-len 20 \
  --model-mix base=0.25,a=0.25,b=0.25,c=0.25 --out "$TMP/mix"
rc=$?
check "mix run exits 0 or 3 ($rc)" ok_rc $rc
check_eq "every request records its model" \
  "$(jq -r .model "$TMP/mix/requests.jsonl" | sort -u | tr '\n' ' ')" "a b c deepseek-v3 "
check_eq "every request succeeded (the adapters are served)" \
  "$(jq -s -c 'map(.error) | unique' "$TMP/mix/requests.jsonl")" '[null]'
check_eq "metrics.by_model has the four" "$(jq -c '.metrics.by_model | keys' "$TMP/mix/results.json")" \
  '["a","b","c","deepseek-v3"]'
check_eq "by_model counts add up" "$(jq '[.metrics.by_model[].n] | add' "$TMP/mix/results.json")" 40
check "the server exports vllm:lora_requests_info with max_lora" \
  grep -q 'vllm:lora_requests_info{max_lora="1",running_lora_adapters="",waiting_lora_adapters=""}' \
  <<<"$(curl -s "$BASE/metrics")"
swaps=$(curl -s "$BASE/metrics" | awk '/^infermeter_sim_lora_swaps_total/ {print $2}')
check "adapters were swapped in (one slot, three adapters: $swaps)" test "$swaps" -ge 3
check_eq "report DIR recomputes the mix run" "$(same_results "$TMP/mix")" same
"$BIN" run --model-mix a=x --url "$BASE" 2>"$TMP/err"
check_eq "a bad weight exits 1" $? 1

# --- a 128K-context session: beyond DeepSeek-V3's 4K native window
start_server --time-scale 50
check_eq "/version declares the native window and YaRN factor" \
  "$(curl -s "$BASE/version" | jq -c '.rope')" '{"native_window":4096,"type":"yarn","factor":40,"slowdown":1.5}'
RUN --sessions 2 --turns 4 --context-growth 2k:128k --output-len 32 --requests 8 --warmup 0 \
  --out "$TMP/long"
rc=$?
check "128K session exits 0 or 3 ($rc)" ok_rc $rc
check "the last turns reach 128K tokens" jq -s -e 'map(.prompt_tokens) | max >= 131000' "$TMP/long/requests.jsonl"
check_eq "requests in 0-4K and 32K+" \
  "$(jq -c '[.metrics.by_context[] | select(.n > 0) | [.bucket, .n]]' "$TMP/long/results.json")" \
  '[["0-4K",2],["32K+",6]]'
check_eq "the long-context check spans them" \
  "$(jq -c '.analysis.long_context | [.shortest_bucket, .longest_bucket]' "$TMP/long/results.json")" \
  '["0-4K","32K+"]'

# --- the shipped scenarios load and run against the built-in server (shortened)
"$BIN" run --no-progress --quiet --no-history --scenario scenarios/deepseek-r1-reasoning.json \
  --duration 4s --warmup 0 --rate 2 --output-len 48 --input-len 2000 --grace 60s \
  --slo ttft=60s,tpot=10s --out "$TMP/sc-r1"
rc=$?
check "deepseek-r1-reasoning.json runs (exit $rc)" ok_rc $rc
check "its requests reasoned, effort recorded" jq -e '.metrics.reasoning.requests > 0' "$TMP/sc-r1/results.json"
check_eq "its requests carry the effort and thinking" \
  "$(jq -r '[.reasoning_effort, .thinking] | @csv' "$TMP/sc-r1/requests.jsonl" | sort -u)" '"medium",true'
"$BIN" run --no-progress --quiet --no-history --scenario scenarios/agent-tool-chain.json \
  --duration 4s --warmup 0 --sessions 2 --output-len 128 --input-len 200 --tool-latency 50ms \
  --grace 60s --slo ttft=60s,tpot=10s --out "$TMP/sc-agent"
rc=$?
check "agent-tool-chain.json runs (exit $rc)" ok_rc $rc
# (max_tokens 64..192 leaves room for the calls' 16..48 argument tokens)
check "its chains made tool calls" jq -e '.metrics.agents.tool_calls > 0' "$TMP/sc-agent/results.json"

# --- the built-in server's profile and time scale (no --url), recorded
"$BIN" run --no-progress --quiet --no-history --serve-profile deepseek-r1-8xh200 \
  --serve-time-scale 50 --requests 4 --rate 20 --warmup 0 --output-len 8 --input-len 64 \
  --out "$TMP/scaled"
rc=$?
check "--serve-time-scale run (exit $rc)" ok_rc $rc
check_eq "the manifest keeps the time scale" \
  "$(jq '.server.version.time_scale' "$TMP/scaled/manifest.json")" 50
check_eq "and the profile" "$(jq -r '.server.version.profile' "$TMP/scaled/manifest.json")" \
  deepseek-r1-8xh200
"$BIN" run --no-progress --quiet --no-history --url "$BASE" --serve-time-scale 4 --requests 2 \
  --rate 20 --warmup 0 --output-len 8 --input-len 64 --out "$TMP/scaled-url" 2>"$TMP/err"
check "with --url it is ignored, with a note" grep -q "ignored with --url" "$TMP/err"
"$BIN" run --serve-time-scale 0 2>"$TMP/err"
check_eq "--serve-time-scale 0 exits 1" $? 1

# --- bad input: a clear message and exit 1
"$BIN" run --reasoning-effort extreme --url "$BASE" 2>"$TMP/err"
check_eq "unknown effort exits 1" $? 1
check "the message names the flag" grep -q -- "--reasoning-effort" "$TMP/err"
"$BIN" run --thinking maybe --url "$BASE" 2>"$TMP/err"
check_eq "bad --thinking exits 1" $? 1

finish
