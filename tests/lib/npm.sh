# npm_module CACHE NAME SPEC MARKER: makes sure the npm package SPEC is
# installed under CACHE (its node_modules holding the file MARKER), once,
# one install at a time (ctest may start two tests that need it). Returns
# 0 when it is there, 77 when node/npm are missing or the registry cannot
# be reached (the tests' skip convention), 1 when the install failed with
# the registry reachable; NAME labels the messages. Sourced by
# tests/schema/validate.sh and tests/html/check.sh.
npm_module() {
  local cache=$1 name=$2 spec=$3 marker=$4 tool
  for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "$name: SKIP: '$tool' is not installed (Debian: apt-get install nodejs npm," \
        "or scripts/deps.sh test)" >&2
      return 77
    fi
  done
  [ -f "$cache/node_modules/$marker" ] && return 0
  mkdir -p "$cache"
  (
    flock -w 300 9 || exit 1
    [ -f "$cache/node_modules/$marker" ] && exit 0
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$cache" --no-audit --no-fund \
      --loglevel=error "$spec" >"$cache/npm.log" 2>&1
  ) 9>"$cache.lock"
  [ -f "$cache/node_modules/$marker" ] && return 0
  if ! timeout 30 npm ping >/dev/null 2>&1; then
    echo "$name: SKIP: the npm registry is not reachable, cannot install $spec" >&2
    return 77
  fi
  echo "$name: npm install of $spec into $cache failed with the registry reachable:" >&2
  tail -5 "$cache/npm.log" >&2
  return 1
}
