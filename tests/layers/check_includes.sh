#!/usr/bin/env bash
# Include-level layering, as text: every #include "<module>/..." in
# src/<m>/ names m itself or a module m may use (declared graph, closed over
# dependencies); and a module's private headers (*_int.h) are included only
# from inside it. The compiler enforces the first through include views;
# this check names every offence at once, with file and line.
# usage: check_includes.sh GRAPH SRC_DIR
set -euo pipefail
graph=$1; src=$2
. "$(dirname "$0")/graph.sh"
read_graph "$graph"
fail=0; n=0
for dir in "$src"/*/; do
  m=$(basename "$dir")
  [ -n "${deps[$m]+x}" ] || { echo "layers: src/$m is not a module in the build graph"; fail=1; continue; }
  allowed=" $(closure "$m") "
  while IFS=: read -r file line inc; do
    n=$((n + 1))
    # bash's own regex: one sed process per include made this check take
    # a minute of CI.
    [[ $inc =~ \"([a-z_]+)/([^\"]+)\" ]] || continue
    tm=${BASH_REMATCH[1]}; th=${BASH_REMATCH[2]}
    case "$allowed" in *" $tm "*) ;; *) echo "layers: $file:$line includes $tm/$th; $m may use only:$allowed"; fail=1;; esac
    if [ "$tm" != "$m" ] && [[ "$th" == *_int.h ]]; then
      echo "layers: $file:$line includes $tm/$th, private to $tm"; fail=1
    fi
  done < <(grep -nHE '^\s*#\s*include\s*"[a-z_]+/[^"]+"' "$dir"*.[ch] || true)
done
[ $fail = 0 ] && echo "layers: $n module includes checked, all follow the declared graph"
exit $fail
