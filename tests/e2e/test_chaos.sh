#!/usr/bin/env bash
# Chaos: infermeter run against servers that die, hang, lie or speak
# nonsense (tests/e2e/chaos_server.py, one mode per case, loopback only,
# ports from the OS). Each case must end by itself with a clear error class
# in requests.jsonl (or a clear refusal before the run), no crash (no 134 or
# 139, no sanitizer report) and every finished record kept.
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null && command -v python3 >/dev/null || exit 77
# run_case NAME URL ARGS...: runs a short load; RC holds the exit status and
# J the records.
run_case() {
  local name=$1 url=$2
  shift 2
  "$BIN" run --url "$url" --model chaos --no-progress --no-scrape --no-sockstat --no-gpu \
    --warmup 0s --grace 2s --input-len 16 --output-len 4 --seed 1 --out "$TMP/$name" "$@" \
    >"$TMP/$name.out" 2>"$TMP/$name.err"
  RC=$?
  J="$TMP/$name/requests.jsonl"
  if [ "$RC" -eq 134 ] || [ "$RC" -eq 139 ] || [ "$RC" -ge 128 -a "$RC" -ne 130 ]; then
    fail "$name: crashed with status $RC: $(tail -c 2000 "$TMP/$name.err")"
  elif grep -qE 'Sanitizer|runtime error' "$TMP/$name.err"; then
    fail "$name: sanitizer report: $(grep -m3 -E 'Sanitizer|runtime error' "$TMP/$name.err")"
  else
    ok
  fi
}
# classes: the sorted unique error classes of the records.
classes() { jq -r -s '[.[] | .error // "none"] | unique | join(",")' "$J"; }
# every_record_kept: each record is JSON and results.json counts them all.
every_record_kept() {
  check "$1: every line of requests.jsonl is JSON" jq -e . "$J"
  if [ -f "$TMP/$1/results.json" ]; then
    check_eq "$1: one line per attempt" "$(wc -l <"$J" | tr -d ' ')" \
      "$(jq .metrics.client.attempts "$TMP/$1/results.json")"
  fi
}
# expect_class NAME CLASS ARGS...: the server's mode NAME gives CLASS on
# every record.
expect_class() {
  local name=$1 want=$2
  shift 2
  start_chaos "$name"
  run_case "$name" "$CBASE" "$@"
  stop_chaos
  check_eq "$name: error class" "$(classes)" "$want"
  every_record_kept "$name"
}
FAST=(--rate 50 --requests 3)

# An SSE `error:` field carrying llama.cpp's context-size wording: an error
# event, named for what it says (context_overflow, docs/results-schema.md).
expect_class errorfield context_overflow "${FAST[@]}"
check "errorfield: the server's message is kept" grep -q "exceeds the available context" "$TMP/errorfield.out"
expect_class bigusage malformed "${FAST[@]}"
expect_class html no_output "${FAST[@]}"
expect_class contentlength no_output "${FAST[@]}"
expect_class done2 malformed "${FAST[@]}"
expect_class afterdone malformed "${FAST[@]}"
expect_class badutf8 malformed "${FAST[@]}"
expect_class hugeline malformed "${FAST[@]}"
expect_class silent timeout_ttft "${FAST[@]}" --timeout ttft=1s
expect_class slowloris timeout_ttft "${FAST[@]}" --timeout ttft=1s
check_eq "every failed attempt records its prompt size" \
  "$(jq -s '[.[] | .context_tokens > 0 and .prompt_tokens > 0] | all' "$TMP"/{errorfield,html,silent}/requests.jsonl)" true

# A stream without usage: output tokens counted with the tokenizer, off the
# loop (the builder thread), on two threads.
start_chaos good
run_case good "$CBASE" --rate 50 --requests 6 --threads 2 --tokenizer built-in
stop_chaos
check_eq "good: no error" "$(classes)" none
check_eq "good: output counted by the tokenizer" \
  "$(jq -r -s '[.[] | .output_tokens_source] | unique | join(",")' "$J")" tokenizer
every_record_kept good

# Sessions against a server whose answers exceed any max_tokens: the
# history's bound (the target context) ends each session after its first
# turn; the run goes on with new sessions and ends well.
start_chaos long
run_case long "$CBASE" --sessions 2 --turns 3 --duration 2s
stop_chaos
check "long: exit 0 or 3 ($RC)" test "$RC" -eq 0 -o "$RC" -eq 3
check_eq "long: every attempt a first turn, and a success" \
  "$(jq -s '[.[] | .turn == 1 and .error == null] | all and length >= 2' "$J")" true
every_record_kept long

# Disk full: requests.jsonl is /dev/full (ENOSPC on every write; the CLI
# opens it O_APPEND without O_EXCL, through the link). The failure is
# counted, the run stops with the reason and exit status 5 (engine).
start_chaos good
mkdir -p "$TMP/full"
ln -s /dev/full "$TMP/full/requests.jsonl"
run_case full "$CBASE" --rate 50 --requests 20 --out "$TMP/full"
stop_chaos
check_eq "disk full: exit status 5" "$RC" 5
check "disk full: the reason is given" grep -q "No space left on device" "$TMP/full.err"

# A server killed mid-run: two answers, a stream cut half-way, then a
# closed port. Nothing lost: the successes and the failures are recorded.
start_chaos die
run_case die "$CBASE" --rate 20 --requests 8
wait "$CHAOS_PID" 2>/dev/null
CHAOS_PID=
exec 4<&-
check_eq "die: two successes" "$(jq -s '[.[] | select(.error == null)] | length' "$J")" 2
check "die: the cut stream and the closed port are failures" \
  jq -s -e '[.[] | select(.error != null) | .error] | length == 6 and all(. == "truncated" or . == "reset" or . == "connect")' "$J"
every_record_kept die

# Retries: a server that always answers 429 and a huge --retries, the
# backoff capped (this overflowed int64 past attempt 36: UB).
start_chaos ratelimit
run_case retries "$CBASE" --rate 50 --requests 1 --retries 60 --retry-backoff-max 1ms
stop_chaos
check_eq "retries: 61 attempts of one request" \
  "$(jq -s '[.[] | select(.logical_id == 1)] | length' "$J")" 61
check_eq "retries: all http_429" "$(classes)" http_429

# Before the run: a closed port, a name that never resolves (.invalid,
# RFC 6761: no network traffic), TLS spoken to a plain TCP server. Refused
# with exit status 2 and a message naming the target.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
run_case closed "http://127.0.0.1:$port" "${FAST[@]}"
check_eq "closed port: unreachable (exit 2)" "$RC" 2
check "closed port: says so" grep -q unreachable "$TMP/closed.err"
run_case dns "http://nonexistent.invalid:80" "${FAST[@]}" --yes
check_eq "DNS failure: unreachable (exit 2)" "$RC" 2
check "DNS failure: says so" grep -q unreachable "$TMP/dns.err"
start_chaos html
run_case tls "${CBASE/http:/https:}" "${FAST[@]}" --yes
stop_chaos
check_eq "TLS handshake failure: unreachable (exit 2)" "$RC" 2

# A file size limit (ulimit -f 8: 8 KiB, SIGXFSZ ignored): a write is cut
# short. The torn line is cut back, so every line left is a whole record;
# the run ends with the engine's exit status (EXIT_ENGINE, read from
# src/report/verdict.h: the tests run in the source tree).
ENGINE_RC=$(sed -n 's/.*IM_EXIT_ENGINE = \([0-9][0-9]*\).*/\1/p' src/report/verdict.h)
start_chaos good
( trap '' XFSZ; ulimit -f 8; run_case fsize "$CBASE" --rate 50 --requests 40; exit "$RC" )
RC=$?
check "file size limit: no sanitizer report" test -z "$(grep -E 'Sanitizer|runtime error' "$TMP/fsize.err")"
stop_chaos
J="$TMP/fsize/requests.jsonl"
check_eq "file size limit: the engine's exit status" "$RC" "$ENGINE_RC"
check "file size limit: some records were written" test -s "$J"
check "file size limit: every line left is a whole record" jq -e . "$J"
check "file size limit: the file ends with a line end" test "$(tail -c 1 "$J" | od -An -c | tr -d ' ')" = '\n'

finish
