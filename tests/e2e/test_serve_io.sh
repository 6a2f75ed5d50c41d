#!/usr/bin/env bash
# serve --io: an engine step's output sent by io_uring or by write() (docs/
# serve.md "Output"). The same seeded requests, 48 streams at once so that
# steps carry many connections, give the same bytes either way (ids and
# timestamps aside) and the same truth-log chunks; the truth log's instants
# are ordered (deadline <= ns <= write_done_ns); /metrics and the second
# stdout line name the way in use; --io auto falls back to write() when
# io_uring is refused (INFERMETER_SERVE_NO_URING=1 stands in for a kernel
# that refuses it); --io uring then fails with a clear message.
. "$(dirname "$0")/lib.sh"

N=48
# run_mode MODE: the streams' texts in $TMP/MODE/, the truth log in $TMP/MODE.truth.
run_mode() {
  local mode=$1 i pids=()
  mkdir -p "$TMP/$mode"
  start_server --io "$mode" --time-scale 50 --max-num-seqs 32 --truth-log "$TMP/$mode.truth"
  check_eq "--io $mode: /metrics names it" \
    "$(curl -sS "$BASE/metrics" | grep '^infermeter_sim_output_io_info' | sed 's/.*io="\([a-z]*\)".*/\1/')" "$mode"
  read -r -t 5 line <&3 || line=
  check "--io $mode: second stdout line says it ($line)" grep -q "^output: ${mode/uring/io_uring}" <<<"$line"
  for i in $(seq 1 $N); do
    if [ $((i % 2)) = 0 ]; then
      body=$(jq -cn --argjson s "$i" '{messages:[{role:"user",content:"count to ten"}], max_tokens:(20 + $s), ignore_eos:true, stream:true, seed:$s, stream_options:{include_usage:true}}')
      path=/v1/chat/completions
    else
      body=$(jq -cn --argjson s "$i" '{prompt:"once upon a time", max_tokens:(20 + $s), ignore_eos:true, stream:true, seed:$s}')
      path=/v1/completions
    fi
    curl -sS -N -H 'Content-Type: application/json' -H "X-Request-Id: io-$i" --data-binary "$body" \
      "$BASE$path" >"$TMP/$mode/raw-$i" 2>"$TMP/$mode/err-$i" &
    pids+=($!)
  done
  # One non-streaming answer in the same steps.
  post /v1/completions '{"prompt":"hi","max_tokens":25,"ignore_eos":true,"seed":5}' >"$TMP/$mode/whole"
  wait "${pids[@]}"
  for i in $(seq 1 $N); do
    # What a client reads, less the per-response id and creation time.
    sed -e 's/"id":"[^"]*"//' -e 's/"created":[0-9]*//' "$TMP/$mode/raw-$i" >"$TMP/$mode/$i"
  done
  jq -c 'del(.id, .created)' "$TMP/$mode/whole" >"$TMP/$mode/whole.norm"
  stop_server
}

run_mode write
# Is io_uring there? --io uring exits at once without it, else serves until
# the timeout stops it (status 124).
timeout 2 "$BIN" serve --port 0 --io uring --quiet >"$TMP/probe.out" 2>&1
if [ $? = 124 ]; then
  have_uring=yes
else
  have_uring=no
  echo "SKIP (the io_uring half): $(cat "$TMP/probe.out")" >&2
fi

if [ $have_uring = yes ]; then
  run_mode uring
  for i in $(seq 1 $N); do
    check "stream $i: the same bytes by io_uring as by write()" cmp -s "$TMP/write/$i" "$TMP/uring/$i"
  done
  check_eq "non-streaming answer the same" "$(cat "$TMP/uring/whole.norm")" "$(cat "$TMP/write/whole.norm")"
  # The truth: per request, the same chunks (index, tokens) either way.
  for m in write uring; do
    jq -c 'select(.type=="chunk") | [.id, .index, .tokens]' "$TMP/$m.truth" | sort >"$TMP/$m.chunks"
  done
  check "truth log: the same chunks" cmp -s "$TMP/write.chunks" "$TMP/uring.chunks"
fi

modes=write
[ $have_uring = yes ] && modes="write uring"
for m in $modes; do
  tok=$(jq -s '[.[] | select(.type=="chunk" and (.id|startswith("io-"))) | .tokens] | add' "$TMP/$m.truth")
  check_eq "--io $m: truth tokens = requested" "$tok" $(( (20 * N) + N * (N + 1) / 2 ))
  check_eq "--io $m: every stream ended with [DONE]" "$(grep -l '^data: \[DONE\]' "$TMP/$m"/raw-* | wc -l)" $N
  check_eq "--io $m: deadline <= ns <= write_done_ns in every chunk record" \
    "$(jq -s '[.[] | select(.type=="chunk") | select(.deadline_ns > .ns or .ns > .write_done_ns)] | length' "$TMP/$m.truth")" 0
  check_eq "--io $m: no empty stream" "$(find "$TMP/$m" -name 'raw-*' -size -100c | wc -l)" 0
done

# --- fallback: io_uring refused (as a seccomp'd container or an old kernel would)
export INFERMETER_SERVE_NO_URING=1
start_server --io auto --time-scale 50
read -r -t 5 line <&3 || line=
check_eq "--io auto without io_uring: write()" "$line" "output: write(), one per connection per engine step"
check_eq "--io auto without io_uring: /metrics" \
  "$(curl -sS "$BASE/metrics" | grep -c '^infermeter_sim_output_io_info{io="write"} 1')" 1
resp=$(post /v1/completions '{"prompt":"hi","max_tokens":7,"ignore_eos":true,"stream":true}')
check_eq "--io auto without io_uring: streams" "$(grep -c '"text":"' <<<"$resp")" 7
stop_server
"$BIN" serve --port 0 --io uring >"$TMP/refused.out" 2>&1
rc=$?
check "--io uring without io_uring: exit status non-zero" test $rc -ne 0
check "--io uring without io_uring: says why" grep -q -- '--io uring: io_uring is not available' "$TMP/refused.out"
unset INFERMETER_SERVE_NO_URING
"$BIN" serve --io sometimes >"$TMP/bad.out" 2>&1
check "--io with a bad value: exit status non-zero" test $? -ne 0
check "--io with a bad value: says what is expected" grep -q 'expected auto, uring or write' "$TMP/bad.out"

finish
