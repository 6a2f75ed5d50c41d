#!/usr/bin/env bash
# Builds infermeter (Release, x86-64) and gathers what the GPU machine needs
# to run bench/gpu there: the binary, the runtime .debs of every shared
# library it links that glibc does not provide (apt-get download; the GPU
# image has none of them and reaches no registry), the bench scripts and
# the shrunk model's --model-config JSON.
#
#   bench/gpu/bundle.sh DEST [BUILD_DIR]
#
# DEST gets: infermeter, debs/*.deb, server.py, probe.py, run_on_gpu.sh,
# model.json, bundle.txt (what was gathered and why). run_on_gpu.sh unpacks
# the .debs with dpkg -x and checks ldd before anything else.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dest=${1:?usage: bundle.sh DEST [BUILD_DIR]}
build=${2:-$root/build-release}
py=${PYTHON:-}
if [ -z "$py" ]; then
  for c in python3 /usr/bin/python3; do
    if "$c" -c 'import torch' 2>/dev/null; then py=$c; break; fi
  done
fi
[ -n "$py" ] || { echo "bundle.sh: no python3 with torch (apt-get install python3-torch)" >&2; exit 1; }

[ "$(uname -m)" = x86_64 ] || { echo "bundle.sh: the GPU machine is x86-64; build there instead" >&2; exit 1; }
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DINFERMETER_MPI=OFF >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target infermeter_bin >/dev/null

mkdir -p "$dest/debs"
rm -f "$dest"/debs/*.deb
install -m 0755 "$build/infermeter" "$dest/infermeter"
strip "$dest/infermeter" 2>/dev/null || true
cp "$here/server.py" "$here/probe.py" "$here/run_on_gpu.sh" "$dest/"
"$py" "$here/server.py" --write-model-config "$dest/model.json" --dtype bfloat16 --device cpu

# glibc's own libraries are on any Linux image; everything else travels.
is_glibc() {
  case "$1" in
    linux-vdso.so.* | ld-linux-*.so.* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | \
      librt.so.* | libresolv.so.* | libutil.so.*) return 0 ;;
  esac
  return 1
}

pkgs=()
{
  echo "# bench/gpu/bundle.sh, $(date -u +%FT%TZ), $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "# library -> Debian package"
} >"$dest/bundle.txt"
while read -r name _ path _; do
  [ -n "${path:-}" ] || continue
  is_glibc "$name" && continue
  real=$(readlink -f "$path")
  pkg=""
  # dpkg records a library under /usr/lib or /lib, depending on the package
  # (merged /usr): ask for each spelling.
  for p in "$path" "$real" "/usr$path" "/usr$real" "${path#/usr}" "${real#/usr}"; do
    pkg=$(dpkg -S "$p" 2>/dev/null | head -n1 | cut -d: -f1) && [ -n "$pkg" ] && break
  done
  [ -n "$pkg" ] || { echo "bundle.sh: no package owns $path" >&2; exit 1; }
  echo "$name -> $pkg" >>"$dest/bundle.txt"
  pkgs+=("$pkg")
done < <(ldd "$dest/infermeter" | awk '/=>/ {print $1, $2, $3, $4}')

mapfile -t uniq < <(printf '%s\n' "${pkgs[@]}" | sort -u)
(cd "$dest/debs" && apt-get download "${uniq[@]}" >/dev/null)
glibc_max=$(objdump -T "$dest/infermeter" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -n1)
{
  echo "# packages: ${#uniq[@]}; the binary needs up to $glibc_max"
  (cd "$dest/debs" && ls -l --block-size=K ./*.deb | awk '{print $5, $9}')
} >>"$dest/bundle.txt"
echo "bundle.sh: $dest: infermeter + ${#uniq[@]} packages ($(du -sh "$dest" | cut -f1)), needs $glibc_max"
