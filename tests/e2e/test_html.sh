#!/usr/bin/env bash
# The HTML report (docs/report.md): written at the end of every run as
# DIR/report.html, by `report DIR --html FILE` elsewhere, not at all with
# --no-html; self-contained (no script, no URL but its own); and, rendered
# in headless Chromium (tests/html/check.sh), free of console errors and
# network requests, every chart with data points or a reason, light and
# dark; the slowest requests' strip and the server's TTFT histogram beside
# the client's drawn; analyze-routing --html's page with its expert x time
# heat map. Axes: tick labels unique per axis, curves drawn left to right,
# no label outside its picture; the header's fields equal the manifest's
# (tests/html/check.js). Screenshots of a one-stage run, a rate sweep, a
# concurrency sweep, a sessions run, the routing page and a failing server's
# page (and of each chart named with --need) are kept in
# BUILD/test-artifacts/html/ for a person to look at.
. "$(dirname "$0")/lib.sh"
RUN() { "$BIN" run --no-progress --quiet --no-gpu "$@"; }
SHOTS=$(cd "$(dirname "$BIN")" && pwd)/test-artifacts/html
start_server --time-scale 20
RUN --url "$BASE" --rate 20 --duration 3s --warmup 0.5s --input-len 64 --output-len 32 \
  --timeslice 500ms --slo ttft=1ms --scrape "$BASE/metrics" --out "$TMP/one"
H="$TMP/one/report.html"
check "the run wrote DIR/report.html" test -s "$H"
check "one page, nothing fetched: no src/href to anything but itself" \
  bash -c "! grep -Eo '(src|href)=\"[^\"#]+' '$H' | grep -q ."
check "no script" bash -c "! grep -qi '<script' '$H'"
check "the verdict and the root causes are in it" grep -q 'publishable audit' "$H"
check_ge "charts with data" "$(grep -o 'data-points="[1-9]' "$H" | wc -l)" 10
check "the slowest requests' timeline is drawn" grep -q 'Slowest requests by E2EL' "$H"
check "results.json keeps the timeline it is drawn from" \
  jq -e '.analysis.timeline.requests | length > 0' "$TMP/one/results.json"
check "the server's TTFT histogram (scraped) is beside the client's" \
  jq -e '.metrics.server.server_ttft_histogram.count > 0' "$TMP/one/results.json"
check "and drawn in the TTFT chart" grep -q 'server (its scraped histogram)' "$H"
check "the header says what was run (the run's manifest beside it)" \
  grep -q 'data-k="manifest.schedule.rate">20<' "$H"
check "a 3 s run's 'over time' charts draw more than one slice (width from the run's length)" \
  jq -e '.metrics.timeslices | .slice_s < 3 and (.slices | length) >= 3' "$TMP/one/results.json"
check "the SLO given is drawn as a threshold" grep -q 'SLO 1 ms' "$H"
check "points carry their values on hover (SVG title, no script)" \
  grep -q '<circle class="[a-z]* c[0-9]" [^>]*><title>TTFT p50 — time since start (s): ' "$H"
RUN --url "$BASE" --sweep rate=10,40 --requests 20 --warmup 0 --input-len 64 --output-len 16 \
  --out "$TMP/sweep"
# What ran, not the unused defaults: a concurrency sweep is closed with its
# values, a sessions run is paced by its sessions (no request rate).
RUN --url "$BASE" --sweep concurrency=1,8 --requests 16 --warmup 0 --input-len 64 --output-len 16 \
  --out "$TMP/csweep"
check "a concurrency sweep's manifest: closed, its values, no rate" \
  jq -e '.manifest.schedule | .kind == "closed" and .sweep.values == [1,8] and (has("rate") | not)' \
  "$TMP/csweep/results.json"
check "and its header says so" grep -q 'sweep over <b data-k="manifest.schedule.sweep.param">concurrency</b>: <b data-k="manifest.schedule.sweep.values">1, 8</b>' \
  "$TMP/csweep/report.html"
check "TCP established counts each loopback connection once (at most 8 load + 2 others)" \
  jq -e '[.stages[1].series.tcp.established[]] | max <= 10' "$TMP/csweep/results.json"
RUN --url "$BASE" --sessions 2 --turns 2 --context-growth 128:256 --output-len 8 --duration 2s \
  --warmup 0s --out "$TMP/sessions"
check "a sessions run's manifest: kind sessions, no request rate" \
  jq -e '.manifest.schedule | .kind == "sessions" and .sessions == 2 and (has("rate") | not)' \
  "$TMP/sessions/results.json"
check "and its header names the sessions, not a poisson rate" \
  bash -c "grep -q '<b>sessions</b>: <b data-k=\"manifest.workload.sessions.concurrent\">2</b>' '$TMP/sessions/report.html' &&
           ! grep -q 'poisson' '$TMP/sessions/report.html'"
check "a sweep's report has the latency-throughput curve" grep -q 'Latency against throughput' \
  "$TMP/sweep/report.html"
check "and the Pareto chart of throughput against per-user speed" \
  grep -q 'Throughput against per-user speed (Pareto)</figcaption>' "$TMP/sweep/report.html"
# The routing page: analyze-routing --html on a trace with per-token ids.
start_server --time-scale 4 --moe-zipf 0.6 --routing-log "$TMP/rl.jsonl" --routing-detail 12
RUN --url "$BASE" --rate 6 --requests 12 --output-len 32 --no-scrape --no-sockstat --out "$TMP/moe"
stop_server
"$BIN" analyze-routing "$TMP/rl.jsonl" --quiet --out "$TMP/ar.json" --html "$TMP/routing.html"
check_eq "analyze-routing --html: exit 0" $? 0
check "the routing page has the expert x time heat map" grep -q 'Expert × time heat map' \
  "$TMP/routing.html"
check "a run's report says where the heat map comes from" grep -q 'routing-log FILE, then' \
  "$TMP/moe/report.html"
"$BIN" report "$TMP/one" --html "$TMP/elsewhere.html" --quiet
check "report --html FILE writes there" test -s "$TMP/elsewhere.html"
mv "$TMP/one/report.html" "$TMP/one.html"
"$BIN" report "$TMP/one" --no-html --quiet
check "--no-html writes none" test ! -e "$TMP/one/report.html"
mv "$TMP/one.html" "$TMP/one/report.html"
"$BIN" report "$TMP/one" --html /nonexistent/dir/r.html --quiet 2>"$TMP/err"
check_eq "an unwritable --html path: exit 1" $? 1
check "and says why" grep -q 'cannot write /nonexistent/dir/r.html' "$TMP/err"
# A failing server's page (docs/report.md): the failure first, rendered too
# (its screenshot, failing-light.png, is the one to look at).
start_chaos refuse400
RUN --url "$CBASE" --model chaos --requests 8 --rate 20 --retries 0 --no-history \
  --out "$TMP/failing" >/dev/null 2>&1
check_eq "a refusing server: exit 6" $? 6
stop_chaos
cp "$TMP/failing/report.html" "$TMP/failing.html"
rm -rf "$SHOTS"
IM_NPM_CACHE=$(cd "$(dirname "$BIN")" && pwd)/npm-cache \
  bash "$E2E_DIR/../html/check.sh" "$SHOTS" 8 --need '@one Slowest requests' \
  --need '@one TTFT (cumulative' --need '@sweep Throughput against per-user speed' \
  "$TMP/one/report.html" "$TMP/sweep/report.html" "$TMP/csweep/report.html" \
  "$TMP/sessions/report.html" \
  >"$TMP/browser.out" 2>&1
rc=$?
cat "$TMP/browser.out"
if [ $rc -ne 77 ]; then
  IM_NPM_CACHE=$(cd "$(dirname "$BIN")" && pwd)/npm-cache \
    bash "$E2E_DIR/../html/check.sh" "$SHOTS" 3 --need 'Expert × time' --need 'Load skew per' \
    --need 'Routing jitter' "$TMP/routing.html" >>"$TMP/browser.out" 2>&1 &&
    IM_NPM_CACHE=$(cd "$(dirname "$BIN")" && pwd)/npm-cache \
      bash "$E2E_DIR/../html/check.sh" "$SHOTS" 0 "$TMP/failing.html" >>"$TMP/browser.out" 2>&1
  rc=$?
  tail -n 2 "$TMP/browser.out"
fi
if [ $rc -eq 77 ]; then
  echo "browser checks skipped: $(tail -n 1 "$TMP/browser.out")" >&2
else
  check_eq "rendered in Chromium: no console error, every chart drawn or explained" $rc 0
  check "screenshots kept" test -s "$SHOTS/sweep-light.png"
  check "... the failing server's too" test -s "$SHOTS/failing-light.png"
fi
finish
