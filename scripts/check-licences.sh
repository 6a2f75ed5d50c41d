#!/usr/bin/env bash
# Lists the shared libraries a binary loads (as `ldd` shows them), the Debian
# package each comes from and the licence of the library itself, read from
# /usr/share/doc/<package>/copyright; fails when one of them is GPL without a
# linking exception. See docs/licences.md.
#
#   scripts/check-licences.sh BINARY
#
# How the licence of a library is decided, in this order:
#  1. A reviewed entry in the table below, for packages whose copyright file
#     is not machine-readable or names a licence in its "Files: *" stanza
#     that is not the library's own (glibc, GCC's runtime, GnuTLS, ...).
#     Each entry carries a phrase that must still appear in the package's
#     copyright file (whitespace-insensitive); if it no longer does, the
#     entry is ignored and rule 2 applies, so the table cannot go stale
#     silently.
#  2. A machine-readable (DEP-5) copyright file: the License of its
#     "Files: *" stanza.
#  3. Otherwise the licence is unknown.
# Verdicts: ok (permissive, LGPL, or GPL with a runtime/linking exception, or
# a choice of licences of which one is acceptable), GPL, unknown.
#
# Exit status: 0 no GPL library and every licence known; 1 at least one
# library is GPL without a linking exception; 2 usage error, or a library
# whose licence could not be determined (not found, not from a Debian
# package, no copyright file, licence not recognised).
set -euo pipefail

if [ $# -ne 1 ] || [ ! -e "$1" ]; then
  echo "usage: $0 BINARY" >&2
  exit 2
fi
bin=$1
for tool in ldd dpkg-query; do
  command -v "$tool" >/dev/null 2>&1 || { echo "check-licences: '$tool' not found" >&2; exit 2; }
done

# Reviewed entries, fields separated by " ~~ ": package (ERE, whole name),
# licence of the library, phrase that must appear in the copyright file (ERE,
# matched against the file with runs of whitespace squeezed to one space).
reviewed=(
  # GNU C Library (libc, libm, libresolv, libdl, libpthread, ld.so); the
  # GPL in the same file covers the utilities, not the library.
  '^libc6$ ~~ LGPL-2.1+ ~~ The GNU C Library is free software; you can redistribute it and/or modify it under the terms of the GNU Lesser General Public License'
  # GCC's runtime libraries: GPL-3+ with the GCC Runtime Library Exception.
  '^(libgcc-s1|libstdc\+\+6|libatomic1|libgomp1|libquadmath0)$ ~~ GPL-3+ WITH GCC-exception-3.1 ~~ GCC RUNTIME LIBRARY EXCEPTION'
  '^libgnutls30$ ~~ LGPL-2.1+ ~~ The main library is licensed under GNU Lesser General Public License \(LGPL\) version 2\.1\+'
  '^libtasn1-6$ ~~ LGPL-2.1+ ~~ The library itself is licensed as LGPLv2\.1\+'
  '^librtmp1$ ~~ LGPL-2.1+ ~~ License of the librtmp library .{0,400}GNU Lesser General Public License'
  # The library sources are the *.c/*.h stanza; "Files: *" (GPL-3+) covers
  # the rest of the tree.
  '^libidn2-0$ ~~ LGPL-3+ or GPL-2+ ~~ Files: \*\.c \*\.h Copyright: .{0,200} License: LGPL-3\+ or GPL-2\+'
  '^libkeyutils1$ ~~ LGPL-2+ ~~ Files: keyutils\.\* Copyright: .{0,200} License: LGPL-2\+'
  # com_err comes from e2fsprogs' lib/et, under MIT's SIPB permission
  # notice; Debian's file lists the whole e2fsprogs tree as "Files: *
  # GPL-2" without a stanza for lib/et (upstream e2fsprogs states lib/et
  # and lib/ss are MIT-style).
  '^libcom-err2$ ~~ MIT-style (MIT SIPB), e2fsprogs lib/et ~~ Upstream-Name: e2fsprogs'
  # liburing (serve --io uring): MIT; the file is DEP-5 but puts the Files
  # value on a continuation line, which the stanza reader does not follow.
  '^liburing2$ ~~ MIT ~~ Files: \* Copyright: Copyright .{1,3} 2019-2022 Jens Axboe <axboe@kernel\.dk> License: MIT'
  # MIT Kerberos: BSD-style licence.
  '^(libgssapi-krb5-2|libkrb5-3|libk5crypto3|libkrb5support0)$ ~~ MIT Kerberos (BSD-style) ~~ by the Massachusetts Institute of Technology\. All rights reserved\. Redistribution and use in source and binary forms'
  # Open MPI (-DINFERMETER_MPI): its own code BSD-3-clause; bundled pieces
  # (ptmalloc2, libltdl) LGPL. hwloc, which it links: BSD-3-clause.
  '^libopenmpi3$ ~~ BSD-3-clause (Open MPI) and LGPL-2.1+ (ptmalloc2, libltdl) ~~ Copyright \(c\) 2010 ARM ltd\. All rights reserved\. License: Redistribution and use in source and binary forms'
  '^libhwloc15$ ~~ BSD-3-clause ~~ Cisco Systems, Inc\. All rights reserved\. License: Redistribution and use in source and binary forms'
)

# Verdict for a licence expression: ok, gpl or unknown. "A or B": ok when
# one alternative is ok; "A and B": every part must be ok.
classify() {
  local expr any_gpl=0 alt part alt_ok
  expr=$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]')
  local -a alts parts
  mapfile -t alts < <(printf '%s\n' "$expr" | sed 's/ or /\n/g')
  for alt in "${alts[@]}"; do
    alt_ok=1
    mapfile -t parts < <(printf '%s\n' "$alt" | sed 's/ and /\n/g')
    for part in "${parts[@]}"; do
      if [[ $part =~ lgpl|lesser|library\ general ]]; then
        :
      elif [[ $part =~ gpl|general\ public ]]; then
        if [[ $part =~ (runtime|linking|link|classpath|gcc).*exception|exception-3\.1 ]]; then
          :
        else
          any_gpl=1
          alt_ok=0
        fi
      elif [[ $part =~ expat|mit|x11|bsd|isc|zlib|apache|curl|openldap|public.?domain|psf|unicode|bsl|boost|mpl|cc0|openssl|ssleay|artistic|permissive ]] ||
        [[ $part =~ ^[[:space:]]*pd[[:space:]]*$ ]]; then
        :
      else
        alt_ok=0
      fi
    done
    if [ $alt_ok = 1 ]; then
      echo ok
      return
    fi
  done
  if [ $any_gpl = 1 ]; then echo gpl; else echo unknown; fi
}

# The Debian package that ships a library file (usrmerge: the file may be
# registered under /lib or /usr/lib, and ldd may print either).
# Read from dpkg's file lists directly, all candidates in one grep: one
# `dpkg-query -S` per candidate re-reads the whole database and made this
# check take minutes on a busy 2-core host.
package_of() {
  local p cand real
  local -a pats=()
  real=$(readlink -f "$1" 2>/dev/null || echo "$1")
  for cand in "$1" "$real" "${1/#\/usr\//\/}" "/usr$1" "${real/#\/usr\//\/}"; do
    pats+=(-e "$cand")
  done
  if [ -d /var/lib/dpkg/info ]; then
    p=$(grep -lxF "${pats[@]}" /var/lib/dpkg/info/*.list 2>/dev/null | head -n 1) || true
    if [ -n "$p" ]; then
      p=${p##*/}
      p=${p%.list}
      echo "${p%%:*}"
      return
    fi
  fi
  for cand in "$1" "$real" "${1/#\/usr\//\/}" "/usr$1" "${real/#\/usr\//\/}"; do
    p=$(dpkg-query -S "$cand" 2>/dev/null | grep -v '^diversion' | head -n 1 | sed 's/: .*//') || true
    if [ -n "$p" ]; then
      echo "${p%%:*}"
      return
    fi
  done
}

# The License field of the "Files: *" stanza of a DEP-5 copyright file.
dep5_default_licence() {
  awk '
    NR == 1 && $0 !~ /^Format:/ { exit }
    /^[[:space:]]*$/ { in_star = 0; next }
    /^Files:[[:space:]]*\*[[:space:]]*$/ { in_star = 1; next }
    in_star && /^License:/ { sub(/^License:[[:space:]]*/, ""); print; exit }
  ' "$1"
}

status=0
# 1 (GPL found) takes precedence over 2 (undetermined).
undetermined() { [ "$status" = 1 ] || status=2; }
rows=()
add_row() { rows+=("$1"$'\t'"$2"$'\t'"$3"$'\t'"$4"$'\t'"$5"); }

ldd_out=$(ldd "$bin" 2>&1) || { echo "check-licences: ldd failed: $ldd_out" >&2; exit 2; }
if grep -q 'not a dynamic executable\|statically linked' <<<"$ldd_out"; then
  echo "check-licences: $bin is not dynamically linked; nothing to check" >&2
  exit 0
fi

while read -r line; do
  [ -z "$line" ] && continue
  name=${line%% *}
  path=
  if [[ $line == *" => not found"* ]]; then
    add_row "$name" "-" "-" "not found" "unknown"
    undetermined
    continue
  elif [[ $line == *" => "* ]]; then
    path=$(sed 's/.* => \([^ ]*\).*/\1/' <<<"$line")
  elif [[ $name == /* ]]; then
    path=$name
  fi
  if [ -z "$path" ]; then
    # linux-vdso.so.1 and the like: mapped in by the kernel, no file.
    add_row "$name" "(kernel)" "GPL-2.0 WITH Linux-syscall-note" "kernel interface" "ok"
    continue
  fi
  pkg=$(package_of "$path")
  if [ -z "$pkg" ]; then
    add_row "$name" "-" "-" "not from a Debian package: $path" "unknown"
    undetermined
    continue
  fi
  copyright=/usr/share/doc/$pkg/copyright
  if [ ! -r "$copyright" ]; then
    add_row "$name" "$pkg" "-" "no $copyright" "unknown"
    undetermined
    continue
  fi
  flat=$(tr -s '[:space:]' ' ' <"$copyright")
  lic='' basis='' verdict=''
  for entry in "${reviewed[@]}"; do
    re=${entry%% ~~ *}
    rest=${entry#* ~~ }
    elic=${rest%% ~~ *}
    evidence=${rest#* ~~ }
    if [[ $pkg =~ $re ]]; then
      if grep -Eq -- "$evidence" <<<"$flat"; then
        lic=$elic
        basis="reviewed"
        verdict=$(classify "$lic")
      else
        basis="reviewed entry no longer matches the copyright file;"
      fi
      break
    fi
  done
  if [ -z "$lic" ]; then
    dl=$(dep5_default_licence "$copyright")
    if [ -n "$dl" ]; then
      lic=$dl
      basis="${basis:+$basis }DEP-5 Files: *"
      verdict=$(classify "$lic")
    else
      lic="-"
      basis="${basis:+$basis }not machine-readable"
      verdict=unknown
    fi
  fi
  add_row "$name" "$pkg" "$lic" "$basis" "$verdict"
  case $verdict in
    gpl) status=1 ;;
    unknown) undetermined ;;
  esac
done < <(sed 's/^[[:space:]]*//' <<<"$ldd_out")

{
  printf 'LIBRARY\tPACKAGE\tLICENCE (of the library)\tBASIS\tVERDICT\n'
  printf '%s\n' "${rows[@]}"
} | if command -v column >/dev/null 2>&1; then column -t -s $'\t'; else cat; fi

case $status in
  0) echo "check-licences: OK: no GPL library among the ${#rows[@]} shared libraries of $bin" ;;
  1) echo "check-licences: FAIL: $bin loads a GPL library without a linking exception (VERDICT gpl)" >&2 ;;
  *) echo "check-licences: UNDETERMINED: the licence of some libraries of $bin could not be decided (VERDICT unknown); review them and add entries to this script's table" >&2 ;;
esac
exit "$status"
