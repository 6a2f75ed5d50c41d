#!/usr/bin/env bash
# A busy host is not a busy client (docs/metrics.md §10): a default-shaped
# run (built-in server, real time, 4 req/s) beside bench/jitter.c, which
# takes every CPU at once under SCHED_FIFO for 3 ms every 50 ms (about 6 %
# of wake-ups up to 3 ms late, as a shared VM does). The run stays VALID
# and exits 0; the client is charged no late dispatch; the host probe's
# figures go to stages.jsonl and results.json and the summary names what
# the probe saw; `report DIR` gives the same verdict from the directory.
# CTest label `timing` (the file's name); skipped (77) without cc. Without
# CAP_SYS_NICE the bursts run at the default policy and are much weaker:
# the checks of lateness the probe must have seen are then left out.
. "$(dirname "$0")/lib.sh"
command -v cc >/dev/null 2>&1 || { echo "timing_jitter: SKIP: no C compiler for bench/jitter.c" >&2; exit 77; }
cc -O2 -std=c17 -D_GNU_SOURCE -o "$TMP/jitter" "$E2E_DIR/../../bench/jitter.c" || {
  echo "timing_jitter: SKIP: bench/jitter.c does not build here" >&2
  exit 77
}
# The generator ends by itself after 20 s (the run takes about 10 s); its
# pid is killed at the end in any case.
"$TMP/jitter" 3 50 20 2>"$TMP/jitter.err" &
JPID=$!
"$BIN" run --no-progress --quiet --rate 4 --duration 6s --warmup 1s --output-len 32 \
  --no-history --out "$TMP/j" >"$TMP/j.out" 2>&1
rc=$?
kill "$JPID" 2>/dev/null
wait "$JPID" 2>/dev/null
R="$TMP/j/results.json"
check_eq "a jittered run exits 0: $(grep '^Verdict' "$TMP/j.out")" "$rc" 0
check_eq "... its self-check VALID: $(jq -r .audit.client_check.summary "$R")" \
  "$(jq -r .audit.client_check.verdict "$R")" VALID
check_eq "no dispatch charged to the client" \
  "$(jq -r .audit.client_check.attribution.late_dispatches_client "$R")" 0
check "the host probe's figures are in stages.jsonl's stage end" \
  jq -se '[.[] | select(.event == "end")] | length == 1 and (.[0].host.wakes > 1000)' \
  "$TMP/j/stages.jsonl"
check "... and in results.json, the same" jq -e --slurpfile ev "$TMP/j/stages.jsonl" '
  ([$ev[] | select(.event == "end")][0].host.wakes) as $w
  | .audit.client_check.attribution.host_probe.wakes == $w' "$R"
check "the summary says what the probe saw" \
  jq -e '.audit.client_check.summary | test("probe saw [0-9.]+% late wake-ups")' "$R"
if ! grep -q "SCHED_FIFO refused" "$TMP/jitter.err"; then
  check "the probe saw the bursts (late wake-ups > 1 %)" \
    jq -e '.audit.client_check.attribution.host_probe.late_share > 0.01' "$R"
  check "the advice is the host's, not --threads" \
    jq -e '.audit.client_check.advice | test("host was late") and (test("--threads N") | not)' "$R"
else
  echo "timing_jitter: no SCHED_FIFO here: the bursts are weak, their lateness not checked" >&2
fi
cp "$R" "$TMP/first.json"
"$BIN" report --quiet --no-html "$TMP/j" >/dev/null 2>&1
check_eq "report DIR exits as the run did" "$?" 0
check "report DIR gives the same self-check" jq -se \
  '.[0].audit.client_check == .[1].audit.client_check' "$TMP/first.json" "$R"
finish
