#!/usr/bin/env bash
# Counting what the server counts (docs/tokenizer.md, "The server's own
# count"): `--tokenizer server` against `serve --tokenizer` with a tokenizer
# that differs from the client's built-in one, so that the server-reported
# prompt_tokens equal --input-len only when the client asked the server;
# and the context check at plan time against `serve --max-model-len`.
. "$(dirname "$0")/lib.sh"
F=tests/fixtures/tokenizer/tiny_bytelevel.json
# exit 0, or 3 where a busy machine makes the client's self-check INVALID.
ran_ok() { [ "$1" -eq 0 ] || [ "$1" -eq 3 ]; }
# start_stub CMD...: starts a stand-in server whose first stdout line names
# its port, read through a fifo (no polling); sets STUB_LINE ("" when it did
# not start within 20 s) and STUB_PID. stop_stub ends it.
STUB_PID=
start_stub() {
  rm -f "$TMP/stub.fifo"
  mkfifo "$TMP/stub.fifo"
  "$@" >"$TMP/stub.fifo" 2>"$TMP/stub.err" &
  STUB_PID=$!
  exec 4<"$TMP/stub.fifo"
  STUB_LINE=
  read -r -t 20 STUB_LINE <&4 || STUB_LINE=
}
stop_stub() {
  kill "$STUB_PID" 2>/dev/null
  wait "$STUB_PID" 2>/dev/null
  exec 4<&-
}
start_server --tokenizer "$F" --time-scale 50 --max-model-len 2048
# The server's /tokenize in vLLM's shape (count, max_model_len, tokens).
body=$(post /tokenize '{"model":"deepseek-v3","prompt":"Hello world"}')
check_eq "/tokenize count" "$(jq .count <<<"$body")" "$(jq '.tokens | length' <<<"$body")"
check_eq "/tokenize max_model_len" "$(jq .max_model_len <<<"$body")" 2048
check_eq "/v1/models max_model_len" "$(curl -sS "$BASE/v1/models" | jq '.data[0].max_model_len')" 2048

for backend in openai-chat openai; do
  out="$TMP/srv-$backend"
  "$BIN" run --url "$BASE" --backend $backend --tokenizer server --input-len 256 --output-len 4 \
    --requests 12 --rate 50 --seed 7 --yes --no-history --out "$out" >"$TMP/run.out" 2>"$TMP/run.err"
  rc=$?
  check "run --tokenizer server ($backend) exits 0 or 3: rc $rc $(tail -3 "$TMP/run.err")" ran_ok $rc
  check_eq "$backend: every request measured" "$(jq -s 'map(select(.error==null)) | length' "$out/requests.jsonl")" 12
  check_eq "$backend: the server counted 256 prompt tokens in each request" \
    "$(jq -s -c 'map(.prompt_tokens) | unique' "$out/requests.jsonl")" "[256]"
  check "$backend: the counts made are said" grep -q 'requests to the target.s tokenizer' "$TMP/run.err"
  check_eq "$backend: the manifest names the tokenizer" "$(jq -r .manifest.workload.tokenizer "$out/results.json")" server
done
# The same run with the client's built-in tokenizer: the server counts
# other lengths (what --tokenizer server is for).
"$BIN" run --url "$BASE" --input-len 256 --output-len 4 --requests 12 --rate 50 --seed 7 --yes \
  --no-history --out "$TMP/builtin" >/dev/null 2>"$TMP/run.err"
check "built-in run exits 0 or 3" ran_ok $?
check "with the built-in tokenizer the server counts other lengths" \
  jq -s -e 'map(.prompt_tokens) | any(. != 256)' "$TMP/builtin/requests.jsonl"

# Context check at plan time: 2000 + 100 > 2048, refused with the numbers.
"$BIN" run --url "$BASE" --tokenizer server --input-len 2000 --output-len 100 --requests 4 --yes \
  --no-history --out "$TMP/ctx" >/dev/null 2>"$TMP/ctx.err"
check_eq "a prompt that cannot fit exits 1" $? 1
check "the refusal gives the numbers: $(cat "$TMP/ctx.err")" \
  grep -q '2000 tokens + max_tokens 100 = 2100 tokens, over the server.s context of 2048 tokens' "$TMP/ctx.err"
check "nothing was sent" test ! -s "$TMP/ctx/requests.jsonl"
# A session whose context grows past the limit, refused too.
"$BIN" run --url "$BASE" --sessions 2 --turns 4 --context-growth 1000:2000 --output-len 100 \
  --requests 8 --yes --no-history --out "$TMP/ctx2" >/dev/null 2>"$TMP/ctx2.err"
check_eq "a session that outgrows the context exits 1" $? 1
check "the session refusal says so: $(cat "$TMP/ctx2.err")" grep -q "a session's last turn reaches" "$TMP/ctx2.err"
# --no-context-check sends them: the server answers 400 for each.
"$BIN" run --url "$BASE" --input-len 2000 --output-len 100 --requests 3 --rate 50 --yes \
  --no-context-check --no-history --out "$TMP/ctx3" >/dev/null 2>"$TMP/ctx3.err"
check_eq "--no-context-check: the requests were sent and refused by the server" \
  "$(jq -s -c 'map(.status) | unique' "$TMP/ctx3/requests.jsonl")" "[400]"
# A workload that fits is not refused (prompt + max_tokens = 2048).
"$BIN" run --url "$BASE" --tokenizer server --input-len 2000 --output-len 48 --requests 2 --rate 50 \
  --yes --no-history --out "$TMP/ctx4" >/dev/null 2>"$TMP/ctx4.err"
check "a workload that fits runs: $(tail -2 "$TMP/ctx4.err")" ran_ok $?
stop_server

# A target without /tokenize: refused before any load, with the reason.
start_stub python3 -u -m http.server 0 --bind 127.0.0.1
hp=$(grep -oE 'port [0-9]+' <<<"$STUB_LINE" | cut -d' ' -f2)
if [ -n "$hp" ]; then
  "$BIN" run --url "http://127.0.0.1:$hp" --model m --tokenizer server --requests 1 --yes --no-history \
    --out "$TMP/notok" >/dev/null 2>"$TMP/notok.err"
  check_eq "a target without /tokenize exits 1" $? 1
  check "the message says the target cannot count: $(cat "$TMP/notok.err")" grep -q 'cannot count tokens' "$TMP/notok.err"
else
  echo "python3's http.server did not start: the no-/tokenize case is not checked" >&2
fi
stop_stub

# llama.cpp's shapes (tests/e2e/llamacpp_server.py stands in for llama-server):
# /tokenize {content} found after vLLM's shape got no tokens, chat prompts
# rendered by /apply-template, the context from /props, and cached tokens
# derived as prompt_tokens - prompt_n where timings has no cache_n.
start_stub python3 -u "$(dirname "$0")/llamacpp_server.py" 4096
LBASE=${STUB_LINE#listening on }
if [ -n "$LBASE" ]; then
  for k in 1 2; do # the second run repeats the first's prompts (same seed, shared cache)
    "$BIN" run --url "$LBASE" --tokenizer server --input-len 200 --output-len 4 --requests 6 --rate 50 \
      --warmup 0 --seed 3 --shared-cache --yes --no-history --out "$TMP/llama$k" >/dev/null 2>"$TMP/llama$k.err"
    rc=$?
    check "llama.cpp run $k exits 0 or 3: rc $rc $(tail -2 "$TMP/llama$k.err")" ran_ok $rc
    check_eq "llama.cpp run $k: prompts of 200 tokens to the server" \
      "$(jq -s -c 'map(.prompt_tokens) | unique' "$TMP/llama$k/requests.jsonl")" "[200]"
  done
  check_eq "first run: nothing cached" "$(jq -s -c 'map(.cached_tokens) | unique' "$TMP/llama1/requests.jsonl")" "[0]"
  check_eq "repeated prompts: cached = prompt_tokens - prompt_n (200 - 1)" \
    "$(jq -s -c 'map(.cached_tokens) | unique' "$TMP/llama2/requests.jsonl")" "[199]"
  "$BIN" run --url "$LBASE" --input-len 4000 --output-len 200 --requests 2 --yes --no-history \
    --out "$TMP/llama3" >/dev/null 2>"$TMP/llama3.err"
  check_eq "over a llama.cpp slot's n_ctx exits 1" $? 1
  check "the refusal names /props: $(cat "$TMP/llama3.err")" \
    grep -q '4200 tokens, over the server.s context of 4096 tokens (n_ctx of a slot in /props)' "$TMP/llama3.err"
else
  fail "the llama.cpp stand-in did not start: $(cat "$TMP/stub.err")"
fi
stop_stub

# No usage in the answers: the output is counted by the server's tokenizer
# (the stand-in's: one token per byte; its 4 chunks " w0" .. " w3" are 12).
start_stub python3 -u "$(dirname "$0")/llamacpp_server.py" 4096 nousage
NBASE=${STUB_LINE#listening on }
if [ -n "$NBASE" ]; then
  "$BIN" run --url "$NBASE" --tokenizer server --input-len 100 --output-len 4 --requests 3 --rate 50 \
    --warmup 0 --yes --no-history --out "$TMP/nousage" >/dev/null 2>"$TMP/nousage-run.err"
  rc=$?
  check "no-usage run exits 0 or 3: rc $rc $(tail -2 "$TMP/nousage-run.err")" ran_ok $rc
  check_eq "outputs (and prompts, 100) counted by the server's tokenizer" \
    "$(jq -s -c 'map([.output_tokens_source, .output_tokens, .n_chunks, .prompt_tokens]) | unique' "$TMP/nousage/requests.jsonl")" \
    '[["tokenizer",12,4,100]]'
else
  fail "the no-usage stand-in did not start: $(cat "$TMP/stub.err")"
fi
stop_stub
finish
