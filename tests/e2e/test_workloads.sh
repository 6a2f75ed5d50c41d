#!/usr/bin/env bash
# Workloads of `infermeter run` against `infermeter serve` (issue 4): the
# shipped long-context scenario (sessions whose context grows 5K -> 32K)
# lands requests in every context bucket it spans, with exact prompt counts
# and the earlier turns served from the prefix cache; the server's hit rate
# rises with --prefix-share; sweeps, rate=auto, grids and scenario files.
. "$(dirname "$0")/lib.sh"
RUN() { "$BIN" run --no-progress --quiet --url "$BASE" --grace 20s "$@"; }

start_server --time-scale 20

# --- the long-context scenario: 4 sessions x 8 turns, 5K -> 32K
RUN --scenario scenarios/deepseek-long-context.json --sessions 4 --think-time 0 \
  --requests 32 --output-len 32 --warmup 0 --slo ttft=600s --out "$TMP/lc" >/dev/null
rc=$?
check "long-context scenario runs to the end (exit $rc)" test $rc -eq 0 -o $rc -eq 3
R="$TMP/lc/results.json"
J="$TMP/lc/requests.jsonl"
check_eq "no failed turn" "$(jq .metrics.sessions.turns_failed "$R")" 0
[ "$(jq .metrics.sessions.sessions "$R")" = 4 ] ||
  jq -c '[.session, .turn, .kind, .error, .status, .t_first, .t_end]' "$J" >&2
check_eq "4 sessions" "$(jq .metrics.sessions.sessions "$R")" 4
check_eq "up to turn 8" "$(jq .metrics.sessions.max_turn "$R")" 8
check_eq "every turn completed" "$(jq .metrics.sessions.turns_completed "$R")" 32
for b in 4-8K 8-16K 16-32K 32K+; do
  n=$(jq --arg b "$b" '.metrics.by_context[] | select(.bucket == $b) | .n' "$R")
  check_ge "requests in the $b bucket" "$n" 1
  check "TTFT reported for $b" jq -e --arg b "$b" '.metrics.by_context[] | select(.bucket == $b) | .ttft_ms.p50 > 0' "$R"
done
check_eq "nothing under 4K (the growth starts at 5K)" \
  "$(jq '.metrics.by_context[] | select(.bucket == "0-4K") | .n' "$R")" 0
check_eq "first turns are exactly 5K tokens as the server counts them" \
  "$(jq -c 'select(.turn == 1) | .prompt_tokens' "$J" | sort -u)" 5120
check "last turns reach 32K" jq -s -e '[.[] | select(.turn == 8) | .context_tokens] | min >= 32768' "$J"
check "client and server count every prompt alike" \
  jq -s -e 'all(.[]; .prompt_tokens == .context_tokens)' "$J"
check "context grows turn after turn in every session" jq -s -e \
  'group_by(.session) | all(.[]; sort_by(.turn) | [.[].context_tokens] as $c | all(range(1; $c|length); $c[.] > $c[. - 1]))' "$J"
check "earlier turns come from the prefix cache (turns 2+: cached > half the prompt)" jq -s -e \
  '[.[] | select(.turn >= 2)] | (map(.cached_tokens) | add) / (map(.prompt_tokens) | add) > 0.5' "$J"
check "the terminal table names the buckets" \
  bash -c "'$BIN' run --no-progress --url '$BASE' --sessions 2 --turns 3 --context-growth 1k:9k --requests 6 --warmup 0 --output-len 8 --out '$TMP/lc2' | grep -q '8-16K'"

# --- --requests caps turns, whole sessions first: 10 turns of 4 = 4 + 4 + 2
RUN --sessions 3 --turns 4 --context-growth 1k:2k --requests 10 --warmup 0 --output-len 8 \
  --out "$TMP/cap" >/dev/null
check_eq "turns per session under --requests 10" \
  "$(jq -s -c '[group_by(.session)[] | length] | sort' "$TMP/cap/requests.jsonl")" "[2,4,4]"

# --- the server's prefix-cache hit rate rises with --prefix-share
prev=-1
for share in 0 0.5 0.95; do
  RUN --rate 20 --requests 40 --warmup 0 --input-len 1200 --output-len 8 --prefix-groups 1 \
    --prefix-len 1024 --prefix-share $share --out "$TMP/ps$share" >/dev/null
  h=$(jq .metrics.server.prefix_cache_hit_rate "$TMP/ps$share/results.json")
  check "hit rate rises with --prefix-share ($share: $h > $prev)" jq -n -e "$h > $prev"
  prev=$h
done

# --- a rate sweep: a stage per rate, records tagged, the saturation point
RUN --sweep rate=4,8 --requests 10 --warmup 0 --input-len 128 --output-len 8 --out "$TMP/sw" >/dev/null
rc=$?
# 3 (client self-check INVALID) is possible on a busy CI machine; the
# stages are what this checks.
check "sweep runs to the end (exit $rc)" test $rc -eq 0 -o $rc -eq 3
R="$TMP/sw/results.json"
check_eq "two stages" "$(jq '.stages | length' "$R")" 2
check_eq "stage labels" "$(jq -r '[.stages[].label] | join(" ")' "$R")" "rate=4 rate=8"
check_eq "each stage completed its 10" "$(jq -r '[.stages[].summary.completed] | join(" ")' "$R")" "10 10"
check_eq "records carry their stage" "$(jq -r .stage "$TMP/sw/requests.jsonl" | sort | uniq -c | awk '{print $1}' | tr '\n' ' ')" "10 10 "
check "saturation point reported" jq -e '.sweep.saturation_point.rate == 8' "$R"
check "each stage's series start at its own start" jq -e \
  '[.stages[].series.server[0].t_s[0]] | all(. > -1.5 and . < 0.5)' "$R"

# --- rate=auto: a throughput stage, then rates evenly below it
RUN --sweep rate=auto --sweep-steps 2 --concurrency 8 --duration 3s --warmup 0 --input-len 128 \
  --output-len 16 --out "$TMP/auto" >/dev/null
R="$TMP/auto/results.json"
check_eq "throughput stage + 2 rates" "$(jq '.stages | length' "$R")" 3
check "max throughput measured" jq -e '.sweep.max_throughput_rps > 0' "$R"
check "planned rates ascend below the maximum" jq -e \
  '.sweep.max_throughput_rps as $m | [.stages[1:][].params.rate] | .[0] < .[1] and .[1] < $m' "$R"

# --- a grid: every combination is a stage with its parameters sent
RUN --grid temperature=0.2,1.2 --grid top_p=0.5,0.95 --rate 20 --requests 4 --warmup 0 \
  --input-len 64 --output-len 4 --out "$TMP/grid" >/dev/null
check_eq "2 x 2 stages" "$(jq '.stages | length' "$TMP/grid/results.json")" 4
check "every record has its stage's sampling" jq -s -e --slurpfile r "$TMP/grid/results.json" \
  'all(.[]; . as $x | $r[0].stages[$x.stage].params | .temperature == $x.temperature and .top_p == $x.top_p)' \
  "$TMP/grid/requests.jsonl"

# --- content classes, labelled per request
RUN --mix code=0.5,text=0.5 --rate 40 --requests 40 --warmup 0 --input-len 200 --output-len 4 \
  --out "$TMP/mix" >/dev/null
check_eq "both classes drawn" "$(jq -r .class "$TMP/mix/requests.jsonl" | sort -u | tr '\n' ' ')" "code text "
check "latency per class" jq -e '.metrics.by_class.code.n > 0 and .metrics.by_class.text.n > 0' "$TMP/mix/results.json"

# --- sessions started as a Poisson process
RUN --session-rate 5 --turns 3 --context-growth 1k:3k --duration 3s --warmup 0 --output-len 8 \
  --out "$TMP/sr" >/dev/null
check "sessions started" jq -e '.metrics.sessions.sessions >= 3 and .metrics.sessions.max_turn <= 3' "$TMP/sr/results.json"

# --- ShareGPT length filters; --trace tells the format from the file
RUN --dataset sharegpt --dataset-path tests/fixtures/datasets/sharegpt-small.json --min-output-len 10 --max-output-len 24 \
  --rate 50 --requests 4 --warmup 0 --out "$TMP/sg" >/dev/null
check_eq "--min/--max-output-len keep the one answer of 10..24 tokens" \
  "$(jq -r .requested_tokens "$TMP/sg/requests.jsonl" | sort -u)" 23
RUN --trace scenarios/traces/example-azure.csv --trace-speed 50 --requests 5 --warmup 0 --out "$TMP/az" >/dev/null
check_eq "--trace FILE.csv replays the Azure trace" "$(jq -r .manifest.workload.dataset "$TMP/az/results.json")" azure
check_eq "... every row sent" "$(wc -l <"$TMP/az/requests.jsonl")" 5

# --- a tokenizer.json: the built-in server counts with it too, so counts agree
T=tests/fixtures/tokenizer/tiny_bytelevel.json
for be in openai-chat openai-completions; do
  "$BIN" run --no-progress --quiet --backend $be --tokenizer $T --requests 10 --rate 20 --warmup 0 \
    --input-len 300 --range-ratio 0.3 --output-len 4 --out "$TMP/tk-$be" >/dev/null
  check "$be: exact prompt lengths under --tokenizer (server's count = client's = requested)" \
    jq -s -e 'all(.[]; .prompt_tokens == .context_tokens and .prompt_tokens >= 210 and .prompt_tokens <= 390)' \
    "$TMP/tk-$be/requests.jsonl"
done
"$BIN" run --no-progress --quiet --threads 2 --tokenizer $T --sessions 4 --turns 3 --context-growth 1k:3k \
  --requests 12 --warmup 0 --output-len 8 --out "$TMP/tk-threads" >/dev/null
check "two loader threads, each with its own tokenizer: sessions exact" jq -s -e \
  'length == 12 and all(.[]; .prompt_tokens == .context_tokens) and ([.[].session] | unique | length) == 4' \
  "$TMP/tk-threads/requests.jsonl"
start_server --time-scale 20 --tokenizer $T
n=$(printf 'Hello world, 12345 tokens!' | "$BIN" tokenize --tokenizer $T --count)
check_eq "serve --tokenizer counts /tokenize prompts with it" \
  "$(post /tokenize '{"prompt":"Hello world, 12345 tokens!"}' | jq .count)" "$n"
start_server --time-scale 20

# --- a stream without usage: --tokenizer counts its output text
printf '%s\n' '{"prompt":"hello there","output_len":12,"extra":{"stream_options":{"include_usage":false}}}' \
  >"$TMP/nousage.jsonl"
RUN --dataset jsonl --dataset-path "$TMP/nousage.jsonl" --requests 3 --rate 10 --warmup 0 \
  --tokenizer built-in --out "$TMP/nu" >/dev/null
check_eq "no usage: output counted by the tokenizer" \
  "$(jq -r .output_tokens_source "$TMP/nu/requests.jsonl" | sort -u)" tokenizer
check "... close to the 12 tokens generated" jq -s -e 'all(.[]; .output_tokens >= 11 and .output_tokens <= 13)' \
  "$TMP/nu/requests.jsonl"

# --- scenario files: flags override, errors name the file and the key
RUN --scenario scenarios/smoke.json --requests 5 --out "$TMP/sc" >/dev/null
check_eq "the command line overrides the scenario" "$(jq .summary.completed "$TMP/sc/results.json")" 5
echo '{"rate": 2, "bogus-key": 1}' >"$TMP/bad.json"
RUN --scenario "$TMP/bad.json" 2>"$TMP/err" >/dev/null
check_eq "unknown scenario key exits 1" $? 1
check "the message names the key" grep -q 'bogus-key' "$TMP/err"
printf '{"rate": 2,\n "requests": }\n' >"$TMP/bad2.json"
RUN --scenario "$TMP/bad2.json" 2>"$TMP/err" >/dev/null
check_eq "malformed scenario exits 1" $? 1
check "the message gives file and line" grep -q "bad2.json:2" "$TMP/err"
RUN --sessions 2 --concurrency 4 2>"$TMP/err" >/dev/null
check_eq "--sessions with --concurrency refused" $? 1
RUN --context-growth 9k:2k --sessions 1 2>"$TMP/err" >/dev/null
check_eq "a shrinking growth refused" $? 1
for f in scenarios/*.json; do
  check "$f is valid JSON" jq -e . "$f"
done
finish
