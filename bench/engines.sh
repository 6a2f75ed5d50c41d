#!/usr/bin/env bash
# Engine-aware judgement (issue 29): the rates of the audit's server_config
# and cancelled_freed checks against `infermeter serve --engine E`.
#   server_config, false alarms: FAIL against an engine that declares its
#     critical settings (llama.cpp with /props, SGLang with
#     /get_server_info): should be 0 of N.
#   server_config, detection: FAIL against a silent engine (--declare none,
#     no scrape: unidentified, the generic list) and against vLLM without a
#     torch_compile tag: should be N of N.
#   cancelled_freed, false alarms: WARN against the built-in server, which
#     frees every cancelled request (--cancel-after 20t:0.5): should be 0.
#   cancelled_freed, detection: WARN against serve --leak-cancelled, which
#     keeps each request whose client left counted as running (one server
#     for the N runs: each run's own leaks raise its last settled scrape
#     above its first): should be N of N.
#
#   bench/engines.sh BUILD/infermeter [N=5]
#   ONLY='cancel-*' bench/engines.sh BUILD/infermeter 10   # the rows named so
#
# Needs jq. About N x 7 x 4 s. Prints one row per case; runs stay under
# $OUT (default a temporary directory).
set -u
BIN=$(readlink -f "${1:?usage: bench/engines.sh BUILD/infermeter [N]}")
N=${2:-5}
OUT=${OUT:-$(mktemp -d /tmp/im-engines.XXXXXX)}
mkdir -p "$OUT"
export XDG_DATA_HOME="$OUT/xdg"

SPID=
start() {
  rm -f "$OUT/fifo"
  mkfifo "$OUT/fifo"
  "$BIN" serve --port 0 --time-scale 20 "$@" >"$OUT/fifo" 2>"$OUT/serve.err" &
  SPID=$!
  local line=
  read -r -t 20 line <"$OUT/fifo" || { echo "serve did not start: $(cat "$OUT/serve.err")" >&2; exit 1; }
  BASE="http://127.0.0.1:${line##*:}"
}
stop() { kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; }

# status DIR CHECK: the check's status in DIR/results.json ("absent" when none).
status() { jq -r "[.. | objects | select(.id? == \"$2\")][0].status // \"absent\"" "$1/results.json" 2>/dev/null; }

# row NAME CHECK WANT SERVE-ARGS -- RUN-ARGS: N runs, counting WANT.
row() {
  local name=$1 chk=$2 want=$3
  # shellcheck disable=SC2254 # ONLY is a pattern
  case $name in ${ONLY:-*}) ;; *) return ;; esac
  shift 3
  local sargs=() rargs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
  shift
  rargs=("$@")
  start "${sargs[@]}"
  local hit=0 k
  for k in $(seq 1 "$N"); do
    local d="$OUT/$name-$k"
    "$BIN" run --no-progress --quiet --no-history --url "$BASE" --requests 12 --rate 20 \
      "${rargs[@]}" --out "$d" >/dev/null 2>&1
    [ "$(status "$d" "$chk")" = "$want" ] && hit=$((hit + 1))
  done
  stop
  printf '| %s | %s | %s | %d of %d |\n' "$name" "$chk" "$want" "$hit" "$N"
}

echo "| case | check | counted | runs |"
echo "|---|---|---|---|"
row llamacpp-props server_config FAIL --engine llamacpp -- --scrape-interval 200ms
row sglang-declared server_config FAIL --engine sglang --
row silent-unidentified server_config FAIL --engine llamacpp --declare none -- --no-scrape
row vllm-untagged server_config FAIL --engine vllm --
row tgi-untagged server_config FAIL --engine tgi --
row cancel-freed cancelled_freed WARN -- --input-len 200 --output-len 200 --cancel-after 20t:0.5 \
  --scrape-interval 200ms
row cancel-leaked cancelled_freed WARN --leak-cancelled -- --input-len 200 --output-len 200 \
  --cancel-after 20t:0.5 --scrape-interval 200ms
