#!/usr/bin/env bash
# Validates infermeter's outputs against docs/results.schema.json: each
# results.json against $defs/results, each requests.jsonl line by line
# against $defs/record (tests/schema/validate.js, with the npm package ajv's
# draft 2020-12 validator). A DIR stands for DIR/results.json and
# DIR/requests.jsonl.
#
#   bash tests/schema/validate.sh FILE|DIR...
#
# ajv is installed once with npm into a cache directory (like
# scripts/fetch-tokenizer.sh): $IM_NPM_CACHE/ajv, default build/npm-cache/ajv
# in the repository. One node process validates every argument.
# Exit status: 0 all valid; 1 a file is invalid (each problem printed as
# FILE[:LINE]: /json/path: message), or ajv could not be installed although
# the registry answers; 2 usage; 77 skipped: node or npm missing, or the npm
# registry unreachable (the convention of tests/e2e/test_tokenizer_exact.sh).
set -uo pipefail
SKIP=77
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ $# -eq 0 ]; then
  echo "usage: bash tests/schema/validate.sh FILE|DIR..." >&2
  exit 2
fi
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "schema: SKIP: '$tool' is not installed (Debian: apt-get install nodejs npm," \
      "or scripts/deps.sh test)" >&2
    exit $SKIP
  fi
done

cache=${IM_NPM_CACHE:-$root/build/npm-cache}/ajv
mods=$cache/node_modules
if [ ! -f "$mods/ajv/dist/2020.js" ]; then
  mkdir -p "$cache"
  # One install at a time (ctest may start two tests that need it).
  (
    flock -w 300 9 || exit 1
    [ -f "$mods/ajv/dist/2020.js" ] && exit 0
    npm install --prefix "$cache" --no-audit --no-fund --loglevel=error ajv@8 >"$cache/npm.log" 2>&1
  ) 9>"$cache.lock"
  if [ ! -f "$mods/ajv/dist/2020.js" ]; then
    if ! timeout 30 npm ping >/dev/null 2>&1; then
      echo "schema: SKIP: the npm registry is not reachable, cannot install ajv" >&2
      exit $SKIP
    fi
    echo "schema: npm install of ajv into $cache failed with the registry reachable:" >&2
    tail -5 "$cache/npm.log" >&2
    exit 1
  fi
fi
node "$here/validate.js" --modules "$mods" --schema "$root/docs/results.schema.json" "$@"
