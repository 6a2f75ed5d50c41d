#!/usr/bin/env bash
# Real servers judged right (issue 29): each point against `infermeter serve
# --engine E`, the built-in server wearing engine E's identity (metric names,
# declaration endpoints, error wordings, streamed-error shape, connection
# behaviour; docs/serve.md "Engine imitation"):
#  1. server_config knows each engine's settings and reads what the engine
#     declares (manifest.server.engine): llama.cpp is never asked for
#     torch.compile; an unidentified, silent engine FAILs on the generic list;
#  2. --repeat drains by llama.cpp's gauges; where nothing says, a stated
#     fixed wait of 5 s;
#  3. llama.cpp's prefix-cache hit rate from its counters;
#  6. a context overflow is named, with the server's counts, for the first
#     (plain 400) and the later (streamed error) shapes of llama.cpp, and in
#     vLLM's, SGLang's and TGI's wordings;
#  7. all refused / all aborted against llama.cpp: exit 6, never PASS;
#  8. requests the client let go (--cancel-after, the end-of-run grace) say
#     so ("cancelled": true); cancelled warm-ups keep their kind and are
#     counted, not taken for cut streams;
#  9. cancelled_freed WARNs against a server that keeps abandoned requests
#     running (serve --leak-cancelled);
# 10. llama.cpp closes after each stream while announcing keep-alive: the
#     connections check says so.
. "$(dirname "$0")/lib.sh"

run_q() { "$BIN" run --no-progress --quiet --no-history "$@"; }
sc() { jq -r "[.. | objects | select(.id? == \"$2\")][0] | .$3" "$1/results.json"; }

FIX=$E2E_DIR/../fixtures/engines
# The imitation answers with the recorded fixtures' keys (tests/fixtures/engines).
same_keys() { # ENGINE PATH FIXTURE
  start_server --engine "$1" --time-scale 20
  check_eq "$1: $2 has the keys of $3" \
    "$(curl -sf "$BASE$2" | jq -c 'if type == "array" then .[0] else . end | keys')" \
    "$(jq -c 'if type == "array" then .[0] else . end | keys' "$FIX/$3")"
  stop_server
}
same_keys llamacpp /props llamacpp_props.json
same_keys llamacpp /slots llamacpp_slots.json
same_keys vllm /version vllm_version.json
same_keys sglang /get_server_info sglang_get_server_info.json
same_keys tgi /info tgi_info.json

# ---- 1. server_config per engine ----------------------------------------------
start_server --engine llamacpp --time-scale 20
check "llamacpp: /props declares slots and n_ctx" \
  bash -c "curl -sf '$BASE/props' | jq -e '.total_slots > 0 and .default_generation_settings.n_ctx > 0'"
check "llamacpp: /version is not found" \
  bash -c "test \"\$(curl -s -o /dev/null -w '%{http_code}' '$BASE/version')\" = 404"
check "llamacpp: /metrics has prompt_tokens_cached_total, no kv_cache_usage_ratio" \
  bash -c "curl -sf '$BASE/metrics' | grep -q '^llamacpp:prompt_tokens_cached_total ' && ! curl -sf '$BASE/metrics' | grep -q kv_cache_usage_ratio"
d=$TMP/llama
run_q --url "$BASE" --sessions 4 --turns 4 --duration 3s --warmup 0 --scrape-interval 200ms \
  --out "$d" >/dev/null 2>&1
check_eq "llamacpp: the engine read from /props" "$(jq -r '.manifest.server.engine | "\(.name) \(.from)"' "$d/results.json")" "llama.cpp /props"
check "llamacpp: its declared settings in the manifest" \
  jq -e '.manifest.server.engine.settings | .slots and .n_ctx and .weight_type == "Q8_0" and (.build | startswith("b10587"))' "$d/results.json"
check_eq "llamacpp: server_config WARN (batch sizes undeclared), not FAIL" "$(sc "$d" server_config status)" WARN
check "llamacpp: server_config never asks for torch_compile: $(sc "$d" server_config evidence)" \
  bash -c "! grep -q torch_compile <<<\"\$1\"" _ "$(sc "$d" server_config evidence)"
# 3. the prefix cache from its counters (uncached + cached = the queries).
check "llamacpp: the server's prefix-cache hit rate is a number" \
  jq -e '.metrics.server.prefix_cache_hit_rate > 0' "$d/results.json"
check "llamacpp: cache_metrics names the server's hit rate" \
  bash -c "grep -q 'from the server.s metrics' <<<\"\$1\"" _ "$(sc "$d" cache_metrics evidence)"
# 11. the samples no concept maps are kept under their own names.
check "llamacpp: its tokens/s gauges kept in metrics.server.unmapped" \
  jq -e '.metrics.server.unmapped | (."llamacpp:prompt_tokens_seconds" | type == "number") and (."llamacpp:predicted_tokens_seconds" | type == "number")' "$d/results.json"
# ... and the terminal's server line reads them from there.
gen=$(jq '.metrics.server.unmapped."llamacpp:predicted_tokens_seconds" * 10 | round / 10' "$d/results.json")
"$BIN" report "$d" 2>&1 | tr -s ' \n' '  ' >"$TMP/llama-report.txt"
check "llamacpp: the terminal's server line shows its tokens/s gauges ($gen generation tok/s)" \
  grep -Eq "Server \(its /metrics\):[^:]*its own gauges: [0-9.]+ generation tok/s, [0-9.]+ prompt tok/s" "$TMP/llama-report.txt"
# 10. every stream's connection is closed although it said keep-alive.
check "llamacpp: a connection per attempt, the connections check says why" \
  bash -c "grep -q 'a close after the stream while announcing keep-alive' <<<\"\$1\"" _ "$(sc "$d" connections fix)"
check_eq "llamacpp: connections check" "$(sc "$d" connections status)" WARN
stop_server

# Silent and unidentified (no declaration, no identity, no scrape): the
# generic list, torch_compile among them, FAILs.
start_server --engine llamacpp --declare none --time-scale 20
check "--declare none: /props not found" \
  bash -c "test \"\$(curl -s -o /dev/null -w '%{http_code}' '$BASE/props')\" = 404"
d=$TMP/silent
run_q --url "$BASE" --requests 8 --rate 20 --no-scrape --out "$d" >/dev/null 2>&1
check_eq "silent: no engine in the manifest" "$(jq -r '.manifest.server.engine // "none"' "$d/results.json")" none
check_eq "silent: server_config FAIL" "$(sc "$d" server_config status)" FAIL
check "silent: ... for torch_compile (the generic list)" \
  bash -c "grep -q 'torch_compile' <<<\"\$1\"" _ "$(sc "$d" server_config evidence)"
# ... identified by its metric names only: its own list, no torch.compile.
d=$TMP/silent-scraped
run_q --url "$BASE" --requests 8 --rate 20 --scrape-interval 200ms --out "$d" >/dev/null 2>&1
check_eq "silent, scraped: server_config FAIL (slots, n_ctx unknown)" "$(sc "$d" server_config status)" FAIL
check "silent, scraped: names slots, not torch_compile" \
  bash -c "grep -q 'slots' <<<\"\$1\" && ! grep -q torch_compile <<<\"\$1\"" _ "$(sc "$d" server_config evidence)"
stop_server

# SGLang declares everything in /get_server_info: nothing left to tag.
start_server --engine sglang --time-scale 20
d=$TMP/sglang
run_q --url "$BASE" --requests 8 --rate 20 --out "$d" >/dev/null 2>&1
check_eq "sglang: engine from /get_server_info" "$(jq -r '.manifest.server.engine.from' "$d/results.json")" /get_server_info
check_eq "sglang: server_config PASS" "$(sc "$d" server_config status)" PASS
stop_server

# vLLM declares its version and its cache config, not torch.compile: FAIL
# until it is tagged, then the rest is a WARN at most.
start_server --engine vllm --time-scale 20
d=$TMP/vllm
run_q --url "$BASE" --requests 8 --rate 20 --out "$d" >/dev/null 2>&1
check_eq "vllm: cache dtype from vllm:cache_config_info" "$(jq -r '.manifest.server.engine.settings.kv_cache_dtype' "$d/results.json")" auto
check_eq "vllm: server_config FAIL without torch_compile" "$(sc "$d" server_config status)" FAIL
run_q --url "$BASE" --requests 8 --rate 20 --tag torch_compile=on --out "$d" >/dev/null 2>&1
check_eq "vllm: tagged torch_compile: server_config WARN" "$(sc "$d" server_config status)" WARN
stop_server

# TGI and TensorRT-LLM: their own lists (CUDA graphs), not torch.compile.
for e in tgi trtllm; do
  start_server --engine "$e" --time-scale 20
  d=$TMP/$e
  run_q --url "$BASE" --requests 8 --rate 20 --out "$d" >/dev/null 2>&1
  check "$e: server_config asks for cuda_graphs, not torch_compile" \
    bash -c "grep -q cuda_graphs <<<\"\$1\" && ! grep -q torch_compile <<<\"\$1\"" _ "$(sc "$d" server_config evidence)"
  stop_server
done

# ---- 6 + 7. context overflow; all refused, all aborted ------------------------
start_server --engine llamacpp --max-model-len 256 --time-scale 20
d=$TMP/refused
"$BIN" run --no-progress --no-history --url "$BASE" --requests 12 --rate 20 --input-len 400 \
  --output-len 8 --no-context-check --retries 0 --out "$d" >"$TMP/refused.out" 2>&1
check_eq "all refused (llama.cpp): exit 6" "$?" 6
check_eq "all refused: 12 context_overflow" "$(jq '.metrics.errors.context_overflow' "$d/results.json")" 12
check "all refused: the first error gives the server's counts" \
  grep -Eq 'First error: context_overflow \(HTTP 400\): prompt [0-9]+ tokens, context 256 tokens' "$TMP/refused.out"
check "all refused: the later ones came as streamed errors, classed the same" \
  jq -se '[.[] | select(.status == 200 and .error == "context_overflow")] | length > 0' "$d/requests.jsonl"
check "all refused: the verdict never says PASS" bash -c "! grep -q '^Verdict: PASS' '$TMP/refused.out'"
stop_server

start_server --engine llamacpp --time-scale 1 --fault 'stall:1@token=2,ms=600000'
d=$TMP/aborted
"$BIN" run --no-progress --no-history --url "$BASE" --requests 6 --rate 20 --input-len 50 \
  --output-len 16 --grace 1s --retries 0 --out "$d" >"$TMP/aborted.out" 2>&1
check_eq "all aborted at the grace (llama.cpp): exit 6" "$?" 6
check "all aborted: the verdict names them" grep -q '^Verdict: FAIL (exit 6): failing server: 6 of 6 requests failed (aborted=6)' "$TMP/aborted.out"
check_eq "all aborted: each record says the client let go (cancelled: true)" \
  "$(jq -s -c 'map([.kind, .error, .cancelled]) | unique' "$d/requests.jsonl")" '[["aborted","aborted",true]]'
stop_server

# ---- 8. cancelled warm-ups are marked, not taken for cut streams ---------------
# --cancel-after picks warm-up requests too: they keep kind warmup (else they
# would join the measured window), carry "cancelled": true, and are counted.
start_server --engine llamacpp --time-scale 20
d=$TMP/wcancel
"$BIN" run --no-progress --no-history --url "$BASE" --requests 30 --warmup 10 --rate 20 \
  --input-len 50 --output-len 64 --retries 0 --cancel-after 8t:0.5 --out "$d" >"$TMP/wcancel.out" 2>&1
check "cancelled warm-ups: the run ends (exit $?)" test -s "$d/results.json"
check_eq "cancelled warm-ups: the 10 warm-up requests keep their kind" \
  "$(jq -s '[.[] | select(.kind == "warmup")] | length' "$d/requests.jsonl")" 10
nw=$(jq -s '[.[] | select(.kind == "warmup" and .cancelled == true)] | length' "$d/requests.jsonl")
check "cancelled warm-ups: some warm-ups were cancelled ($nw of 10)" test "$nw" -gt 0
check_eq "cancelled warm-ups: no warm-up ends without error, finish_reason or the mark" \
  "$(jq -s '[.[] | select(.kind == "warmup" and .error == null and .finish_reason == null and .cancelled != true)] | length' "$d/requests.jsonl")" 0
check_eq "cancelled warm-ups: none is a cut stream (errors.truncated)" "$(jq '.metrics.errors.truncated' "$d/results.json")" 0
check_eq "cancelled warm-ups: counted in kinds.warmup.cancelled and metrics.cancelled.warmup" \
  "$(jq -c '[.metrics.kinds.warmup.cancelled, .metrics.cancelled.warmup]' "$d/results.json")" "[$nw,$nw]"
check_eq "cancelled warm-ups: metrics.cancelled.requests counts the 20 measured only" \
  "$(jq '.metrics.cancelled.requests' "$d/results.json")" 20
check "cancelled warm-ups: the terminal names them" \
  grep -Eq "(Cancelled by the client:|\.\.\. and) $nw warm-up requests? \(not cut streams\)" "$TMP/wcancel.out"
stop_server

# The other engines' wordings, one request each (curl: the class is the
# record's, here the answer's shape).
for e in vllm sglang tgi; do
  start_server --engine "$e" --max-model-len 256 --time-scale 20
  d=$TMP/ovf-$e
  "$BIN" run --no-progress --no-history --url "$BASE" --requests 3 --rate 20 --input-len 400 \
    --output-len 8 --no-context-check --retries 0 --out "$d" >"$TMP/ovf-$e.out" 2>&1
  check "$e: overflow named with the counts: $(grep 'First error' "$TMP/ovf-$e.out")" \
    grep -Eq 'First error: context_overflow \(HTTP 4[0-9][0-9]\): prompt [0-9]+ tokens, context 256 tokens' "$TMP/ovf-$e.out"
  stop_server
done

# ---- 9. cancelled_freed detects a server that keeps abandoned requests -------
# serve --leak-cancelled counts each request whose client left as running
# for good: llama.cpp's requests_processing never drops back.
start_server --engine llamacpp --leak-cancelled --time-scale 20
d=$TMP/leak
run_q --url "$BASE" --requests 12 --rate 20 --input-len 200 --output-len 200 \
  --cancel-after 20t:1 --scrape-interval 200ms --out "$d" >/dev/null 2>&1
check_eq "leaking server: cancelled_freed WARN: $(sc "$d" cancelled_freed evidence)" \
  "$(sc "$d" cancelled_freed status)" WARN
check "leaking server: judged from a settled scrape, above the first" \
  bash -c "grep -Eq 'running requests: 0 at the first scrape, [1-9][0-9]* at a scrape [0-9.]+ s after the last request ended' <<<\"\$1\"" _ "$(sc "$d" cancelled_freed evidence)"
check "leaking server: /slots still shows them busy" \
  bash -c "curl -sf '$BASE/slots' | jq -e '[.[] | select(.is_processing)] | length > 0'"
stop_server

# ---- 5. reasoning counted from the stream (usage without reasoning_tokens) ----
start_server --engine llamacpp --profile deepseek-r1-8xh200 --time-scale 20
d=$TMP/reason
run_q --url "$BASE" --requests 12 --rate 20 --input-len 9000 --output-len 8 --reasoning-effort max \
  --out "$d" >/dev/null 2>&1
check "reasoning: llama.cpp's usage has no reasoning_tokens" \
  bash -c "curl -sN '$BASE/v1/chat/completions' -d '{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":4,\"stream\":true,\"stream_options\":{\"include_usage\":true}}' | grep '\"usage\"' | grep -vq reasoning_tokens"
check "reasoning: a stream that is all reasoning has its reasoning tokens in the record" \
  jq -se '[.[] | select(.kind == "measured" and .t_answer == null and .error == null)] | length > 0 and all(.reasoning_tokens > 0)' "$d/requests.jsonl"
check "reasoning: metrics.reasoning is not null" jq -e '.metrics.reasoning != null' "$d/results.json"
stop_server

# ---- 4. --tokenizer server tokenizes what the plan needs -----------------------
# One session: the first round is one prompt, not a ring of 256; one new
# session ready ahead, not 16; a first turn counted once; a later turn's
# history counted only while its target is ahead (829 calls to /tokenize
# for this run at first, 113 with the first round only, 111 for 17 requests
# with a ring of 16, 48 now). Against the imitation a prompt's search hits
# on its first count, so at most 3 calls per request (a later turn: its
# header, its message, the whole prompt), plus the first "Hello" and the
# one first turn prepared ahead (2).
start_server --time-scale 20
"$BIN" run --no-progress --no-history --url "$BASE" --tokenizer server --sessions 1 --turns 3 \
  --duration 2s --warmup 0 --out "$TMP/tok" >"$TMP/tok.out" 2>&1
n=$(sed -n 's/.*--tokenizer server: \([0-9]*\) requests to the target.s tokenizer.*/\1/p' "$TMP/tok.out")
nreq=$(jq -s 'length' "$TMP/tok/requests.jsonl")
check "--tokenizer server, one session: ${n:-?} /tokenize calls for $nreq requests, at most 3 each + 3" \
  test "${n:-99999}" -le $((3 * nreq + 3))
check_eq "--tokenizer server, sessions: each prompt's count is the server's (context_tokens = prompt_tokens)" \
  "$(jq -s '[.[] | select(.context_tokens != .prompt_tokens)] | length' "$TMP/tok/requests.jsonl")" 0
stop_server

# ---- 2. --repeat's drain ---------------------------------------------------------
start_server --engine llamacpp --time-scale 20
"$BIN" run --no-progress --no-history --url "$BASE" --duration 1s --rate 10 --warmup 0 --repeat 2 \
  --out "$TMP/rep" >"$TMP/rep.out" 2>&1
check "repeat (llama.cpp): drains by its gauges" \
  grep -q 'waiting until the server has drained: its running and waiting requests on /metrics (llamacpp)' "$TMP/rep.out"
stop_server
# A server that tells nothing in flight (the llama.cpp stand-in: no /metrics,
# no /slots): a stated fixed wait of 5 s, not 60.
rm -f "$TMP/lfifo"
mkfifo "$TMP/lfifo"
python3 "$E2E_DIR/llamacpp_server.py" >"$TMP/lfifo" 2>"$TMP/llama.err" &
LPID=$!
exec 5<"$TMP/lfifo"
read -r -t 20 line <&5 || fail "llamacpp_server.py did not start"
LBASE="http://127.0.0.1:${line##*:}"
"$BIN" run --no-progress --no-history --url "$LBASE" --duration 1s --rate 5 --warmup 0 --repeat 2 \
  --out "$TMP/rep2" >"$TMP/rep2.out" 2>&1
check "repeat (nothing says): a stated fixed wait of 5 s" \
  grep -q 'a fixed wait of 5.0 s between runs' "$TMP/rep2.out"
kill "$LPID" 2>/dev/null
wait "$LPID" 2>/dev/null
exec 5<&-
finish
