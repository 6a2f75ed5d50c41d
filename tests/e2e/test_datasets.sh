#!/usr/bin/env bash
# `infermeter run --dataset ...`: prompts and chat messages from files, trace
# replay at the file's timestamps, Mooncake's shared blocks reaching the
# server's prefix cache, clear errors for bad files.
. "$(dirname "$0")/lib.sh"
RUN() { "$BIN" run --no-progress --quiet --url "$BASE" --warmup 0 --grace 5s "$@"; }
start_server --time-scale 20

RUN --dataset jsonl --dataset-path scenarios/traces/example-requests.jsonl --trace-speed 20 --out "$TMP/j"
n=$(grep -c . scenarios/traces/example-requests.jsonl)
check_eq "one attempt per jsonl request" "$(wc -l <"$TMP/j/requests.jsonl")" "$n"
check_eq "all succeed (prompts and chat messages)" "$(jq -s '[.[] | select(.error==null)] | length' "$TMP/j/requests.jsonl")" "$n"
# Replay: each request is scheduled at its timestamp / speed (the file's order is time order).
want=$(jq -s -c '[.[] | .timestamp_ms] | (min) as $m | map((. - $m) * 1000000 / 20 | floor) | sort' scenarios/traces/example-requests.jsonl)
got=$(jq -s -c '[.[] | .t_sched] | sort' "$TMP/j/requests.jsonl")
check_eq "scheduled at the trace's timestamps / --trace-speed" "$got" "$want"
check_eq "output_len from the file becomes max_tokens" \
  "$(jq -s -c '[.[] | .requested_tokens] | sort' "$TMP/j/requests.jsonl")" \
  "$(jq -s -c '[.[] | .output_len] | sort' scenarios/traces/example-requests.jsonl)"

RUN --dataset mooncake --dataset-path scenarios/traces/example-mooncake.jsonl --trace-speed 20 --out "$TMP/m"
check_eq "mooncake: one attempt per row" "$(wc -l <"$TMP/m/requests.jsonl")" "$(grep -c . scenarios/traces/example-mooncake.jsonl)"
check "mooncake: shared hash_ids hit the prefix cache" jq -e '.metrics.server.prefix_cache_hit_rate > 0.1' "$TMP/m/results.json"
check "manifest names the dataset" jq -e '.manifest.workload.dataset == "mooncake"' "$TMP/m/results.json"

RUN --dataset azure --dataset-path scenarios/traces/example-azure.csv --trace-speed 50 --out "$TMP/a"
check_eq "azure: one attempt per row" "$(wc -l <"$TMP/a/requests.jsonl")" "$(($(grep -c . scenarios/traces/example-azure.csv) - 1))"

RUN --dataset sharegpt --dataset-path tests/fixtures/datasets/sharegpt-small.json --rate 50 --requests 8 --out "$TMP/s"
check_eq "sharegpt: --requests cycles the conversations" "$(wc -l <"$TMP/s/requests.jsonl")" 8

printf '{"prompt": "ok"}\n{"prompt": 3}\n' >"$TMP/bad.jsonl"
RUN --dataset jsonl --dataset-path "$TMP/bad.jsonl" --out "$TMP/b" 2>"$TMP/err"
check_eq "bad file exits 1" $? 1
check "error names FILE:LINE" grep -q "bad.jsonl:2" "$TMP/err"
RUN --dataset jsonl --out "$TMP/b" 2>"$TMP/err"
check_eq "missing --dataset-path exits 1" $? 1
stop_server
finish
