#!/usr/bin/env bash
# The HTML report of a 10,000-request run stays under 2 MB (its size is
# bounded by the histograms' resolution and the time slices, not by the
# number of requests). Label timing: it loads this machine for ~30 s.
. "$(dirname "$0")/lib.sh"
start_server --time-scale 50
"$BIN" run --url "$BASE" --no-progress --quiet --no-gpu --rate 400 --duration 25s --warmup 0s \
  --input-len 32 --output-len 4 --ignore-eos --out "$TMP/big"
n=$(jq '[.metrics.kinds[].count] | add' "$TMP/big/results.json")
check_ge "about 10,000 requests sent" "$n" 9500
size=$(stat -c %s "$TMP/big/report.html")
echo "report.html of $n requests: $size bytes"
check "under 2 MB" test "$size" -lt 2000000
finish
