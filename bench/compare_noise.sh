#!/usr/bin/env bash
# False-alarm and detection rates of `infermeter compare` (issue "Verdicts
# you can trust 3 of 3"; docs/statistics.md "The verdict"):
#
#   nice -n 10 bench/compare_noise.sh BUILD/infermeter [OUTDIR]
#
# Against the built-in server at time scale SCALE (default 4), it makes
# 3 * (2 * PAIRS) independent runs of one configuration (PAIRS: default 20)
# and 3 * PAIRS runs of the server 20 % slower (time scale SCALE / 1.2),
# each run with its own seed, cache salt and start offset (`run --repeat`),
# then regroups them into disjoint `--repeat 3` sets:
#   same:  set A_i against set A'_i   (one configuration), i = 1..PAIRS
#   slow:  set A_i against set S_i    (the server 20 % slower)
# and compares every pair with `infermeter compare --json`. Printed: how
# many "same" pairs called any change (improved or regressed) with the
# figures that did, and how many "slow" pairs called "regressed"; the
# targets of the issue are "no change" in >= 19 of 20 same pairs and
# "regressed" in 20 of 20 slow pairs. COMPARE_ONLY=1 reuses OUTDIR's runs
# (e.g. to judge them again after a change to compare's rule).
# Environment: PAIRS, SCALE, RUN_ARGS (the configuration; default: closed
# loop of 2, 20 requests after 2 warm-up, 64-token prompts, 16 tokens out).
# About 10 s a set of 3 runs: PAIRS=20 takes some 10 minutes. Run it niced.
set -euo pipefail
IM=$(readlink -f "${1:?usage: bench/compare_noise.sh BUILD/infermeter [OUTDIR]}")
OUT=${2:-$(mktemp -d /tmp/im-cmpnoise.XXXXXX)}
mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
PAIRS=${PAIRS:-20}
SCALE=${SCALE:-4}
RUN_ARGS=${RUN_ARGS:-"--concurrency 2 --requests 20 --warmup 2 --input-len 64 --output-len 16 --ignore-eos --slo tpot=50ms"}
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
  local left=$2 part=0
  while [ "$left" -gt 0 ]; do
    local k=$((left > 90 ? 90 : left))
    part=$((part + 1))
    # shellcheck disable=SC2086
    "$IM" run --no-progress --quiet --repeat "$k" --cooldown 0s $RUN_ARGS --seed "$3$part" \
      --tag suite=compare_noise --url "$BASE" --out "$OUT/$1.$part" >/dev/null 2>&1 || true
    left=$((left - k))
  done
}

if [ -z "${COMPARE_ONLY:-}" ]; then
  serve "$SCALE"
  runs A $((6 * PAIRS)) 11
  serve "$(awk -v s="$SCALE" 'BEGIN { printf "%.6f", s / 1.2 }')"
  runs S $((3 * PAIRS)) 22
  kill $SPID 2>/dev/null || true
  wait $SPID 2>/dev/null || true
  SPID=
fi

# Every run of NAME (all parts, in order), as absolute paths.
list() { for d in "$OUT/$1".*/run-*; do [ -f "$d/results.json" ] && echo "$d"; done | sort -V; }
mapfile -t A < <(list A)
mapfile -t S < <(list S)
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
  [ $((6 * i + 5)) -lt ${#A[@]} ] || break
  a=$(mkset A "$i" "${A[@]:$((6 * i)):3}")
  b=$(mkset B "$i" "${A[@]:$((6 * i + 3)):3}")
  "$IM" compare "$a" "$b" --json --no-history >"$OUT/sets/same-$i.json" 2>/dev/null || true
  changed=$(jq -r '[.stages[].figures | to_entries[] | select(.value.verdict == "improved" or .value.verdict == "regressed") | "\(.key) \(.value.verdict) p_holm=\(.value.p_holm)"] | join("; ")' "$OUT/sets/same-$i.json")
  same_n=$((same_n + 1))
  [ -n "$changed" ] && same_fp=$((same_fp + 1))
  echo "pair $i: ${changed:-no change}" >>"$OUT/same.txt"
  if [ $((3 * i + 2)) -lt ${#S[@]} ]; then
    s=$(mkset S "$i" "${S[@]:$((3 * i)):3}")
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
