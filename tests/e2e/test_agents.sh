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

# --- bad input: a clear message and exit 1
"$BIN" run --reasoning-effort extreme --url "$BASE" 2>"$TMP/err"
check_eq "unknown effort exits 1" $? 1
check "the message names the flag" grep -q -- "--reasoning-effort" "$TMP/err"
"$BIN" run --thinking maybe --url "$BASE" 2>"$TMP/err"
check_eq "bad --thinking exits 1" $? 1

finish
