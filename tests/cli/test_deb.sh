#!/usr/bin/env bash
# make deb: the package is built from the build directory's install tree,
# declares its runtime libraries, holds the binary, the man page, both
# completions, the docs, scenarios and deploy/, and installs with dpkg -i
# (into a private root with its own dpkg database: --root, so the test
# changes nothing on the machine), after which `infermeter --version` runs
# from it and `dpkg -r` removes every file again.
# With IM_DEB_SYSTEM_INSTALL=1, as root, it is also installed into the real
# system, `infermeter --version` and `man -w infermeter` are run from PATH,
# and it is removed again.
# Usage: test_deb.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: test_deb.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")/../.." && pwd)
command -v dpkg-deb >/dev/null && command -v dpkg >/dev/null || { echo "SKIP: no dpkg"; exit 77; }
tmp=$(mktemp -d /tmp/infermeter-deb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

deb=$(IM_DEB_STAGE="$tmp/stage" bash "$here/scripts/make-deb.sh" "$build" "$tmp")
[ -f "$deb" ] || fail "make-deb.sh printed '$deb', which is not a file"
want_version=$("$build/infermeter" --version | awk '{print $2}')

# The control file.
ctl=$(dpkg-deb -f "$deb" Package Version Architecture Depends)
echo "$ctl"
grep -qx "Package: infermeter" <<<"$ctl" || fail "Package is not infermeter"
grep -qx "Version: $want_version" <<<"$ctl" || fail "Version is not $want_version"
grep -qx "Architecture: $(dpkg --print-architecture)" <<<"$ctl" || fail "wrong Architecture"
for lib in libc6 libcurl4 libjansson4 libuv1 libpcre2-8-0 libsqlite3-0; do
  grep -q "^Depends:.*\b$lib\b" <<<"$ctl" || fail "Depends lacks $lib"
done

# This machine has every package the binary depends on (so dpkg -i on it
# would not stop at the dependencies).
for pkg in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/(.*//; s/ //g'); do
  [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ] ||
    fail "Depends names $pkg, which is not installed here"
done

# The contents.
contents=$(dpkg-deb -c "$deb" | awk '{print $NF}')
for f in ./usr/bin/infermeter ./usr/share/man/man1/infermeter.1.gz \
         ./usr/share/bash-completion/completions/infermeter \
         ./usr/share/zsh/vendor-completions/_infermeter \
         ./usr/share/doc/infermeter/README.md ./usr/share/doc/infermeter/docs/metrics.md \
         ./usr/share/doc/infermeter/docs/results.schema.json \
         ./usr/share/infermeter/scenarios/smoke.json \
         ./usr/share/infermeter/scenarios/traces/example-mooncake.jsonl \
         ./usr/share/infermeter/deploy/prometheus/alerts.yml \
         ./usr/share/infermeter/deploy/grafana/infermeter.json; do
  grep -qx -- "$f" <<<"$contents" || fail "$f is not in the package"
done
dpkg-deb -c "$deb" | awk '$2 != "root/root" {print; bad=1} END {exit bad}' ||
  fail "files not owned by root/root"

# dpkg -i into a private root with its own, empty database (the libraries
# the package depends on are the machine's, hence --force-depends).
root="$tmp/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
: >"$root/var/lib/dpkg/status"
dpk=(dpkg --root="$root" --force-depends --force-not-root --force-script-chrootless --log=/dev/null)
"${dpk[@]}" -i "$deb" >/dev/null 2>"$tmp/dpkg.err" || { cat "$tmp/dpkg.err" >&2; fail "dpkg -i"; }
st=$("${dpk[@]}" -s infermeter)
grep -qx "Status: install ok installed" <<<"$st" || fail "dpkg -s: not installed"
got=$("$root/usr/bin/infermeter" --version)
echo "installed: $got"
[ "$(awk '{print $2}' <<<"$got")" = "$want_version" ] || fail "--version said '$got'"
if command -v man >/dev/null; then
  page=$(MANWIDTH=80 man -l "$root/usr/share/man/man1/infermeter.1.gz" 2>/dev/null)
  grep -q "EXIT STATUS" <<<"$page" || fail "the installed man page does not render"
fi
"${dpk[@]}" -r infermeter >/dev/null
[ ! -e "$root/usr/bin/infermeter" ] || fail "dpkg -r left usr/bin/infermeter"
[ ! -e "$root/usr/share/infermeter/scenarios/smoke.json" ] || fail "dpkg -r left the scenarios"

if [ "${IM_DEB_SYSTEM_INSTALL:-0}" = 1 ]; then
  [ "$(id -u)" = 0 ] || fail "IM_DEB_SYSTEM_INSTALL=1 needs root"
  dpkg -s infermeter >/dev/null 2>&1 && fail "infermeter is already installed on this system; not touching it"
  dpkg -i "$deb"
  trap 'dpkg -r infermeter >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
  hash -r
  sys=$(infermeter --version)
  echo "system install: $(command -v infermeter): $sys"
  [ "$(awk '{print $2}' <<<"$sys")" = "$want_version" ] || fail "system --version said '$sys'"
  man -w infermeter
  dpkg -r infermeter
  trap 'rm -rf "$tmp"' EXIT
fi
echo "PASS: $(basename "$deb") ($(stat -c %s "$deb") bytes)"
