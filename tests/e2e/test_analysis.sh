#!/usr/bin/env bash
# Token-level analysis against planted faults of `infermeter serve`
# (docs/metrics.md §4): a stall before token N of some requests is found at
# token N; an engine-wide hiccup stalls every stream at once and is seen as
# time-aligned; a clean run of the same load has no stall. Also the SLO
# verdicts by early stopping.
. "$(dirname "$0")/lib.sh"
RUN() { "$BIN" run --no-progress --quiet "$@"; }
LOAD=(--rate 10 --duration 3s --warmup 0s --grace 10s --input-len 64 --output-len 200 --ignore-eos
      --no-scrape --no-sockstat --no-gpu --seed 21)

# Clean: no stall.
start_server --time-scale 2
RUN --url "$BASE" "${LOAD[@]}" --out "$TMP/clean"
A="$TMP/clean/results.json"
check_eq "clean run: no stall" "$(jq .analysis.stalls.count "$A")" 0
check "clean run: windows measured" jq -e '.analysis.token_latency.windows > 0' "$A"
stop_server

# A stall of 2 s (simulated; 1 s at scale 2) before token 120 of a
# third of the requests: each one found, at token index 120.
start_server --time-scale 2 --fault 'stall:0.34@token=120,ms=2000'
RUN --url "$BASE" "${LOAD[@]}" --out "$TMP/stall"
A="$TMP/stall/results.json"
J="$TMP/stall/requests.jsonl"
planted=$(jq -s '[.[] | select(.error == null) | [.chunks_us as $c | range(1; $c|length) | $c[.] - $c[.-1]] | max > 100000] | map(select(.)) | length' "$J")
check_ge "some requests were stalled" "$planted" 1
check_eq "every planted stall found" "$(jq .analysis.stalls.count "$A")" "$planted"
check_eq "at token index 120, exactly" "$(jq .analysis.stalls.peak_position "$A")" 120
check "every stall within 2 tokens of it" jq -e '.analysis.stalls.peak_stalls == .analysis.stalls.count
  and .analysis.stalls.peak_spread <= 2' "$A"
check "the localisation says so" jq -e '.analysis.stalls.localisation
  == "\(.analysis.stalls.count) of \(.analysis.stalls.count) stall\(if .analysis.stalls.count == 1 then "" else "s" end) at token 120 +- \(.analysis.stalls.peak_spread)"' "$A"
check "200-token answers: 4-token bins, the stalls in the one of 120" jq -e \
  '.analysis.stalls.index_width == 4 and .analysis.stalls.by_index == [[120, .analysis.stalls.count]]' "$A"
check "the 64-token buckets of v1 stay" jq -e '.analysis.stalls.by_position == [[64, .analysis.stalls.count]]' "$A"
stop_server

# An engine hiccup every 4 s (simulated) of 1 s: every running stream
# stalls at once -> the stalls are time-aligned.
start_server --time-scale 2 --fault 'hiccup@every=4s,ms=1000'
RUN --url "$BASE" "${LOAD[@]}" --out "$TMP/hiccup"
A="$TMP/hiccup/results.json"
check_ge "hiccup stalls found" "$(jq .analysis.stalls.count "$A")" 3
check "most of them time-aligned" jq -e '.analysis.stalls.aligned_share >= 0.8' "$A"
stop_server

# SLO verdicts by early stopping: 30 requests under a loose TTFT SLO are
# too few for a p99 bound (459 needed with none over): INCONCLUSIVE, with
# the number still needed; a limit every request misses: FAIL.
start_server --time-scale 2
RUN --url "$BASE" "${LOAD[@]}" --slo ttft=60s --out "$TMP/slo"
rc=$?
check "a loose SLO met by every request exits 0 (3 on a machine too busy to send on time) ($rc)" \
  test $rc -eq 0 -o $rc -eq 3
check "INCONCLUSIVE with the requests still needed" \
  jq -e '.analysis.slo[0] | .verdict == "INCONCLUSIVE" and .over == 0 and .more_requests_needed == 459 - .requests' "$TMP/slo/results.json"
RUN --url "$BASE" "${LOAD[@]}" --slo ttft=0.001ms --out "$TMP/slo2"
rc=$?
check "an SLO every request misses exits 99 (3 on a busy machine) ($rc)" test $rc -eq 99 -o $rc -eq 3
check "FAIL" jq -e '.analysis.slo[0].verdict == "FAIL"' "$TMP/slo2/results.json"


# The analysis settings are flags, recorded in the manifest, so `report`
# recomputes the same figures: 4-gap windows every 2 gaps, stalls above 3x
# the median gap, 1 s time slices covering the window.
RUN --url "$BASE" "${LOAD[@]}" --segment-window 4 --segment-stride 2 --stall-k 3 --timeslice 1s \
  --out "$TMP/settings"
R="$TMP/settings/results.json"
check "the window and stride used" jq -e '.analysis.token_latency | .window_gaps == 4 and .stride_gaps == 2' "$R"
check "the stall factor used" jq -e '.analysis.stalls.k == 3' "$R"
check "1 s slices covering the measured window" jq -e '.metrics.timeslices as $t | $t.slice_s == 1
  and ($t.slices | length) == (.metrics.window.seconds | ceil)
  and ($t.slices | map(.completed) | add) == .metrics.counts.completed_in_window' "$R"
cp "$R" "$TMP/settings.json"
"$BIN" report "$TMP/settings" >/dev/null
check_eq "report recomputes them" "$(jq -S 'del(.generated_at)' "$R" | md5sum)" \
  "$(jq -S 'del(.generated_at)' "$TMP/settings.json" | md5sum)"
"$BIN" run --url "$BASE" --stall-k 1 --out "$TMP/bad" 2>/dev/null
check_eq "--stall-k 1: usage error" $? 1

finish
