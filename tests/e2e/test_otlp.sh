#!/usr/bin/env bash
# OTLP export (docs/otlp.md) into a receiver that checks every request
# against the official OTLP protobuf definitions (tests/otlp/receiver.js):
# one span per attempt under one span per logical request, with the GenAI
# attributes matching requests.jsonl; the four GenAI client metrics; a 429
# answered by a retry; head sampling keeps whole requests; the same with
# --otlp-protocol http/protobuf, decoded by the definitions. Skips (77)
# without node/npm or the npm registry.
. "$(dirname "$0")/lib.sh"
. "$E2E_DIR/../lib/npm.sh"
CACHE=$(cd "$(dirname "$BIN")" && pwd)/npm-cache/otlp
npm_module "$CACHE" otlp @opentelemetry/otlp-transformer@0.52.1 \
  @opentelemetry/otlp-transformer/build/src/generated/root.js
rc=$?
[ $rc -eq 0 ] || exit $rc
RECV_PID=
# receiver NAME [ARGS]: starts a receiver writing $TMP/NAME.json; sets OTLP.
receiver() {
  local name=$1
  shift
  rm -f "$TMP/recv.fifo"
  mkfifo "$TMP/recv.fifo"
  node "$E2E_DIR/../otlp/receiver.js" --modules "$CACHE/node_modules" --out "$TMP/$name.json" "$@" \
    >"$TMP/recv.fifo" 2>"$TMP/recv.err" &
  RECV_PID=$!
  local line
  read -r -t 20 line <"$TMP/recv.fifo"
  OTLP="http://127.0.0.1:${line#port }"
}
stop_receiver() { kill -TERM "$RECV_PID"; wait "$RECV_PID"; }
start_server --time-scale 20
RUN() { "$BIN" run --url "$BASE" --no-progress --no-gpu --warmup 0s --input-len 64 --output-len 8 "$@"; }

receiver all
RUN --rate 20 --duration 2s --retries 2 --otlp "$OTLP" --out "$TMP/a" >"$TMP/a.out"
stop_receiver
S="$TMP/all.json" J="$TMP/a/requests.jsonl"
check_eq "every request taken by the protobuf definitions" "$(jq -c .rejected "$S")" "[]"
attempts=$(jq -s '[.[] | select(.kind != "health" and .kind != "probe")] | length' "$J")
logical=$(jq -s '[.[] | .logical_id] | unique | length' "$J")
check_eq "one CLIENT span per attempt" "$(jq '[.spans[] | select(.kind == 3)] | length' "$S")" "$attempts"
check_eq "one span per logical request" "$(jq '[.spans[] | select(.kind == 1)] | length' "$S")" "$logical"
check "attempts are children of their request's span, in its trace" jq -e '
  ([.spans[] | select(.kind == 1) | {key: .spanId, value: .traceId}] | from_entries) as $p
  | all(.spans[] | select(.kind == 3); $p[.parentSpanId] == .traceId)' "$S"
check "the GenAI attributes agree with requests.jsonl" jq -e --slurpfile r "$J" '
  ($r | map({key: .request_id, value: .}) | from_entries) as $by
  | all(.spans[] | select(.kind == 3); .attrs as $a | $by[$a["infermeter.request_id"]] as $q
      | $q != null and ($a["gen_ai.usage.output_tokens"] | tonumber) == $q.output_tokens
      and ($a["gen_ai.usage.input_tokens"] | tonumber) == $q.prompt_tokens
      and $a["gen_ai.operation.name"] == "chat" and $a["gen_ai.request.model"] == "deepseek-v3"
      and ($a["retry.attempt"] | tonumber) == $q.attempt - 1)' "$S"
check "spans carry the schema URL and the events" jq -e 'all(.spans[];
  .schemaUrl == "https://opentelemetry.io/schemas/1.41.0") and
  all(.spans[] | select(.kind == 3 and .attrs["error.type"] == null); .events | index("first_token") != null)' "$S"
check "the four GenAI client metrics" jq -e '.metrics | has("gen_ai.client.operation.duration")
  and has("gen_ai.client.token.usage") and has("gen_ai.client.operation.time_to_first_chunk")
  and has("gen_ai.client.operation.time_per_output_chunk") and all(.[]; .buckets)' "$S"
check_eq "operation.duration counts every measured attempt" \
  "$(jq '.metrics["gen_ai.client.operation.duration"].count' "$S")" \
  "$(jq -s '[.[] | select(.kind == "measured" or .kind == "retry")] | length' "$J")"
check "the run says what it sent" grep -q "OTLP: *$((attempts + logical)) spans" "$TMP/a.out"

# A collector that answers 429 first: retried, nothing lost.
receiver retry --fail-first 1
"$BIN" report "$TMP/a" --quiet --no-html --otlp "$OTLP"
rc=$?
check "report DIR --otlp after a 429: exit 0 (3 when the run's client was INVALID) ($rc)" \
  test $rc -eq 0 -o $rc -eq 3
stop_receiver
check_eq "every span delivered after the retry" \
  "$(jq '.spans | length' "$TMP/retry.json")" "$((attempts + logical))"

# Head sampling: whole requests kept or dropped.
receiver sampled
RUN --rate 40 --duration 2s --otlp "$OTLP" --otlp-sample 0.5 --out "$TMP/s" >/dev/null
stop_receiver
S="$TMP/sampled.json"
kept=$(jq '[.spans[] | select(.kind == 1)] | length' "$S")
total=$(jq -s '[.[] | .logical_id] | unique | length' "$TMP/s/requests.jsonl")
check "about half the requests kept ($kept of $total)" test "$kept" -gt 0 -a "$kept" -lt "$total"
check "a kept request keeps all its attempts" jq -e '
  [.spans[] | select(.kind == 1) | .spanId] as $p | all(.spans[] | select(.kind == 3); .parentSpanId as $x | $p | index($x) != null)' "$S"

# --otlp-protocol http/protobuf: the same spans and metrics, binary, decoded
# by the same definitions (a field they do not know fails the request).
receiver pb
RUN --rate 20 --duration 2s --retries 2 --otlp "$OTLP" --otlp-protocol http/protobuf \
  --out "$TMP/p" >"$TMP/p.out"
stop_receiver
S="$TMP/pb.json" J="$TMP/p/requests.jsonl"
check_eq "protobuf: every request taken by the definitions" "$(jq -c .rejected "$S")" "[]"
check "protobuf: every request was protobuf" jq -e '.protobuf > 0 and .protobuf == .requests' "$S"
attempts=$(jq -s '[.[] | select(.kind != "health" and .kind != "probe")] | length' "$J")
logical=$(jq -s '[.[] | .logical_id] | unique | length' "$J")
check_eq "protobuf: one CLIENT span per attempt" \
  "$(jq '[.spans[] | select(.kind == 3)] | length' "$S")" "$attempts"
check_eq "protobuf: one span per logical request" \
  "$(jq '[.spans[] | select(.kind == 1)] | length' "$S")" "$logical"
check "protobuf: ids, parents and GenAI attributes as in JSON" jq -e --slurpfile r "$J" '
  ([.spans[] | select(.kind == 1) | {key: .spanId, value: .traceId}] | from_entries) as $p
  | ($r | map({key: .request_id, value: .}) | from_entries) as $by
  | all(.spans[] | select(.kind == 3); $p[.parentSpanId] == .traceId and (.spanId | test("^[0-9a-f]{16}$"))
      and .attrs as $a | $by[$a["infermeter.request_id"]] as $q
      | $q != null and ($a["gen_ai.usage.output_tokens"] | tonumber) == $q.output_tokens
      and ($a["retry.attempt"] | tonumber) == $q.attempt - 1
      and $a["gen_ai.request.stream"] == true)' "$S"
check "protobuf: the four GenAI client metrics, buckets whole" jq -e '.metrics | length == 4 and all(.[]; .buckets)' "$S"
check_eq "protobuf: operation.duration counts every measured attempt" \
  "$(jq '.metrics["gen_ai.client.operation.duration"].count' "$S")" \
  "$(jq -s '[.[] | select(.kind == "measured" or .kind == "retry")] | length' "$J")"
"$BIN" report "$TMP/p" --quiet --no-html --otlp "$OTLP" --otlp-protocol grpc 2>"$TMP/proto.err"
check_eq "--otlp-protocol grpc: usage error" $? 1
check "and says which are known" grep -q "http/json' or 'http/protobuf'" "$TMP/proto.err"

"$BIN" run --otlp localhost:4318 --out "$TMP/bad" 2>/dev/null
check_eq "--otlp without a scheme: usage error" $? 1
finish
