// Opens each HTML report in headless Chromium (playwright-core driving the
// system's chromium) and checks what a reader would see:
//   - no console error, no page error, no request leaving the file (the
//     report must work offline: anything but file: and data: fails);
//   - every chart (figure.chart) either draws data points (data-points > 0,
//     and its SVG holds marks) or is marked empty and says why;
//   - at least MIN charts drew data (--min N, default 1);
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
