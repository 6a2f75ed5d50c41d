#!/usr/bin/env node
// Validates infermeter's outputs against docs/results.schema.json (JSON
// Schema draft 2020-12, with the `ajv` package's Ajv2020):
//   - a results.json (any FILE not ending in .jsonl) against $defs/results;
//   - a requests.jsonl (FILE ending in .jsonl) line by line against
//     $defs/record;
// plus the few invariants a schema cannot state (array lengths that must
// equal a count, derived fields, parallel series). A DIR argument stands for
// DIR/results.json and DIR/requests.jsonl, whichever exist.
//
//   node tests/schema/validate.js --modules DIR/node_modules [--schema FILE] FILE|DIR...
//
// Prints one line per problem, `FILE[:LINE]: /json/path: message`, and a
// closing line; exits 0 when everything is valid, 1 on any problem, 2 on a
// usage error (or when ajv cannot be loaded).
'use strict';
const fs = require('fs');
const path = require('path');

const MAX_ERRORS_PER_FILE = 20;

function usage(msg) {
  if (msg) console.error(`validate.js: ${msg}`);
  console.error('usage: node validate.js --modules NODE_MODULES [--schema FILE] FILE|DIR...');
  process.exit(2);
}

let modules = process.env.IM_SCHEMA_MODULES || '';
let schemaPath = path.join(__dirname, '..', '..', 'docs', 'results.schema.json');
const inputs = [];
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--modules') modules = argv[++i];
  else if (argv[i] === '--schema') schemaPath = argv[++i];
  else if (argv[i].startsWith('--')) usage(`unknown option ${argv[i]}`);
  else inputs.push(argv[i]);
}
if (!inputs.length) usage('no file to validate');

let Ajv2020;
try {
  const mod = modules ? require(path.join(path.resolve(modules), 'ajv', 'dist', '2020'))
                      : require('ajv/dist/2020');
  Ajv2020 = mod.default || mod;
} catch (e) {
  console.error(`validate.js: cannot load ajv (${modules || 'default module path'}): ${e.message}`);
  process.exit(2);
}

const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
const ajv = new Ajv2020({allErrors: true, strict: true, strictTypes: false, strictTuples: false, strictRequired: false});
// `version` is an annotation of this schema (the results.json `schema` string).
ajv.addKeyword({keyword: 'version', schemaType: 'string'});
ajv.addSchema(schema);
const id = schema.$id;
const checkResults = ajv.getSchema(`${id}#/$defs/results`);
const checkRecord = ajv.getSchema(`${id}#/$defs/record`);
// Outputs other than a run's results.json, by their `schema` string.
const bySchema = {
  'infermeter/repeat/v1': ajv.getSchema(`${id}#/$defs/repeat`),
  'infermeter/repeat-stages/v1': ajv.getSchema(`${id}#/$defs/repeat_stages`),
  'infermeter-compare/1': ajv.getSchema(`${id}#/$defs/compare`),
};

let problems = 0;
let perFile = 0;
function report(where, ptr, msg) {
  problems++;
  perFile++;
  if (perFile <= MAX_ERRORS_PER_FILE) console.log(`${where}: ${ptr || '/'}: ${msg}`);
  else if (perFile === MAX_ERRORS_PER_FILE + 1) console.log(`${where}: ... (more problems in this file not shown)`);
}

// Ajv reports every branch of a failed if/then/else or anyOf; the messages
// that name a concrete keyword are the useful ones.
function ajvErrors(where, errors) {
  // ... and `contains` or `propertyNames` report each item or name that did
  // not match: only their own error is kept.
  const named = new Set(errors.filter((e) => e.keyword === 'propertyNames').map((e) => e.instancePath));
  const useful = errors.filter((e) => (!['if', 'anyOf', 'oneOf', 'allOf', 'not'].includes(e.keyword) ||
                                       errors.length === 1) &&
                                      !e.schemaPath.includes('/contains/') &&
                                      !(named.has(e.instancePath) && e.keyword !== 'propertyNames'));
  for (const e of (useful.length ? useful : errors)) {
    let msg = e.message;
    if (e.keyword === 'enum') msg += `: ${e.params.allowedValues.join(', ')}`;
    if (e.keyword === 'additionalProperties') msg += `: "${e.params.additionalProperty}"`;
    if (e.keyword === 'const') msg += `: ${JSON.stringify(e.params.allowedValue)}`;
    if (e.keyword === 'propertyNames') msg += `: "${e.params.propertyName}"`;
    report(where, e.instancePath, msg);
  }
}

function parseJson(text, where) {
  try {
    return {ok: true, value: JSON.parse(text)};
  } catch (e) {
    report(where, '', `not JSON: ${e.message}`);
    return {ok: false};
  }
}

// Parallel arrays of a series object: each as long as its t_s.
function checkSeriesLengths(where, base, obj) {
  if (!obj || typeof obj !== 'object' || !Array.isArray(obj.t_s)) return;
  for (const [k, v] of Object.entries(obj))
    if (Array.isArray(v) && v.length !== obj.t_s.length)
      report(where, `${base}/${k}`, `has ${v.length} values, t_s has ${obj.t_s.length}`);
}

function resultsInvariants(where, r) {
  const bodies = Array.isArray(r.stages) ? r.stages.map((s, i) => [`/stages/${i}`, s]) : [['', r]];
  for (const [base, s] of bodies) {
    const series = s && s.series;
    if (!series) continue;
    (series.client || []).forEach((c, i) => checkSeriesLengths(where, `${base}/series/client/${i}`, c));
    (series.server || []).forEach((c, i) => checkSeriesLengths(where, `${base}/series/server/${i}`, c));
    checkSeriesLengths(where, `${base}/series/tcp`, series.tcp);
    checkSeriesLengths(where, `${base}/series/gpu`, series.gpu);
  }
  if (Array.isArray(r.stages)) {
    r.stages.forEach((s, i) => {
      if (s && s.index !== i) report(where, `/stages/${i}/index`, `is ${s.index}, want ${i}`);
    });
    if (r.manifest && r.manifest.stages !== r.stages.length)
      report(where, '/manifest/stages', `is ${r.manifest.stages}, stages[] has ${r.stages.length}`);
  } else if (r.manifest && r.manifest.stages !== 1) {
    report(where, '/manifest/stages', `is ${r.manifest.stages} in a one-stage results.json`);
  }
}

function recordInvariants(where, r) {
  if (Array.isArray(r.chunks_us) && r.chunks_us.length !== r.n_chunks)
    report(where, '/chunks_us', `has ${r.chunks_us.length} values, n_chunks is ${r.n_chunks}`);
  if (Array.isArray(r.chunk_tokens) && r.chunk_tokens.length !== r.n_chunks)
    report(where, '/chunk_tokens', `has ${r.chunk_tokens.length} values, n_chunks is ${r.n_chunks}`);
  if (r.ignore_eos === true && Number.isInteger(r.output_shortfall) &&
      r.output_shortfall !== r.requested_tokens - r.output_tokens)
    report(where, '/output_shortfall',
           `is ${r.output_shortfall}, requested_tokens − output_tokens is ${r.requested_tokens - r.output_tokens}`);
  if (r.attempt === 1 && r.logical_id !== r.id)
    report(where, '/logical_id', `is ${r.logical_id} on a first attempt, id is ${r.id}`);
}

function validateResults(file) {
  const p = parseJson(fs.readFileSync(file, 'utf8'), file);
  if (!p.ok) return null;
  // The aggregates of --repeat have their own definitions.
  const other = p.value && bySchema[p.value.schema];
  if (other) {
    if (!other(p.value)) ajvErrors(file, other.errors);
    return null;
  }
  // `compare` with more than two sides: an array of comparisons.
  if (Array.isArray(p.value) && p.value.length && p.value.every((c) => c && c.schema === 'infermeter-compare/1')) {
    p.value.forEach((c, i) => {
      if (!bySchema['infermeter-compare/1'](c))
        ajvErrors(`${file}[${i}]`, bySchema['infermeter-compare/1'].errors);
    });
    return null;
  }
  if (!checkResults(p.value)) ajvErrors(file, checkResults.errors);
  if (p.value && typeof p.value === 'object') resultsInvariants(file, p.value);
  return p.value;
}

function validateRecords(file, results) {
  const text = fs.readFileSync(file, 'utf8');
  if (text.length && !text.endsWith('\n')) report(file, '', 'the last line does not end with a newline');
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const nStages = results && Array.isArray(results.stages) ? results.stages.length : 1;
  const ids = new Set();
  lines.forEach((line, i) => {
    const where = `${file}:${i + 1}`;
    const p = parseJson(line, where);
    if (!p.ok) return;
    const r = p.value;
    if (!checkRecord(r)) {
      ajvErrors(where, checkRecord.errors);
      return;
    }
    recordInvariants(where, r);
    // Ids restart at 1 in each stage of a multi-stage run.
    const key = `${r.stage}:${r.id}`;
    if (ids.has(key)) report(where, '/id', `${r.id} appears twice in stage ${r.stage}`);
    ids.add(key);
    if (results && r.stage >= nStages) report(where, '/stage', `is ${r.stage}, results.json has ${nStages} stage(s)`);
  });
  return lines.length;
}

// Expand DIRs; pair each requests.jsonl with the results.json beside it.
const files = [];
for (const arg of inputs) {
  let st;
  try {
    st = fs.statSync(arg);
  } catch (e) {
    report(arg, '', 'no such file or directory');
    continue;
  }
  if (st.isDirectory()) {
    const found = ['results.json', 'requests.jsonl'].map((n) => path.join(arg, n)).filter((f) => fs.existsSync(f));
    if (!found.length) report(arg, '', 'holds neither results.json nor requests.jsonl');
    files.push(...found);
  } else {
    files.push(arg);
  }
}
const resultsByDir = new Map();
let nResults = 0;
let nRecords = 0;
for (const f of files.filter((f) => !f.endsWith('.jsonl'))) {
  perFile = 0;
  nResults++;
  resultsByDir.set(path.dirname(path.resolve(f)), validateResults(f));
}
for (const f of files.filter((f) => f.endsWith('.jsonl'))) {
  perFile = 0;
  nRecords += validateRecords(f, resultsByDir.get(path.dirname(path.resolve(f))));
}
const summary = `${nResults} results.json, ${files.length - nResults} requests.jsonl (${nRecords} records)`;
if (problems) {
  console.log(`schema: INVALID: ${problems} problem(s) in ${summary}`);
  process.exit(1);
}
console.log(`schema: valid: ${summary}`);
