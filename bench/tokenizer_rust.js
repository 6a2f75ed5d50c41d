#!/usr/bin/env node
// Single-thread encode throughput of the Rust Hugging Face tokenizers library
// (npm @anush008/tokenizers) on one text file, for bench/tokenizer_vs_rust.sh.
//
//   node bench/tokenizer_rust.js NODE_MODULES_DIR tokenizer.json TEXT_FILE [PASSES]
//
// The file is cut into chunks exactly as bench/tokenizer_speed.c --file cuts
// it (at most 64 KiB, ending after the last \n in that window, else at a
// UTF-8 character boundary); each chunk is encoded without special tokens,
// one call at a time (the binding runs each call on one worker thread;
// RAYON_NUM_THREADS=1 is set by the driver so nothing inside runs in
// parallel). Loading is not timed. Prints one line per pass with MB/s,
// tokens/s, the token count and a checksum of the ids (FNV-1a, 32 bits, over
// the ids as units, the same as tokenizer_speed.c).
'use strict';
const fs = require('fs');
const path = require('path');

const [mods, tokFile, textFile, passesArg = '3'] = process.argv.slice(2);
if (!textFile) {
  console.error('usage: node tokenizer_rust.js NODE_MODULES_DIR tokenizer.json TEXT_FILE [PASSES]');
  process.exit(2);
}
const { Tokenizer } = require(path.resolve(mods, '@anush008/tokenizers'));
const tok = Tokenizer.fromFile(tokFile);
const buf = fs.readFileSync(textFile);
const CHUNK = 65536;

const chunks = [];
for (let start = 0; start < buf.length;) {
  let end = Math.min(start + CHUNK, buf.length);
  if (end < buf.length) {
    const nl = buf.lastIndexOf(0x0a, end - 1);
    if (nl >= start) end = nl + 1;
    else while (end > start && (buf[end] & 0xc0) === 0x80) end--;
  }
  chunks.push(buf.subarray(start, end).toString('utf8'));
  start = end;
}

(async () => {
  for (let pass = 0; pass < Number(passesArg); pass++) {
    let n = 0, h = 2166136261;
    const t0 = process.hrtime.bigint();
    for (const c of chunks) {
      const ids = (await tok.encode(c, null, { addSpecialTokens: false })).getIds();
      n += ids.length;
      for (const id of ids) h = Math.imul(h ^ id, 16777619) >>> 0;
    }
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    console.log(`rust pass ${pass}: ${buf.length} bytes, ${n} tokens, ` +
      `${(buf.length / s / 1e6).toFixed(2)} MB/s, ${(n / s / 1e6).toFixed(3)} Mtok/s, ` +
      `checksum ${h.toString(16).padStart(8, '0')}`);
  }
})();
