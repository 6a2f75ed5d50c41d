#!/usr/bin/env bash
# Client precision and efficiency, infermeter against the physical limit, in
# one run (issue "Precision at scale"; bench/CLIENT.md):
#
#   bench/compare.sh BUILD/infermeter [OUTDIR]
#
# The stub (bench/sse_stub.c: one token per event, one event per write, a
# fixed GAP between a stream's events, a ground-truth log of every write)
# runs on CPU 0; each client runs alone on CPU 1: `infermeter run` and
# bench/min_reader.c (raw epoll, one clock read per read(), the reference).
# Closed loop at 40, 200 and 1,000 streams (STREAMS), 100 tokens a request,
# 10 ms gaps: 4K, 20K and 100K tokens/s. Then gap 0 (100 streams, events
# written 16 per write as fast as the sockets take them): raw capacity.
#
# Figures, per client and as infermeter / reader ratios:
#   TTFT error p50/p99/max: first event's arrival - the truth's write instant
#   ITL error p50/p99/max:  |measured gap - true gap| per event
#   CPU per token (µs):     client user+sys CPU in the measuring window
#                           (/proc, after a ramp, before the end) / tokens the
#                           stub wrote in that window
#   tokens per CPU-second at gap 0
# The targets of the issue: TTFT p50 and p99 <= 1.2x at 40 and 200 streams;
# CPU per token and ITL p99 <= 1.5x at 1,000 streams. Report figures only:
# nothing here fails on a target. Needs a quiet machine with 2+ CPUs.
# Rows of issue "At the physical limit" (ROWS, default "stream req mem after"):
#   req:   1-token streamed requests, closed loop, REQ_CONNS (100) connections,
#          stub at gap 0: requests per wall second and client CPU per request
#          (µs) for both clients (min_reader's --output-len 1 is its 1-token
#          mode), measured in the same window as the stream rows
#   mem:   peak RSS of `infermeter run` at 200 streams (gap GAP_MS) for
#          MEM_SHORT (8) and MEM_LONG (32) seconds of the same load, and the
#          bytes per extra token between the two
#   after: a run directory of AFTER_N (100000) requests made from the req
#          row's (bench/gen_rundir.sh), then `infermeter report DIR`: wall,
#          CPU and peak RSS
# ROWS=stream keeps only the rows above (STREAMS and CAP).
# Environment: DUR (window seconds, default 10), RAMP (default 3), STREAMS, CAP=0 (no gap-0 run),
# GAP_MS (default 10), OUTLEN (default 100), IM_ARGS (more `infermeter run`
# options, e.g. IM_ARGS="--transport curl" to measure the libcurl path).
set -euo pipefail
IM=$(readlink -f "${1:?usage: bench/compare.sh BUILD/infermeter [OUTDIR]}")
OUT=${2:-$(mktemp -d /tmp/im-compare.XXXXXX)}
mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
HERE=$(cd "$(dirname "$0")" && pwd)
CC=${CC:-cc}
for p in sse_stub min_reader join_truth; do
  $CC -std=c17 -O2 -Wall -Wextra -o "$OUT/$p" "$HERE/$p.c" -lm
done
DUR=${DUR:-10} RAMP=${RAMP:-3} GAP_MS=${GAP_MS:-10} OUTLEN=${OUTLEN:-100}
STREAMS=${STREAMS:-"40 200 1000"}
SRV=0 CLI=1
[ "$(nproc)" -ge 2 ] || { CLI=0; echo "compare: one CPU only: the figures mix server and client" >&2; }
ulimit -n "$(ulimit -Hn)"
JT=$OUT/join_truth
SPID=
trap '[ -n "$SPID" ] && kill $SPID 2>/dev/null; true' EXIT

stub_start() { # stub_start NAME ARGS...: sets PORT, SPID
  local name=$1
  shift
  taskset -c $SRV "$OUT/sse_stub" --truth-log "$OUT/$name.truth.jsonl" "$@" >"$OUT/$name.stub.out" &
  SPID=$!
  for _ in $(seq 200); do
    grep -q listening "$OUT/$name.stub.out" 2>/dev/null && break
    sleep 0.05
  done
  PORT=$(sed -n 's/.*127.0.0.1://p' "$OUT/$name.stub.out")
  [ -n "$PORT" ] || { echo "compare: the stub did not start" >&2; exit 1; }
}
stub_stop() {
  kill -TERM $SPID 2>/dev/null || true
  wait $SPID 2>/dev/null || true
  SPID=
}
cpu_s() { awk '{printf "%.3f", ($14 + $15) / 100}' "/proc/$1/stat" 2>/dev/null || echo 0; }
now_ns() { "$JT" now; }
# tokens the stub wrote in [t1, t2] (CLOCK_MONOTONIC ns)
tokens_in() { awk -v a="$2" -v b="$3" -F'"ns":' '{ sub(/}.*/, "", $2); if ($2 + 0 >= a && $2 + 0 <= b) n++ } END { print n + 0 }' "$1"; }

# measure NAME CMD...: runs the client on CPU 1, samples its CPU over the
# window; prints "cpu_s tokens" into OUT/NAME.cpu
measure() {
  local name=$1
  shift
  taskset -c $CLI "$@" >"$OUT/$name.client.out" 2>&1 &
  local pid=$!
  sleep "$RAMP"
  local c1 t1 c2 t2
  c1=$(cpu_s $pid) t1=$(now_ns)
  sleep "$DUR"
  c2=$(cpu_s $pid) t2=$(now_ns)
  wait $pid || true
  echo "$c1 $c2 $t1 $t2" >"$OUT/$name.window"
}

ROWS=${ROWS:-"stream req mem after"}
has_row() { case " $ROWS " in *" $1 "*) return 0 ;; esac; return 1; }
has_row stream || { STREAMS=""; CAP=0; }
declare -A R
for C in $STREAMS; do
  total=$((RAMP + DUR + 2))
  # infermeter
  stub_start im$C --gap-ms "$GAP_MS"
  measure im$C "$IM" run ${IM_ARGS:-} --url "http://127.0.0.1:$PORT" --backend openai-completions --model stub \
    --concurrency "$C" --output-len "$OUTLEN" --input-len 16 --dataset synthetic \
    --duration "${total}s" --warmup 0 --grace 5s --no-history --out "$OUT/im$C.run"
  stub_stop
  read -r c1 c2 t1 t2 <"$OUT/im$C.window"
  tok=$(tokens_in "$OUT/im$C.truth.jsonl" "$t1" "$t2")
  R[im$C.cpu]=$(awk -v a="$c1" -v b="$c2" -v n="$tok" 'BEGIN { printf "%.2f", n ? (b - a) * 1e6 / n : 0 }')
  R[im$C.join]=$("$JT" "$OUT/im$C.truth.jsonl" im "$OUT/im$C.run")
  R[im$C.verdict]=$(grep -o 'client self-check[^,]*' "$OUT/im$C.client.out" | head -1 || true)
  # the minimal reader
  stub_start mr$C --gap-ms "$GAP_MS"
  measure mr$C "$OUT/min_reader" --port "$PORT" --concurrency "$C" --duration "$total" \
    --output-len "$OUTLEN" --input-len 16 --out "$OUT/mr$C.chunks"
  stub_stop
  read -r c1 c2 t1 t2 <"$OUT/mr$C.window"
  tok=$(tokens_in "$OUT/mr$C.truth.jsonl" "$t1" "$t2")
  R[mr$C.cpu]=$(awk -v a="$c1" -v b="$c2" -v n="$tok" 'BEGIN { printf "%.2f", n ? (b - a) * 1e6 / n : 0 }')
  R[mr$C.join]=$("$JT" "$OUT/mr$C.truth.jsonl" mr "$OUT/mr$C.chunks")
done

# gap 0: raw capacity, tokens per client CPU-second (CAP=0 leaves it out)
if [ "${CAP:-1}" != 0 ]; then
  stub_start imcap --gap-ms 0 --per-write 16
  measure imcap "$IM" run ${IM_ARGS:-} --url "http://127.0.0.1:$PORT" --backend openai-completions --model stub \
    --concurrency 100 --output-len 2000 --input-len 16 --dataset synthetic \
    --duration "$((RAMP + DUR + 2))s" --warmup 0 --grace 5s --no-history --out "$OUT/imcap.run"
  stub_stop
  read -r c1 c2 t1 t2 <"$OUT/imcap.window"
  R[im.cap]=$(awk -v a="$c1" -v b="$c2" -v n="$(tokens_in "$OUT/imcap.truth.jsonl" "$t1" "$t2")" \
    'BEGIN { printf "%.0f", (b > a ? n / (b - a) : 0) }')
  stub_start mrcap --gap-ms 0 --per-write 16
  measure mrcap "$OUT/min_reader" --port "$PORT" --concurrency 100 --duration "$((RAMP + DUR + 2))" \
    --output-len 2000 --input-len 16 --out "$OUT/mrcap.chunks"
  stub_stop
  read -r c1 c2 t1 t2 <"$OUT/mrcap.window"
  R[mr.cap]=$(awk -v a="$c1" -v b="$c2" -v n="$(tokens_in "$OUT/mrcap.truth.jsonl" "$t1" "$t2")" \
    'BEGIN { printf "%.0f", (b > a ? n / (b - a) : 0) }')
fi

# req: 1-token requests, closed loop; CPU per request in the window
REQ_CONNS=${REQ_CONNS:-100}
if has_row req; then
  for who in im mr; do
    stub_start ${who}req --gap-ms 0
    if [ $who = im ]; then
      measure imreq "$IM" run ${IM_ARGS:-} --url "http://127.0.0.1:$PORT" --backend openai-completions \
        --model stub --concurrency "$REQ_CONNS" --output-len 1 --input-len 16 --dataset synthetic \
        --duration "$((RAMP + DUR + 2))s" --warmup 0 --grace 5s --no-history --out "$OUT/imreq.run"
    else
      measure mrreq "$OUT/min_reader" --port "$PORT" --concurrency "$REQ_CONNS" \
        --duration "$((RAMP + DUR + 2))" --output-len 1 --input-len 16 --out "$OUT/mrreq.chunks"
    fi
    stub_stop
    read -r c1 c2 t1 t2 <"$OUT/${who}req.window"
    n=$(tokens_in "$OUT/${who}req.truth.jsonl" "$t1" "$t2") # one token per request
    R[${who}.req_cpu]=$(awk -v a="$c1" -v b="$c2" -v n="$n" 'BEGIN { printf "%.2f", n ? (b - a) * 1e6 / n : 0 }')
    R[${who}.req_rate]=$(awk -v n="$n" -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f", (b > a ? n * 1e9 / (b - a) : 0) }')
  done
  R[im.req_verdict]=$(grep -o 'client self-check[^,]*' "$OUT/imreq.client.out" | head -1 || true)
fi

# mem: peak RSS of the same load for a short and a long run
MEM_SHORT=${MEM_SHORT:-8} MEM_LONG=${MEM_LONG:-32}
if has_row mem; then
  for d in $MEM_SHORT $MEM_LONG; do
    stub_start mem$d --gap-ms "$GAP_MS"
    taskset -c $CLI /usr/bin/time -f "%M" -o "$OUT/mem$d.rss" "$IM" run ${IM_ARGS:-} \
      --url "http://127.0.0.1:$PORT" --backend openai-completions --model stub --concurrency 200 \
      --output-len "$OUTLEN" --input-len 16 --dataset synthetic --duration "${d}s" --warmup 0 \
      --grace 5s --no-history --out "$OUT/mem$d.run" >"$OUT/mem$d.client.out" 2>&1 || true
    stub_stop
    R[mem$d.rss]=$(tail -1 "$OUT/mem$d.rss")
    R[mem$d.tok]=$(wc -l <"$OUT/mem$d.truth.jsonl")
  done
  R[mem.per_token]=$(awk -v a="${R[mem$MEM_SHORT.rss]}" -v b="${R[mem$MEM_LONG.rss]}" \
    -v x="${R[mem$MEM_SHORT.tok]}" -v y="${R[mem$MEM_LONG.tok]}" \
    'BEGIN { printf "%.1f", (y > x ? (b - a) * 1024 / (y - x) : 0) }')
fi

# after: the work after a run, on AFTER_N requests made from the req row's run
AFTER_N=${AFTER_N:-100000}
if has_row after; then
  SEED=$OUT/imreq.run
  [ -s "$SEED/requests.jsonl" ] || SEED=$(ls -d "$OUT"/im*.run 2>/dev/null | head -1)
  if [ -n "$SEED" ] && [ -s "$SEED/requests.jsonl" ]; then
    bash "$HERE/gen_rundir.sh" "$SEED" "$AFTER_N" "$OUT/after.run" >/dev/null
    taskset -c $CLI /usr/bin/time -f "%e %U %S %M" -o "$OUT/after.time" "$IM" report "$OUT/after.run" \
      >"$OUT/after.out" 2>&1 || true
    read -r w u s m < <(tail -1 "$OUT/after.time")
    R[after.wall]=$w R[after.rss]=$m
    R[after.cpu]=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
  fi
fi

field() { echo "$1" | tr ' ' '\n' | awk -v k="$2" 'p { print; exit } $0 == k { p = 1 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
{
  echo "# bench/compare.sh $(date -u +%FT%TZ) $(uname -r) nproc=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# gap ${GAP_MS} ms, ${OUTLEN} tokens/request, window ${DUR} s after a ${RAMP} s ramp"
  printf '| streams | figure | infermeter | reader | ratio |\n|---|---|---|---|---|\n'
  for C in $STREAMS; do
    for f in ttft_err_p50_us ttft_err_p99_us ttft_err_max_us itl_err_p50_us itl_err_p99_us itl_err_max_us negative; do
      a=$(field "${R[im$C.join]}" $f) b=$(field "${R[mr$C.join]}" $f)
      printf '| %s | %s | %s | %s | %s |\n' "$C" "$f" "$a" "$b" "$(ratio "$a" "$b")"
    done
    printf '| %s | cpu_per_token_us | %s | %s | %s |\n' "$C" "${R[im$C.cpu]}" "${R[mr$C.cpu]}" \
      "$(ratio "${R[im$C.cpu]}" "${R[mr$C.cpu]}")"
    printf '| %s | chunks joined | %s | %s | |\n' "$C" "$(field "${R[im$C.join]}" chunks)" \
      "$(field "${R[mr$C.join]}" chunks)"
    [ -n "${R[im$C.verdict]}" ] && echo "|  $C | infermeter ${R[im$C.verdict]} | | | |"
  done
  [ "${CAP:-1}" = 0 ] || printf '| 100 (gap 0) | tokens per CPU-second | %s | %s | %s |\n' "${R[im.cap]}" "${R[mr.cap]}" \
    "$(ratio "${R[im.cap]}" "${R[mr.cap]}")"
  if has_row req; then
    printf '| %s conns, 1 token | requests per second | %s | %s | %s |\n' "$REQ_CONNS" "${R[im.req_rate]}" \
      "${R[mr.req_rate]}" "$(ratio "${R[im.req_rate]}" "${R[mr.req_rate]}")"
    printf '| %s conns, 1 token | cpu_per_request_us | %s | %s | %s |\n' "$REQ_CONNS" "${R[im.req_cpu]}" \
      "${R[mr.req_cpu]}" "$(ratio "${R[im.req_cpu]}" "${R[mr.req_cpu]}")"
    [ -n "${R[im.req_verdict]}" ] && echo "| $REQ_CONNS conns, 1 token | infermeter ${R[im.req_verdict]} | | | |"
  fi
  if has_row mem; then
    printf '| 200 streams | peak RSS KiB, %s s vs %s s | %s vs %s | | |\n' "$MEM_SHORT" "$MEM_LONG" \
      "${R[mem$MEM_SHORT.rss]}" "${R[mem$MEM_LONG.rss]}"
    printf '| 200 streams | bytes per extra token | %s | | |\n' "${R[mem.per_token]}"
  fi
  if has_row after && [ -n "${R[after.wall]:-}" ]; then
    printf '| %s requests | report DIR: wall s / CPU s / peak RSS KiB | %s / %s / %s | | |\n' "$AFTER_N" \
      "${R[after.wall]}" "${R[after.cpu]}" "${R[after.rss]}"
  fi
} | tee "$OUT/summary.md"
echo "files: $OUT"
