#!/usr/bin/env bash
# Stall localisation against the built-in server's ground truth
# (docs/metrics.md §4 "Stalls"; bench/README.md).
#
#   bench/stall_locate.sh BUILD/infermeter [MS...]
#
# For each planted stall length M (ms, simulated; default 20 40 80 160),
# `infermeter serve --truth-log` pauses 30 % of the requests for M ms
# before output token 60 (`--fault stall:0.3@token=60,ms=M`), and
# `infermeter run` streams 200-token answers at RATE req/s (default 4) for
# 20 s. The truth:
# a request's planted stall is the gap between consecutive chunk deadlines
# (engine step ends, in the truth log) exceeding the request's median such
# gap by more than M/2 — the only gap of that size in a request, at a known
# chunk ordinal. Each detector then flags gaps of
# the client's chunk arrivals (requests.jsonl, joined by X-Request-Id):
#   per-request  a gap above k x its request's median gap (k = 5), the rule of
#                analysis.stalls;
#   pooled       a gap above k x the median of every gap of the run pooled;
#   p99          a gap above the pooled p99 gap (what a P99 over the whole
#                token stream flags).
# Printed per M and detector: planted stalls, found at the planted ordinal
# (exact), found within one chunk, missed, and false flags (flagged gaps of
# requests with no stall, per 1,000 gaps). Needs jq. Prints figures, asserts
# nothing.
set -eu
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
MS=("$@")
[ ${#MS[@]} -gt 0 ] || MS=(20 40 80 160)
RATE=${RATE:-4}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/infermeter-stall.XXXXXX")
trap 'kill "$pid" 2>/dev/null; rm -rf "$TMP"' EXIT
printf '%-6s %-12s %8s %8s %8s %8s %14s\n' M_ms detector planted exact within1 missed false/1k_gaps
for m in "${MS[@]}"; do
  rm -f "$TMP/fifo"
  mkfifo "$TMP/fifo"
  "$BIN" serve --port 0 --no-moe-routing --truth-log "$TMP/truth.jsonl" \
    --fault "stall:0.3@token=60,ms=$m" >"$TMP/fifo" 2>"$TMP/serve.err" &
  pid=$!
  exec 3<"$TMP/fifo"
  read -r -t 20 line <&3
  "$BIN" run --url "http://127.0.0.1:${line##*:}" --no-progress --quiet --no-history \
    --no-gpu --warmup 0s --rate "$RATE" --duration 20s --input-len 128 --output-len 200 \
    --ignore-eos --seed 7 --out "$TMP/run" || true
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  exec 3<&-
  # truth: id -> ordinal of its stall gap (or -1)
  jq -sc --argjson half "$((m * 500000))" '
    [.[] | select(.type == "chunk")] | group_by(.id) | map(
      (sort_by(.index) | [.[].deadline_ns]) as $d
      | ([range(1; $d | length) | $d[.] - $d[. - 1]]) as $g
      | ($g | sort | .[(length / 2 | floor)] // 0) as $med
      | {key: .[0].id, value: ([range(0; $g | length) | select($g[.] - $med > $half) | . + 1]
                               | if length == 1 then .[0] else -1 end)})
    | from_entries' "$TMP/truth.jsonl" >"$TMP/truth.json"
  jq -sr --slurpfile t "$TMP/truth.json" --arg m "$m" '
    def median: sort | if length == 0 then 0 else .[(length / 2 | floor)] end;
    def gaps: . as $c | [range(1; $c | length) | $c[.] - $c[. - 1]];
    [.[] | select(.kind == "measured" and .error == null and .n_chunks > 2)
      | {planted: ($t[0][.request_id] // -1), g: (.chunks_us | gaps)}] as $r
    | ([$r[].g[]] | sort) as $all
    | ($all | median) as $pm
    | ($all | .[((length * 0.99) | floor)]) as $p99
    | def report(name):
        ([$r[] | . as $q
          | (if name == "per-request" then 5 * ($q.g | median)
             elif name == "pooled" then 5 * $pm else $p99 end) as $thr
          | {planted, hit: [range(0; $q.g | length) | select($q.g[.] > $thr)]}]) as $d
        | ($d | map(select(.planted >= 0))) as $p
        | ($p | map(select(.planted as $k | .hit | index([$k - 1]) != null)) | length) as $exact
        | ($p | map(select(.planted as $k | .hit | any(. >= $k - 2 and . <= $k))) | length) as $near
        | ($d | map(select(.planted < 0)) | [.[].hit | length] | add // 0) as $false
        | ([$r[] | select(.planted < 0) | .g | length] | add // 1) as $ng
        | "\($m)\t\(name)\t\($p | length)\t\($exact)\t\($near)\t\(($p | length) - $near)\t\(1000 * $false / $ng | . * 10 | round / 10)";
      report("per-request"), report("pooled"), report("p99")
  ' "$TMP/run/requests.jsonl" | awk -F'\t' '{printf "%-6s %-12s %8s %8s %8s %8s %14s\n", $1, $2, $3, $4, $5, $6, $7}'
done
