// Opens each HTML report in headless Chromium (playwright-core driving the
// system's chromium) and checks what a reader would see:
//   - no console error, no page error, no request leaving the file (the
//     report must work offline: anything but file: and data: fails);
//   - every chart (figure.chart) either draws data points (data-points > 0,
//     and its SVG holds marks) or is marked empty and says why;
//   - at least MIN charts drew data (--min N, default 1);
//   - axes: tick labels unique per axis (text.tx, text.ty), every curve
//     (path.line) drawn with x never going back, no text outside its SVG;
//   - the header says what was run: every [data-k] field's text equals the
//     value at that path of the results.json beside the page;
//   - for each --need TITLE, some chart whose caption holds TITLE drew data
//     (its picture is kept as STEM-need-K-SCHEME.png beside the page's);
//     "--need '@STEM TITLE'" asks it of the page STEM only (STEM: the
//     file's name without .html, or its directory's for report.html);
// then saves a full-page screenshot next to OUT (--shots DIR).
//
//   node check.js --modules DIR --chromium PATH --shots DIR [--min N] [--need TITLE]... FILE.html...
'use strict';
const path = require('path');
const args = process.argv.slice(2);
let modules = null, chromium = null, shots = null, min = 1;
const files = [], need = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--modules') modules = args[++i];
  else if (args[i] === '--chromium') chromium = args[++i];
  else if (args[i] === '--shots') shots = args[++i];
  else if (args[i] === '--min') min = parseInt(args[++i], 10);
  else if (args[i] === '--need') need.push(args[++i]);
  else files.push(args[i]);
}
const { chromium: pw } = require(path.join(modules, 'playwright-core'));
const fs = require('fs');

// The value at a dotted path of results.json; "stages[].x" maps over stages.
function lookup(o, k) {
  const parts = k.split('.');
  for (let i = 0; i < parts.length; i++) {
    if (o == null) return undefined;
    if (parts[i].endsWith('[]')) {
      const rest = parts.slice(i + 1).join('.');
      return (o[parts[i].slice(0, -2)] || []).map((e) => lookup(e, rest));
    }
    o = o[parts[i]];
  }
  return o;
}

// A value as the page writes it: text as is, numbers to 3 significant
// digits (a list: each, joined by ", ").
function same(want, text) {
  if (Array.isArray(want)) {
    want = want.filter((w) => w != null); // stages that do not set it are not listed
    const got = text.split(', ');
    return got.length === want.length && want.every((w, i) => same(w, got[i]));
  }
  if (typeof want === 'number') {
    const g = parseFloat(text);
    return Number.isFinite(g) && Math.abs(g - want) <= 0.006 * Math.max(Math.abs(want), 1e-9) + 1e-9;
  }
  return String(want) === text;
}

(async () => {
  const browser = await pw.launch({ executablePath: chromium, args: ['--no-sandbox'] });
  let failures = 0;
  const fail = (f, msg) => { failures++; console.error(`FAIL ${f}: ${msg}`); };
  for (const f of files) {
    for (const scheme of ['light', 'dark']) {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: scheme });
      page.on('console', (m) => { if (m.type() === 'error') fail(f, `console error: ${m.text()}`); });
      page.on('pageerror', (e) => fail(f, `page error: ${e.message}`));
      page.on('request', (r) => {
        const u = r.url();
        if (!u.startsWith('file:') && !u.startsWith('data:')) fail(f, `network request: ${u}`);
      });
      await page.goto('file://' + path.resolve(f), { waitUntil: 'load' });
      const charts = await page.$$eval('figure.chart', (els) => els.map((e) => ({
        title: (e.querySelector('figcaption') || {}).textContent || '?',
        empty: e.classList.contains('empty'),
        points: parseInt(e.getAttribute('data-points') || '0', 10),
        marks: e.querySelectorAll('svg path, svg rect, svg circle').length,
        why: ((e.querySelector('.why') || {}).textContent || '').trim(),
      })));
      let drawn = 0;
      for (const c of charts) {
        if (c.empty) {
          if (!c.why) fail(f, `empty chart "${c.title}" does not say why`);
        } else if (!(c.points > 0) || c.marks === 0) {
          fail(f, `chart "${c.title}" has no data points`);
        } else {
          drawn++;
        }
      }
      if (drawn < min) fail(f, `${drawn} charts drew data, expected at least ${min}`);
      // Axes: no two tick labels alike on one axis; every curve drawn left
      // to right (x never goes back); no text outside its picture.
      // Collapsed blocks (a sweep's stages, the tables) are opened for the
      // measure, and closed again for the screenshot.
      await page.$$eval('details:not([open])', (ds) => ds.forEach((d) => { d.open = true; d.dataset.shut = '1'; }));
      const axes = await page.$$eval('figure.chart svg', (svgs) => svgs.map((svg) => {
        const cap = (svg.closest('figure').querySelector('figcaption') || {}).textContent || '?';
        const labels = (cls) => [...svg.querySelectorAll('text.' + cls)].map((t) => t.textContent);
        const back = [];
        for (const path of svg.querySelectorAll('path.line')) {
          const xs = (path.getAttribute('d').match(/[ML]-?[\d.]+/g) || []).map((m) => parseFloat(m.slice(1)));
          for (let i = 1; i < xs.length; i++) if (xs[i] < xs[i - 1] - 0.05) { back.push(`${xs[i - 1]} -> ${xs[i]}`); break; }
        }
        const vb = svg.viewBox.baseVal, clipped = [];
        for (const t of svg.querySelectorAll('text')) {
          const b = t.getBBox();
          if (b.width === 0) continue;
          const m = t.transform.baseVal.consolidate();
          if (m) continue; // rotated axis titles: placed by hand
          if (b.x < vb.x - 1 || b.y < vb.y - 1 || b.x + b.width > vb.x + vb.width + 1 ||
              b.y + b.height > vb.y + vb.height + 1) clipped.push(t.textContent);
        }
        return { cap, tx: labels('tx'), ty: labels('ty'), back, clipped };
      }));
      await page.$$eval('details[data-shut]', (ds) => ds.forEach((d) => { d.open = false; }));
      for (const a of axes) {
        for (const k of ['tx', 'ty']) {
          const dup = a[k].filter((v, i) => a[k].indexOf(v) !== i);
          if (dup.length) fail(f, `chart "${a.cap}": ${k === 'tx' ? 'x' : 'y'} tick labels repeat: ${a[k].join(' ')}`);
        }
        if (a.back.length) fail(f, `chart "${a.cap}": a curve goes back along x (${a.back[0]})`);
        if (a.clipped.length) fail(f, `chart "${a.cap}": label outside the picture: ${a.clipped.join(', ')}`);
      }
      // The header says what was run: each field marked data-k equals the
      // value at that path of results.json beside the page (when there is one).
      const rj = path.join(path.dirname(path.resolve(f)), 'results.json');
      if (fs.existsSync(rj)) {
        const root = JSON.parse(fs.readFileSync(rj, 'utf8'));
        const fields = await page.$$eval('[data-k]', (els) => els.map((e) => [e.getAttribute('data-k'), e.textContent]));
        for (const [k, text] of fields) {
          const want = lookup(root, k);
          if (!same(want, text)) fail(f, `header field ${k}: page says "${text}", results.json ${JSON.stringify(want)}`);
        }
        if (root.manifest && !fields.length) fail(f, 'the header marks no field (data-k)');
      }
      const tables = await page.$$eval('figure.chart:not(.empty) details table', (t) => t.length);
      if (tables < drawn) fail(f, `${drawn} charts but ${tables} tables behind them`);
      const stem0 = path.basename(f) === 'report.html' ? path.basename(path.dirname(path.resolve(f)))
                                                        : path.basename(f, '.html');
      for (let k = 0; k < need.length; k++) {
        const m = /^@(\S+) (.*)$/.exec(need[k]);
        if (m && m[1] !== stem0) continue;
        const title = m ? m[2] : need[k];
        const c = charts.find((x) => !x.empty && x.points > 0 && x.marks > 0 && x.title.includes(title));
        if (!c) { fail(f, `no chart "${title}" with data`); continue; }
        if (shots) {
          const el = await page.$$('figure.chart:not(.empty)');
          for (const e of el) {
            const t = await e.$eval('figcaption', (x) => x.textContent);
            if (t.includes(title) && await e.isVisible()) { // not in a closed <details>
              await e.screenshot({ path: path.join(shots, `${stem0}-need-${k}-${scheme}.png`) });
              break;
            }
          }
        }
      }
      if (shots) {
        const stem = path.basename(f) === 'report.html' ? path.basename(path.dirname(path.resolve(f)))
                                                         : path.basename(f, '.html');
        const out = path.join(shots, stem + '-' + scheme + '.png');
        await page.screenshot({ path: out, fullPage: true });
        console.log(`${f} (${scheme}): ${charts.length} charts, ${drawn} with data; screenshot ${out}`);
      }
      await page.close();
    }
  }
  await browser.close();
  process.exit(failures ? 1 : 0);
})().catch((e) => { console.error(e); process.exit(1); });
