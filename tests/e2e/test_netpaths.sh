#!/usr/bin/env bash
# The other ways to reach a target (docs/tls.md), each through a real
# server: --proxy through tinyproxy, --unix-socket through nghttpx listening
# on a unix socket, an IPv6 literal URL (serve on ::1, and nghttpx's TLS on
# ::1), and a client certificate (--cert/--key) for nghttpx requiring one
# (--verify-client). Each path is checked by the server on the far side
# (the proxy's log, serve's truth log, nghttpx's access log), not only by
# the client's records.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tls_lib.sh"
need_tools jq python3 openssl nghttpx tinyproxy
TINYPROXY_PID=
net_cleanup() {
  [ -n "$TINYPROXY_PID" ] && kill -TERM "$TINYPROXY_PID" 2>/dev/null && wait "$TINYPROXY_PID" 2>/dev/null
  tls_cleanup
}
trap net_cleanup EXIT
# The proxy is named on the command line: no environment proxy or bypass
# list may change the path.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy no_proxy NO_PROXY
RUN() { run_ok "$@"; }
all_ok() { jq -s '[.[] | .error == null] | all and length > 0' "$1/requests.jsonl"; }
W=(--input-len 64 --output-len 8 --ignore-eos --warmup 0 --seed 9)
PKI=$TMP/pki
make_pki "$PKI"
start_server --time-scale 50 --truth-log "$TMP/truth.jsonl"
SPORT=$PORT

# --- 1. --proxy: through tinyproxy (a forward HTTP proxy) on loopback
PP=$(free_port)
cat >"$TMP/tinyproxy.conf" <<EOF
Port $PP
Listen 127.0.0.1
Timeout 60
MaxClients 64
Allow 127.0.0.1
LogFile "$TMP/tinyproxy.log"
LogLevel Info
User $(id -un)
Group $(id -gn)
EOF
tinyproxy -d -c "$TMP/tinyproxy.conf" >"$TMP/tinyproxy.out" 2>&1 &
TINYPROXY_PID=$!
for _ in $(seq 1 200); do # readiness: tinyproxy prints nothing when it listens
  (exec 9<>"/dev/tcp/127.0.0.1/$PP") 2>/dev/null && break
  sleep 0.05
done
RUN --url "$BASE" --proxy "http://user:proxysecret@127.0.0.1:$PP" "${W[@]}" --rate 20 --requests 6 \
  --out "$TMP/proxy"
check_eq "--proxy: every request succeeded" "$(all_ok "$TMP/proxy")" true
check_eq "the proxy forwarded each chat request (its log)" \
  "$(grep -c "Request (file descriptor [0-9]*): POST http://127.0.0.1:$SPORT/v1/chat/completions" "$TMP/tinyproxy.log")" 6
check "the proxy forwarded discovery and the /metrics scrapes too" \
  grep -q "GET http://127.0.0.1:$SPORT/metrics" "$TMP/tinyproxy.log"
check_eq "manifest: the proxy, its credentials redacted" \
  "$(jq -r '.manifest.target.transport.proxy' "$TMP/proxy/results.json")" "http://REDACTED@127.0.0.1:$PP"
check_eq "the proxy's password is in no output file" \
  "$(grep -rl -a proxysecret "$TMP/proxy" "$TMP/run.err")" ""
DEAD=$(free_port)
"$BIN" run --no-progress --quiet --url "$BASE" --proxy "http://127.0.0.1:$DEAD" "${W[@]}" --requests 2 \
  --out "$TMP/deadproxy" 2>"$TMP/deadproxy.err"
check_eq "a proxy that is not there: exit 2" "$?" 2
check "... saying it could not connect" grep -q "unreachable: Couldn't connect to server" "$TMP/deadproxy.err"

# --- 2. --unix-socket: nghttpx listening on a unix socket, serve behind it
SOCK=$TMP/nghttpx.sock
start_nghttpx unix "unix:$SOCK;no-tls" "$SPORT"
RUN --url http://localhost --unix-socket "$SOCK" "${W[@]}" --rate 20 --requests 8 --out "$TMP/unix"
check_eq "--unix-socket: every request succeeded" "$(all_ok "$TMP/unix")" true
check_eq "nghttpx served each over its unix socket" \
  "$(grep -c '200 POST /v1/chat/completions' "$TMP/unix.access")" 8
check "the observer scraped /metrics over the socket too" \
  jq -e '.metrics.server.scrapes > 0' "$TMP/unix/results.json"
check_eq "manifest: the socket" "$(jq -r '.manifest.target.transport.unix_socket' "$TMP/unix/results.json")" "$SOCK"
"$BIN" run --no-progress --quiet --url http://localhost --unix-socket "$TMP/nothere.sock" "${W[@]}" \
  --requests 2 --out "$TMP/nosock" 2>"$TMP/nosock.err"
check_eq "a socket that is not there: exit 2" "$?" 2
# serve's truth: the proxy's and the socket's requests, every token as written.
stop_server
T=$TMP/truth.jsonl
check_eq "truth: tokens received through the proxy and the socket = written" \
  "$(cat "$TMP/proxy/requests.jsonl" "$TMP/unix/requests.jsonl" | jq -s '[.[] | select(.error == null) | .output_tokens] | add')" \
  "$(jq -s '[.[] | select(.type == "chunk" and (.id | startswith("im-"))) | .tokens] | add' "$T")"
check_eq "truth: every chunk received after serve wrote it (unix socket)" \
  "$(chunk_delays "$TMP/unix" "$T" | jq 'length > 0 and all(. >= -1000)')" true

# serve itself on a unix socket (serve --unix-socket), with its truth log.
USOCK=$TMP/serve.sock
mkfifo "$TMP/usock.fifo"
"$BIN" serve --unix-socket "$USOCK" --time-scale 50 --truth-log "$TMP/truth_unix.jsonl" \
  >"$TMP/usock.fifo" 2>"$TMP/usock.err" &
USERVE=$!
exec 4<"$TMP/usock.fifo"
read -r -t 20 line <&4
exec 4<&-
check_eq "serve --unix-socket says where it listens" "$line" "listening on unix:$USOCK"
RUN --url http://localhost --unix-socket "$USOCK" "${W[@]}" --rate 20 --requests 8 --out "$TMP/unix_serve"
check_eq "--unix-socket to serve's own socket: every request succeeded" "$(all_ok "$TMP/unix_serve")" true
kill -TERM "$USERVE"
wait "$USERVE"
check_eq "serve on a unix socket exits 0 on SIGTERM" "$?" 0
check "... and removes its socket file" test ! -e "$USOCK"
check_eq "truth: tokens received over serve's socket = written" \
  "$(jq -s '[.[] | select(.error == null) | .output_tokens] | add' "$TMP/unix_serve/requests.jsonl")" \
  "$(jq -s '[.[] | select(.type == "chunk" and (.id | startswith("im-"))) | .tokens] | add' "$TMP/truth_unix.jsonl")"
check_eq "truth: every chunk received after serve wrote it (its socket)" \
  "$(chunk_delays "$TMP/unix_serve" "$TMP/truth_unix.jsonl" | jq 'length > 0 and all(. >= -1000)')" true
echo "not a socket" >"$TMP/plain"
"$BIN" serve --unix-socket "$TMP/plain" >/dev/null 2>"$TMP/plain.err"
check_eq "serve --unix-socket on a regular file: exit 1" "$?" 1
check "... saying it cannot listen there" grep -q "cannot listen on unix socket $TMP/plain" "$TMP/plain.err"
check "... leaving the file alone" grep -q "not a socket" "$TMP/plain"

# --- 3. IPv6 literals
if python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
  start_server --host ::1 --time-scale 50
  V6="http://[::1]:$PORT"
  check_eq "serve answers on [::1]" "$(curl -sS -g -o /dev/null -w '%{http_code}' "$V6/health")" 200
  RUN --url "$V6" "${W[@]}" --rate 20 --requests 6 --out "$TMP/v6"
  check_eq "--url http://[::1]:PORT: every request succeeded" "$(all_ok "$TMP/v6")" true
  check_eq "manifest: the IPv6 URL" "$(jq -r '.manifest.target.url' "$TMP/v6/results.json")" "$V6"
  check "the observer scraped [::1]/metrics" jq -e '.metrics.server.scrapes > 0' "$TMP/v6/results.json"
  P6=$(free_port)
  start_nghttpx tls6 "::1,$P6" "::1,$PORT"
  RUN --url "https://[::1]:$P6" --cacert "$PKI/ca.crt" --http2 "${W[@]}" --rate 20 --requests 6 --out "$TMP/v6tls"
  check_eq "https://[::1]:PORT through nghttpx (the certificate names ::1): every request succeeded" \
    "$(all_ok "$TMP/v6tls")" true
  check_eq "... over h2" "$(grep -c '^h2 200 POST /v1/chat/completions' "$TMP/tls6.access")" 6
  stop_server
else
  echo "note: no IPv6 loopback (::1 cannot be bound): the IPv6 checks are skipped" >&2
fi

# --- 4. mutual TLS: nghttpx requires a client certificate signed by the CA
start_server --time-scale 50
P=$(free_port)
start_nghttpx mtls "127.0.0.1,$P" "$PORT" --verify-client --verify-client-cacert="$PKI/ca.crt"
MURL="https://127.0.0.1:$P"
"$BIN" run --no-progress --quiet --url "$MURL" --cacert "$PKI/ca.crt" "${W[@]}" --requests 2 \
  --out "$TMP/nocert" 2>"$TMP/nocert.err"
check_eq "mTLS without --cert: exit 2" "$?" 2
# TLS 1.3 refuses after the handshake: the client reads the alert, or finds
# the connection closed while it writes; either way the fix is named.
check "... the error names --cert and --key as the fix" \
  grep -qE "(asks for|requires) a client certificate.*pass --cert FILE --key FILE" "$TMP/nocert.err"
"$BIN" run --no-progress --quiet --url "$MURL" --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" \
  --key "$PKI/server.key" "${W[@]}" --requests 2 --out "$TMP/badkey" 2>"$TMP/badkey.err"
check_eq "a key that is not the certificate's: exit 2" "$?" 2
check "... the error names --cert and --key" grep -q "check --cert and --key" "$TMP/badkey.err"
RUN --url "$MURL" --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" --http2 \
  "${W[@]}" --rate 20 --requests 6 --out "$TMP/mtls"
check_eq "mTLS with --cert/--key: every request succeeded" "$(all_ok "$TMP/mtls")" true
check_eq "manifest: a client certificate (its path is not a secret, the key's content never read)" \
  "$(jq '.manifest.target.transport.client_cert' "$TMP/mtls/results.json")" true
check_eq "nghttpx accepted each with the certificate" \
  "$(grep -c '200 POST /v1/chat/completions' "$TMP/mtls.access")" 6

stop_server
finish
