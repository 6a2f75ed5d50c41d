#!/usr/bin/env node
// Writes deterministic pseudo-random text files for the tokenizer exactness
// test: mixtures of scripts, digits, punctuation, whitespace kinds, emoji and
// (partial) DeepSeek special-token strings, the mixes most likely to expose a
// difference in pre-tokenization or added-token matching.
//
//   node gen_stress.js OUT_DIR [SEED] [FILES] [BYTES_PER_FILE]
'use strict';
const fs = require('fs');
const path = require('path');

const [outDir, seedArg = '1', filesArg = '8', bytesArg = '6000'] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: node gen_stress.js OUT_DIR [SEED] [FILES] [BYTES_PER_FILE]');
  process.exit(2);
}

// xorshift32: a small, well-known generator; only determinism matters here.
let state = (Number(seedArg) >>> 0) || 1;
function rnd(n) {
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return state % n;
}
const pick = (a) => a[rnd(a.length)];
const range = (lo, hi) => String.fromCodePoint(lo + rnd(hi - lo + 1));
const many = (lo, hi, n) => { let s = ''; for (let i = 0; i < n; i++) s += range(lo, hi); return s; };

const pools = [
  () => pick(['the', 'a', 'load', 'Server', 'TOKEN', 'it\'s', 'we\'ll', 'x', 'iPhone', 'naïve', 'café']),
  () => many(0x61, 0x7a, 1 + rnd(12)),
  () => range(0x41, 0x5a) + many(0x61, 0x7a, rnd(8)),
  () => String(rnd(1e9)).slice(0, 1 + rnd(9)),
  () => '0123456789'.repeat(3).slice(rnd(10), 11 + rnd(20)),
  () => pick(['.', ',', '!', '?', ';', ':', '...', '--', '(', ')', '[', ']', '{', '}', '"', '\'', '`',
    '@', '#', '$', '%', '^', '&', '*', '+', '=', '<', '>', '/', '\\', '|', '~', '_', '-', '。', '，',
    '、', '「', '」', '！', '？', '…', '—', '·', '€', '£', '¥', '§', '©', '°', '±', '×', '÷']),
  () => pick([' ', ' ', ' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', '\r', ' \n', '\u00a0', '\u3000',
    '\u0085', '\u2028', '\u2029', '\u2003', '\u200b', '\u000b', '\u000c', ' '.repeat(2 + rnd(20))]),
  () => many(0x4e00, 0x9fa5, 1) + many(0x4e00, 0x9fa5, rnd(6)),
  () => range(0x3041, 0x309f) + range(0x30a0, 0x30ff),
  () => many(0xac00, 0xd7a3, 1 + rnd(4)),
  () => many(0x0410, 0x044f, 1 + rnd(7)),
  () => many(0x0621, 0x064a, 1 + rnd(6)),
  () => range(0x0905, 0x0939) + pick(['\u094d', '\u093e', '\u093f', '\u0940', '']),
  () => range(0x61, 0x7a) + range(0x0300, 0x036f) + (rnd(2) ? range(0x0300, 0x036f) : ''),
  () => range(0x1f600, 0x1f64f) + pick(['', '\u{1f3fb}', '\u{1f3ff}', '\u200d\u{1f4bb}', '\ufe0f']),
  () => range(0x1f1e6, 0x1f1ff) + range(0x1f1e6, 0x1f1ff),
  () => range(0x20000, 0x2a6df),
  // Characters newer than Unicode 14.0 (CJK Ext. H, Cyrillic Ext. D, Kawi
  // digits, emoji) and U+180E: where PCRE2's own tables and the reference's
  // differ (see src/text/tokenizer_regex.c).
  () => pick([range(0x31350, 0x323af), range(0x1e030, 0x1e06d), range(0x11f50, 0x11f59),
    range(0x1fae8, 0x1fae9), '\u180e', range(0x1c89, 0x1c8a)]),
  () => pick(['<｜begin▁of▁sentence｜>', '<｜end▁of▁sentence｜>', '<｜User｜>', '<｜Assistant｜>',
    '<think>', '</think>', '<｜tool▁sep｜>', '<｜fim▁hole｜>', '<｜', '｜>', '▁', '<｜User', 'User｜>',
    '<|User|>', '<th', 'ink>']),
  () => pick(['0x', '1e', '3.14', '1,000', '-', '+', '_', '2024-01-02', '10:30']),
];

fs.mkdirSync(outDir, { recursive: true });
for (let f = 0; f < Number(filesArg); f++) {
  let s = '';
  while (Buffer.byteLength(s) < Number(bytesArg)) s += pick(pools)();
  fs.writeFileSync(path.join(outDir, `stress_${seedArg}_${f}.txt`), s);
}
