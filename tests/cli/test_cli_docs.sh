#!/usr/bin/env bash
# The man page and the completions (generated from --help at build time by
# scripts/gen-cli-docs.py) against the binary:
#  - they are what the generator makes of this binary's --help now (not stale);
#  - every flag of every subcommand's --help is in the rendered man page, in
#    the bash completion's list for that subcommand and in the zsh
#    function's block for it;
#  - every long option a subcommand's option table accepts (src/cli/*.c) is
#    in its --help, but for the internal ones listed below;
#  - the man page renders without a warning (man --warnings, groff -ww) and
#    has the exit status table;
#  - the bash completion works: subcommands, a subcommand's flags, profile
#    names after serve --profile, scenario files after run --scenario.
# Usage: test_cli_docs.sh BINARY BUILD_DIR
set -euo pipefail
bin=$(realpath "${1:?usage: test_cli_docs.sh BINARY BUILD_DIR}")
build=$(realpath "${2:?usage: test_cli_docs.sh BINARY BUILD_DIR}")
src=$(cd "$(dirname "$0")/../.." && pwd)
gen="$src/scripts/gen-cli-docs.py"
man1="$build/infermeter.1" bashc="$build/completions/infermeter" zshc="$build/completions/_infermeter"
tmp=$(mktemp -d /tmp/infermeter-clidocs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in man groff python3; do
  command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (scripts/deps.sh test)"; exit 77; }
done
for f in "$man1" "$bashc" "$zshc"; do [ -s "$f" ] || fail "$f was not generated"; done

# Not stale: regenerated from the binary, the same (but the date line).
version=$("$bin" --version | awk '{print $2}')
python3 "$gen" "$bin" man "$tmp/m.1" "$version"
python3 "$gen" "$bin" bash "$tmp/b"
python3 "$gen" "$bin" zsh "$tmp/z"
diff <(grep -v '^\.TH' "$man1") <(grep -v '^\.TH' "$tmp/m.1") >/dev/null || fail "infermeter.1 is stale"
cmp -s "$bashc" "$tmp/b" || fail "the bash completion is stale"
cmp -s "$zshc" "$tmp/z" || fail "the zsh completion is stale"

# Every flag of every --help: in the man page, in both completions.
python3 "$gen" "$bin" flags "$tmp/flags"
n=$(wc -l <"$tmp/flags")
[ "$n" -gt 150 ] || fail "only $n flags found in the --help texts: the parser broke"
MANWIDTH=200 man -l "$man1" 2>/dev/null >"$tmp/man.txt"
python3 - "$tmp/flags" "$tmp/man.txt" "$bashc" "$zshc" <<'PY'
import re, sys
flags = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
man = open(sys.argv[2]).read()
bash = open(sys.argv[3]).read()
zsh = open(sys.argv[4]).read()
# The man page: each subcommand's section, from its heading to the next.
sect = {}
for m in re.finditer(r"^INFERMETER ([A-Z-]+)\n(.*?)(?=^[A-Z][A-Z -]+\n|\Z)", man, re.S | re.M):
    sect[m.group(1).lower()] = m.group(2)
bash_sub = dict(re.findall(r"^    ([a-z-]+)\)\n      flags='([^']*)'", bash, re.M))
zsh_sub = {}
for m in re.finditer(r"^    ([a-z-]+)\)\n      _arguments(.*?)\n      ;;", zsh, re.S | re.M):
    zsh_sub[m.group(1)] = m.group(2)
bad = []
for sub, f in flags:
    word = re.compile(r"(?<![\w-])" + re.escape(f) + r"(?![\w-])")
    if sub not in sect or not word.search(sect[sub]):
        bad.append("%s %s: not in the man page's section" % (sub, f))
    if f not in bash_sub.get(sub, "").split():
        bad.append("%s %s: not in the bash completion" % (sub, f))
    if "'%s[" % f not in zsh_sub.get(sub, ""):
        bad.append("%s %s: not in the zsh completion" % (sub, f))
for b in bad:
    print("FAIL:", b)
print("%d flags of %d subcommands checked" % (len(flags), len({s for s, _ in flags})))
sys.exit(1 if bad else 0)
PY

# Every long option of the option tables is in its subcommand's --help.
internal=" run:--repeat-index run:--repeat-of run:--repeat-stage "
declare -A files=([run]="run_opts.c run_agents.h" [serve]="serve.c serve_agents.h"
                  [report]="report.c" [compare]="compare.c" [history]="history.c"
                  [tokenize]="tokenize.c" [analyze-routing]="routing.c")
missing=0
for sub in "${!files[@]}"; do
  for f in ${files[$sub]}; do
    [ -f "$src/src/cli/$f" ] || fail "src/cli/$f: gone (update this test)"
    grep -o '{"[a-z0-9-]*", *[a-z_]*argument' "$src/src/cli/$f" | sed 's/{"\([^"]*\)".*/--\1/'
  done | sort -u | while read -r opt; do
    [ "$opt" = --help ] && continue
    case $internal in *" $sub:$opt "*) continue ;; esac
    grep -qxP "$sub\t\Q$opt\E" "$tmp/flags" || { echo "FAIL: $sub $opt: accepted but not in its --help"; exit 1; }
  done || missing=1
done
[ "$missing" = 0 ] || fail "options missing from --help"

# Renders without warnings; the exit status table is there.
w=$(MANWIDTH=80 man --warnings -l "$man1" 2>&1 >/dev/null)
[ -z "$w" ] || fail "man --warnings: $w"
w=$(groff -t -man -Tutf8 -ww -z "$man1" 2>&1)
[ -z "$w" ] || fail "groff -ww: $w"
MANWIDTH=80 man -l "$man1" 2>/dev/null | sed -n '/^EXIT STATUS/,/^[A-Z]/p' >"$tmp/exit.txt"
# Every exit status the code defines (src/report/verdict.h's enum, compare's
# and history's) is in the table.
codes=$(sed -n '/^enum im_exit {/,/};/p' "$src/src/report/verdict.h" | grep -oE '= *[0-9]+' | tr -dc '0-9\n')
codes="$codes $(grep -hoE '(CMP|HIST)_[A-Z]+ = [0-9]+' "$src/src/cli/compare.c" "$src/src/cli/history.c" | awk '{print $3}')"
[ "$(wc -w <<<"$codes")" -ge 8 ] || fail "found only these exit codes in src/cli: $codes"
for code in $codes; do
  grep -qE "^ +$code +" "$tmp/exit.txt" || fail "exit status $code is not in the man page's table"
done

# The bash completion, used.
bash -n "$bashc" || fail "the bash completion does not parse"
complete_() { # words... -> COMPREPLY, one per line
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _infermeter
           printf "%s\n" "${COMPREPLY[@]}"' _ "$bashc" "$@"
}
has() { grep -qx -- "$1" <<<"$2"; } # has WORD OUTPUT (no pipe: grep -q would cut it)
has serve "$(complete_ infermeter se)" || fail "bash: 'se' does not complete to serve"
has --max-concurrency "$(complete_ infermeter run --max-con)" || fail "bash: run --max-con"
has --profile "$(complete_ infermeter serve --prof)" || fail "bash: serve --prof"
p1=$("$bin" serve --list-profiles | awk 'NR==1 {print $1}')
has "$p1" "$(complete_ infermeter serve --profile "${p1:0:4}")" || fail "bash: profile $p1"
has scenarios/smoke.json "$(cd "$src" && complete_ infermeter run --scenario scenarios/smo)" ||
  fail "bash: run --scenario scenarios/smo does not complete to scenarios/smoke.json"
# The zsh function, run with its completion helpers stubbed to print what
# they are given: the subcommand's specs, the profiles after serve --profile.
if command -v zsh >/dev/null; then
  zsh -n "$zshc" || fail "the zsh completion does not parse"
  zsh -fc 'words=(infermeter serve --prof); CURRENT=3
           _arguments() { print -l -- "$@" }; _describe() { : }; _files() { : }
           source "$1"' _ "$zshc" >"$tmp/zsh.out" 2>&1
  grep -qE -- "^--profile\[[^]]*\]:profile:\($p1 " "$tmp/zsh.out" ||
    fail "zsh: serve's --profile spec with the profiles: $(head -c 300 "$tmp/zsh.out")"
  grep -qF -- "--max-concurrency[" "$tmp/zsh.out" && fail "zsh: serve offered run's flags"
  zsh -fc 'words=(infermeter run --scen); CURRENT=3
           _arguments() { print -l -- "$@" }; _describe() { : }; _files() { : }
           source "$1"' _ "$zshc" >"$tmp/zsh.run" 2>&1
  grep -qE -- "^--scenario\[[^]]*\]:scenario file:_infermeter_scenarios$" "$tmp/zsh.run" ||
    fail "zsh: run's --scenario spec"
  grep -qE -- "^--rate\[open loop[^]]*\]:value: $" "$tmp/zsh.run" || fail "zsh: run's --rate takes a value"
  grep -qE -- "^--ignore-eos\[[^]]*\]$" "$tmp/zsh.run" || fail "zsh: run's --ignore-eos takes none"
else
  echo "zsh not installed: the zsh function is checked as text only"
fi
echo "PASS: man page, bash and zsh completions match --help"
