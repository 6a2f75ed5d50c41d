# TLS helpers of the end-to-end tests (sourced after lib.sh): a private CA
# and certificates made with openssl, and nghttpx (Debian's nghttp2-proxy)
# terminating TLS 1.3 and HTTP/2 in front of `infermeter serve`. Every
# process started here is stopped on exit (the trap below chains lib.sh's).
NGHTTPX_PIDS=()

tls_cleanup() {
  local p
  for p in "${NGHTTPX_PIDS[@]}"; do
    kill -TERM "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  NGHTTPX_PIDS=()
  cleanup
}
trap tls_cleanup EXIT

# need_tools TOOL...: exit 77 (skipped) naming the first tool missing.
need_tools() {
  local t
  for t in "$@"; do
    if ! command -v "$t" >/dev/null 2>&1 && ! [ -x "/usr/sbin/$t" ]; then
      echo "SKIP: $t is not installed (scripts/deps.sh test installs it)" >&2
      exit 77
    fi
  done
}
NGHTTPX=$(command -v nghttpx 2>/dev/null || echo /usr/sbin/nghttpx)

# free_port: a TCP port free on loopback now (the kernel's choice).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# make_pki DIR: DIR/ca.{key,crt} (a private CA), DIR/server.{key,crt} for
# 127.0.0.1, ::1 and localhost signed by it, DIR/client.{key,crt} (a client
# certificate signed by it), and DIR/other-ca.crt (a CA that signed nothing).
make_pki() {
  local d=$1
  mkdir -p "$d"
  (
    cd "$d" || exit 1
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
      -subj "/CN=infermeter test CA" -keyout ca.key -out ca.crt
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
      -subj "/CN=unrelated CA" -keyout other-ca.key -out other-ca.crt
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
      -keyout server.key -out server.csr
    printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile server.ext -out server.crt
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=infermeter client" \
      -keyout client.key -out client.csr
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile client.ext -out client.crt
  ) >"$d/openssl.log" 2>&1 || { echo "FAIL: openssl could not make the certificates: $(tail -5 "$d/openssl.log")" >&2; exit 1; }
}

# start_nghttpx NAME FRONTEND BACKEND [ARGS...]: nghttpx with FRONTEND
# (nghttpx's --frontend syntax: "127.0.0.1,PORT", "::1,PORT" or
# "unix:PATH;no-tls") in front of serve at BACKEND (a port on 127.0.0.1, or
# "HOST,PORT"), TLS 1.3 only with $PKI's server
# certificate; its access log (ALPN protocol and status per request) in
# $TMP/NAME.access. Returns once it accepts connections: a bounded readiness
# poll (nghttpx prints nothing when it is ready).
start_nghttpx() {
  local name=$1 front=$2 back=$3
  shift 3
  case $back in *,*) ;; *) back="127.0.0.1,$back" ;; esac
  "$NGHTTPX" --conf=/dev/null --frontend="$front" --backend="$back" --workers=1 \
    --tls-min-proto-version=TLSv1.3 --tls-max-proto-version=TLSv1.3 --no-ocsp \
    --log-level=WARN --errorlog-file="$TMP/$name.err" --accesslog-file="$TMP/$name.access" \
    --accesslog-format='$alpn $status $method $path' "$@" "$PKI/server.key" "$PKI/server.crt" \
    >>"$TMP/$name.err" 2>&1 &
  NGHTTPX_PIDS+=($!)
  local pid=$! i
  for i in $(seq 1 200); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "FAIL: nghttpx $name exited: $(tail -5 "$TMP/$name.err")" >&2
      exit 1
    fi
    case $front in
      unix:*) local path=${front#unix:}; path=${path%%;*}; [ -S "$path" ] && return 0 ;;
      *) (exec 9<>"/dev/tcp/${front%,*}/${front#*,}") 2>/dev/null && return 0 ;;
    esac
    sleep 0.05
  done
  echo "FAIL: nghttpx $name did not start listening: $(tail -5 "$TMP/$name.err")" >&2
  exit 1
}
