#!/usr/bin/env bash
# mpirun -np 2 vs one process, same seed, against one server on loopback:
# the median TTFT and E2E latencies agree within 20 % (two ranks share two
# cores here, so nothing stricter is meaningful). Timing-dependent: label
# `timing`. Skipped (77) without mpirun or without MPI in the build.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null || exit 77
command -v mpirun >/dev/null || { echo "timing_mpi: skipped: no mpirun" >&2; exit 77; }
ldd "$BIN" 2>/dev/null | grep -q libmpi || { echo "timing_mpi: skipped: built without MPI" >&2; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
start_server --time-scale 10
COMMON=(--url "$BASE" --rate 10 --requests 100 --warmup 0s --grace 5s --input-len 512
        --output-len 32 --ignore-eos --seed 21 --yes --no-progress --quiet)
"$BIN" run "${COMMON[@]}" --out "$TMP/one" 2>/dev/null
timeout -k 5 120 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
  "$BIN" run "${COMMON[@]}" --out "$TMP/mpi" >/dev/null 2>&1
for m in ttft e2el; do
  a=$(jq ".metrics.latency_ms.$m.p50" "$TMP/one/results.json")
  b=$(jq ".metrics.latency_ms.$m.p50" "$TMP/mpi/results.json")
  check "$m p50: one process $a ms, 2 ranks $b ms: within 20 %" \
    jq -n -e --argjson a "$a" --argjson b "$b" '($b - $a | fabs) <= 0.2 * $a'
done
stop_server
finish
