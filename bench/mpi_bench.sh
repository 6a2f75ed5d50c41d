#!/usr/bin/env bash
# Aggregate recorded tokens/s of `infermeter run` with 1 process and with
# `mpirun -np 2` against one `infermeter serve` on loopback, and what the
# merge at rank 0 costs (docs/distributed.md). On a 2-core machine the
# figures show the overhead of splitting, not scaling: the server and both
# ranks share the cores.
#
#   bench/mpi_bench.sh build/infermeter [SECONDS=10] [CONCURRENCY=64]
#
# Environment: SCALE (serve --time-scale, default 50), OUTPUT_LEN (256).
set -u
BIN=${1:?usage: bench/mpi_bench.sh PATH/TO/infermeter [SECONDS] [CONCURRENCY]}
SECS=${2:-10}
CONC=${3:-64}
SCALE=${SCALE:-50}
OUTLEN=${OUTPUT_LEN:-256}
command -v jq >/dev/null || { echo "needs jq" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "needs mpirun (openmpi-bin)" >&2; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/infermeter-mpibench.XXXXXX")
export XDG_DATA_HOME=$TMP/xdg OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader
mkfifo "$TMP/fifo"
"$BIN" serve --port 0 --time-scale "$SCALE" --max-num-seqs 1024 >"$TMP/fifo" 2>"$TMP/serve.err" &
SP=$!
trap 'kill $SP 2>/dev/null; wait $SP 2>/dev/null; rm -rf "$TMP"' EXIT
exec 3<"$TMP/fifo"
read -r -t 20 line <&3 || { echo "serve did not start" >&2; exit 1; }
URL="http://127.0.0.1:${line##*:}"
COMMON=(--url "$URL" --concurrency "$CONC" --duration "${SECS}s" --warmup 1s --input-len 128
        --output-len "$OUTLEN" --ignore-eos --seed 3 --yes --quiet --no-progress)
row() { # DIR LABEL
  jq -r --arg l "$2" '[$l, .metrics.counts.completed, (.summary.output_throughput | floor),
    .audit.client_check.verdict] | @tsv' "$1/results.json"
}
printf 'ranks\tcompleted\trecorded_tok_per_s\tself_check\n'
"$BIN" run "${COMMON[@]}" --out "$TMP/r1" >/dev/null 2>&1
row "$TMP/r1" 1
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$BIN" run "${COMMON[@]}" \
  --out "$TMP/r2" >/dev/null 2>&1
row "$TMP/r2" 2
for r in 0 1; do row "$TMP/r2/rank-$r" "2 (rank $r)"; done
# The merge at rank 0, again, timed: records streamed, bytes per record.
recs=$(wc -l <"$TMP/r2/requests.jsonl")
bytes=$(cat "$TMP/r2/rank-0/requests.jsonl" "$TMP/r2/rank-1/requests.jsonl" | wc -c)
t0=$(date +%s%N)
"$BIN" merge "$TMP/r2/rank-0" "$TMP/r2/rank-1" --out "$TMP/m" --quiet --no-html >/dev/null 2>&1
t1=$(date +%s%N)
echo
printf 'merge: %d records, %d bytes (%d bytes/record), %.3f s including the report (%.0f records/s)\n' \
  "$recs" "$bytes" $((bytes / (recs ? recs : 1))) "$(echo "($t1 - $t0) / 1000000000" | bc -l)" \
  "$(echo "$recs / (($t1 - $t0) / 1000000000)" | bc -l)"
echo "clock offsets: $(jq -c '[.manifest.merged.shards[] | {index, clock_offset_ns, clock_rtt_ns}]' "$TMP/r2/results.json")"
