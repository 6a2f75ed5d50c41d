#!/usr/bin/env bash
# Long fuzzing (`make fuzz`): every libFuzzer target of tests/fuzz/ in turn,
# MINUTES each (default 20), under AddressSanitizer + UndefinedBehaviorSanitizer.
#
#   scripts/fuzz.sh BUILD_DIR [MINUTES] [TARGET...]
#
# Each target starts from its seed corpus tests/fuzz/corpus/NAME plus what
# earlier sessions found (BUILD_DIR/fuzz-corpus/NAME); at the end the inputs
# that add coverage are merged back into tests/fuzz/corpus/NAME (libFuzzer's
# -merge=1), so commit that folder and the hours accumulate across sessions.
# A finding (crash-*, leak-*, timeout-*, oom-*) is kept in
# BUILD_DIR/fuzz-findings/NAME/ and makes the script exit 1; it prints one
# line per target: executions, coverage (cov, ft), corpus size, findings.
set -uo pipefail
B=$(readlink -f "${1:?usage: scripts/fuzz.sh BUILD_DIR [MINUTES] [TARGET...]}")
MIN=${2:-20}
shift $(( $# >= 2 ? 2 : 1 ))
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -gt 0 ]; then
  TARGETS=("$@")
else
  TARGETS=()
  for f in "$ROOT"/tests/fuzz/fuzz_*.c; do
    n=$(basename "$f" .c)
    TARGETS+=("${n#fuzz_}")
  done
fi
secs=$(awk -v m="$MIN" 'BEGIN { printf "%d", m * 60 }')
status=0
printf '%-10s %12s %8s %8s %7s %s\n' target execs cov ft corpus findings
for t in "${TARGETS[@]}"; do
  bin=$B/fuzz_$t
  if [ ! -x "$bin" ]; then
    echo "scripts/fuzz.sh: $bin is missing (configure with -DIM_FUZZ=ON, clang)" >&2
    exit 2
  fi
  work=$B/fuzz-corpus/$t
  found=$B/fuzz-findings/$t
  seeds=$ROOT/tests/fuzz/corpus/$t
  mkdir -p "$work" "$found" "$seeds"
  log=$B/fuzz-findings/$t.log
  (cd "$found" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
     -print_final_stats=1 -close_fd_mask=3 "$work" "$seeds") >"$log" 2>&1
  rc=$?
  # Fold the session's corpus into the seeds: only inputs that add coverage.
  "$bin" -merge=1 "$seeds" "$work" >>"$log" 2>&1 || true
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | awk '{print $2}')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  nfind=$(find "$found" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  printf '%-10s %12s %8s %8s %7s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" \
    "$(ls "$seeds" | wc -l)" "$nfind"
  if [ "$rc" -ne 0 ] || [ "$nfind" -ne 0 ]; then
    echo "  finding(s) in $found (log: $log)" >&2
    status=1
  fi
done
exit $status
