#!/usr/bin/env bash
# Detection of a busy client (issue 26): one loader thread driven at
# multiples of its own measured capacity must be VALID at 0.5x and INVALID
# at 1.1x and 2x, and the planted overload (10x) INVALID, N of N each.
#
# The client is made the bottleneck, not the server: bench/sse_stub.c
# answers every request with OUT_LEN (default 2048) one-token events
# written PER_WRITE (256) to a write(), so the server makes a few write()s
# per request while the client parses every event; the first event comes
# FIRST_MS (100) after the request, a server's TTFT (the self-check allows
# the client 1 % of a headline figure: of a sub-millisecond TTFT, nothing).
# Server on CPU 0, client on CPU 1 (taskset), when there are two.
#
# Capacity C: a closed loop (--concurrency 256, 6 s: the client, not the
# concurrency, bounds it) of the same requests.
# CAPACITY=wall (default): its completions per second, what the thread
# sustains on this host with the CPU it gets; CAPACITY=cpu: the same over
# its generator CPU share (audit.client_check's generator_cpu_share: the
# loop's CPU / wall), requests per CPU-second (the two agree on an idle
# machine; on a loaded one the thread gets a fraction of a CPU and the cpu
# figure overstates what it can do there). Then N open-loop runs (Poisson,
# 5 s, 1 s warm-up) at each multiple; the verdict is
# audit.client_check.verdict.
#
#   bench/detection.sh BUILD/infermeter [N=20] [MULTIPLES="0.5 1.1 2 10"]
#
# Needs cc and jq. About N x 12 s per multiple. The runs stay under $OUT.
set -u
BIN=$(readlink -f "${1:?usage: bench/detection.sh BUILD/infermeter [N] [MULTIPLES]}")
N=${2:-20}
MULTS=${3:-"0.5 1.1 2 10"}
OUT_LEN=${OUT_LEN:-2048}
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
$SRV "$OUT/sse_stub" --port 0 --gap-ms 0 --per-write "$PER_WRITE" --first-ms "$FIRST_MS" >"$OUT/fifo" 2>"$OUT/stub.err" &
SPID=$!
trap 'kill $SPID 2>/dev/null' EXIT
exec 5<"$OUT/fifo"
read -r -t 20 line <&5 || { echo "sse_stub did not start" >&2; exit 1; }
URL="http://127.0.0.1:${line##*:}"
COMMON=(--url "$URL" --model m --input-len 16 --output-len "$OUT_LEN" --no-gpu --no-history
        --no-progress --no-scrape)

$CLI "$BIN" run "${COMMON[@]}" --concurrency 256 --duration 6s --warmup 1s --out "$OUT/cal" \
  >"$OUT/cal.log" 2>&1
if [ "${CAPACITY:-wall}" = cpu ]; then
  C=$(jq -r '.summary.request_throughput / ([.audit.client_check.checks[]
    | select(.name == "generator_cpu_share") | .value][0])' "$OUT/cal/results.json")
else
  C=$(jq -r '.summary.request_throughput' "$OUT/cal/results.json")
fi
printf 'capacity (%s): %.0f req/s (closed loop %.1f req/s at CPU share %.2f)\n' "${CAPACITY:-wall}" \
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
