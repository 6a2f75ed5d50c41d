#!/usr/bin/env bash
# Link-level layering: every im_* symbol a module's archive references but
# does not define must be defined by a module it depends on (directly or
# through its dependencies), as declared in CMakeLists.txt (graph.txt, one
# "module: deps..." line each). A call the headers would not allow, declared
# by hand, fails here.
# usage: check_symbols.sh GRAPH module=archive.a ...
set -euo pipefail
graph=$1; shift
declare -A ar
for a in "$@"; do ar[${a%%=*}]=${a#*=}; done
. "$(dirname "$0")/graph.sh"
read_graph "$graph"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for m in "${!ar[@]}"; do
  nm --defined-only -g "${ar[$m]}" 2>/dev/null | awk 'NF==3 {print $3}' | grep '^im_' | sort -u > "$tmp/def.$m" || true
done
fail=0
for m in "${!ar[@]}"; do
  allowed=$(closure "$m")
  : > "$tmp/ok"
  for d in $allowed; do cat "$tmp/def.$d" >> "$tmp/ok"; done
  sort -u -o "$tmp/ok" "$tmp/ok"
  nm -u "${ar[$m]}" 2>/dev/null | awk '{print $NF}' | grep '^im_' | sort -u > "$tmp/undef" || true
  bad=$(comm -23 "$tmp/undef" "$tmp/ok")
  for s in $bad; do
    owner=$(grep -lx "$s" "$tmp"/def.* 2>/dev/null | sed 's#.*/def\.##' | tr '\n' ' ')
    echo "layers: module $m uses $s, defined in ${owner:-no module} (allowed: $allowed)"
    fail=1
  done
done
[ $fail = 0 ] && echo "layers: ${#ar[@]} modules, every cross-module symbol follows the declared graph"
exit $fail
