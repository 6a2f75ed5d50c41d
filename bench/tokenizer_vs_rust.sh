#!/usr/bin/env bash
# Single-thread encode throughput of our tokenizer vs the Rust Hugging Face
# tokenizers library on DeepSeek-V3's tokenizer.json, and a check that both
# give the same ids (token count and checksum).
#
#   bench/tokenizer_vs_rust.sh [WORK_DIR] [MB] [PASSES]   (defaults: build/tokbench 20 3)
#
# Text: tests/tokenizer/corpus/* concatenated and repeated to MB/2 megabytes
# (realistic words, so word caches hit), then generated mixed-script text
# (tests/tokenizer/gen_stress.js, seeds 100...) to MB megabytes (mostly
# unseen words). Both encode the same 64 KiB chunks one at a time on one CPU
# (taskset when available); load time is excluded. Needs node, npm (or the
# cache already filled), cc, pkg-config, jansson and PCRE2.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$root/build/tokbench}
mb=${2:-20}
passes=${3:-3}
mkdir -p "$work"
tj=$("$root/scripts/fetch-tokenizer.sh" "$root/build/npm-cache")
mods=$root/build/npm-cache/node_modules

text=$work/text_${mb}MB.txt
if [ ! -f "$text" ]; then
  half=$((mb * 500000))
  cat "$root"/tests/tokenizer/corpus/* >"$work/corpus.txt"
  : >"$text.tmp"
  while [ "$(stat -c %s "$text.tmp")" -lt "$half" ]; do cat "$work/corpus.txt" >>"$text.tmp"; done
  seed=100
  while [ "$(stat -c %s "$text.tmp")" -lt $((mb * 1000000)) ]; do
    rm -rf "$work/stress"
    node "$root/tests/tokenizer/gen_stress.js" "$work/stress" "$seed" 4 250000
    cat "$work"/stress/* >>"$text.tmp"
    seed=$((seed + 1))
  done
  mv "$text.tmp" "$text"
fi

cmake -S "$root" -B "$root/build" >/dev/null && cmake --build "$root/build" --target tokenizer_speed >/dev/null
cp "$root/build/bench/tokenizer_speed" "$work/tokenizer_speed"

pin=()
command -v taskset >/dev/null 2>&1 && pin=(taskset -c "$(($(nproc) - 1))")
echo "text: $text ($(stat -c %s "$text") bytes); tokenizer: $tj"
"${pin[@]}" "$work/tokenizer_speed" "$tj" --file "$text" "$passes" | tee "$work/ours.txt"
RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false \
  "${pin[@]}" node "$root/bench/tokenizer_rust.js" "$mods" "$tj" "$text" "$passes" |
  tee "$work/rust.txt"

# Same ids: token count and checksum (fields 6 and 13) of every pass equal.
ours_sig=$(awk '{print $6, $13}' "$work/ours.txt" | sort -u)
rust_sig=$(awk '{print $6, $13}' "$work/rust.txt" | sort -u)
if [ "$ours_sig" != "$rust_sig" ]; then
  echo "DIFFERENT OUTPUT: ours [$ours_sig] vs rust [$rust_sig]" >&2
  exit 1
fi
best() { awk '{ v = $8; if (v > m) m = v } END { print m }' "$1"; }
o=$(best "$work/ours.txt")
r=$(best "$work/rust.txt")
echo "same ids (tokens, checksum: $ours_sig)"
echo "best MB/s: ours $o, rust $r, ratio $(awk -v a="$o" -v b="$r" 'BEGIN { printf "%.2f", a / b }')"
