#!/usr/bin/env bash
# A run directory of N requests made from a real one, for timing what
# happens after a run (issue "At the physical limit", target 4):
#
#   bench/gen_rundir.sh SEED_DIR N OUT_DIR
#
# SEED_DIR is the directory of a finished `infermeter run` (its manifest,
# stages and series are copied as they are). OUT_DIR/requests.jsonl holds N
# records: the seed's records over and over, each copy with its ids moved
# past the previous copy's (id, logical_id and request_id stay unique); the
# times are the seed's, so the copies overlap in time like N/seed
# concurrent runs of the same load. The analysis does the same work per
# record as for a real run of N requests (every record is read, checked and
# counted), which is what the figure measures; its figures describe the
# copies, not a real run. Then time it:
#
#   /usr/bin/time -v build/infermeter report OUT_DIR
#
# Size: about 900 bytes a record for short answers (1M records: 0.9 GB,
# 10M: 9 GB of disk).
set -euo pipefail
SEED=${1:?usage: bench/gen_rundir.sh SEED_DIR N OUT_DIR}
N=${2:?usage: bench/gen_rundir.sh SEED_DIR N OUT_DIR}
OUT=${3:?usage: bench/gen_rundir.sh SEED_DIR N OUT_DIR}
[ -s "$SEED/requests.jsonl" ] || { echo "gen_rundir: no $SEED/requests.jsonl" >&2; exit 1; }
mkdir -p "$OUT"
for f in manifest.json stages.jsonl series.jsonl scrapes.prom; do
  [ -e "$SEED/$f" ] && cp "$SEED/$f" "$OUT/$f"
done
rm -f "$OUT/results.json" "$OUT/report.html"
# The largest id of the seed: the stride between copies.
STRIDE=$(awk -F'[:,]' '{ if ($2 + 0 > m) m = $2 + 0 } END { print m + 1 }' "$SEED/requests.jsonl")
# The seed is read whole (a real run: a few thousand lines), then written
# over and over until N records.
perl -e '
  my ($n, $stride) = @ARGV[0, 1];
  open(my $in, "<", $ARGV[2]) or die "gen_rundir: $ARGV[2]: $!\n";
  my @seed = grep { /^\{"id":\d+,"logical_id":\d+,/ } <$in>;
  die "gen_rundir: no records in the seed\n" unless @seed;
  my $written = 0;
  for (my $k = 0; $written < $n; $k++) {
    my $off = $k * $stride;
    for my $s (@seed) {
      last if $written >= $n;
      my $l = $s;
      $l =~ s/^\{"id":(\d+),"logical_id":(\d+),/"{\"id\":" . ($1 + $off) . ",\"logical_id\":" . ($2 + $off) . ","/e;
      my $id = $1 + $off;
      $l =~ s/"request_id":"[^"]*"/"request_id":"gen-$id"/;
      print $l;
      $written++;
    }
  }' "$N" "$STRIDE" "$SEED/requests.jsonl" >"$OUT/requests.jsonl"
echo "gen_rundir: $OUT/requests.jsonl: $(wc -l <"$OUT/requests.jsonl") records, $(du -h "$OUT/requests.jsonl" | cut -f1)"
