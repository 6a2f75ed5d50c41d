#!/usr/bin/env bash
# A failing server never passes (docs/audit.md "Failing server"): a server
# killed mid-run, one answering HTML, one refusing everything with 400 and
# one whose streams never end (aborted at the end-of-run grace) each exit 6,
# with the verdict line naming the failures and the HTML report opening
# with the failure (count, classes, first error), no green badge; --max-error-rate 100 lets them
# through, and `report DIR` keeps the run's limit (its manifest); a healthy
# server does not exit 6.
. "$(dirname "$0")/lib.sh"

# failing MODE WHAT: a run against chaos_server.py MODE exits 6 and its
# verdict line says WHAT.
failing() {
  start_chaos "$1"
  local d="$TMP/run-$1"
  "$BIN" run --no-progress --url "$CBASE" --model chaos --requests 12 --rate 20 --grace 1s \
    --retries 0 --no-history --out "$d" >"$TMP/out-$1" 2>"$TMP/err-$1"
  local rc=$?
  check_eq "$1: exit status" "$rc" 6
  local line
  # the verdict line with its continuation lines (folded to 80 columns)
  line=$(awk '/^Verdict:/ {p = 1} p' "$TMP/out-$1" | tr '\n' ' ' | tr -s ' ')
  check "$1: the verdict line names a failing server: $line" grep -q 'failing server: [0-9]* of [0-9]* requests failed' <<<"$line"
  check "$1: the verdict line says $2: $line" grep -q -- "$2" <<<"$line"
  check "$1: audit.error_rate.failing" jq -e '[.. | .error_rate? // empty | .failing] | any' "$d/results.json"
  # The report opens with the failure, never a green badge.
  local h="$d/report.html" body
  body=$(sed -n '/<body>/,$p' "$h")
  check "$1: report.html shows the failing server first" \
    grep -q '<h2>Verdict</h2><div class="failbox" id="failing"><span class="verdict FAIL">FAILING SERVER' <<<"$body"
  check "$1: ... with its count" grep -Eq '[0-9]+ of [0-9]+ requests failed, were refused or aborted' <<<"$body"
  check "$1: ... its first error" grep -q 'first error: <b>[^(]' <<<"$body"
  check "$1: ... and no green badge" bash -c "! grep -Eq 'class=\"verdict (VALID|PASS|PUBLISHABLE)\"' <<<\"\$1\"" _ "$body"
  stop_chaos
}

failing html 'Content-Type text/html, body begins "<html><body><h1>Welcome to nginx'
failing refuse400 'http_4xx=12'
# 11: the first of the 12 is the default warm-up (a tenth of --requests),
# which stays a warm-up when the grace aborts it (marked cancelled).
failing silent 'aborted=11'
failing die 'connect='

# The limit: 100 % lets a refusing server through (exit 0: nothing else failed).
start_chaos refuse400
"$BIN" run --no-progress --quiet --url "$CBASE" --model chaos --requests 5 --rate 20 --retries 0 \
  --no-history --max-error-rate 100 --out "$TMP/run-limit" >/dev/null 2>&1
rc=$?
check "--max-error-rate 100: not exit 6 (got $rc)" test "$rc" != 6
stop_chaos
# ... and the limit is the run's: kept in the manifest, `report DIR` judges
# with it (a manifest without it, the default: the refusals fail).
"$BIN" report --quiet --no-html "$TMP/run-limit" >/dev/null 2>&1
rc=$?
check "report DIR of a --max-error-rate 100 run: not exit 6 (got $rc)" test "$rc" != 6
check "report DIR: audit.error_rate.limit is the run's" \
  jq -e '[.. | .error_rate? // empty | .limit == 1] | all' "$TMP/run-limit/results.json"
jq 'del(.analysis.max_error_rate)' "$TMP/run-limit/manifest.json" >"$TMP/m.json" &&
  mv "$TMP/m.json" "$TMP/run-limit/manifest.json"
"$BIN" report --quiet --no-html "$TMP/run-limit" >/dev/null 2>&1
check_eq "report DIR of the same run, its limit removed from the manifest: exit" "$?" 6

# A healthy server is no failing server.
start_server --time-scale 20
"$BIN" run --no-progress --quiet --url "$BASE" --requests 10 --rate 20 --no-history \
  --out "$TMP/run-ok" >/dev/null 2>&1
rc=$?
check "healthy server: not exit 6 (got $rc)" test "$rc" != 6
check "healthy server: audit.error_rate.failing false" jq -e '[.. | .error_rate? // empty | .failing] | any | not' "$TMP/run-ok/results.json"
check "healthy server: no failure in its report" bash -c "! grep -q 'FAILING SERVER' '$TMP/run-ok/report.html'"
finish
