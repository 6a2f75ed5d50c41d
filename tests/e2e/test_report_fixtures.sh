#!/usr/bin/env bash
# Run directories written by an earlier infermeter (tests/fixtures/rundirs:
# a single run, a sweep, a --repeat set, a sessions run, an import, each
# written at /tmp/infermeter-fixtures/NAME before src/cli was split into
# run/, results/ and export/) keep their meaning: `infermeter report DIR`
# on a copy reproduces them: when src/cli was split (issue "One library
# under a thin command line") results.json and report.html came out byte
# for byte the same, but for the generation time and the directory's own
# path. Since then results.json v1 only grows: every key the old file has
# is still there with the same value (new facts are new keys), and the
# report still draws the same charts.
. "$(dirname "$0")/lib.sh"
FIX=tests/fixtures/rundirs
ORIG=/tmp/infermeter-fixtures

# normalize FILE DIR: the copy's path back to the original one, and the
# generation time (results.json's generated_at, the report's footer) dropped.
normalize() {
  sed -e "s#$2#$ORIG/$(basename "$2")#g" \
      -e 's#"generated_at": "[^"]*"#"generated_at": ""#' \
      -e 's#from results.json ([0-9T:Z-]*)#from results.json ()#' "$1"
}

for name in single sweep repeat sessions import; do
  d="$TMP/$name"
  cp -r "$FIX/$name" "$d"
  # The outputs go; only what the run wrote as it ran stays (a set's own
  # results.json stays: it alone records each run's start offset and exit
  # status; its figures are recomputed from the runs').
  find "$d" -mindepth $([ $name = repeat ] && echo 2 || echo 1) \
    \( -name results.json -o -name report.html \) -delete
  rm -f "$d/report.html"
  "$BIN" report --quiet "$d" >"$TMP/$name.out" 2>&1
  rc=$?
  check "report $name exits as the run did, not 1 ($rc): $(head -c 300 "$TMP/$name.out")" \
    test $rc -ne 1
  for f in $(cd "$FIX/$name" && find . \( -name results.json -o -name report.html \) | sort); do
    if [ ! -f "$d/$f" ]; then
      fail "report $name wrote no $f"
      continue
    fi
    normalize "$FIX/$name/$f" "$d" >"$TMP/want"
    normalize "$d/$f" "$d" >"$TMP/got"
    if cmp -s "$TMP/want" "$TMP/got"; then
      ok
    elif why=$(python3 "$(dirname "$0")/fixture_compat.py" "$TMP/want" "$TMP/got" 2>&1); then
      ok
    else
      fail "report $name: $f: $why"
    fi
  done
done
finish
