#!/usr/bin/env bash
# vLLM's benchmark command line on `infermeter run` (docs/migrating.md):
# `vllm bench serve`'s flags translated, its flat result file written with
# --save-result (per-request arrays with --save-detailed) and read back the
# way vLLM's own scripts read it; flags infermeter cannot honour refused
# by name.
. "$(dirname "$0")/lib.sh"
start_server --time-scale 20
cd "$TMP" || exit 1
"$BIN" run --backend openai-chat --base-url "$BASE" --dataset-name random --random-input-len 128 \
  --random-output-len 16 --request-rate 20 --num-prompts 30 --num-warmups 0 --save-result \
  --save-detailed --result-dir "$TMP/res" --metadata tp=8 quant=fp8 --goodput ttft:500 tpot:50 \
  --disable-tqdm --out "$TMP/run" >"$TMP/out" 2>"$TMP/err"
rc=$?
check "vLLM's command line runs (exit 0, or 3 on a busy machine) ($rc)" test $rc -eq 0 -o $rc -eq 3
F=$(ls "$TMP"/res/openai-chat-20qps-deepseek-v3-*.json 2>/dev/null | head -n 1)
check "the file is named as vLLM names it" test -n "$F"
check "vLLM's setup keys" jq -e '.backend == "openai-chat" and .model_id == "deepseek-v3"
  and .num_prompts == 30 and .request_rate == 20 and .burstiness == 1 and .max_concurrency == null
  and .tp == "8" and .quant == "fp8" and (.date | test("^[0-9]{8}-[0-9]{6}$"))' "$F"
check "vLLM's figures at the top level" jq -e '.completed == 30 and (.p99_ttft_ms | type) == "number"
  and (.request_throughput > 0) and (.request_goodput | type) == "number"' "$F"
check "the per-request arrays, one entry per request" jq -e '[.input_lens, .output_lens, .ttfts,
  .itls, .start_times, .errors, .generated_texts] | map(length) | unique == [30]' "$F"
check "ignore_eos as vLLM sets it for random: every output 16 tokens" \
  jq -e '.output_lens | unique == [16]' "$F"
check "SLOs from --goodput" jq -e '.manifest.slo.ttft_ms == 500 and .manifest.slo.tpot_ms == 50' \
  "$TMP/run/results.json"
check "the translation is said" grep -q "vLLM flags translated" "$TMP/err"
if command -v python3 >/dev/null 2>&1; then
  # Read as vLLM's scripts read a result file: json.load, then the keys.
  python3 - "$F" <<'PY'
import json, sys
with open(sys.argv[1]) as f:
    r = json.load(f)
for k in ("request_throughput", "output_throughput", "mean_ttft_ms", "median_ttft_ms",
          "p99_ttft_ms", "mean_tpot_ms", "p99_itl_ms", "max_concurrency", "request_rate"):
    assert k in r, k
assert len(r["ttfts"]) == r["completed"] + r["failed"]
assert all(isinstance(g, list) for g in r["itls"])
PY
  check_eq "python reads it like vLLM's scripts" $? 0
fi
"$BIN" run --base-url "$BASE" --profile --out "$TMP/bad" 2>"$TMP/err2"
check_eq "a vLLM flag infermeter cannot honour: exit 1" $? 1
check "... naming it" grep -q -- "--profile is not supported" "$TMP/err2"
"$BIN" run --base-url "$BASE" --dataset-name sonnet --out "$TMP/bad" 2>/dev/null
check_eq "an unknown dataset name: exit 1" $? 1
finish
