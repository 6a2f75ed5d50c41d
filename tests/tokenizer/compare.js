#!/usr/bin/env node
// Exactness check of `infermeter tokenize` against the reference: the Rust
// Hugging Face tokenizers library (npm @anush008/tokenizers, a native
// binding). Each file is encoded whole and line by line (split at \n, the \n
// excluded) by both, without special tokens added, and the ids must be equal.
//
//   node compare.js --bin INFERMETER --tokenizer tokenizer.json \
//        --modules DIR/node_modules FILE...
//
// Prints the first mismatch of each string (file, line, byte offset, the
// expected and actual ids with their token strings) and the totals; exits 1
// on any mismatch, 2 on a usage or setup error.
'use strict';
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

function usage(msg) {
  console.error(`compare.js: ${msg}\nusage: node compare.js --bin BIN --tokenizer FILE ` +
    '--modules NODE_MODULES_DIR FILE...');
  process.exit(2);
}

const args = process.argv.slice(2);
const opt = {};
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--bin' || args[i] === '--tokenizer' || args[i] === '--modules') {
    if (i + 1 >= args.length) usage(`${args[i]} needs a value`);
    opt[args[i].slice(2)] = args[++i];
  } else files.push(args[i]);
}
if (!opt.bin || !opt.tokenizer || !opt.modules || !files.length) usage('missing arguments');

const { Tokenizer } = require(path.resolve(opt.modules, '@anush008/tokenizers'));
const ref = Tokenizer.fromFile(opt.tokenizer);
const MAX_REPORTS = 20;

function ours(buf, lines) {
  const a = ['tokenize', '--tokenizer', opt.tokenizer, '--ids'];
  if (lines) a.push('--lines');
  const r = spawnSync(opt.bin, a, { input: buf, maxBuffer: 1 << 30 });
  if (r.status !== 0) {
    throw new Error(`${opt.bin} ${a.join(' ')} exited with ${r.status}: ${r.stderr}`);
  }
  const out = r.stdout.toString().split('\n');
  out.pop(); // after the last newline
  return out.map((l) => (l === '' ? [] : l.split(' ').map(Number)));
}

const tokStr = (id) => (id === undefined ? '(end)' : JSON.stringify(ref.idToToken(id)));

let strings = 0, bytes = 0, tokens = 0, mismatches = 0;

async function compareOne(where, text, got) {
  const exp = (await ref.encode(text, null, { addSpecialTokens: false })).getIds();
  strings++;
  bytes += Buffer.byteLength(text);
  tokens += exp.length;
  let i = 0;
  while (i < exp.length && i < got.length && exp[i] === got[i]) i++;
  if (i === exp.length && i === got.length) return;
  mismatches++;
  if (mismatches > MAX_REPORTS) return;
  const prefix = await ref.decode(exp.slice(0, i), false);
  const off = Buffer.byteLength(prefix);
  const ctx = Buffer.from(text).subarray(off, off + 40).toString();
  console.log(`MISMATCH ${where}, token ${i}, byte ${off}: text there ${JSON.stringify(ctx)}`);
  for (const [name, ids] of [['expected', exp], ['got     ', got]]) {
    const part = ids.slice(i, i + 6);
    console.log(`  ${name}: ${part.map((id) => `${id} ${tokStr(id)}`).join(', ')}` +
      (ids.length > i + 6 ? ', ...' : '') + ` (${ids.length} tokens in all)`);
  }
}

(async () => {
  for (const f of files) {
    const buf = fs.readFileSync(f);
    const text = buf.toString('utf8');
    if (Buffer.compare(Buffer.from(text), buf) !== 0) {
      console.error(`compare.js: ${f} is not valid UTF-8 (the reference takes strings)`);
      process.exit(2);
    }
    const name = path.basename(f);
    await compareOne(`${name} (whole file)`, text, ours(buf, false)[0] || []);
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    const got = ours(buf, true);
    if (got.length !== lines.length) {
      console.log(`MISMATCH ${name}: ${got.length} output lines for ${lines.length} input lines`);
      mismatches++;
      continue;
    }
    for (let k = 0; k < lines.length; k++) await compareOne(`${name}:${k + 1}`, lines[k], got[k]);
  }
  console.log(`compared ${strings} strings from ${files.length} files, ${bytes} bytes, ` +
    `${tokens} tokens: ${mismatches} mismatching`);
  process.exit(mismatches ? 1 : 0);
})().catch((e) => {
  console.error(`compare.js: ${e.message}`);
  process.exit(2);
});
