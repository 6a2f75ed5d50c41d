#!/usr/bin/env bash
# infermeter tokenize on the tokenizer.json fixture: counts agree with ids,
# decode(encode(text)) is the text, errors are clear.
. "$(dirname "$0")/lib.sh"
F=tests/fixtures/tokenizer/tiny_bytelevel.json
T() { "$BIN" tokenize "$@"; }
text=$'Hello world, 12345 tokens!\r\n  tabs\tand 中文 and 😀 emoji.\n'
ids=$(printf '%s' "$text" | T --tokenizer "$F" --ids)
n=$(printf '%s' "$text" | T --tokenizer "$F" --count)
check_eq "--count = number of --ids" "$n" "$(wc -w <<<"$ids" | tr -d ' ')"
check "ids are one line of numbers" grep -qE '^[0-9]+( [0-9]+)*$' <<<"$ids"
printf '%s' "$text" >"$TMP/in"
printf '%s' "$ids" | T --tokenizer "$F" --decode >"$TMP/out"
check "decode(encode(text)) == text" cmp -s "$TMP/in" "$TMP/out"
check_eq "built-in tokenizer counts" "$(printf 'hello world' | T)" 2
T --tokenizer /nonexistent/tokenizer.json </dev/null 2>"$TMP/err"
check_eq "missing file exits 1" $? 1
check "message names the file" grep -q '/nonexistent/tokenizer.json' "$TMP/err"
echo '{"model": {"type": "WordPiece"}}' >"$TMP/bad.json"
T --tokenizer "$TMP/bad.json" </dev/null 2>"$TMP/err"
check_eq "unsupported model exits 1" $? 1
check "message names the component" grep -qi 'wordpiece' "$TMP/err"
echo "1 2 99999999" | T --tokenizer "$F" --decode 2>"$TMP/err" >/dev/null
check_eq "bad id exits 1" $? 1
finish
