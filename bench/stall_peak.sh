#!/usr/bin/env bash
# Stall localisation, the reported index (analysis.stalls.peak_position,
# docs/metrics.md §4 "Where they cluster") against the token the built-in
# server paused before, at several positions and output lengths, checked
# against its truth log (the chunk ordinal whose deadline gap holds the
# pause).
#
#   bench/stall_peak.sh BUILD/infermeter ["TOKEN:OUTPUT_LEN ..."]
#
# Each pair: `serve --fault stall:0.3@token=TOKEN,ms=200 --truth-log`, 4 req/s
# for 15 s of OUTPUT_LEN-token answers (--ignore-eos). Prints the planted
# token, the truth log's median stall ordinal, the reported peak_position,
# its localisation phrase, and whether it lies within +-2 tokens.
set -u
BIN=$(readlink -f "${1:?usage: bench/stall_peak.sh BUILD/infermeter [PAIRS]}")
PAIRS=${2:-"10:50 60:200 150:200 500:1000 1700:3000"}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/infermeter-peak.XXXXXX")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$TMP"' EXIT
printf '%-6s %-7s %-6s %-6s %-4s %s\n' token out truth peak ok localisation
for pair in $PAIRS; do
  tok=${pair%:*}; len=${pair#*:}
  rm -f "$TMP/fifo" "$TMP/truth.jsonl"; mkfifo "$TMP/fifo"
  "$BIN" serve --port 0 --no-moe-routing --time-scale 4 --truth-log "$TMP/truth.jsonl" \
    --fault "stall:0.3@token=$tok,ms=200" >"$TMP/fifo" 2>"$TMP/serve.err" & pid=$!
  exec 3<"$TMP/fifo"; read -r -t 20 line <&3; exec 3<&-
  rm -rf "$TMP/run"
  "$BIN" run --url "http://127.0.0.1:${line##*:}" --no-progress --quiet --no-history --no-gpu \
    --warmup 0s --rate 4 --duration 15s --grace 60s --input-len 64 --output-len "$len" \
    --ignore-eos --seed 7 --out "$TMP/run" >/dev/null 2>&1
  kill -TERM "$pid"; wait "$pid" 2>/dev/null; pid=
  # truth: per request, the ordinal of its one gap of deadlines above
  # median + 100 ms; their median over the stalled requests.
  truth=$(jq -s '[.[] | select(.type == "chunk")] | group_by(.id) | map(
      (sort_by(.index) | [.[].deadline_ns]) as $d
      | ([range(1; $d | length) | $d[.] - $d[. - 1]]) as $g
      | ($g | sort | .[(length / 2 | floor)] // 0) as $med
      | [range(0; $g | length) | select($g[.] - $med > 25000000) | . + 1] | select(length == 1) | .[0])
      | sort | if length == 0 then null else .[(length / 2 | floor)] end' "$TMP/truth.jsonl")
  peak=$(jq '.analysis.stalls.peak_position' "$TMP/run/results.json")
  where=$(jq -r '.analysis.stalls.localisation' "$TMP/run/results.json")
  ok=$(awk -v p="$peak" -v t="$tok" 'BEGIN{d = p - t; if (d < 0) d = -d; print (p != "null" && d <= 2) ? "yes" : "no"}')
  printf '%-6s %-7s %-6s %-6s %-4s %s\n' "$tok" "$len" "$truth" "$peak" "$ok" "$where"
done
