#!/usr/bin/env bash
# The library floors under the command line (src/run, src/results,
# src/export) hold no argv parsing and write nothing to the terminal
# themselves: no getopt, no argc/argv, no stdout/stderr, no printf/puts.
# What they have to say goes to the caller's hooks, callbacks and streams;
# a failure is an enum im_err with a message (docs/architecture.md).
# usage: check_library.sh SRC_DIR [MODULE...]
set -euo pipefail
src=$1; shift
mods=${*:-run results export}
fail=0; n=0
for m in $mods; do
  for f in "$src/$m"/*.[ch]; do
    n=$((n + 1))
    # Comments are not code: drop /* ... */ lines and trailing comments.
    hits=$(sed -E 's#/\*.*\*/##g; s#^\s*\*.*##; s#^\s*/\*.*##' "$f" |
           grep -nE '\bgetopt|\bargv\b|\bargc\b|\bstdout\b|\bstderr\b|(^|[^a-z_])(printf|puts|perror|putchar)\s*\(' || true)
    if [ -n "$hits" ]; then
      echo "library: $f writes to the terminal or parses argv:"
      echo "$hits" | sed 's/^/  /'
      fail=1
    fi
  done
done
[ $fail = 0 ] && echo "library: $n files of $mods: no argv, no terminal"
exit $fail
