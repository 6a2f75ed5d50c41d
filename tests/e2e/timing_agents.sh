#!/usr/bin/env bash
# LoRA swap cost visible in TPOT (docs/agents.md "LoRA adapters in serve"):
# the same mix of a base model and three adapters against one GPU slot
# (--max-loras 1: adapters take turns, each change swaps one in) and three
# (swapped in once). The base model's requests run through every swap, so
# their mean TPOT is higher with one slot. Timing-dependent: label timing.
. "$(dirname "$0")/lib.sh"
RUN() { "$BIN" run --no-progress --quiet --no-history --url "$BASE" "$@"; }
ok_rc() { [ "$1" -eq 0 ] || [ "$1" -eq 3 ]; }
for slots in 1 3; do
  start_server --time-scale 10 --lora-modules a=/m/a,b=/m/b,c=/m/c --max-loras $slots \
    --lora-swap-cost 2s
  RUN --rate 20 --requests 80 --warmup 0 --input-len 200 --output-len 100 --ignore-eos \
    --model-mix base=0.25,a=0.25,b=0.25,c=0.25 --out "$TMP/slots$slots"
  rc=$?
  check "run with $slots slot(s) exits 0 or 3 ($rc)" ok_rc $rc
  eval "swaps$slots=$(curl -s "$BASE/metrics" | awk '/^infermeter_sim_lora_swaps_total/ {print $2}')"
done
check "one slot swaps more than three ($swaps1 > $swaps3)" test "$swaps1" -gt "$swaps3"
t1=$(jq '.metrics.by_model["deepseek-v3"].tpot_ms.mean' "$TMP/slots1/results.json")
t3=$(jq '.metrics.by_model["deepseek-v3"].tpot_ms.mean' "$TMP/slots3/results.json")
check "base-model TPOT mean higher with one slot (swaps): $t1 > 1.1 x $t3" \
  awk -v a="$t1" -v b="$t3" 'BEGIN { exit !(a > 1.1 * b) }'
# Attention past the native window: --rope-slowdown 3 makes a 128K session's
# TTFT per uncached token grow past the +210 % line; without it, it stays
# below.
for sd in 1 3; do
  start_server --time-scale 50 --rope-slowdown $sd
  RUN --sessions 2 --turns 4 --context-growth 2k:128k --output-len 32 --requests 8 --warmup 0 \
    --out "$TMP/rope$sd"
done
check_eq "no slowdown: long-context growth not flagged" \
  "$(jq '.analysis.long_context.flagged' "$TMP/rope1/results.json")" false
check_eq "slowdown 3 past 4K: flagged" "$(jq '.analysis.long_context.flagged' "$TMP/rope3/results.json")" true
finish
