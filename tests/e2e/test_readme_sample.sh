#!/usr/bin/env bash
# README.md's sample of what `make run` prints (issue 30): every line of it
# still names a line `make run` prints. The figures differ from run to run;
# the labels (the text up to the first ':' of a line, else its first two
# words) must not. `make run` is scenarios/publishable.json; this runs it
# with a shorter schedule (the same lines, in about a quarter of the time).
# Usage: test_readme_sample.sh BINARY
source "$(dirname "$0")/lib.sh"
export COLUMNS=80
src=$(cd "$(dirname "$0")/../.." && pwd)
python3 - "$src/README.md" >"$TMP/sample.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"## What `make run` prints.*?```text\n(.*?)```", text, re.S)
print(m.group(1) if m else "", end="")
PY
check_ge "README.md has the sample of make run" "$(wc -l <"$TMP/sample.txt")" 15
(cd "$src" && "$BIN" run --scenario scenarios/publishable.json --duration 4s --warmup 1s \
  --no-history --out "$TMP/mr" >"$TMP/out.txt" 2>&1)
check "the shortened make run ends with its verdict" grep -q "^Verdict" "$TMP/out.txt"
python3 - "$TMP/sample.txt" "$TMP/out.txt" <<'PY' >"$TMP/labels.txt"
import re, sys
sample = open(sys.argv[1]).read().splitlines()
out = [l.strip() for l in open(sys.argv[2]).read().splitlines()]
missing = 0
norm = lambda t: " ".join(re.sub(r"\d+(\.\d+)?", "#", t).split())
out = [norm(o) for o in out]
for line in sample:
    s = line.strip()
    # blank, "...", indented lines (a folded line's continuation, the
    # progress line) but for the audit's "  WARN check" lines
    if not s or s == "..." or (line[:1] == " " and not re.match(r"(PASS|WARN|FAIL) ", s)):
        continue
    c = s.find(":")
    label = s[:c + 1] if 0 < c < 50 else " ".join(s.split()[:2])
    label = norm(label)  # numbers (run 1/3) and spacing vary
    if not any(o.startswith(label) for o in out):
        print("not printed by make run any more: %r (from %r)" % (label, s))
        missing += 1
print("%d missing" % missing)
PY
cat "$TMP/labels.txt"
check "every label of the README sample is in make run's output" grep -qx "0 missing" "$TMP/labels.txt"
finish
