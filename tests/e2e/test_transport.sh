#!/usr/bin/env bash
# The two client transports (--transport curl|h1, docs/architecture.md
# "Transports") run the same workload against `infermeter serve
# --truth-log`: the same completions, the same tokens, every record's chunks
# the chunks the server wrote for it; h1 reuses its connections; auto picks
# h1 for a plain http:// target and libcurl otherwise; h1 asked for where it
# cannot serve is refused before the run (exit 1, usage).
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null && command -v python3 >/dev/null || exit 77

for t in curl h1; do
  start_server --time-scale 50 --truth-log "$TMP/truth-$t.jsonl"
  "$BIN" run --no-progress --quiet --url "$BASE" --transport "$t" --concurrency 4 --requests 40 \
    --warmup 0s --grace 5s --input-len 64 --output-len 12 --ignore-eos --seed 5 \
    --out "$TMP/$t" >"$TMP/$t.out" 2>"$TMP/$t.err"
  rc=$?
  stop_server
  check "$t: exit 0 or 3 (self-check) ($rc): $(tail -c 300 "$TMP/$t.err")" test $rc -eq 0 -o $rc -eq 3
  J="$TMP/$t/requests.jsonl"
  check_eq "$t: the manifest names the transport" \
    "$(jq -r .target.transport.client "$TMP/$t/manifest.json")" "$t"
  check_eq "$t: 40 successes" "$(jq -s '[.[] | select(.error == null)] | length' "$J")" 40
  check_eq "$t: 12 tokens each" "$(jq -s '[.[] | select(.error == null) | .output_tokens] | add' "$J")" 480
  # Each record's chunks = the truth log's chunks of its request id.
  check_eq "$t: every record's chunk count is the server's" \
    "$(jq -n --slurpfile r "$J" --slurpfile tr "$TMP/truth-$t.jsonl" '
        ([$tr[] | select(.type == "chunk")] | group_by(.id) | map({key: .[0].id, value: length})
         | from_entries) as $n
        | [$r[] | .n_chunks == ($n[.request_id] // -1)] | (length == 40 and all)')" true
  check_eq "$t: tokens received = tokens the server wrote" \
    "$(jq -s '[.[] | select(.type == "chunk") | .tokens] | add' "$TMP/truth-$t.jsonl")" 480
  check_eq "$t: every timestamp in order" \
    "$(jq -s '[.[] | .t_start <= .t_send and .t_send <= .t_hdr and .t_hdr <= .t_first and .t_first <= .t_last and .t_last <= .t_end] | all' "$J")" true
  # Four slots, keep-alive: a handful of connections carry the 40 requests.
  check "$t: connections reused" \
    jq -s -e '([.[] | .conn] | unique | length) <= 8 and ([.[] | select(.conn_new)] | length) <= 8' "$J"
done
check_eq "same completions over both transports" \
  "$(jq .summary.completed "$TMP/curl/results.json")" "$(jq .summary.completed "$TMP/h1/results.json")"
check_eq "same output tokens over both transports" \
  "$(jq -s '[.[] | .output_tokens] | add' "$TMP/curl/requests.jsonl")" \
  "$(jq -s '[.[] | .output_tokens] | add' "$TMP/h1/requests.jsonl")"

# auto: h1 for a plain http:// target (the built-in server here).
"$BIN" run --no-progress --quiet --rate 20 --requests 5 --warmup 0s --output-len 4 \
  --out "$TMP/auto" >"$TMP/auto.out" 2>"$TMP/auto.err"
rc=$?
check "auto: exit 0 or 3 ($rc)" test $rc -eq 0 -o $rc -eq 3
check_eq "auto: h1 for http://" "$(jq -r .target.transport.client "$TMP/auto/manifest.json")" h1
check_eq "auto: 5 successes" "$(jq -s '[.[] | select(.error == null)] | length' "$TMP/auto/requests.jsonl")" 5

# h1 where it cannot serve: refused before the run, saying why.
for args in "--url https://127.0.0.1:9" "--url http://127.0.0.1:9 --http2" \
            "--url http://127.0.0.1:9 --header Host:x"; do
  # shellcheck disable=SC2086
  "$BIN" run --no-progress --quiet $args --transport h1 --requests 1 --out "$TMP/refused" \
    >/dev/null 2>"$TMP/refused.err"
  rc=$?
  check_eq "h1 refused ($args): a usage error (exit 1)" "$rc" 1
  check "h1 refused ($args): says why" grep -q -- "--transport h1:" "$TMP/refused.err"
done
"$BIN" run --no-progress --transport h2 --requests 1 --out "$TMP/bad" >/dev/null 2>"$TMP/bad.err"
check_eq "--transport h2: a usage error (exit 1)" "$?" 1
check "--transport h2: names the choices" grep -q "auto, curl or h1" "$TMP/bad.err"

# Hostile servers (tests/e2e/chaos_server.py): both transports end every
# attempt by themselves with the same error class; where h1 is stricter
# than libcurl 7.88 (an obs-fold line and Content-Length values that
# disagree, which RFC 9112 says to reject; a head cut by the close, which
# libcurl takes as an empty 200), h1's class is `truncated`.
chaos_classes() { # chaos_classes MODE TRANSPORT: the records' sorted classes
  start_chaos "$1"
  "$BIN" run --url "$CBASE" --model chaos --no-progress --no-scrape --no-sockstat --no-gpu \
    --transport "$2" --warmup 0s --grace 2s --input-len 16 --output-len 4 --seed 1 --rate 50 \
    --requests 2 --timeout ttft=3s --out "$TMP/c-$1-$2" >"$TMP/c-$1-$2.out" 2>"$TMP/c-$1-$2.err"
  local rc=$?
  stop_chaos
  if [ "$rc" -ge 128 ] || grep -qE 'Sanitizer|runtime error' "$TMP/c-$1-$2.err"; then
    fail "$1 ($2): crashed or a sanitizer report (status $rc): $(tail -c 1000 "$TMP/c-$1-$2.err")"
  fi
  jq -r -s '[.[] | .error // "none"] | unique | join(",")' "$TMP/c-$1-$2/requests.jsonl"
}
for m in chunked:none interim:none http10:none badchunk:reset shortchunk:truncated \
         shortlength:truncated resetmid:reset nothttp:connect hugehead:truncated \
         good:none contentlength:no_output; do
  mode=${m%%:*} want=${m#*:}
  check_eq "$mode: curl's class" "$(chaos_classes "$mode" curl)" "$want"
  check_eq "$mode: h1's class" "$(chaos_classes "$mode" h1)" "$want"
done
# A kept connection closed unanswered: the request goes again on a new one.
check_eq "stale: curl's class" "$(chaos_classes stale curl)" none
check_eq "stale: h1's class" "$(chaos_classes stale h1)" none
for mode in obsfold clconflict headonly; do
  check_eq "$mode: h1 refuses the head" "$(chaos_classes "$mode" h1)" truncated
done
finish
