#!/usr/bin/env bash
# `vllm bench serve` command lines as vLLM's docs write them (random,
# sharegpt, sonnet and custom datasets; with and without a rate, a
# concurrency cap, warm-ups, percentiles) run on `infermeter run` against
# the built-in server; each result file is checked key by key against
# vLLM's definitions, recomputed in Python from the file's own per-request
# arrays (tests/e2e/vllm_keys.py). docs/migrating.md.
. "$(dirname "$0")/lib.sh"
KEYS="$E2E_DIR/vllm_keys.py"
command -v python3 >/dev/null 2>&1 || { echo "test_vllm_keys: python3 missing, skipped"; exit 0; }
start_server --time-scale 20
cd "$TMP" || exit 1

# vrun NAME ARGS...: the command line with --save-result into $TMP/NAME; the
# file's path in $F, stderr in $TMP/NAME.err.
vrun() {
  local name=$1
  shift
  "$BIN" run --base-url "$BASE" "$@" --save-result --result-dir "$TMP/$name" --disable-tqdm \
    --out "$TMP/$name.run" >"$TMP/$name.out" 2>"$TMP/$name.err"
  local rc=$?
  check "$name runs (exit 0, or 3 on a busy machine) ($rc): $(tail -n 3 "$TMP/$name.err")" \
    test $rc -eq 0 -o $rc -eq 3
  F=$(ls "$TMP/$name"/*.json 2>/dev/null | head -n 1)
}
# keys DESC ARGS...: vllm_keys.py on $F as one check.
keys() {
  local desc=$1
  shift
  local out
  out=$(python3 "$KEYS" "$F" "$@" 2>&1)
  check_eq "$desc: every key as vLLM defines it" "$out" ""
}

# 1. random with a shared prefix, vLLM's defaults for the rate (inf) with a concurrency cap,
# every percentile metric and three percentiles, goodput.
vrun random --backend openai-chat --endpoint /v1/chat/completions --dataset-name random \
  --random-input-len 256 --random-prefix-len 64 --random-output-len 24 --num-prompts 24 --max-concurrency 4 \
  --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99 \
  --goodput ttft:200 e2el:2000 --save-detailed
keys "random, burst, --max-concurrency 4" --num-prompts 24 --max-concurrency 4 \
  --percentiles 50,90,99 --metrics ttft,tpot,itl,e2el --goodput ttft:200,e2el:2000
check "vLLM's random prompt: the 64-token shared prefix, then 256 tokens" \
  jq -e '.input_lens | unique == [320]' "$F"
check "named as vLLM names it: inf, the concurrency" test -n "$(ls "$TMP"/random/openai-chat-infqps-concurrency4-deepseek-v3-*.json)"
check "the notice says vLLM's default rate and the cap" \
  grep -q "every request at once, at most 4 in flight (vLLM's default --request-rate inf)" "$TMP/random.err"
check "... and says nothing of warm-up (there is none)" test -z "$(grep -i warm "$TMP/random.err")"
check "the printed table has the three percentiles" \
  grep -qE '^P50 TTFT.*' "$TMP/random.out"
check "... P90 too" grep -qE '^P90 ITL' "$TMP/random.out"
check "no warm-up request was sent" jq -es 'map(select(.kind == "warmup")) | length == 0' \
  "$TMP/random.run/requests.jsonl"
# The checker fails on a wrong key: a p99 off by 10 % is caught.
jq '.p99_ttft_ms *= 1.1' "$F" >"$TMP/tampered.json"
python3 "$KEYS" "$TMP/tampered.json" --num-prompts 24 --max-concurrency 4 --percentiles 50,90,99 \
  --metrics ttft,tpot,itl,e2el --goodput ttft:200,e2el:2000 >"$TMP/tampered.out" 2>&1
check_eq "a tampered p99_ttft_ms is found" "$?" 1
check "... by name" grep -q "p99_ttft_ms" "$TMP/tampered.out"

# 2. sharegpt at a rate, with warm-ups: 15 prompts are 15 measured requests,
# the 2 warm-ups come on top.
python3 - "$TMP/sharegpt.json" <<'PY'
import json, sys
conv = []
for i in range(40):
    q = " ".join(f"question {i} word {k}" for k in range(20 + 7 * (i % 5)))
    a = " ".join(f"answer {k}" for k in range(8 + 3 * (i % 4)))
    conv.append({"id": str(i), "conversations": [{"from": "human", "value": q}, {"from": "gpt", "value": a}]})
json.dump(conv, open(sys.argv[1], "w"))
PY
vrun sharegpt --backend openai-chat --endpoint /v1/chat/completions --dataset-name sharegpt \
  --dataset-path "$TMP/sharegpt.json" --request-rate 20 --num-prompts 15 --num-warmups 2 \
  --save-detailed --seed 3
keys "sharegpt at 20 req/s with 2 warm-ups" --num-prompts 15 --rate 20
check "completed is --num-prompts (15), not 15 less a tenth" jq -e '.completed == 15' "$F"
check "2 warm-up requests were sent first" jq -es '[.[] | select(.kind == "warmup")] | length == 2' \
  "$TMP/sharegpt.run/requests.jsonl"
check "the notice says so" grep -q "2 warm-up requests sent first and excluded from the figures" \
  "$TMP/sharegpt.err"
check "named 20.0qps as vLLM's float rate" test -n "$(ls "$TMP"/sharegpt/openai-chat-20.0qps-deepseek-v3-*.json)"

# 3. sonnet: its lengths and shared prefix (synthetic text), no rate.
vrun sonnet --backend openai-chat --dataset-name sonnet --dataset-path sonnet.txt \
  --sonnet-input-len 300 --sonnet-output-len 20 --sonnet-prefix-len 100 --num-prompts 12 \
  --max-concurrency 3 --save-detailed
keys "sonnet, burst, --max-concurrency 3" --num-prompts 12 --max-concurrency 3
check "the prompts are 300 tokens" jq -e '.input_lens | unique == [300]' "$F"
check "the notice says the text is not the sonnet's" grep -q "not the lines of sonnet.txt" "$TMP/sonnet.err"

# 4. custom: a JSONL of prompts, vLLM's completions endpoint, a rate.
for i in $(seq 1 20); do
  printf '{"prompt": "Tell me about item %d and how it relates to the others in the list."}\n' "$i"
done >"$TMP/custom.jsonl"
vrun custom --backend vllm --endpoint /v1/completions --dataset-name custom \
  --dataset-path "$TMP/custom.jsonl" --custom-output-len 12 --num-prompts 10 --request-rate 40 \
  --save-detailed --percentile-metrics e2el --metric-percentiles 95
keys "custom at 40 req/s, e2el only, p95" --num-prompts 10 --rate 40 --metrics e2el --percentiles 95
check "the completions endpoint was driven" jq -e '.manifest.target.backend == "openai-completions"' \
  "$TMP/custom.run/results.json"
check "the printed table has P95 E2EL" grep -qE '^P95 E2EL' "$TMP/custom.out"
check "... and no TTFT section (--percentile-metrics e2el)" test -z "$(grep -E '^Mean TTFT' "$TMP/custom.out")"
"$BIN" report "$TMP/custom.run" --no-html >"$TMP/custom.rep" 2>&1
check "report DIR prints the same metrics (kept in the manifest)" \
  test -z "$(grep -E '^Mean TTFT' "$TMP/custom.rep")" -a -n "$(grep -E '^P95 E2EL' "$TMP/custom.rep")"

# 5. --save-result without --save-detailed: vLLM's summary keys only.
vrun summary --backend openai-chat --endpoint /v1/chat/completions --dataset-name random --random-input-len 64 --random-output-len 8 --num-prompts 10 \
  --request-rate 50
keys "summary only" --num-prompts 10 --rate 50 --summary-only
check "no per-request arrays" jq -e 'has("ttfts") or has("itls") or has("input_lens") | not' "$F"
check "no e2el keys (not in vLLM's default --percentile-metrics)" \
  jq -e '[keys[] | select(test("e2el"))] | length == 0' "$F"
check "only p99 (vLLM's default --metric-percentiles)" \
  jq -e '[keys[] | select(test("^p[0-9]"))] | sort == ["p99_itl_ms", "p99_tpot_ms", "p99_ttft_ms"]' "$F"
check "nothing to say: no notice" test -z "$(grep "vLLM's command line" "$TMP/summary.err")"
finish
