#!/usr/bin/env bash
# Detection of a busy client (issue 26): one loader thread driven at
# multiples of its own measured capacity must be VALID at 0.5x and INVALID
# at 1.1x and 2x, and the planted overload (10x) INVALID, N of N each.
#
# The client is made the bottleneck, not the server. Default (GAP_MS=10):
# bench/sse_stub.c streams OUT_LEN (100) one-token events per request, one
# event per write() every GAP_MS, the first FIRST_MS (100) after the
# request: a server's pace, so the client's work is one small read per
# token spread in time, and it runs out of CPU when enough streams are
# open (~1,000 at 10 ms on one core). GAP_MS=0 is the old burst stub:
# PER_WRITE (256) events to a write() as fast as the socket takes them; a
# read then waits behind another stream's 256-event parse (~1 ms), which a
# 100 ms TTFT feels as 1 %: the self-check rightly calls even half load
# imprecise there, so that mode measures the burst, not the rule.
# Server on CPU 0, client on CPU 1 (taskset), when there are two.
#
# Capacity C: a closed loop (--concurrency CAL_CONC: 1,500 streams at a
# gap, 256 without; the client, not the concurrency, bounds it) of the same
# requests, 6 s. CAPACITY=cpu (default with a gap): its completions per
# CPU-second of the loop (throughput / audit.client_check's
# generator_cpu_share), what one core sustains whatever else the host runs;
# CAPACITY=wall (default without a gap): completions per second.
# Then N open-loop runs (Poisson, 5 s, 1 s warm-up) at each multiple; the
# verdict is audit.client_check.verdict.
#
#   bench/detection.sh BUILD/infermeter [N=20] [MULTIPLES="0.5 1.1 2 10"]
#
# Needs cc and jq. About N x 12 s per multiple. The runs stay under $OUT.
set -u
BIN=$(readlink -f "${1:?usage: bench/detection.sh BUILD/infermeter [N] [MULTIPLES]}")
N=${2:-20}
MULTS=${3:-"0.5 1.1 2 10"}
GAP_MS=${GAP_MS:-10}
if [ "$GAP_MS" = 0 ]; then
  OUT_LEN=${OUT_LEN:-2048} CAL_CONC=${CAL_CONC:-256} CAPACITY=${CAPACITY:-wall}
else
  OUT_LEN=${OUT_LEN:-100} CAL_CONC=${CAL_CONC:-1500} CAPACITY=${CAPACITY:-cpu}
fi
PER_WRITE=${PER_WRITE:-256}
FIRST_MS=${FIRST_MS:-100}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$(mktemp -d /tmp/im-detect.XXXXXX)}
mkdir -p "$OUT"
cc -O2 -std=c17 -o "$OUT/sse_stub" "$HERE/sse_stub.c" || exit 1
SRV="taskset -c 0" CLI="taskset -c 1"
[ "$(nproc)" -lt 2 ] && SRV= CLI=
rm -f "$OUT/fifo"
mkfifo "$OUT/fifo"
$SRV "$OUT/sse_stub" --port 0 --gap-ms "$GAP_MS" --per-write "$PER_WRITE" --first-ms "$FIRST_MS" >"$OUT/fifo" 2>"$OUT/stub.err" &
SPID=$!
trap 'kill $SPID 2>/dev/null' EXIT
exec 5<"$OUT/fifo"
read -r -t 20 line <&5 || { echo "sse_stub did not start" >&2; exit 1; }
URL="http://127.0.0.1:${line##*:}"
COMMON=(--url "$URL" --model m --input-len 16 --output-len "$OUT_LEN" --no-gpu --no-history
        --no-progress --no-scrape)

$CLI "$BIN" run "${COMMON[@]}" --concurrency "$CAL_CONC" --duration 6s --warmup 1s --out "$OUT/cal" \
  >"$OUT/cal.log" 2>&1
if [ "$CAPACITY" = cpu ]; then
  C=$(jq -r '.summary.request_throughput / ([.audit.client_check.checks[]
    | select(.name == "generator_cpu_share") | .value][0])' "$OUT/cal/results.json")
else
  C=$(jq -r '.summary.request_throughput' "$OUT/cal/results.json")
fi
printf 'capacity (%s, gap %s ms, %s tokens): %.0f req/s (closed loop %.1f req/s at CPU share %.2f)\n' \
  "$CAPACITY" "$GAP_MS" "$OUT_LEN" \
  "$C" "$(jq .summary.request_throughput "$OUT/cal/results.json")" \
  "$(jq '[.audit.client_check.checks[] | select(.name == "generator_cpu_share") | .value][0]' "$OUT/cal/results.json")"
printf '%-6s %9s %4s %6s %8s %s\n' mult rate runs VALID INVALID "failed checks (count)"
for m in $MULTS; do
  rate=$(awk -v c="$C" -v m="$m" 'BEGIN { printf "%.1f", c * m }')
  v=0; inv=0
  : >"$OUT/checks-$m.txt"
  for i in $(seq 1 "$N"); do
    d="$OUT/run-$m-$i"
    $CLI "$BIN" run "${COMMON[@]}" --rate "$rate" --duration 5s --warmup 1s --grace 3s \
      --out "$d" >"$d.log" 2>&1
    verdict=$(jq -r .audit.client_check.verdict "$d/results.json" 2>/dev/null)
    [ "$verdict" = VALID ] && v=$((v + 1))
    [ "$verdict" = INVALID ] && inv=$((inv + 1))
    jq -r '.audit.client_check.checks[] | select(.pass == false) | .name' "$d/results.json" \
      >>"$OUT/checks-$m.txt" 2>/dev/null
    echo "$m run $i rate=$rate verdict=$verdict $(jq -r .audit.client_check.summary "$d/results.json" 2>/dev/null)" >>"$OUT/runs.txt"
  done
  printf '%-6s %9s %4d %6d %8d %s\n' "$m" "$rate" "$N" "$v" "$inv" \
    "$(sort "$OUT/checks-$m.txt" | uniq -c | awk '{printf "%s=%s ", $2, $1}')"
done
echo "runs: $OUT"
