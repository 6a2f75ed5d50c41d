#!/usr/bin/env bash
# Regenerates tests/schema/fixtures from PATH/TO/infermeter (run it when a
# key of results.json or requests.jsonl changes, then commit the result):
# a one-stage run with retries of 429s, a text/code mix, an SLO and a tag,
# and a two-stage rate sweep, both against the built-in server answering
# half of its requests with 429.
#
#   bash tests/schema/regen.sh build/infermeter
set -eu
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
FIX=$root/tests/schema/fixtures
TMP=$(mktemp -d "${TMPDIR:-/tmp}/infermeter-regen.XXXXXX")
export XDG_DATA_HOME="$TMP/xdg-data"
trap 'kill "$pid" 2>/dev/null; rm -rf "$TMP"' EXIT
mkfifo "$TMP/fifo"
"$BIN" serve --port 0 --fault '429:0.5@retry_after=0' --time-scale 20 >"$TMP/fifo" \
  2>"$TMP/serve.err" &
pid=$!
exec 3<"$TMP/fifo"
read -r -t 20 line <&3 # the first line names the port
URL=http://127.0.0.1:${line##*:}
"$BIN" run --url "$URL" --no-progress --quiet --no-history --requests 8 --rate 20 --warmup 1 \
  --retries 2 --input-len 32 --output-len 4 --ignore-eos --mix code=0.5,text=0.5 --slo ttft=500ms \
  --seed 42 --tag tp=8 --out "$TMP/one-stage" || true
"$BIN" run --url "$URL" --no-progress --quiet --no-history --sweep rate=10,20 --requests 3 \
  --warmup 0 --input-len 32 --output-len 4 --seed 42 --out "$TMP/stages" || true
for d in one-stage stages; do
  cp "$TMP/$d/results.json" "$TMP/$d/requests.jsonl" "$FIX/$d/"
done
echo "fixtures regenerated in $FIX"
