#!/usr/bin/env bash
# docs/report.png, the picture of report.html in README.md: a short run
# against the built-in server, its report.html rendered by headless
# chromium (no network: the page is self-contained). `make report-png`.
# Usage: report-png.sh BINARY OUT.png
set -euo pipefail
bin=$(realpath "${1:?usage: report-png.sh BINARY OUT.png}")
out=${2:?usage: report-png.sh BINARY OUT.png}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "report-png.sh: chromium is not installed (scripts/deps.sh test)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/infermeter-png.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
XDG_DATA_HOME="$tmp/xdg" "$bin" run --duration 20s --warmup 5s --range-ratio 0.75 --input-len 2048 \
  --seed 7 --out "$tmp/run" --no-history -q >/dev/null 2>&1 || true
[ -s "$tmp/run/report.html" ] || { echo "report-png.sh: the run wrote no report.html" >&2; exit 1; }
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,1500 \
  --screenshot="$tmp/shot.png" "file://$tmp/run/report.html" >/dev/null 2>&1
cp "$tmp/shot.png" "$out"
echo "$out"
