#!/usr/bin/env bash
# Failing servers never pass (issue 26, docs/audit.md "Failing server"):
# N runs (default 10) against each kind of failing server, counting
# non-zero exits and exit 6:
#   kill       the built-in server (`infermeter serve`), killed by its pid
#              2 s into a 6 s run at 10 req/s
#   html       a server answering every POST 200 text/html (nginx's page)
#   refuse400  a server refusing every POST with HTTP 400
#   silent     streams that never end: every request aborted at the grace
# (the last three are tests/e2e/chaos_server.py's modes).
#
#   bench/failing.sh BUILD/infermeter [N=10] [KINDS="kill html refuse400 silent"]
#
# Needs python3 and jq. About N x 10 s per kind. Prints one row per kind;
# the runs stay under $OUT (default a temporary directory).
set -u
BIN=$(readlink -f "${1:?usage: bench/failing.sh BUILD/infermeter [N] [KINDS]}")
N=${2:-10}
KINDS=${3:-"kill html refuse400 silent"}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$(mktemp -d /tmp/im-failing.XXXXXX)}
mkdir -p "$OUT"
CHAOS=$HERE/../tests/e2e/chaos_server.py

# start NAME CMD...: runs CMD with stdout to a fifo, reads its first line
# ("listening on ...:PORT"); sets SPID and PORT.
start() {
  local name=$1 line=
  shift
  rm -f "$OUT/fifo"
  mkfifo "$OUT/fifo"
  "$@" >"$OUT/fifo" 2>"$OUT/$name.server.err" &
  SPID=$!
  exec 5<"$OUT/fifo"
  read -r -t 20 line <&5 || { echo "server $name did not start" >&2; return 1; }
  PORT=${line##*:}
  PORT=${PORT%%/*}
}
stop() {
  [ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  exec 5<&- 2>/dev/null
  SPID=
}

printf '%-10s %4s %8s %7s %s\n' kind runs "exit!=0" "exit 6" "exit statuses"
for k in $KINDS; do
  nz=0; six=0; codes=
  for i in $(seq 1 "$N"); do
    d="$OUT/$k-$i"
    if [ "$k" = kill ]; then
      start "$k" "$BIN" serve --port 0 || continue
      "$BIN" run --no-progress --url "http://127.0.0.1:$PORT" --rate 10 --duration 6s --warmup 0 \
        --grace 2s --retries 0 --no-history --out "$d" >"$d.log" 2>&1 &
      rpid=$!
      sleep 2 # the server dies 2 s into the run (a benchmark, not a test: timing is the point)
      kill -9 "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
      exec 5<&- 2>/dev/null
      wait "$rpid"
      rc=$?
    else
      start "$k" python3 "$CHAOS" "$k" || continue
      "$BIN" run --no-progress --url "http://127.0.0.1:$PORT" --model chaos --requests 12 \
        --rate 20 --grace 1s --retries 0 --no-history --out "$d" >"$d.log" 2>&1
      rc=$?
      stop
    fi
    [ "$rc" != 0 ] && nz=$((nz + 1))
    [ "$rc" = 6 ] && six=$((six + 1))
    codes="$codes $rc"
    echo "$k run $i rc=$rc $(grep '^Verdict' "$d.log")" >>"$OUT/runs.txt"
  done
  printf '%-10s %4d %8d %7d %s\n' "$k" "$N" "$nz" "$six" "$codes"
done
echo "runs: $OUT"
