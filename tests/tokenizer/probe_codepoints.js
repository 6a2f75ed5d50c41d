#!/usr/bin/env node
// Exhaustive check of character classification: every code point from U+0080
// to U+10FFFF (surrogates excluded) in five contexts (" XX", "aXa", "!X1",
// "X X", "1X2"), encoded by `infermeter tokenize --lines` and by the
// reference (npm @anush008/tokenizers); prints the code points whose ids
// differ, as ranges. About 2 minutes; run by hand, not by ctest:
//
//   node tests/tokenizer/probe_codepoints.js BIN tokenizer.json NODE_MODULES_DIR
'use strict';
const path = require('path');
const { spawnSync } = require('child_process');

const [bin, tokFile, mods] = process.argv.slice(2);
if (!mods) {
  console.error('usage: node probe_codepoints.js BIN tokenizer.json NODE_MODULES_DIR');
  process.exit(2);
}
const { Tokenizer } = require(path.resolve(mods, '@anush008/tokenizers'));
const ref = Tokenizer.fromFile(tokFile);
const forms = [(c) => ' ' + c + c, (c) => 'a' + c + 'a', (c) => '!' + c + '1', (c) => c + ' ' + c,
  (c) => '1' + c + '2'];

(async () => {
  const cps = [];
  for (let c = 0x80; c <= 0x10ffff; c++) if (c < 0xd800 || c > 0xdfff) cps.push(c);
  const lines = [];
  for (const c of cps) for (const f of forms) lines.push(f(String.fromCodePoint(c)));
  const r = spawnSync(bin, ['tokenize', '--tokenizer', tokFile, '--ids', '--lines'],
    { input: Buffer.from(lines.join('\n') + '\n'), maxBuffer: 2 ** 31 });
  if (r.status !== 0) {
    console.error(`${bin} failed: ${r.stderr}`);
    process.exit(2);
  }
  const ours = r.stdout.toString().split('\n');
  const bad = new Set();
  for (let i = 0; i < lines.length; i += 20000) {
    const enc = await ref.encodeBatch(lines.slice(i, i + 20000), { addSpecialTokens: false });
    enc.forEach((e, k) => {
      if (e.getIds().join(' ') !== ours[i + k]) bad.add(cps[Math.floor((i + k) / forms.length)]);
    });
  }
  const ranges = [];
  for (const c of [...bad].sort((a, b) => a - b)) {
    if (ranges.length && ranges[ranges.length - 1][1] === c - 1) ranges[ranges.length - 1][1] = c;
    else ranges.push([c, c]);
  }
  console.log(`${cps.length} code points x ${forms.length} contexts: ${bad.size} differ` +
    (ranges.length ? ` in ${ranges.length} ranges:` : ''));
  if (ranges.length) {
    console.log(ranges.map(([a, b]) => a.toString(16) + (a !== b ? '-' + b.toString(16) : ''))
      .join(' '));
  }
  process.exit(bad.size ? 1 : 0);
})();
