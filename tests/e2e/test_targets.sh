#!/usr/bin/env bash
# Several --url (docs/tls.md "Several targets"): two `infermeter serve`
# instances as replicas with no balancer. Requests go round robin, each
# record names its target, a request's retries and a session's turns stay on
# one target, and each server's truth log holds exactly the requests the
# client recorded for it (ids, tokens). results.json has the figures per
# target (recomputed by `report` byte for byte) and both servers' /metrics.
. "$(dirname "$0")/lib.sh"
need() { command -v "$1" >/dev/null || { echo "SKIP: $1 missing" >&2; exit 77; }; }
need jq
S_PIDS=()
targets_cleanup() {
  local p
  for p in "${S_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  S_PIDS=()
  cleanup
}
trap targets_cleanup EXIT
# serve_bg NAME ARGS...: a serve of its own; its port in PORT_<NAME> (the
# first line it prints, read through a fifo: no polling).
serve_bg() {
  local name=$1 line=
  shift
  mkfifo "$TMP/$name.fifo"
  "$BIN" serve --port 0 "$@" >"$TMP/$name.fifo" 2>"$TMP/$name.err" &
  S_PIDS+=($!)
  exec {fd}<"$TMP/$name.fifo"
  read -r -t 20 line <&"$fd" || { echo "FAIL: serve $name did not start: $(cat "$TMP/$name.err")" >&2; exit 1; }
  exec {fd}<&-
  printf -v "PORT_$name" '%s' "${line##*:}"
}
stop_all() {
  local p
  for p in "${S_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  S_PIDS=()
}
RUN() {
  "$BIN" run --no-progress "$@" >"$TMP/run.out" 2>"$TMP/run.err"
  local rc=$?
  if { [ $rc -ne 0 ] && [ $rc -ne 3 ]; } || grep -qE 'Sanitizer|runtime error' "$TMP/run.err"; then
    fail "run $* exited $rc: $(head -c 3000 "$TMP/run.err")"
  else
    ok
  fi
}

# B refuses a share of requests with 429: retries must stay on B.
serve_bg a --time-scale 50 --truth-log "$TMP/truth_a.jsonl"
serve_bg b --time-scale 50 --truth-log "$TMP/truth_b.jsonl" --fault 429:0.3
A="http://127.0.0.1:$PORT_a"
B="http://127.0.0.1:$PORT_b"
W=(--input-len 64 --output-len 8 --ignore-eos --warmup 0 --seed 21)
# The second URL in another spelling (/v1/): the same base once normalised.
RUN --url "$A" --url "$B/v1/" "${W[@]}" --rate 40 --requests 40 --retries 8 --retry-backoff-max 50ms \
  --out "$TMP/rr"
J="$TMP/rr/requests.jsonl"
R="$TMP/rr/results.json"
check_eq "round robin: 20 requests per target" \
  "$(jq -s -c '[.[] | select(.attempt == 1) | .target] | group_by(.) | map([.[0], length])' "$J")" '[[0,20],[1,20]]'
check_eq "request i (from 1) went to target (i - 1) mod 2" \
  "$(jq -s '[.[] | select(.attempt == 1) | .target == ((.logical_id - 1) % 2)] | all' "$J")" true
check "target B refused some attempts (429), which were retried" \
  jq -s -e '[.[] | select(.attempt > 1)] | length > 0' "$J"
check_eq "a request's retries stay on its target" \
  "$(jq -s '[group_by(.logical_id)[] | map(.target) | unique | length == 1] | all' "$J")" true
check_eq "no retry reached A (it refuses nothing)" \
  "$(jq -s '[.[] | select(.attempt > 1 and .target == 0)] | length' "$J")" 0
check_eq "manifest: both targets, normalised" "$(jq -c '.manifest.target.urls' "$R")" "[\"$A\",\"$B\"]"
check_eq "metrics.by_target: completed per target = the records'" \
  "$(jq -c '[.metrics.by_target[] | [.target, .completed]]' "$R")" \
  "$(jq -s -c '[.[] | select((.kind == "measured" or .kind == "retry") and .error == null)] | group_by(.target) | map([.[0].target, length])' "$J")"
check "metrics.by_target: TTFT per target" jq -e '[.metrics.by_target[] | .ttft_ms.p50 > 0] | all' "$R"
check "report.html: a Targets section with both charts" \
  grep -q 'Requests by target.*Latency by target' "$TMP/rr/report.html"
check "report.html: the table names target B's URL" grep -q "<td>$B</td>" "$TMP/rr/report.html"
check_eq "both servers' /metrics were scraped" \
  "$(jq -c '[.metrics.servers[] | .url]' "$R")" "[\"$A/metrics\",\"$B/metrics\"]"
check "the terminal shows a table by target with both URLs" \
  bash -c "grep -q 'By target' '$TMP/run.out' && grep -q '0 $A' '$TMP/run.out' && grep -q '1 $B' '$TMP/run.out'"
grep -v '"generated_at"' "$R" >"$TMP/before"
"$BIN" report --quiet "$TMP/rr" >/dev/null 2>&1
grep -v '"generated_at"' "$R" >"$TMP/after"
check "report recomputes the two-target results.json byte for byte" cmp -s "$TMP/before" "$TMP/after"

# Sessions: every turn of a session on the session's target. (B's planted
# 429s, 30 %, make this a failing server, exit 6, by --max-error-rate's
# default; where the turns go is what is judged here.)
RUN --url "$A" --url "$B" --sessions 4 --turns 3 --context-growth 128:512 --requests 24 --duration 20s \
  --warmup 0 --output-len 8 --ignore-eos --seed 4 --max-error-rate 100 --out "$TMP/sess"
check_eq "sessions: each session's turns on one target, sessions alternating" \
  "$(jq -s '[group_by(.session)[] | (map(.target) | unique) as $t | ($t | length == 1) and $t[0] == ((.[0].session - 1) % 2)] | all' "$TMP/sess/requests.jsonl")" true
stop_all

# The truth: each server served exactly the successes recorded for it.
for t in a b; do
  idx=$([ $t = a ] && echo 0 || echo 1)
  check_eq "server $t's truth log holds the request ids recorded for target $idx" \
    "$(jq -s -c '[.[] | select(.type == "request" and (.id | startswith("im-"))) | .id] | sort' "$TMP/truth_$t.jsonl")" \
    "$(cat "$J" "$TMP/sess/requests.jsonl" | jq -s -c "[.[] | select(.error == null and .target == $idx) | .request_id] | sort")"
  check_eq "tokens received from $t = tokens $t wrote" \
    "$(cat "$J" "$TMP/sess/requests.jsonl" | jq -s "[.[] | select(.error == null and .target == $idx) | .output_tokens] | add")" \
    "$(jq -s '[.[] | select(.type == "chunk" and (.id | startswith("im-"))) | .tokens] | add' "$TMP/truth_$t.jsonl")"
done

# Bad input.
args=()
for i in $(seq 1 17); do args+=(--url "http://127.0.0.1:$i"); done
"$BIN" run --no-progress --quiet "${args[@]}" --requests 1 --out "$TMP/many" 2>"$TMP/many.err"
check_eq "17 --url: usage error" "$?" 1
check "... saying at most 16" grep -q -- "--url: at most 16 targets" "$TMP/many.err"
serve_bg c --time-scale 50
DEAD=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 9)
"$BIN" run --no-progress --quiet --url "http://127.0.0.1:$PORT_c" --url "http://127.0.0.1:$DEAD" "${W[@]}" \
  --requests 2 --out "$TMP/dead" 2>"$TMP/dead.err"
check_eq "a second target that does not answer: exit 2 before the load" "$?" 2
check "... naming target 1 and its URL" grep -q "target 1 (http://127.0.0.1:$DEAD) unreachable" "$TMP/dead.err"
check "... before any request" test ! -s "$TMP/dead/requests.jsonl"
"$BIN" run --no-progress --quiet --url "http://127.0.0.1:$PORT_c" --url "http://127.0.0.1:$DEAD" \
  --unix-socket /tmp/x.sock "${W[@]}" --requests 2 --out "$TMP/unix2" 2>"$TMP/unix2.err"
check_eq "several --url with --unix-socket: refused" "$?" 1
check "... saying why" grep -q "several --url with --unix-socket" "$TMP/unix2.err"
# One target spelt twice (--url and vLLM's --base-url with /v1/) is one target.
run_ok --out "$TMP/twice" --url "http://127.0.0.1:$PORT_c" --base-url "http://127.0.0.1:$PORT_c/v1/" \
  "${W[@]}" --requests 2
check "--url and --base-url naming one server: one target, no per-target table" jq -e \
  '.manifest.target.urls == null and .metrics.by_target == null' "$TMP/twice/results.json"
# A remote target's --yes question comes after the reachability check
# (issue 30): with the first target closed, the run stops there, exit 2,
# without asking; no load is sent and no credential printed.
"$BIN" run --no-progress --url "http://127.0.0.1:$DEAD" --url "http://user:pw@192.0.2.1:8000" "${W[@]}" \
  --requests 1 --out "$TMP/remote" </dev/null 2>"$TMP/remote.err"
check_eq "unreachable targets with a remote one: exit 2 before the question" "$?" 2
check "... says unreachable" grep -q "unreachable" "$TMP/remote.err"
check "... asks nothing yet" bash -c "! grep -q 'add --yes' '$TMP/remote.err'"
check "... no credential printed" bash -c "! grep -q 'user:pw' '$TMP/remote.err'"
stop_all
finish
