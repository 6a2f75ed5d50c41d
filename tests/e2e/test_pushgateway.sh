#!/usr/bin/env bash
# run --pushgateway: the final figures reach a real Pushgateway (Debian's
# prometheus-pushgateway, scripts/deps.sh) under job=infermeter and the
# run's id, equal to results.json; an unreachable Pushgateway is a warning,
# never a failed run. Loopback only.
. "$(dirname "$0")/lib.sh"
command -v prometheus-pushgateway >/dev/null ||
  { fail "prometheus-pushgateway not installed (Debian package; scripts/deps.sh)"; finish; exit; }
command -v python3 >/dev/null && command -v jq >/dev/null || exit 77
PG_PID=
trap '[ -n "$PG_PID" ] && kill "$PG_PID" 2>/dev/null && wait "$PG_PID" 2>/dev/null; cleanup' EXIT
PG_PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
# Its own empty state: Debian's build persists to /var/lib/prometheus by default.
prometheus-pushgateway --web.listen-address="127.0.0.1:$PG_PORT" --persistence.file="$TMP/pg.state" >"$TMP/pg.log" 2>&1 &
PG_PID=$!
# Ready when it answers (bounded: 100 tries of 100 ms).
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PG_PORT/-/ready" >/dev/null && break; sleep 0.1; done
check "pushgateway ready" curl -sf "http://127.0.0.1:$PG_PORT/-/ready"

start_server --time-scale 20
"$BIN" run --no-progress --quiet --url "$BASE" --warmup 0 --requests 30 --rate 30 --input-len 32 \
  --output-len 8 --ignore-eos --pushgateway "http://127.0.0.1:$PG_PORT/" --out "$TMP/run" 2>"$TMP/run.err"
rc=$?
check "run ends with 0 or 3: $rc $(cat "$TMP/run.err")" test "$rc" = 0 -o "$rc" = 3
run_id=$(jq -r .manifest.run_salt "$TMP/run/results.json" 2>/dev/null)
curl -sf "http://127.0.0.1:$PG_PORT/metrics" >"$TMP/pg.txt"
got=$(grep '^infermeter_requests_total{' "$TMP/pg.txt" | grep 'kind="measured"' | grep 'job="infermeter"' |
      awk '{s += $2} END {print s + 0}')
check_eq "measured attempts pushed = results.json" "$got" "$(jq .metrics.kinds.measured.count "$TMP/run/results.json")"
check "the group carries the run's id ($run_id)" grep -q "run=\"$run_id\"" "$TMP/pg.txt"
check "histograms pushed" grep -q '^infermeter_ttft_seconds_bucket{.*le="1.2"' "$TMP/pg.txt"
check "no push error" test ! -s "$TMP/run.err"

# Nothing listening there: a warning, the run's outcome unchanged.
"$BIN" run --no-progress --quiet --url "$BASE" --warmup 0 --requests 5 --rate 30 --input-len 32 \
  --output-len 8 --pushgateway "http://127.0.0.1:1" --out "$TMP/run2" 2>"$TMP/run2.err"
rc=$?
check "unreachable pushgateway: run still 0 or 3 ($rc)" test "$rc" = 0 -o "$rc" = 3
check "unreachable pushgateway: a warning naming it" grep -q -- "--pushgateway http://127.0.0.1:1" "$TMP/run2.err"
finish
