#!/usr/bin/env bash
# Installs the Debian packages infermeter needs to build and test, when they
# are missing. As root it runs apt-get; otherwise it prints the exact command
# and exits 1. Usage: scripts/deps.sh [build|test|valgrind]   (default: test)
set -euo pipefail
what=${1:-test}

# python3 generates the man page and the shell completions at build time
# (scripts/gen-cli-docs.py); man-db, groff-base, dpkg-dev and zsh check
# them and the Debian package (tests/cli/). Open MPI (tests/e2e/test_mpi.sh):
# the build links it when found (-DINFERMETER_MPI), so `make test` installs it.
build_pkgs=(gcc make cmake pkg-config libuv1-dev liburing-dev libjansson-dev libcurl4-openssl-dev libpcre2-dev libsqlite3-dev python3)
test_pkgs=(clang libclang-rt-dev curl jq iproute2 prometheus prometheus-pushgateway chromium man-db groff-base dpkg-dev zsh
           nghttp2-proxy openssl tinyproxy libopenmpi-dev openmpi-bin)

pkgs=("${build_pkgs[@]}")
[ "$what" = test ] && pkgs+=("${test_pkgs[@]}")
[ "$what" = valgrind ] && pkgs+=(valgrind)
# Node and npm (the tokenizer's exactness test against the Rust library's
# npm binding; the results schema's validator, tests/schema/validate.sh,
# which installs the npm package ajv into build/npm-cache/ajv on first use):
# any install will do (NodeSource's nodejs bundles npm and
# conflicts with Debian's npm package), so they are looked for as commands.
if [ "$what" = test ] && ! { command -v node && command -v npm; } >/dev/null 2>&1; then
  pkgs+=(nodejs npm)
fi

missing=()
for p in "${pkgs[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "infermeter needs these Debian packages: ${missing[*]}" >&2
  echo "Install them as root, then run make again:" >&2
  echo "  sudo sh -c '$cmd'" >&2
  exit 1
fi
echo "installing: ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
