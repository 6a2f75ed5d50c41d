#!/usr/bin/env bash
# False-alarm and detection rates of `infermeter compare` (issue "Verdicts
# you can trust 3 of 3"; docs/statistics.md "The verdict"):
#
#   nice -n 10 bench/compare_noise.sh BUILD/infermeter [OUTDIR]
#
# Against the built-in server at time scale SCALE (default 2), pair by pair
# (PAIRS: default 20), it makes 6 independent runs of one configuration and
# then 3 of the server 20 % slower (time scale SCALE / 1.2), each run with
# its own seed, cache salt and start offset (`run --repeat`; the two
# configurations interleaved in time, so the host's load falls on both),
# and groups them into disjoint `--repeat 3` sets:
#   same:  set A_i against set A'_i   (one configuration), i = 1..PAIRS
#   slow:  set A_i against set S_i    (the server 20 % slower)
# and compares every pair with `infermeter compare --json`. Printed: how
# many "same" pairs called any change (improved or regressed) with the
# figures that did, and how many "slow" pairs called "regressed"; the
# targets of the issue are "no change" in >= 19 of 20 same pairs and
# "regressed" in 20 of 20 slow pairs. COMPARE_ONLY=1 reuses OUTDIR's runs
# (e.g. to judge them again after a change to compare's rule).
# Environment: PAIRS, SCALE, RUN_ARGS (the configuration; default: closed
# loop of 4, 48 requests after 4 warm-up, 64-token prompts, 16 tokens out).
# About 3 s a run at SCALE 2: PAIRS=20 (180 runs) takes some 10 minutes.
# Run it niced, on a machine as quiet as you can get: the verdicts judge
# the runs' spread, and a busy host's stalls are spread.
set -euo pipefail
IM=$(readlink -f "${1:?usage: bench/compare_noise.sh BUILD/infermeter [OUTDIR]}")
OUT=${2:-$(mktemp -d /tmp/im-cmpnoise.XXXXXX)}
mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
PAIRS=${PAIRS:-20}
SCALE=${SCALE:-2}
RUN_ARGS=${RUN_ARGS:-"--concurrency 4 --requests 48 --warmup 4 --input-len 64 --output-len 16 --ignore-eos --slo tpot=50ms"}
SPID=
trap '[ -n "$SPID" ] && kill $SPID 2>/dev/null; true' EXIT

serve() { # serve SCALE: sets BASE, SPID
  [ -n "$SPID" ] && { kill $SPID 2>/dev/null || true; wait $SPID 2>/dev/null || true; }
  rm -f "$OUT/fifo"
  mkfifo "$OUT/fifo"
  "$IM" serve --port 0 --time-scale "$1" >"$OUT/fifo" 2>"$OUT/serve.err" &
  SPID=$!
  exec 3<"$OUT/fifo"
  local line
  read -r -t 20 line <&3 || { echo "compare_noise: the server did not start" >&2; exit 1; }
  BASE="http://127.0.0.1:${line##*:}"
}

# runs NAME COUNT SEED: COUNT independent runs in OUT/NAME/run-1 ..
runs() {
  # shellcheck disable=SC2086
  "$IM" run --no-progress --quiet --repeat "$2" --cooldown 0s $RUN_ARGS --seed "$3" \
    --tag suite=compare_noise --url "$BASE" --out "$OUT/$1" >/dev/null 2>&1 || true
}

# Pair by pair, the two configurations interleaved in time: whatever the
# host does during the campaign falls on both alike.
if [ -z "${COMPARE_ONLY:-}" ]; then
  SLOW=$(awk -v s="$SCALE" 'BEGIN { printf "%.6f", s / 1.2 }')
  for ((i = 0; i < PAIRS; i++)); do
    serve "$SCALE"
    runs "A.$i" 6 "1$i"
    serve "$SLOW"
    runs "S.$i" 3 "2$i"
  done
  kill $SPID 2>/dev/null || true
  wait $SPID 2>/dev/null || true
  SPID=
fi

# The runs of NAME.I, in order, as absolute paths.
list() { for d in "$OUT/$1"/run-*; do [ -f "$d/results.json" ] && echo "$d"; done | sort -V; }
# set NAME I RUNS...: OUT/sets/NAME-I with run-1..run-3 linked to the runs.
mkset() {
  local d="$OUT/sets/$1-$2"
  shift 2
  rm -rf "$d"
  mkdir -p "$d"
  local k=1
  for r in "$@"; do
    ln -s "$r" "$d/run-$k"
    k=$((k + 1))
  done
  echo "$d"
}
same_fp=0 same_n=0 slow_tp=0 slow_n=0
: >"$OUT/same.txt"
: >"$OUT/slow.txt"
for ((i = 0; i < PAIRS; i++)); do
  mapfile -t A < <(list "A.$i")
  mapfile -t S < <(list "S.$i")
  [ ${#A[@]} -ge 6 ] || { echo "pair $i: only ${#A[@]} of 6 runs of A" >&2; continue; }
  a=$(mkset A "$i" "${A[@]:0:3}")
  b=$(mkset B "$i" "${A[@]:3:3}")
  "$IM" compare "$a" "$b" --json --no-history >"$OUT/sets/same-$i.json" 2>/dev/null || true
  changed=$(jq -r '[.stages[].figures | to_entries[] | select(.value.verdict == "improved" or .value.verdict == "regressed") | "\(.key) \(.value.verdict) p_holm=\(.value.p_holm)"] | join("; ")' "$OUT/sets/same-$i.json")
  same_n=$((same_n + 1))
  [ -n "$changed" ] && same_fp=$((same_fp + 1))
  echo "pair $i: ${changed:-no change}" >>"$OUT/same.txt"
  if [ ${#S[@]} -ge 3 ]; then
    s=$(mkset S "$i" "${S[@]:0:3}")
    "$IM" compare "$a" "$s" --json --no-history >"$OUT/sets/slow-$i.json" 2>/dev/null || true
    reg=$(jq -r '[.stages[].figures | to_entries[] | select(.value.verdict == "regressed") | .key] | join(",")' "$OUT/sets/slow-$i.json")
    slow_n=$((slow_n + 1))
    [ -n "$reg" ] && slow_tp=$((slow_tp + 1))
    echo "pair $i: ${reg:-NOT regressed}" >>"$OUT/slow.txt"
  fi
done
echo "same configuration: $((same_n - same_fp)) of $same_n pairs 'no change' (false alarms: $same_fp)"
echo "20 % slower server: $slow_tp of $slow_n pairs 'regressed'"
echo "per pair: $OUT/same.txt, $OUT/slow.txt; the sets and compare's JSON in $OUT/sets"
