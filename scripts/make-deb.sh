#!/usr/bin/env bash
# A Debian package of infermeter from an existing build directory: the same
# install tree as `make install` (cmake --install, prefix /usr, staged under
# DESTDIR), the man page compressed as Debian does, a control file whose
# Depends come from dpkg-shlibdeps (the libraries the binary links, with
# their versions), packed by dpkg-deb.
# Usage: scripts/make-deb.sh BUILD_DIR [OUT_DIR]   (prints the .deb's path)
set -euo pipefail
build=$(cd "${1:?usage: make-deb.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=$(mkdir -p "${2:-$build}" && cd "${2:-$build}" && pwd)
for tool in dpkg-deb dpkg; do
  command -v "$tool" >/dev/null || { echo "make-deb: $tool: not found (a Debian system is needed)" >&2; exit 77; }
done
[ -x "$build/infermeter" ] || { echo "make-deb: $build/infermeter: not built (run make first)" >&2; exit 1; }

version=$("$build/infermeter" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
stage="${IM_DEB_STAGE:-$build/deb-root}"
rm -rf "$stage"
mkdir -p "$stage"
cmake --build "$build" --target infermeter_bin >/dev/null
cmake --build "$build" --target cli_docs >/dev/null 2>&1 || true
# `make install`'s manifest (for `make uninstall`) is kept as it was.
manifest="$build/install_manifest.txt"
[ -f "$manifest" ] && cp "$manifest" "$manifest.keep"
DESTDIR="$stage" cmake --install "$build" --prefix /usr >/dev/null
rm -f "$manifest"
[ -f "$manifest.keep" ] && mv "$manifest.keep" "$manifest"
# Debian's zsh reads vendor completions from /usr/share/zsh/vendor-completions.
if [ -f "$stage/usr/share/zsh/site-functions/_infermeter" ]; then
  mkdir -p "$stage/usr/share/zsh/vendor-completions"
  mv "$stage/usr/share/zsh/site-functions/_infermeter" "$stage/usr/share/zsh/vendor-completions/"
  rmdir "$stage/usr/share/zsh/site-functions"
fi
find "$stage/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9n {} +
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
  "$stage/usr/bin/infermeter" 2>/dev/null || true

# Depends: dpkg-shlibdeps reads a debian/control beside it; give it one.
depends=""
if command -v dpkg-shlibdeps >/dev/null; then
  shl=$(mktemp -d)
  mkdir -p "$shl/debian"
  printf 'Source: infermeter\n\nPackage: infermeter\nArchitecture: any\n' >"$shl/debian/control"
  depends=$(cd "$shl" && dpkg-shlibdeps -O "$stage/usr/bin/infermeter" 2>/dev/null |
            sed -n 's/^shlibs:Depends=//p') || depends=""
  rm -rf "$shl"
fi
if [ -z "$depends" ]; then
  # Without dpkg-dev: the runtime libraries by package name (scripts/deps.sh
  # lists their -dev packages).
  depends="libc6, libuv1, libjansson4, libcurl4, libpcre2-8-0, libsqlite3-0"
fi

mkdir -p "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<CONTROL
Package: infermeter
Version: $version
Architecture: $arch
Maintainer: infermeter developers <infermeter@localhost>
Installed-Size: $size
Depends: $depends
Section: net
Priority: optional
Description: load tester for LLM inference servers
 Drives an open-loop or closed-loop load at an OpenAI-compatible inference
 server, records every request with microsecond token timing, and computes
 the figures (TTFT, TPOT, ITL, goodput, percentiles), a validity audit and
 reports from what it recorded. Includes a simulated server to test against.
CONTROL
(cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
deb="$out/infermeter_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zgzip --build "$stage" "$deb" >/dev/null
echo "$deb"
