#!/usr/bin/env bash
# `make uninstall`: removes every file the last `make install` from this
# build directory wrote (its install_manifest.txt; CMake writes the paths
# without DESTDIR, so $DESTDIR, when set, is put in front), then the folders of infermeter's own that are left empty
# (share/infermeter/..., share/doc/infermeter/...), never a shared parent
# such as share/ or bin/.
# Usage: scripts/uninstall.sh BUILD_DIR
set -euo pipefail
manifest="${1:?usage: uninstall.sh BUILD_DIR}/install_manifest.txt"
if [ ! -f "$manifest" ]; then
  echo "infermeter: make uninstall: nothing to remove: $manifest does not exist (run make install first, with the same BUILD)" >&2
  exit 1
fi
while IFS= read -r f || [ -n "$f" ]; do
  [ -n "$f" ] || continue
  f="${DESTDIR:-}$f"
  if [ -e "$f" ] || [ -L "$f" ]; then
    rm -f -- "$f"
    echo "-- Removed: $f"
  fi
done <"$manifest"
sed "s|^|${DESTDIR:-}|; s|/[^/]*\$||" "$manifest" | sort -ru | while IFS= read -r d; do
  while case $d in */infermeter | */infermeter/*) true ;; *) false ;; esac; do
    rmdir -- "$d" 2>/dev/null || break
    d=${d%/*}
  done
done
rm -f -- "$manifest"
