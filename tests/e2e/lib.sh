# Shared helpers of the end-to-end tests: start `infermeter serve` on a free
# loopback port, make requests with curl, assert with messages. Every test
# script ends by itself: the server is stopped on exit, whatever happens.
set -u
BIN=${1:?usage: test_x.sh PATH/TO/infermeter}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/infermeter-e2e.XXXXXX")
# The run history (`run` records each run in it): a temporary database,
# never the user's ~/.local/share/infermeter/history.db.
export XDG_DATA_HOME="$TMP/xdg-data"
FAILS=0
CHECKS=0
SERVER_PID=
PORT=

cleanup() {
  stop_server
  stop_chaos
  exec 3<&- 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

# start_server ARGS...: starts the server, sets PORT and BASE. The first line
# the server prints is read through a fifo, so there is no sleep or polling.
start_server() {
  stop_server
  rm -f "$TMP/fifo"
  mkfifo "$TMP/fifo"
  "$BIN" serve --port 0 "$@" >"$TMP/fifo" 2>"$TMP/server.err" &
  SERVER_PID=$!
  exec 3<"$TMP/fifo"
  local line=
  if ! read -r -t 20 line <&3; then
    echo "FAIL: server did not start: $(cat "$TMP/server.err")" >&2
    exit 1
  fi
  PORT=${line##*:}
  BASE="http://127.0.0.1:$PORT"
}

stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
    local rc=$?
    SERVER_PID=
    exec 3<&-
    # A crash, a sanitizer report or a leak fails the test wherever it happened.
    if [ $rc -ne 0 ] || grep -qE 'Sanitizer|runtime error' "$TMP/server.err"; then
      fail "server exited with status $rc: $(head -c 3000 "$TMP/server.err")"
    fi
    return $rc
  fi
}

# start_chaos MODE: tests/e2e/chaos_server.py in MODE (loopback, a port from
# the OS); sets CBASE. The port is read from the server's first line.
CHAOS_PID=
start_chaos() {
  stop_chaos
  rm -f "$TMP/cfifo"
  mkfifo "$TMP/cfifo"
  python3 "$(dirname "${BASH_SOURCE[0]}")/chaos_server.py" "$1" >"$TMP/cfifo" 2>"$TMP/chaos.err" &
  CHAOS_PID=$!
  exec 4<"$TMP/cfifo"
  local line=
  read -r -t 20 line <&4 || { echo "FAIL: chaos server did not start: $(cat "$TMP/chaos.err")" >&2; exit 1; }
  CBASE="http://127.0.0.1:${line##*:}"
}

stop_chaos() {
  if [ -n "$CHAOS_PID" ]; then
    kill "$CHAOS_PID" 2>/dev/null
    wait "$CHAOS_PID" 2>/dev/null
    CHAOS_PID=
    exec 4<&-
  fi
}

# chunk_delays RUN_DIR TRUTH_LOG: a JSON array of every token chunk's
# client arrival minus the server's write (ns), joined by request id and
# chunk ordinal (the run's records on its manifest's clock origin).
chunk_delays() {
  local t0
  t0=$(jq .manifest.t0_monotonic_ns "$1/results.json")
  jq -c --argjson t0 "$t0" 'select(.error==null) | {id: .request_id, t: [.chunks_us[] * 1000 + .t_start + $t0]}' \
    "$1/requests.jsonl" >"$TMP/client_chunks"
  jq -c -s 'map(select(.type=="chunk")) | group_by(.id) | map({id: .[0].id, t: (sort_by(.index) | map(.ns))}) | .[]' \
    "$2" >"$TMP/truth_chunks"
  jq -s -c -n --slurpfile c "$TMP/client_chunks" --slurpfile t "$TMP/truth_chunks" \
    '($t | map({key: .id, value: .t}) | from_entries) as $w
     | [$c[] | . as $r | [range(0; $r.t|length)] | map($r.t[.] - $w[$r.id][.])[]]'
}

ok() { CHECKS=$((CHECKS + 1)); }
fail() {
  CHECKS=$((CHECKS + 1))
  FAILS=$((FAILS + 1))
  echo "FAIL: $*" >&2
}
# check DESC COND...: runs COND; failure prints DESC.
check() {
  local desc=$1
  shift
  if "$@" >/dev/null; then ok; else fail "$desc"; fi
}
# check_eq DESC GOT WANT
check_eq() {
  if [ "$2" = "$3" ]; then ok; else fail "$1: got '$2', want '$3'"; fi
}
# check_ge DESC GOT MIN
check_ge() {
  if [ "$2" -ge "$3" ] 2>/dev/null; then ok; else fail "$1: got '$2', want >= $3"; fi
}

# post PATH JSON [curl args...]: prints the body; status in $TMP/status.
post() {
  local path=$1 body=$2
  shift 2
  curl -sS -o "$TMP/body" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$body" "$@" "$BASE$path" >"$TMP/status" 2>"$TMP/curl.err"
  echo $? >"$TMP/curl.rc"
  cat "$TMP/body"
}
status() { cat "$TMP/status"; }

# metric NAME [LABEL-FILTER]: the value of the first matching sample.
metric() {
  curl -sS "$BASE/metrics" | grep -E "^$1(\{[^}]*${2:-}[^}]*\})? " | head -n1 | awk '{print $2}'
}

# Every results.json and requests.jsonl a test writes must match
# docs/results.schema.json: finish validates, in one validator run, every
# output directory left under $TMP, plus the copies keep_outputs made of
# directories the test then wrote again. A mismatch fails the test (the
# outputs are kept for a look); without node/npm or the npm registry the
# validation is skipped with a message.
E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KEPT=0
# keep_outputs DIR: sets DIR's outputs aside before the test reuses DIR.
keep_outputs() {
  KEPT=$((KEPT + 1))
  local dst f
  dst="$TMP/schema-kept/$KEPT-$(basename "$1")"
  mkdir -p "$dst"
  for f in results.json requests.jsonl; do
    [ -f "$1/$f" ] && cp "$1/$f" "$dst/"
  done
  return 0
}
validate_outputs() {
  local dirs=() d
  while IFS= read -r d; do dirs+=("$d"); done < <(
    find "$TMP" -type f \( -name results.json -o -name requests.jsonl \) -printf '%h\n' | sort -u)
  [ ${#dirs[@]} -eq 0 ] && return 0
  IM_NPM_CACHE=${IM_NPM_CACHE:-$(cd "$(dirname "$BIN")" && pwd)/npm-cache} \
    bash "$E2E_DIR/../schema/validate.sh" "${dirs[@]}" >"$TMP/schema.out" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    ok
  elif [ $rc -eq 77 ]; then
    echo "schema validation skipped: $(tail -n 1 "$TMP/schema.out")" >&2
  else
    local keep
    keep=$(mktemp -d "${TMPDIR:-/tmp}/infermeter-schema-fail.XXXXXX")
    for d in "${dirs[@]}"; do
      mkdir -p "$keep/${d#"$TMP"/}" && cp "$d"/results.json "$d"/requests.jsonl "$keep/${d#"$TMP"/}/" 2>/dev/null
    done
    fail "outputs do not match docs/results.schema.json (kept in $keep):"$'\n'"$(head -n 40 "$TMP/schema.out")"
  fi
}

finish() {
  validate_outputs
  echo "$(basename "$0"): $CHECKS checks, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}

# run_ok ARGS...: `infermeter run --no-progress --quiet ARGS` as one check:
# it passes when the run exits 0, or 3 (a busy machine's client self-check),
# without a sanitizer report; stderr is kept in $TMP/run.err.
run_ok() {
  "$BIN" run --no-progress --quiet "$@" 2>"$TMP/run.err"
  local rc=$?
  if { [ $rc -ne 0 ] && [ $rc -ne 3 ]; } || grep -qE 'Sanitizer|runtime error' "$TMP/run.err"; then
    fail "run $* exited $rc: $(head -c 3000 "$TMP/run.err")"
  else
    ok
  fi
}
