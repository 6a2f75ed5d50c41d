#!/usr/bin/env bash
# Client benchmarks of `infermeter run` against bench/min_reader.c, the
# minimal epoll SSE reader (physical-limit reference). See bench/CLIENT.md.
#
#   bench/client_bench.sh BUILD/infermeter [OUTDIR]
#
# Server pinned to CPU 0 (taskset -c 0), each client to CPU 1; loopback only;
# about 5 minutes. Report figures only: nothing here fails on a target.
# Environment: CB_QUICK=1 shortens every phase (a smoke test of the script).
set -euo pipefail

IM=$(readlink -f "${1:?usage: bench/client_bench.sh BUILD/infermeter [OUTDIR]}")
OUT=${2:-$(mktemp -d /tmp/client-bench.XXXXXX)}
mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
HERE=$(cd "$(dirname "$0")" && pwd)
CC=${CC:-cc}
$CC -std=c17 -O2 -Wall -Wextra -o "$OUT/min_reader" "$HERE/min_reader.c" -lm
$CC -std=c17 -O2 -Wall -Wextra -o "$OUT/join_truth" "$HERE/join_truth.c"
MR=$OUT/min_reader
JT=$OUT/join_truth
ulimit -n "$(ulimit -Hn)"
SRV=0 CLI=1
if [ "$(nproc)" -lt 2 ]; then CLI=0; fi
DUR_A=15 DUR_B=10 DUR_C=12
if [ "${CB_QUICK:-0}" = 1 ]; then DUR_A=3 DUR_B=3 DUR_C=4; fi
OUTLEN_B=256
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

# ---- server ---------------------------------------------------------------
SPID=
server_start() { # server_start NAME ARGS...: sets PORT, SPID; truth log OUT/NAME.truth.jsonl
  local name=$1
  shift
  rm -f "$OUT/fifo"
  mkfifo "$OUT/fifo"
  taskset -c $SRV "$IM" serve --port 0 --truth-log "$OUT/$name.truth.jsonl" "$@" \
    >"$OUT/fifo" 2>"$OUT/$name.serve.err" &
  SPID=$!
  local line
  exec 3<"$OUT/fifo"
  if ! read -r -u 3 line; then
    echo "server did not start: $(cat "$OUT/$name.serve.err")" >&2
    exit 1
  fi
  cat <&3 >/dev/null &  # keep draining stdout so the server never blocks on it
  exec 3<&-
  PORT=${line##*:}
  URL=http://127.0.0.1:$PORT
}
SRV_STATUS=0
server_stop() { # SRV_STATUS: 0, or the server died on its own (e.g. 139 = SIGSEGV)
  SRV_STATUS=0
  kill -0 "$SPID" 2>/dev/null || SRV_STATUS=dead
  kill -TERM "$SPID" 2>/dev/null || true
  local rc=0
  wait "$SPID" 2>/dev/null || rc=$?
  if [ "$SRV_STATUS" = dead ]; then SRV_STATUS=$rc; fi
  SPID=
}
cleanup() { [ -n "$SPID" ] && kill -TERM "$SPID" 2>/dev/null; rm -f "$OUT/fifo"; }
trap cleanup EXIT
server_cpu() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$SPID/stat"; } # s (USER_HZ 100)

# ---- clients --------------------------------------------------------------
# im_run NAME ARGS...: infermeter run on CPU 1; CPU seconds in OUT/NAME.time
im_run() {
  local name=$1
  shift
  rm -rf "${OUT:?}/$name"
  /usr/bin/time -f "%U %S %e %M" -o "$OUT/$name.time" taskset -c $CLI "$IM" run --url "$URL" \
    --backend openai-completions --ignore-eos --warmup 0 --no-progress --quiet \
    --out "$OUT/$name" "$@" >"$OUT/$name.log" 2>&1 || true
}
mr_run() { # mr_run NAME ARGS...
  local name=$1
  shift
  /usr/bin/time -f "%U %S %e %M" -o "$OUT/$name.time" taskset -c $CLI "$MR" --port "$PORT" \
    --out "$OUT/$name.chunks" "$@" 2>"$OUT/$name.log" || true
}
# /usr/bin/time -o puts "Command exited with non-zero status N" first: use the last line.
cpu_of() { tail -n 1 "$OUT/$1.time" | awk '{printf "%.3f", $1 + $2}'; }
wall_of() { tail -n 1 "$OUT/$1.time" | awk '{print $3}'; }
field() { # field KEY FILE: the number after KEY in a key value line
  awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) {print $(i + 1); exit}}' "$2"
}
im_chunks() { awk -F'"n_chunks":' '{split($2, a, ","); s += a[1]} END {print s + 0}' "$OUT/$1/requests.jsonl"; }
im_json() { # im_json NAME KEY: a number or string after "KEY": in results.json (first hit)
  grep -o "\"$2\": *[^,}]*" "$OUT/$1/results.json" | head -1 | sed 's/.*: *//; s/"//g'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b + 0 == 0) print "n/a"; else printf "%.2f", a / b}'; }

say "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), kernel $(uname -r)"
say "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
say "infermeter: $("$IM" --version 2>/dev/null | head -1 || echo unknown)"
say "results: $OUT"

# ---- (b) capacity first: the rates of (a) derive from it -------------------
say ""
say "== (b) capacity: closed loop, --output-len $OUTLEN_B, server --time-scale 1000 --no-moe-routing"
say "   conc client chunks chunks/s cpu_s chunks/cpu_s srv_cpu_s check"
best_im=0
for C in 64 512; do
  server_start cap$C --time-scale 1000 --no-moe-routing --max-num-seqs 1024
  s0=$(server_cpu)
  im_run cap$C.im --concurrency $C --duration ${DUR_B}s --grace 10s --output-len $OUTLEN_B \
    --input-len 128 --seed 11
  s1=$(server_cpu)
  mr_run cap$C.mr --concurrency $C --duration $DUR_B --grace 10 --output-len $OUTLEN_B --input-len 128
  s2=$(server_cpu)
  server_stop
  n_im=$(im_chunks cap$C.im)
  n_mr=$(field chunks "$OUT/cap$C.mr.log")
  r_im=$(awk -v n="$n_im" -v w="$(wall_of cap$C.im)" 'BEGIN {printf "%.0f", n / w}')
  r_mr=$(awk -v n="$n_mr" -v w="$(wall_of cap$C.mr)" 'BEGIN {printf "%.0f", n / w}')
  e_im=$(awk -v n="$n_im" -v c="$(cpu_of cap$C.im)" 'BEGIN {printf "%.0f", n / c}')
  e_mr=$(awk -v n="$n_mr" -v c="$(cpu_of cap$C.mr)" 'BEGIN {printf "%.0f", n / c}')
  verdict=$(im_json cap$C.im verdict)
  say "   $C infermeter $n_im $r_im $(cpu_of cap$C.im) $e_im $(awk -v a="$s0" -v b="$s1" 'BEGIN {printf "%.2f", b - a}') $verdict"
  say "   $C min_reader $n_mr $r_mr $(cpu_of cap$C.mr) $e_mr $(awk -v a="$s1" -v b="$s2" 'BEGIN {printf "%.2f", b - a}') -"
  say "   $C ratio infermeter/min_reader: chunks/s $(ratio "$r_im" "$r_mr"), chunks per CPU-second $(ratio "$e_im" "$e_mr"), CPU-s per 1M tokens $(awk -v a="$e_im" 'BEGIN {printf "%.2f", 1e6 / a}') vs $(awk -v a="$e_mr" 'BEGIN {printf "%.2f", 1e6 / a}')"
  if [ "$r_im" -gt "$best_im" ]; then best_im=$r_im; fi
  if [ "$C" = 64 ]; then
    cli_cps=$e_im
    srv_cps=$(awk -v n="$n_im" -v a="$s0" -v b="$s1" 'BEGIN {printf "%.0f", n / (b - a)}')
  fi
done

# Open-loop request-rate stress: short outputs make the per-request cost show.
say "   open loop, --output-len 16, 5 s: rate client completed cpu_s srv_cpu_s dispatch_lag_p99_ms check"
for R in 500 2000; do
  server_start rate$R --time-scale 1000 --no-moe-routing --max-num-seqs 1024
  s0=$(server_cpu)
  im_run rate$R.im --rate $R --duration 5s --grace 5s --output-len 16 --input-len 128 --seed 5
  s1=$(server_cpu)
  mr_run rate$R.mr --rate $R --seed 5 --duration 5 --grace 5 --output-len 16 --input-len 128
  s2=$(server_cpu)
  server_stop
  say "   $R infermeter $(grep -c '"error":null' "$OUT/rate$R.im/requests.jsonl" || true) $(cpu_of rate$R.im) $(awk -v a="$s0" -v b="$s1" 'BEGIN {printf "%.2f", b - a}') $(im_json rate$R.im value) $(im_json rate$R.im verdict)"
  say "   $R min_reader $(field ok "$OUT/rate$R.mr.log") $(cpu_of rate$R.mr) $(awk -v a="$s1" -v b="$s2" 'BEGIN {printf "%.2f", b - a}') $(awk -v u="$(field send_lag_p99_us "$OUT/rate$R.mr.log")" 'BEGIN {printf "%.6f", u / 1000}') -"
done

# ---- (a) timing accuracy ----------------------------------------------------
# Capacity in requests/s of 64-token streams (65 writes each with [DONE]):
# infermeter's chunks per CPU-second from (b) at C=64, capped by the server's
# chunks per server-CPU-second, since one core each cannot go beyond either.
cap_rps=$(awk -v c="$cli_cps" -v s="$srv_cps" 'BEGIN {m = c < s ? c : s; printf "%.0f", m / 65}')
say ""
say "== (a) timing accuracy: open loop ${DUR_A}s, --input-len 128 --output-len 64, server --time-scale 10 --no-moe-routing --max-num-seqs 1024"
say "   capacity: min(infermeter $cli_cps chunks/CPU-s, server $srv_cps chunks/CPU-s) / 65 = $cap_rps req/s"
say "   load rate client ttft_err_p50_us ttft_err_p99_us itl_err_p50_us itl_err_p99_us negative joined_chunks"
for pct in 10 50 90; do
  R=$(awk -v c="$cap_rps" -v p=$pct 'BEGIN {r = c * p / 100; if (r < 1) r = 1; printf "%.0f", r}')
  server_start acc$pct --time-scale 10 --no-moe-routing --max-num-seqs 1024
  im_run acc$pct.im --rate "$R" --duration ${DUR_A}s --grace 10s --output-len 64 --input-len 128 --seed 42
  mr_run acc$pct.mr --rate "$R" --seed 42 --duration $DUR_A --grace 10 --output-len 64 --input-len 128
  server_stop
  "$JT" "$OUT/acc$pct.truth.jsonl" im "$OUT/acc$pct.im" >"$OUT/acc$pct.im.join"
  "$JT" "$OUT/acc$pct.truth.jsonl" mr "$OUT/acc$pct.mr.chunks" >"$OUT/acc$pct.mr.join"
  for c in im mr; do
    j=$OUT/acc$pct.$c.join
    say "   $pct% $R $([ $c = im ] && echo infermeter || echo min_reader) $(field ttft_err_p50_us "$j") $(field ttft_err_p99_us "$j") $(field itl_err_p50_us "$j") $(field itl_err_p99_us "$j") $(field negative "$j") $(field chunks "$j")"
  done
  ji=$OUT/acc$pct.im.join jm=$OUT/acc$pct.mr.join
  say "   $pct% ratio infermeter/min_reader: ttft p50 $(ratio "$(field ttft_err_p50_us "$ji")" "$(field ttft_err_p50_us "$jm")") p99 $(ratio "$(field ttft_err_p99_us "$ji")" "$(field ttft_err_p99_us "$jm")"); itl p50 $(ratio "$(field itl_err_p50_us "$ji")" "$(field itl_err_p50_us "$jm")") p99 $(ratio "$(field itl_err_p99_us "$ji")" "$(field itl_err_p99_us "$jm")"); infermeter check $(im_json acc$pct.im verdict), client CPU im $(cpu_of acc$pct.im) s mr $(cpu_of acc$pct.mr) s"
done

# ---- (c) 10,000 concurrent streams -------------------------------------------
say ""
say "== (c) memory: closed loop --concurrency 10000, --output-len 4096, server --max-num-seqs 1024 --max-connections 20000 --time-scale 10"
mem_run() { # mem_run NAME CONC: samples VmRSS/VmHWM of the run process every 0.2 s
  local name=$1 conc=$2
  rm -rf "${OUT:?}/$name"
  taskset -c $CLI "$IM" run --url "$URL" --backend openai-completions --ignore-eos --warmup 0 \
    --no-progress --quiet --out "$OUT/$name" --concurrency "$conc" --duration ${DUR_C}s \
    --grace 1s --output-len 4096 --input-len 128 --seed 3 --timeout connect=30s \
    >"$OUT/$name.log" 2>&1 &
  local pid=$! rss=0 hwm=0 r h
  while kill -0 $pid 2>/dev/null; do
    r=$(awk '/^VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
    h=$(awk '/^VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null || echo 0)
    [ "${r:-0}" -gt "$rss" ] && rss=$r
    [ "${h:-0}" -gt "$hwm" ] && hwm=$h
    sleep 0.2
  done
  wait $pid || true
  echo "$rss $hwm"
}
server_start mem --time-scale 10 --no-moe-routing --max-num-seqs 1024 --max-connections 20000
read -r rss1 hwm1 < <(mem_run mem1 1)
read -r rssN hwmN < <(mem_run mem10k 10000)
server_stop
if [ "$SRV_STATUS" != 0 ]; then
  # Seen: SIGSEGV in the server's keep-alive sweep (on_sweep) under 10,000
  # streams (bench/CLIENT.md). Measure again without keep-alive comments.
  say "   server died during the run (status $SRV_STATUS); again with --keepalive-interval 1h"
  server_start mem2 --time-scale 10 --no-moe-routing --max-num-seqs 1024 --max-connections 20000 \
    --keepalive-interval 1h
  read -r rssN hwmN < <(mem_run mem10k 10000)
  server_stop
  say "   second server's status: $SRV_STATUS"
fi
tok=$(im_chunks mem10k)
ka=$(awk -F'"keepalives":' '{split($2, a, ","); s += a[1]} END {print s + 0}' "$OUT/mem10k/requests.jsonl")
nrec=$(wc -l <"$OUT/mem10k/requests.jsonl")
errs=$(grep -vc '"error":null' "$OUT/mem10k/requests.jsonl" || true)
say "   1 stream:      VmRSS peak $rss1 KiB, VmHWM $hwm1 KiB"
say "   10000 streams: VmRSS peak $rssN KiB, VmHWM $hwmN KiB; records $nrec (not ok: $errs), tokens recorded $tok, keep-alives $ka"
say "   per stream: $(awk -v h="$hwmN" -v b="$hwm1" 'BEGIN {printf "%.2f KiB (HWM/10000), %.2f KiB above the 1-stream baseline", h / 10000, (h - b) / 10000}')"
say "   target: 16 KiB + 4 B x tokens = $(awk -v t="$tok" 'BEGIN {printf "%.0f KiB total, %.2f KiB per stream", (16 * 1024 * 10000 + 4 * t) / 1024, (16 * 1024 + 4 * t / 10000) / 1024}')"

# ---- (d) start-up ----------------------------------------------------------------
say ""
say "== (d) start-up: one request (--concurrency 1 --requests 1 --output-len 4), 5 repetitions"
say "   rep exec_to_t0_ms discovery_ms exec_to_first_send_ms (minus discovery) sched_to_send_ms | min_reader exec_to_first_send_ms"
server_start start --time-scale 10
for i in 1 2 3 4 5; do
  rm -rf "${OUT:?}/start$i"
  "$JT" exec "$OUT/start$i.ns" taskset -c $CLI "$IM" run --url "$URL" --backend openai-completions \
    --ignore-eos --warmup 0 --no-progress --quiet --out "$OUT/start$i" --concurrency 1 --requests 1 \
    --output-len 4 --input-len 128 --seed $i >"$OUT/start$i.log" 2>&1 || true
  "$JT" exec "$OUT/start$i.mr.ns" taskset -c $CLI "$MR" --port "$PORT" --concurrency 1 --duration 0.000001 \
    --output-len 4 --out "$OUT/start$i.mr.chunks" 2>"$OUT/start$i.mr.log" || true
  t_exec=$(cat "$OUT/start$i.ns")
  t0=$(im_json start$i t0_monotonic_ns)
  disc=$(im_json start$i discovery_ms)
  rec=$(head -1 "$OUT/start$i/requests.jsonl")
  ts=$(echo "$rec" | grep -o '"t_send":[0-9]*' | cut -d: -f2)
  tsch=$(echo "$rec" | grep -o '"t_sched":[0-9]*' | cut -d: -f2)
  mr_exec=$(cat "$OUT/start$i.mr.ns")
  mr_send=$(awk '$1 == "R" {print $4; exit}' "$OUT/start$i.mr.chunks")
  say "   $i $(awk -v a="$t_exec" -v b="$t0" -v d="$disc" -v s="$ts" -v q="$tsch" -v m0="$mr_exec" -v m1="$mr_send" 'BEGIN {printf "%.3f %.3f %.3f %.3f %.3f | %.3f", (b - a) / 1e6, d, (b + s - a) / 1e6, (b + s - a) / 1e6 - d, (s - q) / 1e6, (m1 - m0) / 1e6}')"
done
server_stop
say ""
say "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
