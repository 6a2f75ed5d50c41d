#!/usr/bin/env bash
# The bandwidth knee end to end (docs/deepseek.md): a context sweep of
# scenarios/deepseek-bandwidth-knee.json's shape (concurrency 8, 4K ... 64K,
# 512-token answers) against the default profile, 8 times faster than real
# time. The knee must be found at 32K, predicted bandwidth-bound, and each
# stage's median inter-token gap must match the simulator's step time for
# the roofline's predicted bytes (step overhead 17 ms + bytes / (0.7 x HBM
# bandwidth), docs/perf-model.md) within 15 %: a consistency check of two
# independent codes of the same physics. Timing-dependent (label timing).
. "$(dirname "$0")/lib.sh"
start_server --time-scale 8
"$BIN" run --url "$BASE" --no-progress --quiet --no-history --sweep context=4k,8k,16k,32k,64k \
  --concurrency 8 --output-len 512 --ignore-eos --range-ratio 0 --duration 20s --warmup 5s \
  --grace 60s --out "$TMP/knee"
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 3 ] || fail "run exited $rc"
A="$TMP/knee/results.json"
check_eq "knee at 32K" "$(jq .bandwidth_knee.knee.input_len "$A")" "32768"
check_eq "predicted bandwidth-bound there" "$(jq -r .bandwidth_knee.knee.bound "$A")" "bandwidth"
check "KV per sequence at the knee ~2.3 GB" jq -e '.bandwidth_knee.knee.kv_bytes_per_sequence > 2.2e9 and .bandwidth_knee.knee.kv_bytes_per_sequence < 2.4e9' "$A"
for i in 0 1 2 3 4; do
  check "stage $i: median ITL x 8 within 15 % of 17 ms + predicted bytes / (0.7 x 4.8 TB/s)" \
    jq -e --argjson i "$i" '.stages[$i].metrics.roofline | (.itl_median_ms * 8) as $m
      | (17 + .predicted.bandwidth_bound_step_ms / 0.7) as $p | ($m / $p) > 0.85 and ($m / $p) < 1.15' "$A"
done
stop_server
finish
