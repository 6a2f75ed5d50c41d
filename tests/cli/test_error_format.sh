#!/usr/bin/env bash
# Error messages of the command line (docs/cli.md, "Errors"): every message
# src/cli/*.c starts on stderr begins with "infermeter" ("infermeter: what:
# why" or "infermeter COMMAND: what: why"; a status line redrawn with a
# leading \r too); the only other stderr lines are continuations of one (a
# leading space, a closing parenthesis, a newline), the "see: infermeter
# COMMAND --help" hint and the confirmation prompt
# (and two outputs that are not errors: the progress line, analyze-routing's
# summary).
# Static: it reads the format strings of fprintf(stderr, ...) and
# fputs(..., stderr) calls, so a new message in another form fails here.
# The library under the command line prints nothing: run/'s messages go to
# its hooks (im__run_say, run/run.h), which cli/run.c prints as
# "infermeter run: LINE" or "infermeter: LINE"; so each of those must not
# carry the prefix or a trailing newline itself (but a status line's last).
# Usage: test_error_format.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: test_error_format.sh SOURCE_DIR}
python3 - "$src"/src/cli/*.c "$src"/src/run/*.c <<'PY'
import re, sys
say = re.compile(r'im__run_say\(\s*IM_RUN_SAY_([A-Z]+)\s*,\s*"((?:[^"\\]|\\.)*)"((?:\s*"(?:[^"\\]|\\.)*")*)')
call = re.compile(r'fprintf\(\s*stderr\s*,\s*"((?:[^"\\]|\\.)*)"|fputs\(\s*"((?:[^"\\]|\\.)*)"\s*,\s*stderr')
allowed = re.compile(r'^((\\r)?infermeter|see: infermeter |start\? \[y/N\] $| |\)|\\n|$)')
# Not errors: the progress line, and analyze-routing's summary (on stderr
# by design: its JSON goes to stdout).
not_errors = {("progress.c", "%s%s%s"), ("routing.c", "%s: %llu steps")}
bad, n = [], 0
for path in sys.argv[1:]:
    text = open(path).read()
    for m in say.finditer(text):
        n += 1
        kind, fmt = m.group(1), m.group(2) + "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(3)))
        line = text.count("\n", 0, m.start()) + 1
        if fmt.startswith("infermeter") or (kind != "STATUS" and "\\n" in fmt[-2:]):
            bad.append("%s:%d: %s (the hook adds the prefix and the newline)" % (path, line, fmt[:80]))
    for m in call.finditer(text):
        n += 1
        fmt = m.group(1) if m.group(1) is not None else m.group(2)
        name = path.rsplit("/", 1)[-1]
        if any(name == f and fmt.startswith(p) for f, p in not_errors):
            continue
        if not allowed.match(fmt):
            line = text.count("\n", 0, m.start()) + 1
            bad.append("%s:%d: %s" % (path, line, fmt[:80]))
for b in bad:
    print("FAIL: not 'infermeter[ COMMAND]: what: why':", b)
print("%d stderr messages in src/cli and src/run checked" % n)
if n < 100:
    print("FAIL: too few messages found: the pattern broke")
    sys.exit(1)
sys.exit(1 if bad else 0)
PY
