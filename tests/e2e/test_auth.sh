#!/usr/bin/env bash
# Bearer-token authentication (docs/tls.md "API keys"): `infermeter serve
# --api-key-file` answers 401 on /v1/ without the key or with a wrong one,
# 200 with it (vLLM's --api-key). `run` without a key, or with a wrong one,
# stops before the load with a clear error and exit 2; with
# --api-key-file, $INFERMETER_API_KEY or $OPENAI_API_KEY it runs, also
# through nghttpx's TLS (the header crosses a real proxy). Then the key is
# searched for in every file the runs wrote (the run directory, the HTML
# report, the history database), the terminal output and the outputs of
# `report` and `audit`: it is in none.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
need_tools jq
RUN() {
  "$BIN" run --no-progress "$@" >>"$TMP/terminal.out" 2>>"$TMP/terminal.err"
  local rc=$?
  if { [ $rc -ne 0 ] && [ $rc -ne 3 ]; } || grep -qE 'Sanitizer|runtime error' "$TMP/terminal.err"; then
    fail "run $* exited $rc: $(tail -c 3000 "$TMP/terminal.err")"
  else
    ok
  fi
}

# A key unlike anything else in the outputs (hex of /dev/urandom).
KEY="sk-imtest-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$KEY" >"$TMP/key"
printf 'sk-wrong-%s\n' "${KEY#sk-imtest-}" | rev >"$TMP/wrong"
start_server --time-scale 50 --api-key-file "$TMP/key"

# --- 1. serve checks the key on /v1/ only
code() { curl -sS -o "$TMP/body" -w '%{http_code}' "$@"; }
check_eq "serve: /v1/models without a key is 401" "$(code "$BASE/v1/models")" 401
check "... with an OpenAI-shaped error" jq -e '.error.code == 401 or .error.message == "Unauthorized"' "$TMP/body"
check_eq "serve: a wrong key is 401" "$(code -H "Authorization: Bearer $(cat "$TMP/wrong")" "$BASE/v1/models")" 401
check_eq "serve: 'Bearer' with a prefix of the key is 401" \
  "$(code -H "Authorization: Bearer ${KEY:0:10}" "$BASE/v1/models")" 401
check_eq "serve: the key is 200" "$(code -H "Authorization: Bearer $KEY" "$BASE/v1/models")" 200
check_eq "serve: a chat completion without the key is 401" \
  "$(code -H 'Content-Type: application/json' --data '{"model":"deepseek-v3","messages":[{"role":"user","content":"hi"}],"max_tokens":2}' "$BASE/v1/chat/completions")" 401
check_eq "serve: /health stays open" "$(code "$BASE/health")" 200
check_eq "serve: /metrics stays open" "$(code "$BASE/metrics")" 200
"$BIN" serve --port 0 --api-key-file "$TMP/none" >/dev/null 2>"$TMP/serve_nokey.err"
check_eq "serve --api-key-file naming no file: exit 1" "$?" 1
check "... saying it cannot read it" grep -q -- "--api-key-file: cannot read $TMP/none" "$TMP/serve_nokey.err"

# --- 2. run: without a key, a wrong key, then the key three ways
COMMON=(--url "$BASE" --input-len 64 --output-len 8 --ignore-eos --warmup 0 --rate 20 --requests 12 --seed 5)
env -u OPENAI_API_KEY -u INFERMETER_API_KEY "$BIN" run --no-progress --quiet "${COMMON[@]}" \
  --out "$TMP/nokey" 2>"$TMP/nokey.err"
check_eq "run without a key: exit 2" "$?" 2
check "... the error says the target needs an API key and how to give it" \
  grep -q "refused GET /v1/models (HTTP 401): it needs an API key; pass --api-key-file FILE" "$TMP/nokey.err"
check "... before any request" test ! -s "$TMP/nokey/requests.jsonl"
env -u OPENAI_API_KEY -u INFERMETER_API_KEY "$BIN" run --no-progress --quiet "${COMMON[@]}" \
  --api-key-file "$TMP/wrong" --out "$TMP/wrongkey" 2>"$TMP/wrongkey.err"
check_eq "run with a wrong key: exit 2" "$?" 2
check "... the error says the key was not accepted" grep -q "the API key was not accepted" "$TMP/wrongkey.err"
check "... without printing the key" test -z "$(grep -F "$(cat "$TMP/wrong")" "$TMP/wrongkey.err")"

# The runs that succeed: their terminal output is kept whole (no --quiet),
# with health checks and probes sending the key too.
RUN "${COMMON[@]}" --api-key-file "$TMP/key" --health-interval 200ms --probe-rate 2 --out "$TMP/file"
OPENAI_API_KEY=$KEY RUN "${COMMON[@]}" --out "$TMP/openai_env"
INFERMETER_API_KEY=$KEY RUN "${COMMON[@]}" --out "$TMP/im_env"
for d in file openai_env im_env; do
  check_eq "$d: every request succeeded with the key" \
    "$(jq -s '[.[] | select(.kind == "measured") | .error == null] | all' "$TMP/$d/requests.jsonl")" true
done
check "the health checks got through with the key" \
  jq -s -e '[.[] | select(.kind == "health")] | length > 0 and all(.error == null)' "$TMP/file/requests.jsonl"

# Through nghttpx's TLS and HTTP/2, when nghttpx and openssl are here: the
# Authorization header crosses a real proxy to serve.
if command -v openssl >/dev/null && [ -x "$NGHTTPX" ]; then
  PKI=$TMP/pki
  make_pki "$PKI"
  P=$(free_port)
  start_nghttpx tls "127.0.0.1,$P" "$PORT"
  env -u OPENAI_API_KEY -u INFERMETER_API_KEY "$BIN" run --no-progress --quiet --url "https://127.0.0.1:$P" \
    --cacert "$PKI/ca.crt" --http2 --requests 2 --warmup 0 --out "$TMP/tls_nokey" 2>"$TMP/tls_nokey.err"
  check_eq "through nghttpx without a key: exit 2" "$?" 2
  RUN --url "https://127.0.0.1:$P" --cacert "$PKI/ca.crt" --http2 --api-key-file "$TMP/key" \
    --input-len 64 --output-len 8 --ignore-eos --warmup 0 --rate 20 --requests 8 --out "$TMP/tls_key"
  check_eq "through nghttpx (TLS, HTTP/2) with the key: every request succeeded" \
    "$(jq -s '[.[] | .error == null] | all' "$TMP/tls_key/requests.jsonl")" true
else
  echo "note: nghttpx or openssl missing: the run through TLS is skipped" >&2
fi

# --- 3. the key is nowhere
for d in file openai_env im_env; do
  "$BIN" report "$TMP/$d" >>"$TMP/terminal.out" 2>>"$TMP/terminal.err"
  "$BIN" audit "$TMP/$d" >>"$TMP/terminal.out" 2>>"$TMP/terminal.err"
done
check "the HTML report was written" test -s "$TMP/file/report.html"
check "the history database was written" test -n "$(find "$XDG_DATA_HOME" -type f -name '*.db')"
n_files=$(find "$TMP" -type f ! -name key | grep -c .)
check_ge "files searched" "$n_files" 20
leaks=$(find "$TMP" -type f ! -name key -print0 | xargs -0 grep -l -a -F -- "$KEY" 2>/dev/null)
check_eq "the key is in no file written (run dirs, report.html, history, terminal, logs)" "$leaks" ""
check "the terminal output was captured" test -s "$TMP/terminal.out"
check_eq "the key is not on the terminal" "$(grep -c -a -F -- "$KEY" "$TMP/terminal.out" "$TMP/terminal.err" | awk -F: '{s += $2} END {print s}')" 0
check_eq "nor a third of it (not printed in part)" \
  "$(find "$TMP" -type f ! -name key -print0 | xargs -0 grep -l -a -F -- "${KEY:10:12}" 2>/dev/null)" ""

stop_server
finish
