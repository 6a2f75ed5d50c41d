#!/usr/bin/env bash
# The validity audit end to end: `infermeter audit DIR` from the directory
# alone, --publish, and planted problems against `infermeter serve`, each
# found by its check (docs/audit.md).
. "$(dirname "$0")/lib.sh"
RUN() { "$BIN" run --no-progress --quiet "$@"; }
status_of() { # RESULTS ID
  jq -r --arg id "$2" '.audit.publishable.checks[] | select(.id == $id) | .status' "$1"
}

start_server --time-scale 10
BASE_ARGS=(--url "$BASE" --rate 10 --duration 2s --warmup 0.5s --input-len 64 --output-len 16 --seed 31)

# One prompt length, one run: not publishable, and it says why.
RUN "${BASE_ARGS[@]}" --out "$TMP/plain"
rc=$?
R="$TMP/plain/results.json"
check_eq "verdict NOT_PUBLISHABLE" "$(jq -r .audit.publishable.verdict "$R")" NOT_PUBLISHABLE
check_eq "one prompt length: workload FAIL" "$(status_of "$R" workload)" FAIL
check_eq "a single run: repeats WARN (FAIL under --publish)" "$(status_of "$R" repeats)" WARN
check "every FAIL and WARN has its fix" \
  jq -e '[.audit.publishable.checks[] | select(.status != "PASS") | has("fix")] | all' "$R"
check_eq "the built-in server declares its configuration" "$(status_of "$R" server_config)" PASS
check_eq "the server's /metrics give the hit rate" "$(status_of "$R" cache_metrics)" PASS
check "run without --publish: exit 0 or 3 (client) ($rc)" test $rc -eq 0 -o $rc -eq 3
before=$(ls -l --time-style=full-iso "$TMP/plain"; md5sum "$R")
"$BIN" audit "$TMP/plain" >"$TMP/audit.out"
arc=$?
after=$(ls -l --time-style=full-iso "$TMP/plain"; md5sum "$R")
check_eq "audit exits as the run did" "$arc" "$rc"
check "audit prints both verdicts" grep -q 'Client self-check\|Publishable:' "$TMP/audit.out"
check "audit names each check" grep -q 'workload' "$TMP/audit.out"
check_eq "audit writes nothing" "$after" "$before"
"$BIN" audit --publish --quiet "$TMP/plain"
prc=$?
if [ "$rc" -eq 0 ]; then
  check_eq "audit --publish exits 4 when not publishable" $prc 4
else
  check_eq "audit --publish: the client verdict comes first (3)" $prc 3
fi

# Varied lengths: workload no longer FAILs (no long context: WARN).
RUN "${BASE_ARGS[@]}" --range-ratio 0.5 --out "$TMP/varied"
check_eq "varied prompt lengths: workload WARN" "$(status_of "$TMP/varied/results.json" workload)" WARN

# A dead /metrics URL and no cached tokens: cache_metrics FAIL with the reason.
RUN "${BASE_ARGS[@]}" --scrape http://127.0.0.1:1/metrics --out "$TMP/noscrape"
R="$TMP/noscrape/results.json"
check_eq "dead --scrape: cache_metrics FAIL" "$(status_of "$R" cache_metrics)" FAIL
check "the reason is given" jq -e '.audit.publishable.checks[] | select(.id == "cache_metrics") | .evidence | test("no hit rate")' "$R"

# Health checks during the run (--health-interval): recorded as kind health,
# never in throughput, and they inflate the raw rate.
RUN "${BASE_ARGS[@]}" --health-interval 50ms --out "$TMP/health"
R="$TMP/health/results.json"
J="$TMP/health/requests.jsonl"
nh=$(jq -s '[.[] | select(.kind == "health" and .status == 200)] | length' "$J")
check_ge "health checks recorded, answered 200" "$nh" 5
check "health checks are not completions" \
  jq -e --argjson n "$(jq -s '[.[] | select(.kind == "measured" and .error == null)] | length' "$J")" '.summary.completed == $n' "$R"
check "their class in the table" jq -e '.metrics.effective_rate.classes.health.count > 0' "$R"
check_eq "health traffic: effective_rate WARN" "$(status_of "$R" effective_rate)" WARN

# Retries of 429s: the effective rate falls below 0.9.
stop_server
start_server --time-scale 10 --fault '429:0.5@retry_after=0'
RUN --url "$BASE" --rate 10 --duration 2s --warmup 0s --input-len 64 --output-len 16 --seed 32 \
  --retries 5 --out "$TMP/retries"
check_eq "429 retries: effective_rate WARN" "$(status_of "$TMP/retries/results.json" effective_rate)" WARN

# Connection: close on every response: one connection per request.
stop_server
start_server --time-scale 10 --fault connection-close
# (4 s: the check judges churn from 10 connections opened beyond those the
# simultaneous requests need.)
RUN --url "$BASE" --rate 10 --duration 4s --warmup 0s --input-len 64 --output-len 16 --seed 33 \
  --out "$TMP/close"
check_eq "connection-close: connections WARN" "$(status_of "$TMP/close/results.json" connections)" WARN

# 503 for a tenth of the requests, no retries: errors FAIL (above 5 %).
stop_server
start_server --time-scale 10 --fault '503:0.2'
RUN --url "$BASE" --rate 20 --duration 2s --warmup 0s --input-len 64 --output-len 16 --seed 34 \
  --out "$TMP/errors"
check_eq "20 % errors: errors FAIL" "$(status_of "$TMP/errors/results.json" errors)" FAIL

# Probes beside the load while the engine pauses 500 ms (simulated) every
# 3 s: the probes sent during a pause wait for it, tens of times their
# median, and are listed with their instant; they are their own class,
# never in the load's figures.
stop_server
start_server --time-scale 2 --fault 'hiccup@every=3s,ms=500'
RUN --url "$BASE" --rate 5 --duration 6s --warmup 0s --input-len 64 --output-len 16 --seed 35 \
  --probe-rate 20 --out "$TMP/probes"
R="$TMP/probes/results.json"
check "probes: sent and answered" jq -e '.analysis.probes.sent >= 40 and .analysis.probes.failed == 0' "$R"
check "probes: the pauses found (>= 2 stalls above 5 x p50)" jq -e '.analysis.probes.stalls >= 2
  and (.analysis.probes.stalls_listed | length) == ([.analysis.probes.stalls, 32] | min)' "$R"
check "probes: in their class, not in the load's count" jq -e '.metrics.effective_rate.probe
  == .analysis.probes.sent and .summary.completed < .metrics.effective_rate.attempts - .analysis.probes.sent + 1' "$R"
check "probes: recorded as kind probe, 1 token asked" jq -se \
  '[.[] | select(.kind == "probe")] | length > 0 and all(.requested_tokens == 1)' "$TMP/probes/requests.jsonl"
"$BIN" run --url "$BASE" --probe-rate -1 --out "$TMP/bad" 2>/dev/null
check_eq "--probe-rate -1: usage error" $? 1

# A run whose warm-up took every request: nothing measured, not publishable.
RUN --url "$BASE" --concurrency 2 --requests 4 --warmup 60s --input-len 64 --output-len 8 \
  --out "$TMP/allwarm"
check_eq "every request in the warm-up: samples FAIL" \
  "$(jq -r '.audit.publishable.checks[] | select(.id == "samples") | .status' "$TMP/allwarm/results.json")" FAIL
check_eq "... and NOT_PUBLISHABLE" "$(jq -r .audit.publishable.verdict "$TMP/allwarm/results.json")" NOT_PUBLISHABLE
# --requests N without --warmup: the first N/10 are the warm-up, the rest measured.
RUN --url "$BASE" --concurrency 2 --requests 20 --input-len 64 --output-len 8 --out "$TMP/countwarm"
check_eq "--requests 20, no --warmup: 2 warm-up requests" \
  "$(jq -c '[.manifest.schedule.warmup_s, .manifest.schedule.warmup_requests]' "$TMP/countwarm/results.json")" "[0,2]"
check_eq "... 18 measured" "$(jq .summary.completed "$TMP/countwarm/results.json")" 18

"$BIN" audit "$TMP/nonexistent" 2>/dev/null
check_eq "audit of a missing directory exits 1" $? 1

finish
