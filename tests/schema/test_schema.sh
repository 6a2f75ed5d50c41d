#!/usr/bin/env bash
# The contract of results.json and requests.jsonl: docs/results.schema.json
# and its validator, tests/schema/validate.sh.
#   - real outputs (tests/schema/fixtures: a one-stage run with retries, a
#     mix and an SLO; a two-stage rate sweep) are valid, and so is the record
#     example of docs/results-schema.md;
#   - deliberately broken records and results.json (a wrong type, an unknown
#     kind, a missing or an unknown key, an out-of-range value, an
#     inconsistent derived field ...) are rejected, naming the file, the line
#     and the JSON path;
#   - the schema's version, the `schema` string it requires and the writer's
#     string agree, and the record keys are exactly those of the docs' table;
#   - with PATH/TO/infermeter: a fresh one-stage and a two-stage run of the
#     built-in server are valid.
#
#   bash tests/schema/test_schema.sh [PATH/TO/infermeter]
#
# Exit status: 0 pass, 1 a check failed, 77 skipped (node/npm or the npm
# registry unavailable: validate.sh cannot run).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
BIN=${1:-}
SCHEMA=docs/results.schema.json
FIX=tests/schema/fixtures
TMP=$(mktemp -d "${TMPDIR:-/tmp}/infermeter-schema.XXXXXX")
export XDG_DATA_HOME="$TMP/xdg-data" # the run history: never the user's
trap 'rm -rf "$TMP"' EXIT
if [ -n "$BIN" ] && [ -z "${IM_NPM_CACHE:-}" ]; then
  # Beside the binary, as the e2e tests do (build/npm-cache).
  IM_NPM_CACHE=$(cd "$(dirname "$BIN")" && pwd)/npm-cache
  export IM_NPM_CACHE
fi
CHECKS=0
FAILS=0
ok() { CHECKS=$((CHECKS + 1)); }
fail() {
  CHECKS=$((CHECKS + 1))
  FAILS=$((FAILS + 1))
  echo "FAIL: $*" >&2
}
check_eq() { if [ "$2" = "$3" ]; then ok; else fail "$1: got '$2', want '$3'"; fi; }

# V FILE|DIR...: the validator; its output in $TMP/out, its status in $rc.
V() {
  bash tests/schema/validate.sh "$@" >"$TMP/out" 2>&1
  rc=$?
}

# --- the validator runs, and real outputs are valid
V "$FIX/one-stage" "$FIX/stages"
if [ $rc -eq 77 ]; then
  echo "SKIP: $(tail -n 1 "$TMP/out")" >&2
  exit 77
fi
if [ $rc -eq 0 ]; then ok; else fail "the fixtures are valid (exit $rc): $(head -n 20 "$TMP/out")"; fi
check_eq "the closing line counts the files" "$(tail -n 1 "$TMP/out")" \
  "schema: valid: 2 results.json, 2 requests.jsonl ($(cat "$FIX"/*/requests.jsonl | wc -l) records)"

# --- the schema's version, the `schema` string and the writer agree
version=$(jq -r .version "$SCHEMA")
check_eq "version = \$defs/results/properties/schema/const" \
  "$(jq -r '."$defs".results.properties.schema.const' "$SCHEMA")" "$version"
check_eq "\$id names the version" "$(jq -r '."$id"' "$SCHEMA")" "urn:infermeter:schema:results:$(basename "$version")"
check_eq "the writer (src/) writes this version, and only it" \
  "$(grep -rhoE '"infermeter/results/v[0-9]+"' src | sort -u | tr -d '"')" "$version"
check_eq "the fixtures carry it" "$(jq -r .schema "$FIX"/*/results.json | sort -u)" "$version"

# --- the record keys are the docs' table, in its order
awk '/^## requests.jsonl/ {f = 1; print; next} /^## / {f = 0} f' docs/results-schema.md >"$TMP/doc"
# shellcheck disable=SC2016 # backquotes of Markdown, not a command
grep -oE '^\| `[a-z_]+` \|' "$TMP/doc" | grep -oE '[a-z_]+' >"$TMP/doc_keys"
jq -r '."$defs".record.properties | keys_unsorted[]' "$SCHEMA" >"$TMP/schema_keys"
check_eq "record properties = the keys of the docs' table" \
  "$(tr '\n' ' ' <"$TMP/schema_keys")" "$(tr '\n' ' ' <"$TMP/doc_keys")"
# Optional keys (absent when not applicable): chunk_tokens, reasoning_effort, thinking, tools, model,
# target; shard (merged directories only); who was late (dispatch_lag_client_us, read_lag_us,
# late_reads, late_reads_client: absent in files of older versions and other tools);
# cancelled (written only when the client let the request go).
OPTIONAL='chunk_tokens|reasoning_effort|thinking|tools|model|target|shard|dispatch_lag_client_us|read_lag_us|late_reads|late_reads_client|cancelled'
check_eq "required = every key but the optional ones" \
  "$(jq -r '."$defs".record.required[]' "$SCHEMA" | tr '\n' ' ')" "$(grep -vxE "$OPTIONAL" "$TMP/doc_keys" | tr '\n' ' ')"
check_eq "a fixture line has the keys in that order" \
  "$(head -n 1 "$FIX/one-stage/requests.jsonl" | jq -r 'keys_unsorted[]' | tr '\n' ' ')" \
  "$(grep -vxE "$OPTIONAL" "$TMP/doc_keys" | tr '\n' ' ')"
# The docs' example record (wrapped there), as one line.
mkdir -p "$TMP/example"
sed -n '/^Example (wrapped here/,/^```$/p' "$TMP/doc" | sed '1,3d;$d' | tr -d '\n' >"$TMP/example/requests.jsonl"
echo >>"$TMP/example/requests.jsonl"
V "$TMP/example/requests.jsonl"
if [ $rc -eq 0 ]; then ok; else fail "the docs' example record is valid: $(cat "$TMP/out")"; fi

# --- records: a valid variant, then broken ones. Each broken case is a
# directory of its own, all checked by one validator run (one node process):
# each must be reported, on its file (and line), with the expected message.
LINE=$(head -n 1 "$FIX/one-stage/requests.jsonl")
N=0
CASES=()
# rec JQ-FILTER: a new case, requests.jsonl = the fixture's first line through the filter.
rec() {
  N=$((N + 1))
  CASE=$TMP/cases/$N
  mkdir -p "$CASE"
  printf '%s\n' "$LINE" | jq -c "$1" >"$CASE/requests.jsonl"
}
# res JQ-FILTER [FIXTURE]: a new case, results.json = the fixture's through the filter.
res() {
  N=$((N + 1))
  CASE=$TMP/cases/$N
  mkdir -p "$CASE"
  jq "$1" "$FIX/${2:-one-stage}/results.json" >"$CASE/results.json"
}
# reject DESC EXPECTED: the case's file is reported with the text EXPECTED
# (checked after the run).
reject() { CASES+=("$CASE|$1|$2"); }

rec '.chunk_tokens = [.chunks_us[] | 2] | .output_tokens = 2 * .n_chunks | .output_shortfall = (if .ignore_eos then .requested_tokens - .output_tokens else null end)'
mv "$CASE" "$TMP/valid-chunk-tokens"
V "$TMP/valid-chunk-tokens"
if [ $rc -eq 0 ]; then ok; else fail "a record with chunk_tokens is valid: $(cat "$TMP/out")"; fi
N=0

rec '.id = "7"'
reject "id as a string" "requests.jsonl:1: /id: must be integer"
rec '.kind = "bogus"'
reject "unknown kind" "/kind: must be equal to one of the allowed values: measured, warmup, retry, health, probe, aborted"
rec '.error = "timeout"'
reject "unknown error class" "/error: must be equal to one of the allowed values"
rec '.output_tokens_source = "guess"'
reject "unknown output_tokens_source" "/output_tokens_source: must be equal to one of the allowed values"
rec '.class = "prose"'
reject "unknown class" "/class: must be equal to one of the allowed values: text, code"
rec 'del(.t_end)'
reject "missing key" "must have required property 't_end'"
rec '.latency_ms = 3'
reject "unknown key" 'must NOT have additional properties: "latency_ms"'
rec '.prompt_tokens = -1'
reject "negative count" "/prompt_tokens: must be >= 0"
rec '.cached_tokens = 4294967296'
reject "count above 2^32 - 1" "/cached_tokens: must be <= 4294967295"
rec '.t_start = 1.5'
reject "fractional ns time" "/t_start: must be integer,null"
rec '.conn_new = 1'
reject "a number for a boolean" "/conn_new: must be boolean"
rec '.temperature = "0.7"'
reject "a string for a number" "/temperature: must be number,null"
rec '.content_hash = "0xdeadbeef"'
reject "content_hash not 16 hex digits" "/content_hash: must match pattern"
rec '.request_id = ("x" * 48)'
reject "request_id over 47 bytes" "/request_id: must NOT have more than 47 characters"
rec '.chunks_us = [1]'
reject "chunks_us shorter than n_chunks" "/chunks_us: has 1 values, n_chunks is"
rec '.chunk_tokens = [1]'
reject "chunk_tokens shorter than n_chunks" "/chunk_tokens: has 1 values, n_chunks is"
rec '.ignore_eos = false | .output_shortfall = 0'
reject "output_shortfall without ignore_eos" "/output_shortfall: must be null"
rec '.ignore_eos = true | .output_shortfall = (.requested_tokens - .output_tokens + 1)'
reject "output_shortfall that does not add up" "/output_shortfall: is "
rec '.kind = "retry" | .attempt = 1'
reject "a retry on attempt 1" "/attempt: must be >= 2"
rec '.attempt = 1 | .logical_id = .id + 1'
reject "a first attempt of another logical request" "/logical_id: is "
rec '.session = 3 | .turn = 0'
reject "a session turn 0" "/turn: must be >= 1"
rec .
printf '{"id": 1,\n' >>"$CASE/requests.jsonl"
reject "a line that is not JSON, on line 2" "requests.jsonl:2: /: not JSON"
rec .
printf '%s' "$LINE" >>"$CASE/requests.jsonl"
reject "no newline after the last line" "the last line does not end with a newline"
rec .
printf '%s\n' "$LINE" >>"$CASE/requests.jsonl"
reject "an id twice in a stage" "/id: $(jq .id <<<"$LINE") appears twice in stage 0"

# --- results.json: broken ones
res '.schema = "infermeter/results/v2"'
reject "another schema version" '/schema: must be equal to constant: "infermeter/results/v1"'
res '.summary.completed = "3"'
reject "a count as a string" "results.json: /summary/completed: must be integer"
res '.summary.p99_ttft = 1'
reject "an unknown vLLM key" 'must NOT have additional properties: "p99_ttft"'
res 'del(.metrics.errors)'
reject "metrics without errors" "/metrics: must have required property 'errors'"
res '.metrics.errors.timeout = 0'
reject "an error class that does not exist" '/metrics/errors: property name must be valid: "timeout"'
res '.metrics.latency_ms.ttft.mean = "NaN"'
reject "NaN as a string" "/metrics/latency_ms/ttft/mean: must be number"
res '.metrics.latency_ms.e2el.n = 0'
reject "an empty distribution with values" "/metrics/latency_ms/e2el/mean: must be null"
res '.metrics.latency_ms.e2el.p99 = null'
reject "a percentile missing from a distribution with samples" "/metrics/latency_ms/e2el/p99: must be number"
res '.metrics.slo.attainment.ttft = 1.5'
reject "an attainment above 1" "/metrics/slo/attainment/ttft: must be <= 1"
res '.metrics.by_context |= .[0:4]'
reject "four context buckets" "/metrics/by_context: must NOT have fewer than 5 items"
res '.metrics.histograms.ttft_ns.buckets = [[1, 2, 3]]'
reject "a histogram bucket of three numbers" "/metrics/histograms/ttft_ns/buckets/0: must NOT have more than 2 items"
res '.audit.client_check.checks |= map(select(.name != "fd_exhaustion"))'
reject "a self-check dropped" "/audit/client_check/checks: must contain at least 1 valid item(s)"
res '.audit.client_check.verdict = "VALID" | .audit.client_check.checks[0] |= (.pass = false | .fix = "x")'
reject "VALID with a failed check" "/audit/client_check/checks/0/pass: must be equal to constant: true"
res '.audit.client_check.verdict = "INVALID" | .audit.client_check.checks |= map(.pass = true | del(.fix))'
reject "INVALID with every check passed" "/audit/client_check/checks: must contain at least 1 valid item(s)"
res '.audit.client_check.verdict = "INVALID" | .audit.client_check.checks[0] |= (.pass = false | del(.fix))'
reject "a failed check without its fix" "/audit/client_check/checks/0: must have required property 'fix'"
res '.manifest.started_at = "yesterday"'
reject "started_at not UTC ISO 8601" "/manifest/started_at: must match pattern"
res '.manifest.schedule.kind = "bursty"'
reject "an unknown schedule kind" "/manifest/schedule/kind: must be equal to one of the allowed values"
res '.series.client[0].cpu_share |= . + [0.5]'
reject "a series longer than its t_s" "/series/client/0/cpu_share: has "
res '.stages = [] | .manifest.stages = 1'
reject "stages next to a top-level summary" "must NOT have fewer than 1 items"
res 'del(.stages[1].metrics)' stages
reject "a stage without metrics" "/stages/1: must have required property 'metrics'"
res '.stages[1].index = 5' stages
reject "a stage index out of order" "/stages/1/index: is 5, want 1"
res '.summary = .stages[0].summary' stages
reject "a top-level summary in a multi-stage run" "must NOT be valid"
res '.sweep.saturation_point.rate = "8"' stages
reject "a saturation rate as a string" "/sweep/saturation_point/rate: must be number"
res . stages
jq -c '.stage = 7' "$FIX/stages/requests.jsonl" >"$CASE/requests.jsonl"
reject "a record of a stage that does not exist" "/stage: is 7, results.json has 2 stage(s)"

V "$TMP"/cases/*
check_eq "the broken cases fail the validation" "$rc" 1
for c in "${CASES[@]}"; do
  dir=${c%%|*}
  rest=${c#*|}
  desc=${rest%%|*}
  want=${rest#*|}
  if grep -F -- "$dir/" "$TMP/out" | grep -qF -- "$want"; then
    ok
  else
    fail "$desc: want '$want' for $dir, got: $(grep -F -- "$dir/" "$TMP/out" | head -n 5)"
  fi
done
check_eq "every broken case reported" "$(grep -oE "^$TMP/cases/[0-9]+/" "$TMP/out" | sort -u | wc -l | tr -d ' ')" "$N"

# --- a fresh run of the binary at hand (built-in server, in-process)
if [ -n "$BIN" ]; then
  # Exit 3 (the client self-check INVALID on a busy machine) is fine here:
  # the outputs are what this checks.
  "$BIN" run --no-progress --quiet --requests 3 --rate 20 --warmup 1 --input-len 32 --output-len 4 \
    --slo ttft=10s --out "$TMP/live1" >/dev/null 2>&1
  rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 3 ]; then ok; else fail "one-stage run exits 0 or 3, got $rc"; fi
  "$BIN" run --no-progress --quiet --grid output_len=2,4 --requests 2 --rate 20 --warmup 0 --input-len 32 \
    --out "$TMP/live2" >/dev/null 2>&1
  rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 3 ]; then ok; else fail "two-stage run exits 0 or 3, got $rc"; fi
  V "$TMP/live1" "$TMP/live2"
  if [ $rc -eq 0 ]; then ok; else fail "fresh outputs are valid: $(head -n 20 "$TMP/out")"; fi
fi

echo "$(basename "$0"): $CHECKS checks, $FAILS failed"
[ "$FAILS" -eq 0 ]
