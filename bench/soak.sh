#!/usr/bin/env bash
# Soak: many concurrent streams for a long time; does anything grow?
#
#   bench/soak.sh BUILD/infermeter [SECONDS=600] [STREAMS=10000]
#
# `infermeter serve --max-num-seqs 1024 --max-connections 20000` on CPU 0 and
# `infermeter run --concurrency STREAMS` (closed loop, every request a new
# stream as soon as one ends) on CPU 1, for SECONDS. Every 10 s the script
# samples the client's and the server's RSS and open fds from /proc; the
# run's --timeslice 10s gives p99 ITL and output tokens/s per slice. It
# prints the samples and the least-squares slope of each over the run (per
# minute), after the warm-up (start-up and ramp). Target: RSS flat
# beyond noise. Report figures only; nothing here fails on a target.
# Environment: SCALE (server --time-scale, default 1), OUTLEN (default 256),
# WARMUP (seconds, default 60).
set -euo pipefail
IM=$(readlink -f "${1:?usage: bench/soak.sh BUILD/infermeter [SECONDS] [STREAMS]}")
SECS=${2:-600}
STREAMS=${3:-10000}
SCALE=${SCALE:-1}
OUTLEN=${OUTLEN:-256}
WARMUP=${WARMUP:-60}
# The limit is per process: the client and the server each hold one socket
# per stream. Root (or CAP_SYS_RESOURCE) may raise the hard limit.
want=$((STREAMS + 1000))
if [ "$(ulimit -Hn)" -lt "$want" ]; then
  ulimit -Hn "$want" 2>/dev/null || true
fi
ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" -lt "$want" ]; then
  echo "soak: the fd limit $(ulimit -n) is below $STREAMS streams + 1000; raise the hard limit" >&2
  exit 2
fi
T=$(mktemp -d /tmp/im-soak.XXXXXX)
SRV=0 CLI=1
[ "$(nproc)" -ge 2 ] || CLI=0
taskset -c $SRV "$IM" serve --port 0 --max-num-seqs 1024 --max-connections 20000 \
  --time-scale "$SCALE" >"$T/serve.out" 2>"$T/serve.err" &
SPID=$!
trap 'kill $SPID ${CPID:-} 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q 'listening on' "$T/serve.out" 2>/dev/null && break
  sleep 0.1
done
PORT=$(grep -o 'listening on [^ ]*' "$T/serve.out" | head -1 | sed 's/.*://')
[ -n "$PORT" ] || { echo "soak: serve did not start: $(cat "$T/serve.err")" >&2; exit 1; }
taskset -c $CLI "$IM" run --url "http://127.0.0.1:$PORT" --concurrency "$STREAMS" \
  --duration "${SECS}s" --warmup "${WARMUP}s" --grace 30s --output-len "$OUTLEN" --ignore-eos \
  --input-len 256 --timeslice 10s --no-history --out "$T/run" >"$T/run.out" 2>&1 &
CPID=$!
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
echo "t_s client_rss_kib client_fds server_rss_kib server_fds" >"$T/samples.txt"
t=0
while kill -0 $CPID 2>/dev/null; do
  echo "$t $(rss_kb $CPID) $(fds $CPID) $(rss_kb $SPID) $(fds $SPID)" >>"$T/samples.txt"
  sleep 10
  t=$((t + 10))
done
set +e
wait $CPID
rc=$?
set -e
echo "run exit $rc (3 = client self-check INVALID; the figures are still recorded)"
python3 - "$T" "$WARMUP" "$SECS" <<'PY'
import json, sys
d = sys.argv[1]
rows = [l.split() for l in open(d + '/samples.txt').read().splitlines()[1:]]
rows = [[float(x) for x in r] for r in rows if len(r) == 5]
def slope(xs, ys):
    n = len(xs)
    if n < 3: return float('nan')
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else float('nan')
# after the warm-up and before the end of the schedule (the grace period
# that follows closes the streams: fds and RSS fall)
late = [r for r in rows if int(sys.argv[2]) <= r[0] < int(sys.argv[3])]
print('samples (every 10 s): t_s client_rss_kib client_fds server_rss_kib server_fds')
for r in rows: print('  %5d %10d %7d %10d %7d' % tuple(r))
names = ['client RSS KiB', 'client fds', 'server RSS KiB', 'server fds']
for i, n in enumerate(names, 1):
    xs = [r[0] / 60 for r in late]; ys = [r[i] for r in late]
    print('slope after warm-up: %-15s %+10.1f per minute (mean %.0f)' % (n, slope(xs, ys), sum(ys) / len(ys) if ys else float('nan')))
try:
    res = json.load(open(d + '/run/results.json'))
    sl = res['metrics']['timeslices']['slices']
    xs = [(s['start_s'] + s['end_s']) / 120 for s in sl if s['itl_ms'].get('p99') is not None]
    ys = [s['itl_ms']['p99'] for s in sl if s['itl_ms'].get('p99') is not None]
    print('ITL p99 per slice (ms):', ' '.join('%.1f' % y for y in ys))
    print('slope: ITL p99 %+.3f ms per minute' % slope(xs, ys))
    print('output tokens/s per slice:', ' '.join('%.0f' % s['output_throughput'] for s in sl))
    print('requests completed: %s, errors: %s' % (res['metrics']['counts'].get('completed'), res['metrics']['counts'].get('failed')))
    # The client keeps each recorded token's arrival (for the analysis at the
    # end), so its RSS grows with tokens; per token is the figure to judge.
    tps = sum(s['output_throughput'] for s in sl) / len(sl) if sl else 0
    xs = [r[0] / 60 for r in late]; ys = [r[1] for r in late]
    if tps > 0:
        print('client RSS growth per recorded token: %.2f B (at %.0f tokens/s)' % (slope(xs, ys) * 1024 / (tps * 60), tps))
except Exception as e:
    print('no timeslices in the results:', e)
PY
echo "files: $T"
