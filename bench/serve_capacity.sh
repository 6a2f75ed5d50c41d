#!/usr/bin/env bash
# serve_capacity: tokens/s that `infermeter serve` emits from one core, with
# 1,000 and 5,000 connected streams at --max-num-seqs 256 and 1024, and the
# lateness of its writes (truth log: ns - deadline_ns per chunk).
#
# Usage, from the repository root:
#   bench/serve_capacity.sh BUILD_DIR/infermeter [SECONDS]
# Environment: SCALE (--time-scale, default 50), MAX_TOKENS (default 256),
#   WARMUP (seconds after the ramp, default 2), CONFIGS (space-separated
#   names from the list below, default all), PRIO (a command prefix for the
#   server and the client, e.g. "chrt -f 10" as root: real-time priority so
#   that a shared machine's other work, in other cgroups, does not preempt
#   them mid-step; default none).
#
# The server runs on CPU 0 (taskset -c 0), the load client (bench/sse_load.c,
# built here) on CPU 1. Each configuration: start the server on port 0 and
# read its 'listening on' line through a fifo; start the client and read its
# 'window start' / 'window end' lines through another fifo, snapshotting
# /metrics and /proc/PID/stat at each; stop the server (SIGTERM flushes the
# truth log); cut the truth log to the client's window (CLOCK_MONOTONIC ns on
# both sides). Needs 2 CPUs, curl, awk. About 25 s per configuration, 8
# configurations.
set -euo pipefail

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 BUILD_DIR/infermeter [SECONDS]" >&2
  exit 2
fi
bin=$1
secs=${2:-15}
scale=${SCALE:-50}
max_tokens=${MAX_TOKENS:-256}
warmup=${WARMUP:-2}
prio=()
[ -n "${PRIO:-}" ] && read -r -a prio <<<"$PRIO"
configs=${CONFIGS:-"c1000_s256 c5000_s256 c1000_s1024 c5000_s1024 c1000_s256_nomoe c1000_s256_notruth c5000_s256_ka c1000_s256_x10"}
export LC_ALL=C

tmp=$(mktemp -d /tmp/serve_capacity.XXXXXX)
spid=
cpid=
cleanup() {
  [ -n "$cpid" ] && kill "$cpid" 2>/dev/null || true
  [ -n "$spid" ] && kill "$spid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

cc -O2 -std=c17 -D_GNU_SOURCE -o "$tmp/sse_load" bench/sse_load.c
clk_tck=$(getconf CLK_TCK)

# Server CPU ticks (utime + stime) of PID. Field 2 (comm) has no spaces here.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# generation tokens, then the step-duration histogram as "le:count" pairs.
scrape() {
  curl -s --max-time 10 "http://127.0.0.1:$1/metrics" |
    awk '/^vllm:generation_tokens_total/ {tok = $NF}
         /^infermeter_sim_step_duration_seconds_bucket/ {
           match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5); h = h " " le ":" $NF }
         END {print tok + 0 h}' || true
}

# p50 of the step histogram between two scrapes, in ms (linear within a bucket).
step_p50() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    na = split(a, A, " "); split(b, B, " ");
    for (i = 2; i <= na; i++) { split(A[i], x, ":"); split(B[i], y, ":"); le[i] = x[1]; d[i] = y[2] - x[2] }
    total = d[na]; if (total <= 0) { print "-"; exit }
    prev_le = 0; prev = 0;
    for (i = 2; i <= na; i++) {
      if (d[i] >= total / 2) {
        if (le[i] == "+Inf") { printf ">%.3f\n", prev_le * 1e3; exit }
        f = d[i] > prev ? (total / 2 - prev) / (d[i] - prev) : 0;
        printf "%.3f\n", (prev_le + f * (le[i] - prev_le)) * 1e3; exit }
      prev_le = le[i]; prev = d[i] } }'
}

# Lateness p50/p99/max (ms) of the chunks written in [t0, t1], the p50 of
# the engine's step period (distinct deadlines), and the p99 of
# write_done_ns - deadline_ns (when the syscall that carried the chunk had
# returned: under --io uring the end of the step's whole submission), from
# the truth log.
truth_stats() {
  awk -F'[:,]' -v t0="$2" -v t1="$3" '
    /"type":"chunk"/ {
      # By key, not position: the record grows fields (write_done_ns).
      match($0, /"ns":[0-9]+/); ns = substr($0, RSTART + 5, RLENGTH - 5) + 0
      match($0, /"deadline_ns":[0-9]+/); dl = substr($0, RSTART + 14, RLENGTH - 14) + 0
      match($0, /"write_done_ns":[0-9]+/); wd = substr($0, RSTART + 16, RLENGTH - 16) + 0
      if (ns < t0 || ns > t1) next
      lat = ns - dl; n++; if (lat > max) max = lat
      us = int(lat / 1000); if (lat < 0) us = -1; h[us]++
      du = int((wd - dl) / 1000); if (wd < dl) du = -1; hd[du]++
      if (dl != pdl) { if (pdl) { sp = int((dl - pdl) / 1000); s[sp]++; ns_steps++ }; pdl = dl }
    }
    # Keys are whole microseconds: walk them in order from the smallest.
    function pct(arr, cnt, q,    k, lo, hi, acc) {
      lo = 1e18; hi = -1e18; for (k in arr) { if (k + 0 < lo) lo = k + 0; if (k + 0 > hi) hi = k + 0 }
      acc = 0; for (k = lo; k <= hi; k++) if (k in arr) { acc += arr[k]; if (acc >= q * cnt) return k / 1000 }
      return hi / 1000 }
    END {
      if (!n) { print "- - - - -"; exit }
      printf "%.3f %.3f %.3f %.3f %.3f\n", pct(h, n, 0.5), pct(h, n, 0.99), max / 1e6, ns_steps ? pct(s, ns_steps, 0.5) : -1, pct(hd, n, 0.99) }' "$1"
}

printf '# infermeter serve capacity: %s, time scale %s, max_tokens %s, %s s window after %s s warm-up\n' \
  "$("$bin" --version 2>/dev/null | head -1 || echo infermeter)" "$scale" "$max_tokens" "$secs" "$warmup"
printf '# machine: %s CPUs, %s; server on CPU 0, client on CPU 1\n' "$(nproc)" \
  "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
printf '%-20s %6s %5s %5s %9s %9s %6s %9s %8s %8s %8s %8s %8s %8s %6s %5s %8s\n' \
  config streams seqs scale tok/s metr_tok/s srvcpu tok/cpu-s late_p50 late_p99 late_max \
  step_p50 period50 ka/s errors clcpu done_p99
printf '%-20s %6s %5s %5s %9s %9s %6s %9s %8s %8s %8s %8s %8s %8s %6s %5s %8s\n' \
  "" "" "" "" "(client)" "(/metrics)" "cpu/s" "" ms ms ms "ms(hist)" "ms(log)" "" "" "cpu/s" ms

run_config() {
  local name=$1 streams=$2 seqs=$3 truth=$4 scale=${SC:-$scale}
  shift 4
  local extra=("$@")
  local truth_args=()
  [ "$truth" = yes ] && truth_args=(--truth-log "$tmp/truth.jsonl")
  rm -f "$tmp/srv.fifo" "$tmp/cli.fifo" "$tmp/truth.jsonl"
  mkfifo "$tmp/srv.fifo" "$tmp/cli.fifo"

  "${prio[@]}" taskset -c 0 "$bin" serve --port 0 --time-scale "$scale" --max-num-seqs "$seqs" \
    "${truth_args[@]}" "${extra[@]}" >"$tmp/srv.fifo" 2>"$tmp/srv.err" &
  spid=$!
  exec 3<"$tmp/srv.fifo"
  local line port
  if ! read -r -t 30 line <&3 || [[ ! $line =~ ^listening\ on\ http://.*:([0-9]+)$ ]]; then
    echo "$name: server did not start: ${line:-} $(cat "$tmp/srv.err")" >&2
    exit 1
  fi
  port=${BASH_REMATCH[1]}

  "${prio[@]}" taskset -c 1 "$tmp/sse_load" -p "$port" -c "$streams" -d "$secs" -w "$warmup" -t "$max_tokens" \
    -T 1 >"$tmp/cli.json" 2>"$tmp/cli.fifo" &
  cpid=$!
  exec 4<"$tmp/cli.fifo"
  local m0 m1 c0 c1 w0 w1
  while read -r -t 120 line <&4 && [ "$line" != "sse_load: window start" ]; do echo "$name: $line" >&2; done
  c0=$(cpu_ticks "$spid"); w0=$(date +%s%N); m0=$(scrape "$port")
  while read -r -t 120 line <&4 && [ "$line" != "sse_load: window end" ]; do echo "$name: $line" >&2; done
  c1=$(cpu_ticks "$spid"); w1=$(date +%s%N); m1=$(scrape "$port")
  wait "$cpid" || echo "$name: sse_load failed: $(cat "$tmp/cli.json")" >&2
  cpid=
  exec 4<&-
  local rc=0 when="on SIGTERM"
  kill -0 "$spid" 2>/dev/null || when="when the client closed its connections (after the window)"
  kill -TERM "$spid" 2>/dev/null || true
  wait "$spid" || rc=$?
  spid=
  exec 3<&-

  local j=$tmp/cli.json
  local tps errs ka clcpu ws we
  tps=$(sed -n 's/.*"tokens_per_s": \([0-9.]*\), "client_cpu_s".*/\1/p' "$j")
  clcpu=$(sed -n 's/.*"client_cpu_per_wall_s": \([0-9.]*\).*/\1/p' "$j")
  errs=$(sed -n 's/.*"client_cpu_per_wall_s": [0-9.]*, "errors": \([0-9]*\).*/\1/p' "$j")
  ka=$(awk -F'"keepalive_comments": ' '/"window"/ {split($2, a, ","); print a[1]}' "$j")
  ws=$(sed -n 's/.*"window_start_ns": \([0-9]*\), "window_end_ns": \([0-9]*\).*/\1/p' "$j")
  we=$(sed -n 's/.*"window_start_ns": \([0-9]*\), "window_end_ns": \([0-9]*\).*/\2/p' "$j")
  local wall_s srv_cpu metr_tps tpc late step
  wall_s=$(awk -v a="$w0" -v b="$w1" 'BEGIN {printf "%.6f", (b - a) / 1e9}')
  srv_cpu=$(awk -v a="$c0" -v b="$c1" -v t="$clk_tck" -v w="$wall_s" 'BEGIN {printf "%.3f", (b - a) / t / w}')
  metr_tps=$(awk -v a="${m0%% *}" -v b="${m1%% *}" -v w="$wall_s" 'BEGIN {printf "%.0f", (b - a) / w}')
  tpc=$(awk -v t="$metr_tps" -v c="$srv_cpu" 'BEGIN {printf "%.0f", (c > 0 ? t / c : 0)}')
  step=$(step_p50 "$m0" "$m1")
  if [ "$truth" = yes ]; then late=$(truth_stats "$tmp/truth.jsonl" "$ws" "$we"); else late="- - - - -"; fi
  read -r lp50 lp99 lmax period ldone <<<"$late"
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 143 ]; then
    echo "$name: SERVER CRASHED (exit status $rc) $when; the window's figures are" \
      "complete; server stderr: $(tail -3 "$tmp/srv.err")" >&2
    name="$name!CRASH"
  fi
  printf '%-20s %6s %5s %5s %9.0f %9s %6s %9s %8s %8s %8s %8s %8s %8.0f %6s %5s %8s\n' \
    "$name" "$streams" "$seqs" "$scale" "$tps" "$metr_tps" "$srv_cpu" "$tpc" "$lp50" "$lp99" "$lmax" \
    "$step" "$period" "$(awk -v k="$ka" -v s="$secs" 'BEGIN {print k / s}')" "$errs" "$clcpu" "$ldone"
}

for c in $configs; do
  case $c in
  c1000_s256) run_config "$c" 1000 256 yes ;;
  c5000_s256) run_config "$c" 5000 256 yes ;;
  c1000_s1024) run_config "$c" 1000 1024 yes ;;
  c5000_s1024) run_config "$c" 5000 1024 yes ;;
  c1000_s256_nomoe) run_config "$c" 1000 256 yes --no-moe-routing ;;
  c1000_s256_notruth) run_config "$c" 1000 256 no ;;
  # serve --io (docs/serve.md "Output"): the default is io_uring where the
  # kernel allows it; these force one or the other.
  c1000_s256_write) run_config "$c" 1000 256 yes --io write ;;
  c1000_s256_uring) run_config "$c" 1000 256 yes --io uring ;;
  c1000_s256_x10_write) SC=10 run_config "$c" 1000 256 yes --io write ;;
  # At time scale 4 the server's core is about 45 % busy.
  c1000_s256_x4) SC=4 run_config "$c" 1000 256 yes ;;
  c1000_s256_x4_write) SC=4 run_config "$c" 1000 256 yes --io write ;;
  # Queued streams get ': keep-alive' every 2 s of simulated time, i.e. every
  # 2/SCALE s of wall time; this one shows what that costs at 5,000 streams.
  c5000_s256_ka) run_config "$c" 5000 256 yes --keepalive-interval 3600s ;;
  # Below saturation (engine-bound at time scale 10): lateness without queueing.
  c1000_s256_x10) SC=10 run_config "$c" 1000 256 yes ;;
  *) echo "unknown configuration $c" >&2; exit 2 ;;
  esac
done
