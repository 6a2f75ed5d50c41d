#!/usr/bin/env bash
# False alarms of the client self-check on a jittery host (bench/README.md,
# "verdicts"): N default runs (`infermeter run`, built-in server, 2 req/s,
# 30 s) per jitter setting of bench/jitter.c (burst ms / period ms; "0/0"
# is no generator), counting the runs whose self-check was INVALID (the
# false alarms: the client is idle at 2 req/s), the exit statuses, and the
# WARN/FAIL count of every audit check over the same runs.
#
#   bench/verdicts.sh BUILD/infermeter [N=20] [SETTINGS="0/0 1/20 3/50 5/20 8/100"]
#
# Needs jq, cc and root (SCHED_FIFO for the jitter generator). Takes about
# N x 35 s per setting. Prints one table row per setting; the runs stay
# under $OUT (default a temporary directory).
set -u
BIN=$(readlink -f "${1:?usage: bench/verdicts.sh BUILD/infermeter [N] [SETTINGS]}")
N=${2:-20}
SETTINGS=${3:-"0/0 1/20 3/50 5/20 8/100"}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$(mktemp -d /tmp/im-verdicts.XXXXXX)}
mkdir -p "$OUT"
EXTRA=${EXTRA:-}
cc -O2 -std=c17 -D_GNU_SOURCE -o "$OUT/jitter" "$HERE/jitter.c" || exit 1
printf '%-8s %4s %8s %7s %6s %s\n' setting runs invalid exit!=0 hostwarn "audit WARN/FAIL by check"
for s in $SETTINGS; do
  b=${s%/*}; p=${s#*/}
  jpid=
  if [ "$b" != 0 ]; then
    "$OUT/jitter" "$b" "$p" & jpid=$!
  fi
  inv=0; nz=0; hw=0
  : > "$OUT/checks-$b-$p.txt"
  for i in $(seq 1 "$N"); do
    d="$OUT/run-$b-$p-$i"
    # shellcheck disable=SC2086
    "$BIN" run --out "$d" $EXTRA > "$d.log" 2>&1
    rc=$?
    [ "$rc" != 0 ] && nz=$((nz + 1))
    v=$(jq -r '.audit.client_check.verdict' "$d/results.json" 2>/dev/null)
    [ "$v" = INVALID ] && inv=$((inv + 1))
    [ "$(jq -r '.audit.client_check.attribution.host_warn' "$d/results.json" 2>/dev/null)" = true ] && hw=$((hw + 1))
    jq -r '.audit.publishable.checks[] | select(.status != "PASS") | "\(.id):\(.status)"' \
      "$d/results.json" >> "$OUT/checks-$b-$p.txt" 2>/dev/null
    echo "$s run $i rc=$rc verdict=$v $(jq -r '.audit.client_check.summary' "$d/results.json" 2>/dev/null)" >> "$OUT/runs.txt"
  done
  [ -n "$jpid" ] && kill "$jpid" && wait "$jpid" 2>/dev/null
  printf '%-8s %4d %8d %7d %6d %s\n' "$s" "$N" "$inv" "$nz" "$hw" \
    "$(sort "$OUT/checks-$b-$p.txt" | uniq -c | awk '{printf "%s=%s ", $2, $1}')"
done
echo "runs: $OUT"
