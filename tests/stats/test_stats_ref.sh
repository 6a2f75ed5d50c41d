#!/usr/bin/env bash
# The distribution functions of src/core/stats.c against stdlib's
# (tests/stats/reference.js): the t CDF and quantile (integer and
# fractional degrees of freedom), the regularised incomplete beta, the
# binomial CDF and upper tail, Welch's test with unequal variances; every
# value to 1e-9 relative.
#
#   bash tests/stats/test_stats_ref.sh PATH/TO/stats_probe
#
# The npm packages are installed once into $IM_NPM_CACHE/stdlib (default
# build/npm-cache/stdlib), as tests/schema/validate.sh does for ajv.
# Exit status: 0 agree; 1 a value differs (each printed), or the install
# failed with the registry reachable; 77 skipped: node or npm missing, or
# the registry unreachable.
set -uo pipefail
SKIP=77
probe=${1:?usage: test_stats_ref.sh PATH/TO/stats_probe}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "stats_ref: SKIP: '$tool' is not installed (Debian: apt-get install nodejs npm)" >&2
    exit $SKIP
  fi
done
cache=${IM_NPM_CACHE:-$root/build/npm-cache}/stdlib
mods=$cache/node_modules
pkgs=(@stdlib/stats-base-dists-t-cdf@0.2 @stdlib/stats-base-dists-t-quantile@0.2
      @stdlib/math-base-special-betainc@0.2 @stdlib/stats-base-dists-binomial-cdf@0.2)
have() { [ -f "$mods/@stdlib/stats-base-dists-binomial-cdf/package.json" ] &&
         [ -f "$mods/@stdlib/stats-base-dists-t-quantile/package.json" ] &&
         [ -f "$mods/@stdlib/stats-base-dists-t-cdf/package.json" ] &&
         [ -f "$mods/@stdlib/math-base-special-betainc/package.json" ]; }
if ! have; then
  mkdir -p "$cache"
  (
    flock -w 300 9 || exit 1
    have && exit 0
    npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "${pkgs[@]}" \
      >"$cache/npm.log" 2>&1
  ) 9>"$cache.lock"
  if ! have; then
    if ! timeout 30 npm ping >/dev/null 2>&1; then
      echo "stats_ref: SKIP: the npm registry is not reachable, cannot install stdlib" >&2
      exit $SKIP
    fi
    echo "stats_ref: npm install into $cache failed with the registry reachable:" >&2
    tail -5 "$cache/npm.log" >&2
    exit 1
  fi
fi
ref=$(node "$here/reference.js" --modules "$mods") || { echo "stats_ref: reference.js failed" >&2; exit 1; }
printf '%s\n' "$ref" | "$probe" 1e-9
