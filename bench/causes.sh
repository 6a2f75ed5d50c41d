#!/usr/bin/env bash
# Attribution of root causes (docs/audit.md "Root causes"; issue "Verdicts
# you can trust 2 of 3"): each problem planted in `infermeter serve`, one at
# a time, at two settings (time scale, rate, lengths), N repetitions each,
# optionally on a jittery host (bench/jitter.c); what each run named. A
# clean run of the same load (the same server without the fault) is
# repeated as often and should name nothing.
#
#   bench/causes.sh BUILD/infermeter [N=10] [PLANTS="hiccup kv queue topp churn temp"]
#   JITTER=3/50 bench/causes.sh ...   (burst/period ms of bench/jitter.c; needs root)
#
# Setting A of each plant is tests/e2e/test_causes.sh's; setting B changes
# the time scale, the rate and the lengths, its limit derived from one
# calibration run of the clean load (1.25 x its largest value of the SLO's
# figure, so the clean load meets it). Prints one row per plant, setting
# and load (planted or clean): the runs, how many named exactly the
# planted cause and nothing else (for clean: nothing), and the tally of
# what was named. The runs stay under $OUT.
set -u
BIN=$(readlink -f "${1:?usage: bench/causes.sh BUILD/infermeter [N] [PLANTS]}")
N=${2:-10}
PLANTS=${3:-"hiccup kv queue topp churn temp"}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$(mktemp -d /tmp/im-causes.XXXXXX)}
mkdir -p "$OUT"
JITTER=${JITTER:-}
jpid=
if [ -n "$JITTER" ]; then
  cc -O2 -std=c17 -D_GNU_SOURCE -o "$OUT/jitter" "$HERE/jitter.c" || exit 1
  "$OUT/jitter" "${JITTER%/*}" "${JITTER#*/}" 2>"$OUT/jitter.err" & jpid=$!
fi
SPID=
cleanup() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null; [ -n "$jpid" ] && kill "$jpid" 2>/dev/null; }
trap cleanup EXIT

# serve ARGS...: starts the built-in server on a free port; sets BASE.
serve() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  rm -f "$OUT/fifo"; mkfifo "$OUT/fifo"
  "$BIN" serve --port 0 --no-moe-routing "$@" >"$OUT/fifo" 2>>"$OUT/server.err" & SPID=$!
  exec 3<"$OUT/fifo"
  local line=; read -r -t 20 line <&3 || { echo "server did not start" >&2; exit 1; }
  exec 3<&-
  BASE="http://127.0.0.1:${line##*:}"
}

run() { # run DIR ARGS...
  "$BIN" run --no-progress --quiet --no-gpu --warmup 0s --scrape-interval 200ms --input-len 64 \
    --url "$BASE" --out "$@" >"$1.log" 2>&1
}

# The plants: NAME SETTING WANT "SERVE ARGS (clean)" "FAULT ARGS" "LOAD ARGS" SLO-KIND LIMIT
# (LIMIT "auto": 1.25 x the clean calibration run's largest value; "p90":
# its 90th percentile, for a plant that lengthens a tail the clean load has).
plants() {
  cat <<'EOF'
hiccup A server_stall|--time-scale 2|--fault hiccup@every=4s,ms=2000|--rate 10 --duration 4s --grace 10s --output-len 200 --ignore-eos|e2el|2500ms
hiccup B server_stall|--time-scale 4|--fault hiccup@every=6s,ms=3000|--rate 10 --duration 6s --grace 60s --output-len 300 --ignore-eos|e2el|auto
kv A kv_pressure|--time-scale 2 --kv-blocks 200|--fault kv-shrink@at=13s,fraction=0.05|--rate 10 --duration 7s --grace 30s --output-len 200 --ignore-eos|tpot|14ms
kv B kv_pressure|--time-scale 4 --kv-blocks 120|--fault kv-shrink@at=10s,fraction=0.1|--rate 16 --duration 5s --grace 30s --output-len 150 --ignore-eos|tpot|auto
queue A queueing|--time-scale 2|--max-num-seqs 2|--rate 10 --duration 4s --grace 20s --output-len 40 --ignore-eos|ttft|1s
queue B queueing|--time-scale 4|--max-num-seqs 3|--rate 20 --duration 4s --grace 20s --output-len 60 --ignore-eos|ttft|auto
topp A top_p_collapse|--time-scale 8||--rate 3 --duration 6s --grace 60s --output-len 3000 --temperature 0.3 --top-p 0.45|e2el|4500ms
topp B top_p_collapse|--time-scale 16||--rate 5 --duration 5s --grace 60s --output-len 2000 --temperature 0.3 --top-p 0.4|e2el|auto
churn A connection_churn|--time-scale 4|--fault connection-close:0.5@ms=40|--rate 20 --duration 5s --grace 10s --output-len 20 --ignore-eos|ttft|12ms
churn B connection_churn|--time-scale 2|--fault connection-close:0.3@ms=80|--rate 12 --duration 6s --grace 10s --output-len 30 --ignore-eos|ttft|auto
temp A temperature_overload|--time-scale 8||--rate 10 --duration 16s --grace 30s --output-len 3000 --perturb --temperature 1.5 --logprobs 5|e2el|4s
temp B temperature_overload|--time-scale 12||--rate 12 --duration 14s --grace 30s --output-len 3000 --perturb --temperature 1.2 --logprobs 5|e2el|p90
EOF
}

# The clean load of topp is the same at --top-p 0.95; of temp without --perturb.
clean_load() {
  case $1 in
    topp) sed -e 's/--top-p [0-9.]*/--top-p 0.95/' <<<"$2" ;;
    temp) sed -e 's/--perturb //' <<<"$2" ;;
    *) echo "$2" ;;
  esac
}

# named DIR: the causes named, sorted, comma-separated ("-" for none).
named() {
  local c
  c=$(jq -r '[.analysis.root_causes[].cause] | unique | join(",")' "$1/results.json" 2>/dev/null) ||
    c="?"
  echo "${c:--}"
}

printf '%-7s %-3s %-6s %4s %5s  %s\n' plant set load runs right "named (count)"
plants | while IFS='|' read -r head sargs fault load kind limit; do
  read -r name set want <<<"$head"
  case " $PLANTS " in *" $name "*) ;; *) continue ;; esac
  cload=$(clean_load "$name" "$load")
  d="$OUT/$name-$set"
  mkdir -p "$d"
  # shellcheck disable=SC2086
  if [ "$limit" = auto ] || [ "$limit" = p90 ]; then
    how=$([ "$limit" = p90 ] && echo '.[(length * 0.9 | floor)]' || echo '.[-1] * 1.25')
    serve $sargs
    run "$d/calib" $cload --slo ttft=600s
    limit=$(jq -rs --arg k "$kind" 'map(select(.kind == "measured" and .error == null))
        | map(if $k == "ttft" then (.t_first - .t_start) / 1e6
              elif $k == "e2el" then (.t_last - .t_start) / 1e6
              else ((.t_last - .t_first) / 1e6 / ((.output_tokens // 2) - 1)) end)
        | sort | '"$how"' | . * 1000 | round / 1000 | tostring + "ms"' "$d/calib/requests.jsonl")
    echo "$name $set: limit $limit from the calibration run" >> "$OUT/limits.txt"
  fi
  slo="$kind=$limit"
  [ "$kind" != ttft ] && slo="$slo,ttft=600s"
  for which in planted clean; do
    : > "$d/$which.txt"
    # shellcheck disable=SC2086
    if [ $which = planted ]; then serve $sargs $fault; else serve $sargs; fi
    for i in $(seq 1 "$N"); do
      # shellcheck disable=SC2086
      if [ $which = planted ]; then run "$d/$which-$i" $load --slo "$slo"
      else run "$d/$which-$i" $cload --slo "$slo"; fi
      named "$d/$which-$i" >> "$d/$which.txt"
    done
    # Clean: nothing named ("unexplained" names nothing: a violation of
    # the clean load that no rule explains).
    good=$([ $which = planted ] && echo "$want" || echo '-\|unexplained')
    right=$(grep -cx -- "$good" "$d/$which.txt")
    printf '%-7s %-3s %-6s %4d %5d  %s\n' "$name" "$set" "$which" "$N" "$right" \
      "$(sort "$d/$which.txt" | uniq -c | awk '{printf "%s(%s) ", $2, $1}')"
  done
done
echo "runs: $OUT (limits: $OUT/limits.txt)"
