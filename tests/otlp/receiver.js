// An OTLP/HTTP receiver for the tests (JSON, or protobuf when the request
// says Content-Type: application/x-protobuf): checks every request against
// the official OTLP protobuf definitions (the protobufjs module generated
// from them that the npm package @opentelemetry/otlp-transformer@0.52
// ships), then keeps what it received for the test to compare.
//
//   node receiver.js --modules DIR --out FILE [--fail-first N]
//
// Prints "port N" once listening on 127.0.0.1; answers the first N
// requests 429 with Retry-After: 0 (a retry test); on SIGTERM writes FILE:
// {requests, rejected: [reasons], spans: [{name, kind, traceId, spanId,
// parentSpanId, attrs: {key: value}, events: [names]}], metrics: {name:
// {points, count}}}. A request is rejected (HTTP 400, reason kept) when it
// is not JSON, when protobufjs cannot take it, or when its round trip
// through the protobuf message loses or changes a field (an unknown or
// misspelt key, a wrong type). A protobuf body is decoded by the same
// definitions and rejected when it does not parse, fails verify, or holds a
// field they do not know (its re-encoding is shorter than the body); the
// result then goes through the same checks as a JSON body. FILE also
// counts `protobuf` requests taken.
'use strict';
const http = require('http');
const fs = require('fs');
const path = require('path');
const args = process.argv.slice(2);
let modules = null, out = null, failFirst = 0;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--modules') modules = args[++i];
  else if (args[i] === '--out') out = args[++i];
  else if (args[i] === '--fail-first') failFirst = parseInt(args[++i], 10);
}
const root = require(path.join(modules, '@opentelemetry/otlp-transformer/build/src/generated/root.js'));
const P = root.opentelemetry.proto.collector;
const types = {
  '/v1/traces': P.trace.v1.ExportTraceServiceRequest,
  '/v1/metrics': P.metrics.v1.ExportMetricsServiceRequest,
};
const state = { requests: 0, protobuf: 0, rejected: [], spans: [], metrics: {} };

// OTLP/JSON's hex ids -> bytes for protobufjs (whose JSON mapping expects
// base64); checks their form on the way.
function ids(o, where) {
  if (Array.isArray(o)) return o.map((x) => ids(x, where));
  if (o && typeof o === 'object') {
    const r = {};
    for (const [k, v] of Object.entries(o)) {
      if (k === 'traceId' || k === 'spanId' || k === 'parentSpanId') {
        const len = k === 'traceId' ? 32 : 16;
        if (typeof v !== 'string' || !new RegExp(`^[0-9a-f]{${len}}$`).test(v))
          throw new Error(`${where}: ${k} ${JSON.stringify(v)} is not ${len} lowercase hex digits`);
        r[k] = Buffer.from(v, 'hex');
      } else r[k] = ids(v, where);
    }
    return r;
  }
  return o;
}
// The message back as plain JSON in OTLP's own conventions, to compare.
function back(T, msg) {
  const o = T.toObject(msg, { longs: String, enums: Number, bytes: String, defaults: false });
  const hex = (x) => {
    if (Array.isArray(x)) return x.map(hex);
    if (x && typeof x === 'object') {
      const r = {};
      for (const [k, v] of Object.entries(x))
        r[k] = (k === 'traceId' || k === 'spanId' || k === 'parentSpanId') ? Buffer.from(v, 'base64').toString('hex') : hex(v);
      return r;
    }
    return x;
  };
  return hex(o);
}
// Compares what was sent with the round trip: every key sent must come back
// equal (numbers compared as numbers: 64-bit values are decimal strings).
function same(a, b, p) {
  if (a === null || a === undefined) return;
  if (typeof a !== 'object') {
    if (String(a) !== String(b) && Number(a) !== Number(b)) throw new Error(`${p}: sent ${JSON.stringify(a)}, protobuf kept ${JSON.stringify(b)}`);
    return;
  }
  if (b === undefined || b === null) {
    if (Array.isArray(a) ? a.length : Object.keys(a).length) throw new Error(`${p}: not a field of the message (dropped)`);
    return;
  }
  for (const k of Object.keys(a)) same(a[k], b[k], `${p}.${k}`);
}
function attrs(list) {
  const r = {};
  for (const a of list || []) {
    const v = a.value || {};
    r[a.key] = v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue ??
      (v.arrayValue ? (v.arrayValue.values || []).map((x) => x.stringValue) : null);
  }
  return r;
}
// A protobuf body as the OTLP/JSON object it stands for.
function decoded(T, url, body) {
  const msg = T.decode(body);
  const err = T.verify(msg);
  if (err) throw new Error(`${url}: ${err}`);
  const again = T.encode(msg).finish().length;
  if (again !== body.length)
    throw new Error(`${url}: ${body.length - again} bytes of fields the definitions do not know`);
  return back(T, msg);
}
function take(url, body, protobuf) {
  const T = types[url];
  if (!T) throw new Error(`unknown path ${url}`);
  let sent;
  if (protobuf) {
    sent = decoded(T, url, body);
    state.protobuf++;
  } else {
    sent = JSON.parse(body.toString('utf8'));
    const msg = T.fromObject(ids(sent, url));
    const err = T.verify(msg);
    if (err) throw new Error(`${url}: ${err}`);
    same(sent, back(T, msg), url);
  }
  if (url === '/v1/traces') {
    for (const rs of sent.resourceSpans) for (const ss of rs.scopeSpans) for (const s of ss.spans)
      state.spans.push({ name: s.name, kind: s.kind, traceId: s.traceId, spanId: s.spanId,
        parentSpanId: s.parentSpanId, attrs: attrs(s.attributes), events: (s.events || []).map((e) => e.name),
        schemaUrl: ss.schemaUrl, start: s.startTimeUnixNano, end: s.endTimeUnixNano });
  } else {
    for (const rm of sent.resourceMetrics) for (const sm of rm.scopeMetrics) for (const m of sm.metrics) {
      const pts = m.histogram.dataPoints;
      state.metrics[m.name] = { points: pts.length, count: pts.reduce((s, p) => s + Number(p.count), 0),
        buckets: pts.every((p) => p.bucketCounts.length === p.explicitBounds.length + 1) };
    }
  }
}
const server = http.createServer((req, res) => {
  const parts = [];
  req.on('data', (d) => { parts.push(d); });
  req.on('end', () => {
    const body = Buffer.concat(parts);
    const protobuf = (req.headers['content-type'] || '') === 'application/x-protobuf';
    state.requests++;
    if (state.requests <= failFirst) {
      res.writeHead(429, { 'Retry-After': '0' });
      return res.end();
    }
    try {
      take(req.url, body, protobuf);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    } catch (e) {
      state.rejected.push(String(e.message));
      res.writeHead(400);
      res.end(String(e.message));
    }
  });
});
server.listen(0, '127.0.0.1', () => console.log(`port ${server.address().port}`));
process.on('SIGTERM', () => {
  fs.writeFileSync(out, JSON.stringify(state));
  process.exit(0);
});
