#!/usr/bin/env bash
# `make valgrind`: valgrind memcheck over a short, low-rate run against the
# built-in server (in-process, so both sides are checked) and over `report`
# recomputing it. Only memory errors count: under valgrind the client
# self-check is expected to fail (exit 3), and definite leaks are errors.
#
#   scripts/valgrind.sh BUILD/infermeter
set -uo pipefail
IM=${1:?usage: scripts/valgrind.sh BUILD/infermeter}
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install -y valgrind" >&2; exit 2; }
T=$(mktemp -d /tmp/im-valgrind.XXXXXX)
trap 'rm -rf "$T"' EXIT
VG=(valgrind --error-exitcode=42 --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --track-fds=no --quiet)
status=0
check() { # check NAME CMD...: 42 is a memory error; 0, 1, 3 and 99 are verdicts
  local name=$1; shift
  "${VG[@]}" --log-file="$T/$name.vg" "$@" >"$T/$name.out" 2>&1
  local rc=$?
  if [ $rc -eq 42 ] || [ -s "$T/$name.vg" ]; then
    echo "valgrind: $name: memory errors (exit $rc):"; cat "$T/$name.vg"; status=1
  else
    echo "valgrind: $name: no memory errors (exit $rc)"
  fi
}
check run "$IM" run --rate 2 --duration 4s --warmup 0 --input-len 64 --output-len 16 \
  --grace 30s --no-history --out "$T/run"
check report "$IM" report "$T/run" --quiet
check serve-help "$IM" serve --help
exit $status
