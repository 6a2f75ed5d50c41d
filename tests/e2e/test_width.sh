#!/usr/bin/env bash
# The first five minutes (issue 30): what a user reads fits 80 columns and
# the command line refuses what it does not know.
#  - with COLUMNS=80 (output not a terminal), every line of every --help, of
#    run's summary, a sweep's stage lines, report, audit, compare and
#    history is at most 80 columns wide (COLUMNS=60: at most 60);
#  - run --help's first screen (24 lines) has the usage line and examples;
#    --help-all has every group and vLLM's flags;
#  - an abbreviated or unknown option is refused with "did you mean --X?";
#    a missing --tokenizer file and a Hugging Face id each get their message;
#    a scenario's 1.9 prints as 1.9;
#  - /v1/models answering HTML names the URL and says HTML.
# Usage: test_width.sh BINARY
source "$(dirname "$0")/lib.sh"
export COLUMNS=80
export NO_COLOR=1

# widest FILE: the widest line's columns (UTF-8 characters, not bytes)
widest() { LC_ALL=C.UTF-8 awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$1"; }
fits() { # NAME FILE [WIDTH]
  local w=${3:-80} got
  got=$(widest "$2")
  if [ "$got" -le "$w" ]; then ok; else
    fail "$1: a line of $got columns (> $w): $(LC_ALL=C.UTF-8 awk -v w="$w" 'length($0) > w' "$2" | head -2)"
  fi
}

# Help texts.
for sub in run serve report audit compare history tokenize import merge analyze-routing; do
  "$BIN" "$sub" --help >"$TMP/help.$sub" 2>&1
  fits "$sub --help" "$TMP/help.$sub"
done
"$BIN" --help >"$TMP/help.top"
fits "infermeter --help" "$TMP/help.top"
"$BIN" run --help-all >"$TMP/help.all"
check_eq "run --help-all exits 0" $? 0
fits "run --help-all" "$TMP/help.all"
head -24 "$TMP/help.run" >"$TMP/screen"
check "run --help opens with the usage line" grep -q "^usage: infermeter run" "$TMP/screen"
check_ge "run --help's first screen has five examples" "$(grep -c '^  infermeter run' "$TMP/screen")" 5
check "run --help's first screen has the common options" grep -q -- "--concurrency" "$TMP/screen"
for g in Target: Schedule: Workload Sessions Stages "Limits and verdicts:" Observers Output: \
         "vLLM's benchmark flags"; do
  check "--help-all has the group $g" grep -q "^$g" "$TMP/help.all"
done
check "--help-all lists --request-rate" grep -q -- "--request-rate" "$TMP/help.all"

# Refusals and messages.
"$BIN" run --dur 5s 2>"$TMP/e.abbr"
check_eq "an abbreviation exits 1" $? 1
check "an abbreviation is refused with the option" \
  grep -q "^infermeter run: unrecognized option '--dur': did you mean --duration?" "$TMP/e.abbr"
"$BIN" run --concurency 4 2>"$TMP/e.typo"
check "a typo gets the nearest option" grep -q "did you mean --concurrency?" "$TMP/e.typo"
"$BIN" report --jsn x 2>"$TMP/e.rep" >/dev/null
check "report refuses an unknown option too" grep -q "did you mean --json?" "$TMP/e.rep"
"$BIN" compar 2>"$TMP/e.cmd"
check "an unknown command gets the nearest" grep -q "did you mean compare?" "$TMP/e.cmd"
"$BIN" run --tokenizer "$TMP/nope.json" 2>"$TMP/e.tok"
check "a missing tokenizer file is named as such" grep -q "nope.json: no such file" "$TMP/e.tok"
"$BIN" run --tokenizer deepseek-ai/DeepSeek-V3 2>"$TMP/e.hf"
check "a Hugging Face id points to --tokenizer server" grep -q -- "--tokenizer server" "$TMP/e.hf"
check "... and to tokenize --fetch" grep -q "infermeter tokenize --fetch deepseek-v3" "$TMP/e.hf"
echo '{"slo-target": 1.9}' >"$TMP/s.json"
"$BIN" run --scenario "$TMP/s.json" 2>"$TMP/e.float"
check "a scenario's float prints as written" grep -q -- "--slo-target: 1.9 is out" "$TMP/e.float"
if command -v python3 >/dev/null; then
  mkdir -p "$TMP/www/v1"
  printf '<!doctype html>\n<html><body>login</body></html>\n' >"$TMP/www/v1/models"
  mkfifo "$TMP/www.fifo"
  (cd "$TMP/www" && exec python3 -u -m http.server 0 --bind 127.0.0.1 >"$TMP/www.fifo" 2>/dev/null) &
  www=$!
  exec 4<"$TMP/www.fifo"
  wport=
  read -r -t 20 line <&4 && wport=$(grep -oE 'port [0-9]+' <<<"$line" | awk '{print $2}')
  if [ -n "$wport" ]; then
    "$BIN" run --url "http://127.0.0.1:$wport" --requests 1 --no-history --out "$TMP/html" \
      2>"$TMP/e.html" >/dev/null
    check "an HTML /v1/models names the URL" grep -q "GET http://127.0.0.1:$wport/v1/models" "$TMP/e.html"
    check "... and says the body was HTML" grep -q "HTML" "$TMP/e.html"
  fi
  kill "$www" 2>/dev/null
  wait "$www" 2>/dev/null
  exec 4<&-
fi

# A run, its report and audit, a sweep, compare, history: every line fits.
start_server
"$BIN" run --url "$BASE" --duration 4s --warmup 1s --rate 4 --out "$TMP/A" --tag suite=width \
  --slo ttft=2s >"$TMP/run.out" 2>"$TMP/run.err"
check "the run exits 0 or 4" test $? -le 4
fits "run's summary" "$TMP/run.out"
check "the summary names the headline throughput" grep -q "headline throughput" "$TMP/run.out"
check "the summary says which percentiles are nearest-rank" grep -q "nearest rank" "$TMP/run.out"
"$BIN" report "$TMP/A" --no-html >"$TMP/report.out" 2>&1
fits "report" "$TMP/report.out"
COLUMNS=60 "$BIN" report "$TMP/A" --no-html >"$TMP/report60.out" 2>&1
fits "report at COLUMNS=60" "$TMP/report60.out" 60
"$BIN" audit "$TMP/A" >"$TMP/audit.out" 2>&1
fits "audit" "$TMP/audit.out"
"$BIN" run --url "$BASE" --duration 2s --warmup 0s --sweep rate=2,4 --out "$TMP/S" \
  --no-history >"$TMP/sweep.out" 2>"$TMP/sweep.err"
fits "a sweep's output" "$TMP/sweep.out"
check "the sweep prints its stage lines" grep -q "^stage " "$TMP/sweep.out"
"$BIN" run --url "$BASE" --duration 4s --warmup 1s --rate 4 --out "$TMP/B" --tag suite=width \
  >/dev/null 2>&1
"$BIN" compare "$TMP/A" "$TMP/B" --no-history >"$TMP/compare.out" 2>&1
fits "compare" "$TMP/compare.out"
"$BIN" history >"$TMP/history.out" 2>&1
fits "history" "$TMP/history.out"
check "history shows the target" grep -q "target http://127.0.0.1:$PORT" "$TMP/history.out"
check "history shows the tags" grep -q "suite" "$TMP/history.out"
check "history shows no directory at 80 columns" bash -c "! grep -q '$TMP/A' '$TMP/history.out'"
COLUMNS=160 "$BIN" history >"$TMP/history160.out" 2>&1
check "a wide terminal's history has the directory" grep -q "$TMP/A" "$TMP/history160.out"
finish
