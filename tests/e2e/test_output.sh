#!/usr/bin/env bash
# What the command line prints and writes besides results.json:
#  - --output-format csv: requests.csv and summary.csv, read back with
#    Python's csv module (RFC 4180): a row per requests.jsonl line with the
#    same values, latencies by docs/metrics.md §1, CRLF rows; summary.csv
#    equal to results.json's summary; `report DIR --output-format csv`
#    writes the same files again; quoting of commas, quotes and newlines;
#  - --json: stdout is results.json's summary (with a "verdict" object) and nothing else;
#  - -q: only the verdict line; -v: the settings; errors name the flag;
#  - colours: on a terminal (script(1) gives one), never with NO_COLOR,
#    never into a pipe.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
RUN() { "$BIN" run --requests 12 --rate 20 --warmup 2 --input-len 64 --output-len 16 \
          --seed 5 --no-history --no-progress "$@"; }
ok_rc() { [ "$1" -eq 0 ] || [ "$1" -eq 3 ]; } # 3: a busy machine's client self-check

RUN --out "$TMP/csv" --output-format csv --json >"$TMP/json.out" 2>"$TMP/json.err"
rc=$?
check "csv run exits 0 or 3 ($rc): $(tail -n 3 "$TMP/json.err")" ok_rc $rc
check "requests.csv written" test -s "$TMP/csv/requests.csv"
check "summary.csv written" test -s "$TMP/csv/summary.csv"
check "the verdict line went to stderr under --json" grep -q "^Verdict: " "$TMP/json.err"

python3 - "$TMP/csv" "$TMP/json.out" <<'PY' >"$TMP/py.out" 2>&1
import csv, json, sys
d, json_out = sys.argv[1], sys.argv[2]
errors = []
def need(cond, what):
    if not cond:
        errors.append(what)

lines = [json.loads(l) for l in open(d + "/requests.jsonl") if l.strip()]
raw = open(d + "/requests.csv", "rb").read()
need(raw.endswith(b"\r\n"), "requests.csv: the last row does not end with CRLF")
need(b"\n" not in raw.replace(b"\r\n", b""), "requests.csv: a bare LF outside CRLF")
with open(d + "/requests.csv", newline="") as f:
    rows = list(csv.DictReader(f))
need(len(rows) == len(lines), "requests.csv: %d rows for %d JSONL lines" % (len(rows), len(lines)))
def text(v):
    if v is None: return ""
    if v is True: return "true"
    if v is False: return "false"
    return str(v)
for rec, row in zip(lines, rows):
    for k, v in rec.items():
        if isinstance(v, (list, dict)):
            continue
        if isinstance(v, float):
            need(float(row[k]) == v, "id %s: %s %r vs %r" % (rec["id"], k, row[k], v))
        else:
            need(row[k] == text(v), "id %s: %s %r vs %r" % (rec["id"], k, row[k], v))
    if rec["t_first"] is not None and rec["t_start"] is not None:
        need(abs(float(row["ttft_ms"]) - (rec["t_first"] - rec["t_start"]) / 1e6) < 1e-9,
             "id %s: ttft_ms" % rec["id"])
        e2el = (rec["t_last"] - rec["t_start"]) / 1e6
        need(abs(float(row["e2el_ms"]) - e2el) < 1e-9, "id %s: e2el_ms" % rec["id"])
        if rec["output_tokens"] >= 2:
            tpot = (e2el - (rec["t_first"] - rec["t_start"]) / 1e6) / (rec["output_tokens"] - 1)
            need(abs(float(row["tpot_ms"]) - tpot) < 1e-9, "id %s: tpot_ms" % rec["id"])
    else:
        need(row["ttft_ms"] == "", "id %s: ttft_ms without t_first" % rec["id"])
need(sum(r["kind"] == "warmup" for r in rows) == 2, "requests.csv: not 2 warmup rows")

res = json.load(open(d + "/results.json"))
summ = res["summary"]
with open(d + "/summary.csv", newline="") as f:
    srows = list(csv.DictReader(f))
need(len(srows) == 1, "summary.csv: %d rows, want 1" % len(srows))
s = srows[0]
def flat(o, p=""):
    for k, v in o.items():
        if isinstance(v, dict):
            yield from flat(v, p + k + ".")
        elif not isinstance(v, list):
            yield p + k, v
n = 0
for k, v in flat(summ):
    n += 1
    if v is None:
        need(s[k] == "", "summary.csv %s: %r, want empty" % (k, s[k]))
    elif isinstance(v, str):
        need(s[k] == v, "summary.csv %s: %r vs %r" % (k, s[k], v))
    else:
        need(float(s[k]) == float(v), "summary.csv %s: %r vs %r" % (k, s[k], v))
need(n > 20, "summary: only %d keys" % n)
need(s["stage"] == "0", "summary.csv: stage %r" % s["stage"])
j = json.load(open(json_out))
need(isinstance(j.pop("verdict", None), dict), "--json: no verdict beside the summary")
need(j == summ, "--json: stdout is not results.json's summary (and its verdict)")
print("\n".join(errors) if errors else "ok %d rows, %d summary columns" % (len(rows), n))
sys.exit(1 if errors else 0)
PY
rc=$?
check "CSV read back with Python's csv module: $(head -n 8 "$TMP/py.out")" test $rc -eq 0

# report DIR --output-format csv writes the same files again.
cp "$TMP/csv/requests.csv" "$TMP/req.before"
cp "$TMP/csv/summary.csv" "$TMP/sum.before"
"$BIN" report "$TMP/csv" --output-format csv --quiet
check "report rewrites requests.csv identically" cmp -s "$TMP/req.before" "$TMP/csv/requests.csv"
check "report rewrites summary.csv identically" cmp -s "$TMP/sum.before" "$TMP/csv/summary.csv"
"$BIN" report "$TMP/csv" --json >"$TMP/rep.json" 2>"$TMP/rep.err"
check "report --json prints the summary" python3 -c '
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))["summary"]
v = a.pop("verdict", {})
sys.exit(0 if a == b and v.get("client_check") else 1)' "$TMP/rep.json" "$TMP/csv/results.json"

# Quoting: a finish_reason with a comma, quotes and a newline, a request id
# with a comma, read back exactly.
mkdir -p "$TMP/quote"
cp "$TMP/csv/manifest.json" "$TMP/csv/stages.jsonl" "$TMP/quote/"
python3 - "$TMP/csv/requests.jsonl" "$TMP/quote/requests.jsonl" <<'PY'
import json, sys
out = open(sys.argv[2], "w")
for i, l in enumerate(open(sys.argv[1])):
    r = json.loads(l)
    if i == 3:
        r["finish_reason"] = 'st,"op"\nx'
        r["request_id"] = "id,with,commas"
    out.write(json.dumps(r, separators=(",", ":")) + "\n")
PY
"$BIN" report "$TMP/quote" --output-format csv --quiet --no-html
check "quoted fields read back" python3 -c '
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
r = rows[3]
sys.exit(0 if r["finish_reason"] == "st,\"op\"\nx" and r["request_id"] == "id,with,commas"
         and len(rows) == 12 and all(len(x) == len(rows[0]) for x in rows) else 1)' \
  "$TMP/quote/requests.csv"

# -q: the verdict line alone; -v: the settings.
RUN --out "$TMP/q" -q >"$TMP/q.out" 2>"$TMP/q.err"
rc=$?
check "-q run exits 0 or 3 ($rc)" ok_rc $rc
# (folded to 80 columns: its continuation lines begin with spaces)
check_eq "-q: stdout is the verdict line alone" "$(grep -v '^Verdict: ' "$TMP/q.out" | grep -vc '^ ')" 0
check_eq "-q: one verdict line" "$(grep -c '^Verdict: ' "$TMP/q.out")" 1
check_eq "-q: nothing on stderr" "$(wc -c <"$TMP/q.err")" 0
RUN --out "$TMP/rq" --repeat 2 --requests 6 -q >"$TMP/rq.out" 2>"$TMP/rq.err"
rc=$?
check "--repeat 2 -q exits 0 or 3 ($rc)" ok_rc $rc
check_eq "--repeat 2 -q: stdout is the set's verdict line alone" \
  "$(cat "$TMP/rq.out")" "$(grep -E "^Verdict: (PASS|FAIL) \(exit $rc\): .* \(the worst of 2 runs\)$" "$TMP/rq.out")"
check_eq "--repeat 2 -q: one line" "$(wc -l <"$TMP/rq.out")" 1
check_eq "--repeat 2 -q: nothing on stderr" "$(head -c 300 "$TMP/rq.err")" ""
RUN --out "$TMP/v" -v >"$TMP/v.out" 2>"$TMP/v.err"
check "-v: the settings" grep -q '^infermeter: info: schedule: {"kind":"poisson"' "$TMP/v.err"
"$BIN" run -q -v >/dev/null 2>"$TMP/qv.err"
check_eq "-q -v: usage error" "$?" 1
check "-q -v: says why" grep -q '^infermeter run: --quiet and --verbose: exclude each other' "$TMP/qv.err"
"$BIN" run --output-format xml >/dev/null 2>"$TMP/fmt.err"
check_eq "--output-format xml: usage error" "$?" 1
check "--output-format xml: names the flag and the choices" \
  grep -q "^infermeter run: --output-format: unknown format 'xml': use json .* or csv" "$TMP/fmt.err"
"$BIN" run --json --repeat 3 >/dev/null 2>"$TMP/jr.err"
check_eq "--json --repeat 3: usage error" "$?" 1

# Errors: "infermeter COMMAND: what: why", getopt's own messages too.
cmds=$("$BIN" --help | awk '/^commands:/ {f = 1; next} f && !NF {exit} f {print $1}')
check "infermeter --help lists the commands ($(echo $cmds))" test "$(wc -w <<<"$cmds")" -ge 8
for c in $cmds; do
  "$BIN" $c --no-such-flag >/dev/null 2>"$TMP/err.$c"
  rc=$?
  check "$c --no-such-flag: exit 1 or 2 ($rc)" test $rc -ne 0
  check "$c --no-such-flag: 'infermeter $c: unrecognized option' ($(head -n 1 "$TMP/err.$c"))" \
    grep -q "^infermeter $c: unrecognized option '--no-such-flag'" "$TMP/err.$c"
done
"$BIN" history --since yesterday --history "$TMP/h.db" >/dev/null 2>"$TMP/err.since"
check_eq "history --since yesterday: exit 2" "$?" 2
check "history --since yesterday: says what a date is" \
  grep -q "^infermeter history: --since: 'yesterday' is not an ISO 8601 date: give YYYY-MM-DD" "$TMP/err.since"
"$BIN" frobnicate 2>"$TMP/err.cmd"
check "an unknown command says which are known" grep -q "^infermeter: frobnicate: unknown command: use run, serve" "$TMP/err.cmd"

# Colours: the verdict line is coloured on a terminal only, never with NO_COLOR.
esc=$'\033['
check "no escape into a pipe" bash -c "! grep -qF '$esc' '$TMP/q.out'"
if script -qec true /dev/null >/dev/null 2>&1; then
  cmd="'$BIN' report '$TMP/csv' --no-html"
  TERM=xterm script -qec "$cmd" /dev/null >"$TMP/tty.out" 2>&1 </dev/null
  check "on a terminal the verdict is coloured" grep -qF "Verdict: ${esc}1;3" "$TMP/tty.out"
  NO_COLOR=1 TERM=xterm script -qec "$cmd" /dev/null >"$TMP/nocolor.out" 2>&1 </dev/null
  check "the verdict line is there with NO_COLOR" grep -q "Verdict: " "$TMP/nocolor.out"
  check "NO_COLOR: no colour escape" bash -c "! grep -qE $'\\033\\\\[[0-9;]*m' '$TMP/nocolor.out'"
  TERM=dumb script -qec "$cmd" /dev/null >"$TMP/dumb.out" 2>&1 </dev/null
  check "TERM=dumb: no colour escape" bash -c "! grep -qE $'\\033\\\\[[0-9;]*m' '$TMP/dumb.out'"
else
  echo "script(1) cannot open a terminal here: colour checks skipped" >&2
fi
finish
