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
. "$root/tests/lib/npm.sh"
cache=${IM_NPM_CACHE:-$root/build/npm-cache}/ajv
mods=$cache/node_modules
npm_module "$cache" schema ajv@8 ajv/dist/2020.js
rc=$?
[ $rc -eq 0 ] || exit $rc
node "$here/validate.js" --modules "$mods" --schema "$root/docs/results.schema.json" "$@"
