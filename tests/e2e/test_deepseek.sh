#!/usr/bin/env bash
# DeepSeek-specific analysis end to end (docs/deepseek.md):
#   - a run against the built-in server reports metrics.roofline and
#     metrics.moe by default (the server declares its model and GPU in
#     /version), and `report DIR` recomputes them;
#   - --model-config (preset, Hugging Face config.json, bad file) and
#     --hardware set manifest.system with each value's source;
#   - a target that declares nothing: roofline not collected, with why;
#   - analyze-routing on traces of serve --moe-zipf 0 / 0.6 / 1.5: G1 of the
#     load rising, balancedness falling, monotone; jitter below 1.
# These are consistency checks against the simulator (its performance model
# uses the same physics), not validations of the formulas.
# Exit 3 (client self-check INVALID) is accepted: a busy machine causes it.
. "$(dirname "$0")/lib.sh"
RUN() {
  "$BIN" run --no-progress --quiet --no-history "$@"
  local rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 3 ] || fail "run exited $rc: $*"
}

# 1. Built-in target, nothing declared by flags.
start_server --time-scale 4
RUN --url "$BASE" --rate 6 --duration 6s --warmup 2s --output-len 64 --out "$TMP/def"
A="$TMP/def/results.json"
check_eq "model from the target" "$(jq -r .manifest.system.model.name "$A")" "deepseek-ai/DeepSeek-V3"
check "its source is said" jq -e '.manifest.system.model.source | test("/version")' "$A"
check_eq "KV bytes per token (MLA)" "$(jq .metrics.roofline.kv.bytes_per_token "$A")" "70272"
check "roofline computed" jq -e '.metrics.roofline | has("not_collected") | not' "$A"
check "predicted bandwidth-bound at this load" jq -e '.metrics.roofline.predicted.bound == "bandwidth"' "$A"
check "MFU and bandwidth utilisation in (0, 1)" jq -e '.metrics.roofline | .mfu > 0 and .mfu < 1 and .achieved_bandwidth_utilisation > 0 and .achieved_bandwidth_utilisation < 1' "$A"
check "per-user speed" jq -e '.metrics.roofline.per_user_output_tok_per_s.p50 > 0' "$A"
check "in-flight context series" jq -e '.metrics.roofline.inflight_context.mean | length >= 8' "$A"
check "moe from the server's gauges" jq -e '.metrics.moe.source | test("window_imbalance")' "$A"
check_eq "58 MoE layers" "$(jq '.metrics.moe.per_layer.balancedness | length' "$A")" 58
# The default routing is balanced (skew only with --moe-zipf / --moe-hot):
# judged against chance for the picks each window routed. (Whether a
# default run is free of the WARN is a rate, measured by bench/verdicts.sh:
# 1 of 20 on a jittered host; in CI-like runs it fired here twice, so one
# run does not assert it. Issue "Verdicts 2 of 3".)
check "a balanced default: moe_balance judged against chance" jq -e '.metrics.moe.judged_against_chance
  and .metrics.moe.chance_max_over_mean > 1
  and (.audit.publishable.checks[] | select(.id == "moe_balance") | .evidence | test("uniform routing"))' "$A"
# A sample can catch a sequence just admitted (blocks allocated, nothing
# computed yet): fragmentation 1 at that instant is real, not an error.
check "KV fragmentation from the server" jq -e '.metrics.kv_fragmentation.mean >= 0 and .metrics.kv_fragmentation.mean < 1 and .metrics.kv_fragmentation.max <= 1' "$A"
check "code/text mix absent without --mix" jq -e '.metrics | has("class_mix") | not' "$A"
check "jitter not collected, with the reason" jq -e '.metrics.moe.jitter == null and (.metrics.moe.null_reasons.jitter | test("routing trace"))' "$A"
cp "$A" "$TMP/def.first.json"
"$BIN" report "$TMP/def" --quiet >/dev/null 2>&1
check "report DIR recomputes roofline and moe" bash -c "diff <(jq -S '[.metrics.roofline, .metrics.moe]' '$TMP/def.first.json') <(jq -S '[.metrics.roofline, .metrics.moe]' '$A')"

# 2. Flags override the target: a preset, then a Hugging Face config.json.
RUN --url "$BASE" --rate 4 --requests 6 --output-len 16 --no-scrape --model-config DeepSeek-V2-Lite \
  --hardware mi300x --gpus 2 --tp 1 --out "$TMP/flags"
A="$TMP/flags/results.json"
check_eq "model preset by flag" "$(jq -r .manifest.system.model.name "$A")" "deepseek-ai/DeepSeek-V2-Lite"
check_eq "hardware by flag" "$(jq -r .manifest.system.hardware.name "$A")" "MI300X"
check_eq "gpus by flag" "$(jq -r .manifest.system.gpus.source "$A")" "--gpus"
check_eq "KV 27 x 576 x 2" "$(jq .metrics.roofline.kv.bytes_per_token "$A")" "31104"
check "moe not collected without scrapes" jq -e '.metrics.moe.not_collected | test("no expert-load")' "$A"
cat >"$TMP/config.json" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "hidden_size": 8192, "num_hidden_layers": 80,
 "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 28672,
 "vocab_size": 128256, "torch_dtype": "bfloat16", "tie_word_embeddings": false}
JSON
RUN --url "$BASE" --rate 4 --requests 4 --output-len 16 --no-scrape --model-config "$TMP/config.json" \
  --kv-bytes-per-token 40960 --out "$TMP/hf"
A="$TMP/hf/results.json"
check_eq "GQA from config.json: 2 x 80 x 8 x 128 x 2" "$(jq .metrics.roofline.kv.bytes_per_token "$A")" "327680"
check "parameters estimated (~70.6e9)" jq -e '.manifest.system.model.total_params > 70e9 and .manifest.system.model.total_params < 71e9' "$A"
check_eq "--kv-bytes-per-token wins" "$(jq .manifest.system.kv_bytes_per_token_per_gpu.value "$A")" "40960"
# DeepSeek-V3's own config.json fields: MLA, FP8, parameters estimated.
cat >"$TMP/dsv3.json" <<'JSON'
{"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168, "intermediate_size": 18432,
 "kv_lora_rank": 512, "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
 "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61,
 "num_key_value_heads": 128, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
 "v_head_dim": 128, "vocab_size": 129280, "first_k_dense_replace": 3, "tie_word_embeddings": false,
 "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8"}}
JSON
RUN --url "$BASE" --rate 4 --requests 4 --output-len 16 --no-scrape --model-config "$TMP/dsv3.json" \
  --hardware H200 --out "$TMP/hf3"
A="$TMP/hf3/results.json"
check_eq "MLA from config.json" "$(jq .metrics.roofline.kv.bytes_per_token "$A")" "70272"
check "FP8 from quantization_config" jq -e '.manifest.system.model.weight_bytes == 1' "$A"
check "671e9 / 37.5e9 estimated" jq -e '.manifest.system.model | .total_params > 670e9 and .total_params < 672e9 and .active_params > 37e9 and .active_params < 38e9' "$A"
echo '{"layers": 0}' >"$TMP/bad.json"
"$BIN" run --url "$BASE" --requests 1 --no-progress --quiet --no-history --model-config "$TMP/bad.json" \
  --out "$TMP/bad" 2>"$TMP/bad.err"
check_eq "a bad model config is refused" "$?" "1"
check "naming the file and field" grep -q "bad.json: layers" "$TMP/bad.err"
"$BIN" run --url "$BASE" --requests 1 --no-progress --quiet --no-history --hardware H20 \
  --out "$TMP/bad2" 2>"$TMP/bad2.err"
check "an unknown GPU is refused" grep -q "unknown" "$TMP/bad2.err"
"$BIN" run --url "$BASE" --requests 1 --no-progress --quiet --no-history --gpus 2 --tp 4 \
  --out "$TMP/bad3" 2>"$TMP/bad3.err"
check_eq "--tp above --gpus is refused" "$?" "1"
"$BIN" serve --moe-hot 4 2>"$TMP/hot.err" >/dev/null
check "serve --moe-hot without :F is refused" grep -q "expected N:F" "$TMP/hot.err"
stop_server

# 3. analyze-routing: the skew planted with --moe-zipf is found, monotone.
prev_g1=-1
prev_bal=2
for z in 0 0.6 1.5; do
  start_server --time-scale 4 --moe-zipf "$z" --routing-log "$TMP/rl_$z.jsonl" --routing-detail 12
  RUN --url "$BASE" --rate 6 --requests 24 --output-len 48 --no-scrape --no-sockstat --out "$TMP/z$z"
  stop_server
  "$BIN" analyze-routing "$TMP/rl_$z.jsonl" --quiet --out "$TMP/ar_$z.json"
  check_eq "analyze-routing $z exits 0" "$?" "0"
  g1=$(jq .g1_total_mean "$TMP/ar_$z.json")
  bal=$(jq .balancedness_total_mean "$TMP/ar_$z.json")
  check "zipf $z: G1 $g1 above $prev_g1" awk -v a="$g1" -v b="$prev_g1" 'BEGIN{exit !(a > b)}'
  check "zipf $z: balancedness $bal below $prev_bal" awk -v a="$bal" -v b="$prev_bal" 'BEGIN{exit !(a < b)}'
  check "zipf $z: jitter in (0, 1)" jq -e '.jitter > 0 and .jitter < 1' "$TMP/ar_$z.json"
  prev_g1=$g1
  prev_bal=$bal
done
# --moe-hot: 4 experts per layer 20 times more popular hold ~a quarter of it.
start_server --time-scale 4 --moe-zipf 0 --moe-hot 4:20 --routing-log "$TMP/rl_hot.jsonl"
RUN --url "$BASE" --rate 6 --requests 16 --output-len 48 --no-sockstat --out "$TMP/hot"
check "--moe-hot 4:20: skewed beyond chance, said once and briefly" jq -e '.audit.publishable.checks[]
  | select(.id == "moe_balance") | .status == "WARN"
    and (.evidence | test("^58 of 58 layers skewed .*worst: layer [0-9]+ at 0[.][0-9]+"))
    and (.evidence | length) < 240' "$TMP/hot/results.json"
stop_server
"$BIN" analyze-routing "$TMP/rl_hot.jsonl" --quiet --out "$TMP/ar_hot.json"
check "--moe-hot 4:20: the 4 hottest experts of layer 0 hold > 15 %" \
  jq -e '[.layers[0].hottest[0:4][].share] | add > 0.15' "$TMP/ar_hot.json"
check "heavy skew warns about layers" jq -e '.low_balancedness_layers | length > 0' "$TMP/ar_1.5.json"
check "uniform: its hottest expert holds < 2 %" jq -e '.layers[0].hottest[0].share < 0.02' "$TMP/ar_0.json"
echo '{"counts": [[1,2],[3]]}' | "$BIN" analyze-routing - --quiet >/dev/null 2>"$TMP/ar.err"
check_eq "a ragged trace is refused" "$?" "1"
finish
