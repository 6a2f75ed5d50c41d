#!/usr/bin/env bash
# The real Prometheus (Debian's prometheus, scripts/deps.sh) scrapes, during
# a run against `infermeter serve`: the run's live page (--metrics-listen),
# serve's own /metrics, and a recorded dcgm-exporter page
# (tests/fixtures/metrics/dcgm.prom, served by python3's http.server: GPU
# counters cannot exist on a machine without a GPU). Asserts through
# Prometheus's HTTP API that
#   - the live series exist and their final values agree with the run's
#     results.json and requests.jsonl (attempts by kind, tokens, TTFT count);
#   - every PromQL expression of deploy/grafana/infermeter.json returns data
#     over the run (a range query), with its variables set to this setup;
#   - the alert rules load into this Prometheus (promtool checked them).
# Panels fed by sources that cannot exist in CI, checked on the fixture
# instead: the DCGM panels (DCGM_FI_PROF_DRAM_ACTIVE, DCGM_FI_DEV_FB_USED /
# FREE: no GPU here; the recorded page of a dcgm-exporter on 2 x H200).
# Loopback only; Prometheus, the fixture server and serve are stopped on exit.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
command -v prometheus >/dev/null || { fail "prometheus not installed (Debian package prometheus; scripts/deps.sh)"; finish; exit; }
command -v python3 >/dev/null && command -v jq >/dev/null || exit 77
PIDS=()
stop_all() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; PIDS=(); }
trap 'stop_all; cleanup' EXIT
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

start_server --time-scale 10 --max-num-seqs 16

# The recorded DCGM page at /metrics of a static file server.
mkdir -p "$TMP/dcgm"
cp "$ROOT/tests/fixtures/metrics/dcgm.prom" "$TMP/dcgm/metrics"
DCGM_PORT=$(free_port)
python3 -m http.server "$DCGM_PORT" --bind 127.0.0.1 --directory "$TMP/dcgm" >/dev/null 2>&1 &
PIDS+=($!)

# Prometheus first, ready before the run starts: on a busy host it can take
# seconds to start, and started after the run it saw only the run's last
# page (no rate over the run, no in-flight series).
PROM_PORT=$(free_port)
LIVE_PORT=$(free_port)
cat >"$TMP/prometheus.yml" <<YML
global:
  scrape_interval: 500ms
  scrape_timeout: 400ms
  evaluation_interval: 15s
rule_files:
  - $ROOT/deploy/prometheus/alerts.yml
  - $ROOT/deploy/prometheus/alerts_sglang.yml
scrape_configs:
  - job_name: infermeter
    static_configs: [{targets: ["127.0.0.1:$LIVE_PORT"]}]
  - job_name: serve
    static_configs: [{targets: ["127.0.0.1:$PORT"]}]
  - job_name: dcgm
    static_configs: [{targets: ["127.0.0.1:$DCGM_PORT"]}]
YML
T_START=$(date +%s)
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$TMP/prometheus.log" 2>&1 &
PROM_PID=$!
PIDS+=($PROM_PID)
API="http://127.0.0.1:$PROM_PORT/api/v1"
ready=0
for _ in $(seq 600); do
  curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1 && { ready=1; break; }
  kill -0 "$PROM_PID" 2>/dev/null || break
  sleep 0.1
done
[ $ready = 1 ] || { fail "prometheus not ready within 60 s: $(tail -5 "$TMP/prometheus.log")"; finish; exit; }

# The run: its live endpoint on a free port (Prometheus's configuration
# names it before the run starts), confirmed by the line it prints; it keeps
# serving after the end until Prometheus has scraped the final page once
# (--metrics-linger).
mkfifo "$TMP/run.fifo"
T_RUN=$(date +%s)
"$BIN" run --no-progress --url "$BASE" --warmup 0 --rate 8 --duration 8s --input-len 64 \
  --output-len 24 --ignore-eos --probe-rate 1 --temperature 0.7 --scrape-interval 500ms \
  --metrics-listen "127.0.0.1:$LIVE_PORT" --metrics-linger 20s --out "$TMP/run" \
  >"$TMP/run.out" 2>"$TMP/run.fifo" &
RUN_PID=$!
exec 4<"$TMP/run.fifo"
LIVE=
while read -r -t 30 line <&4; do
  echo "$line" >>"$TMP/run.err"
  case "$line" in *"live metrics at "*) LIVE=${line##*live metrics at }; break ;; esac
done
cat <&4 >>"$TMP/run.err" &
PIDS+=($!)
[ -n "$LIVE" ] || { fail "no live metrics line: $(cat "$TMP/run.err")"; finish; exit; }
check_eq "live endpoint on the port asked for" "$LIVE" "http://127.0.0.1:$LIVE_PORT/metrics"

# The page itself, during the run: promtool finds nothing to say.
curl -sf "$LIVE" >"$TMP/live.prom"
check "live page fetched" test -s "$TMP/live.prom"
if command -v promtool >/dev/null; then
  check_eq "promtool check metrics: clean" "$(promtool check metrics <"$TMP/live.prom" 2>&1)" ""
else
  fail "promtool not installed (Debian package prometheus)"
fi
check "no colon in our names" test -z "$(grep -v '^#' "$TMP/live.prom" | cut -d'{' -f1 | cut -d' ' -f1 | grep ':')"
check "POST refused: 405" test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$LIVE")" = 405
check "unknown path: 404" test "$(curl -s -o /dev/null -w '%{http_code}' "${LIVE%/metrics}/nope")" = 404


wait "$RUN_PID"
rc=$?
check "run ends with 0 or 3 (self-check on a busy machine): $rc" test "$rc" = 0 -o "$rc" = 3
T_END=$(date +%s)
kill -0 "$PROM_PID" 2>/dev/null || { fail "prometheus exited: $(tail -5 "$TMP/prometheus.log")"; finish; exit; }
R="$TMP/run/results.json"
J="$TMP/run/requests.jsonl"
check "the run linger ended on a scrape, not its limit ($((T_END - T_RUN)) s)" test $((T_END - T_RUN)) -lt 25

# instant QUERY: the JSON result (max_over_time ranges skip the staleness
# markers written once the run's endpoint is gone).
query() { curl -sf --get "$API/query" --data-urlencode "query=$1"; }
value() { query "$1" | jq -r '.data.result[0].value[1] // "none"'; }

check_eq "Prometheus scraped the live endpoint" \
  "$(value 'max_over_time(up{job="infermeter"}[2m])')" 1
for kind in measured probe; do
  want=$(jq -r ".metrics.kinds.$kind.count" "$R")
  got=$(value "sum(max_over_time(infermeter_requests_total{job=\"infermeter\",kind=\"$kind\"}[2m]))")
  check_eq "attempts of kind $kind: Prometheus vs results.json" "$got" "$want"
done
echo "figures: measured attempts $(jq -r .metrics.kinds.measured.count "$R"), probes $(jq -r .metrics.kinds.probe.count "$R"), output tokens $(jq -s '[.[].output_tokens] | add' "$J") (results.json/requests.jsonl = Prometheus)"
check_ge "measured attempts" "$(jq -r .metrics.kinds.measured.count "$R")" 40
check_eq "output tokens: Prometheus vs requests.jsonl" \
  "$(value 'max_over_time(infermeter_output_tokens_total{job="infermeter"}[2m])')" \
  "$(jq -s '[.[].output_tokens] | add' "$J")"
check_eq "input tokens: Prometheus vs requests.jsonl" \
  "$(value 'max_over_time(infermeter_input_tokens_total{job="infermeter"}[2m])')" \
  "$(jq -s '[.[].prompt_tokens] | add' "$J")"
check_eq "TTFT observations: Prometheus vs successful measured attempts" \
  "$(value 'max_over_time(infermeter_ttft_seconds_count{job="infermeter"}[2m])')" \
  "$(jq -s '[.[] | select(.kind == "measured" and .error == null and .t_first >= 0)] | length' "$J")"
check_eq "temperature 0.7 lands in band 0.5-1" \
  "$(value 'max_over_time(infermeter_temperature_requests_total{job="infermeter",band="0.5-1"}[2m])')" \
  "$(jq -s '[.[] | select(.kind == "measured" and .error == null and .t_first >= 0)] | length' "$J")"
# In flight at the scrape instants may well be 0 (short requests): present.
check "in-flight gauge present" test "$(value 'count_over_time(infermeter_in_flight{job="infermeter"}[2m])')" != none
check "server concepts re-exported" test "$(value 'max_over_time(infermeter_server_kv_cache_usage{job="infermeter"}[2m])')" != none
check "TIME_WAIT gauge present" test "$(value 'count_over_time(infermeter_tcp_time_wait{job="infermeter"}[2m])')" != none
check_eq "the rule groups loaded" \
  "$(curl -sf "$API/rules" | jq '[.data.groups[].rules[]] | length')" 11

# Every dashboard expression, its variables set to this setup, over the run.
jq -r '.panels[] | select(.targets) | .title as $t | .targets[] | "\($t)\t\(.expr)"' \
  "$ROOT/deploy/grafana/infermeter.json" >"$TMP/exprs.tsv"
n=0
while IFS=$'\t' read -r title expr; do
  e=${expr//'$__rate_interval'/5s}
  e=${e//'$server_job'/serve}
  e=${e//'$job'/infermeter}
  e=${e//'$model'/.*}
  res=$(curl -sf --get "$API/query_range" --data-urlencode "query=$e" \
        --data-urlencode "start=$T_START" --data-urlencode "end=$(date +%s)" --data-urlencode step=1)
  pts=$(jq '[.data.result[].values[] | select(.[1] != "NaN")] | length' <<<"$res" 2>/dev/null || echo 0)
  check "dashboard panel '$title' has data: $e" test "${pts:-0}" -gt 0
  n=$((n + 1))
done <"$TMP/exprs.tsv"
check_ge "dashboard expressions evaluated" "$n" 40
stop_all

# Bad input: a clear error, exit 1, before any load.
"$BIN" run --no-progress --quiet --url "$BASE" --requests 1 --metrics-listen localhost:x \
  --out "$TMP/bad" 2>"$TMP/bad.err"
check_eq "bad --metrics-listen: exit 1" "$?" 1
check "bad --metrics-listen: says what is expected" grep -q "expected PORT, ADDR:PORT" "$TMP/bad.err"
finish
