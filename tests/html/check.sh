#!/usr/bin/env bash
# Renders HTML reports in headless Chromium and checks them
# (tests/html/check.js): no console or page error, nothing fetched from the
# network, every chart with data points or a reason, screenshots in DIR.
#
#   bash tests/html/check.sh SHOTS_DIR MIN_CHARTS [--need TITLE]... FILE.html...
#
# playwright-core (the driver only; it downloads no browser) is installed
# once with npm into $IM_NPM_CACHE/playwright (default build/npm-cache),
# and drives Debian's chromium. Exit status: 0 pass; 1 a check failed;
# 77 skipped: node, npm or chromium missing, or the npm registry
# unreachable (the convention of tests/schema/validate.sh).
set -uo pipefail
SKIP=77
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
shots=$1 min=$2
shift 2
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
  echo "html: SKIP: chromium is not installed (Debian: apt-get install chromium, or scripts/deps.sh test)" >&2
  exit $SKIP
fi
. "$root/tests/lib/npm.sh"
cache=${IM_NPM_CACHE:-$root/build/npm-cache}/playwright
mods=$cache/node_modules
npm_module "$cache" html playwright-core@1 playwright-core/package.json
rc=$?
[ $rc -eq 0 ] || exit $rc
mkdir -p "$shots"
node "$here/check.js" --modules "$mods" --chromium "$chromium" --shots "$shots" --min "$min" "$@"
