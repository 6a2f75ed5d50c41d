#!/usr/bin/env bash
# TLS 1.3 and HTTP/2 through a real server: nghttpx (Debian's nghttp2-proxy)
# terminates TLS in front of `infermeter serve`, with a private CA and a
# server certificate made here by openssl (docs/tls.md).
# - Without --cacert the run stops before the load with a clear error (the
#   CA is not the system's) naming --cacert; with --cacert it runs, and the
#   tokens received are those serve wrote (its truth log), each chunk after
#   its write (one clock: CLOCK_MONOTONIC on both sides).
# - --insecure runs, is recorded in the manifest and is a WARN of the audit
#   (tls_verification), recomputed by `report` byte for byte.
# - --http2: 16 concurrent streams share one connection (HTTP/1.1 over the
#   same TLS needs 16), nghttpx's access log says h2, and the truth log
#   checks hold as over HTTP/1.1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
need_tools nghttpx openssl jq python3
# A run ends 0, or 3 when the machine was too busy for the self-check.
RUN() { run_ok "$@"; }
# flush_truth TAG: serve writes its truth log at exit: stops it (the log
# then holds what it served since it started, kept as truth.TAG.jsonl) and
# starts it again on the same port with a fresh log (nghttpx reconnects).
flush_truth() {
  stop_server
  mv "$TMP/truth.jsonl" "$TMP/truth.$1.jsonl"
  start_server --port "$SPORT" --time-scale 50 --truth-log "$TMP/truth.jsonl"
}
# truth_checks DIR LABEL TAG: tokens received = written, one truth request
# per success, every chunk after its write, against truth.TAG.jsonl.
truth_checks() {
  local d=$1 what=$2 T=$TMP/truth.$3.jsonl J=$1/requests.jsonl
  check_eq "$what: every request succeeded" "$(jq -s '[.[] | .error == null] | all' "$J")" true
  check_eq "$what: tokens received = tokens serve wrote" \
    "$(jq -s '[.[] | select(.error == null) | .output_tokens] | add' "$J")" \
    "$(jq -s '[.[] | select(.type == "chunk" and (.id | startswith("im-"))) | .tokens] | add' "$T")"
  check_eq "$what: one truth request per success" \
    "$(jq -s '[.[] | select(.type == "request")] | length' "$T")" \
    "$(jq -s '[.[] | select(.error == null)] | length' "$J")"
  check_eq "$what: every chunk received after serve wrote it" \
    "$(chunk_delays "$d" "$T" | jq 'length > 0 and all(. >= -1000)')" true
}

PKI=$TMP/pki
make_pki "$PKI"
start_server --time-scale 50 --truth-log "$TMP/truth.jsonl"
SPORT=$PORT
P=$(free_port)
start_nghttpx tls "127.0.0.1,$P" "$PORT"
URL="https://127.0.0.1:$P"
COMMON=(--url "$URL" --input-len 64 --output-len 8 --ignore-eos --warmup 0 --seed 3)

# --- 1. an untrusted certificate: a clear error before any load
"$BIN" run --no-progress --quiet "${COMMON[@]}" --requests 4 --out "$TMP/nocacert" 2>"$TMP/nocacert.err"
rc=$?
check_eq "without --cacert the run stops: exit 2 (unreachable)" "$rc" 2
check "the error says the certificate is not trusted and names --cacert" \
  grep -qE "certificate is not trusted: pass --cacert FILE.*--insecure" "$TMP/nocacert.err"
check "the error carries libcurl's reason" grep -q "unable to get local issuer certificate" "$TMP/nocacert.err"
check "no request was recorded" test ! -s "$TMP/nocacert/requests.jsonl"
"$BIN" run --no-progress --quiet "${COMMON[@]}" --requests 4 --cacert "$PKI/other-ca.crt" \
  --out "$TMP/wrongca" 2>"$TMP/wrongca.err"
check_eq "a CA that did not sign the certificate: exit 2 too" "$?" 2
"$BIN" run --no-progress --quiet "${COMMON[@]}" --cacert "$TMP/none.pem" --out "$TMP/nofile" 2>"$TMP/nofile.err"
check_eq "--cacert naming no file: usage error" "$?" 1
check "... that names the flag and the file" grep -q -- "--cacert $TMP/none.pem: cannot read it" "$TMP/nofile.err"
"$BIN" run --no-progress --quiet "${COMMON[@]}" --cert "$PKI/client.crt" --out "$TMP/nokey" 2>"$TMP/nokey.err"
check_eq "--cert without --key: usage error" "$?" 1
check "... saying both are needed" grep -q -- "--cert without --key" "$TMP/nokey.err"

# --- 2. --cacert: verified TLS 1.3 over HTTP/1.1, checked against the truth log
RUN "${COMMON[@]}" --cacert "$PKI/ca.crt" --rate 20 --requests 24 --out "$TMP/h1"
flush_truth h1
truth_checks "$TMP/h1" "TLS + HTTP/1.1" h1
check_eq "manifest: verification on, the CA file, HTTP/1.1" \
  "$(jq -c '.manifest.target.transport | [.insecure, .http2, .cacert == "'"$PKI/ca.crt"'", .client_cert]' "$TMP/h1/results.json")" \
  '[false,false,true,false]'
check_eq "the audit has no tls_verification check when verifying" \
  "$(jq '[.audit.publishable.checks[] | select(.id == "tls_verification")] | length' "$TMP/h1/results.json")" 0
check "nghttpx spoke HTTP/1.1 (ALPN http/1.1) for these requests" grep -q '^http/1.1 200 POST /v1/chat/completions' "$TMP/tls.access"
check "nghttpx answered over TLS 1.3 only (its own setting)" \
  test "$(openssl s_client -connect "127.0.0.1:$P" -CAfile "$PKI/ca.crt" -brief </dev/null 2>&1 | grep -c 'TLSv1.3')" -ge 1

# --- 3. --insecure: runs, recorded, a WARN of the audit
RUN "${COMMON[@]}" --insecure --rate 20 --requests 8 --out "$TMP/insecure"
R="$TMP/insecure/results.json"
check_eq "--insecure: every request succeeded" "$(jq -s '[.[] | .error == null] | all' "$TMP/insecure/requests.jsonl")" true
check_eq "--insecure is in the manifest" "$(jq '.manifest.target.transport.insecure' "$R")" true
check_eq "the audit warns: tls_verification WARN" \
  "$(jq -r '.audit.publishable.checks[] | select(.id == "tls_verification") | .status' "$R")" WARN
check "its fix names --cacert" jq -e '.audit.publishable.checks[] | select(.id == "tls_verification") | .fix | test("--cacert")' "$R"
"$BIN" audit "$TMP/insecure" >"$TMP/audit.out" 2>&1
check "infermeter audit DIR prints the tls_verification warning" grep -q "tls_verification" "$TMP/audit.out"
grep -v '"generated_at"' "$R" >"$TMP/before"
"$BIN" report --quiet "$TMP/insecure" >/dev/null 2>&1
grep -v '"generated_at"' "$R" >"$TMP/after"
check "report recomputes the --insecure run's results.json byte for byte" cmp -s "$TMP/before" "$TMP/after"

# --- 4. HTTP/2: many streams over one connection, the same truth
flush_truth insecure
RUN "${COMMON[@]}" --cacert "$PKI/ca.crt" --http2 --concurrency 16 --requests 64 --out "$TMP/h2"
flush_truth h2
truth_checks "$TMP/h2" "HTTP/2" h2
J="$TMP/h2/requests.jsonl"
check_eq "HTTP/2: 64 attempts" "$(jq -s length "$J")" 64
check_eq "HTTP/2: 16 concurrent streams used one connection" "$(jq -s '[.[] | .conn] | unique | length' "$J")" 1
check_eq "HTTP/2: one attempt opened it" "$(jq -s '[.[] | select(.conn_new)] | length' "$J")" 1
check_eq "nghttpx's access log: every chat request of the run came over h2" \
  "$(grep -c '^h2 200 POST /v1/chat/completions' "$TMP/tls.access")" 64
check_eq "manifest: http2" "$(jq '.manifest.target.transport.http2' "$TMP/h2/results.json")" true
# The control: HTTP/1.1 over the same TLS needs a connection per stream.
RUN "${COMMON[@]}" --cacert "$PKI/ca.crt" --concurrency 16 --requests 64 --out "$TMP/h1c"
check_ge "HTTP/1.1: 16 concurrent requests used 16 connections or more" \
  "$(jq -s '[.[] | .conn] | unique | length' "$TMP/h1c/requests.jsonl")" 16

stop_server
finish
