// Reference values for src/core/stats.c's distribution functions, computed
// with stdlib (https://github.com/stdlib-js/stdlib, the npm packages
// @stdlib/stats-base-dists-t-cdf, -t-quantile, -binomial-cdf and
// @stdlib/math-base-special-betainc): an implementation independent of ours,
// ported from Boost.Math, accurate to a few ulps. (jStat was tried first: its
// incomplete beta's continued fraction stops at a relative step of 3e-7,
// too coarse for a 1e-9 comparison.) One case a line:
//
//   FUNCTION ARG... EXPECTED
//
// read by tests/stats/stats_probe.c, which computes the same with stats.c.
//   node reference.js --modules DIR/node_modules
'use strict';
const path = require('path');
const i = process.argv.indexOf('--modules');
const mods = path.resolve(i > 0 ? process.argv[i + 1] : path.join(__dirname, 'node_modules'));
const req = (m) => require(path.join(mods, m));
const tcdf = req('@stdlib/stats-base-dists-t-cdf');
const tquant = req('@stdlib/stats-base-dists-t-quantile');
const betainc = req('@stdlib/math-base-special-betainc');
const binomcdf = req('@stdlib/stats-base-dists-binomial-cdf');
const ibeta = (x, a, b) => betainc(x, a, b, true, false);
const mean = (v) => v.reduce((s, x) => s + x, 0) / v.length;
const variance = (v) => {
  const m = mean(v);
  return v.reduce((s, x) => s + (x - m) * (x - m), 0) / (v.length - 1);
};

const out = [];
const put = (...f) => out.push(f.map((v) => (typeof v === 'number' ? v.toPrecision(17) : v)).join(' '));

// Student t CDF, integer and fractional degrees of freedom.
const nus = [1, 2, 3, 4.5, 7.3, 10, 29.7, 120, 1000];
const ts = [-6, -2.5, -1, -0.3, 0.4, 1.5, 2.776, 4.303, 8];
for (const nu of nus) for (const t of ts) put('t_cdf', t, nu, tcdf(t, nu));

// Its quantile.
const ps = [0.001, 0.025, 0.1, 0.4, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9995];
for (const nu of nus) for (const p of ps) put('t_quantile', p, nu, tquant(p, nu));

// Regularised incomplete beta.
const betas = [[0.5, 0.5], [1, 3], [2.5, 7.25], [10, 10], [0.3, 12], [50, 3], [120, 80]];
const xs = [0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99];
for (const [a, b] of betas) for (const x of xs) put('beta_inc', x, a, b, ibeta(x, a, b));

// Binomial tails: the CDF from stdlib's binomial CDF, the upper tail
// P(B >= k) = I_p(k, n-k+1) from its incomplete beta (no 1 - cdf
// cancellation); values below 1e-12 are skipped (a relative comparison
// says nothing there).
const bins = [[10, 0.5], [100, 0.9], [459, 0.99], [1000, 0.99], [37, 0.2]];
for (const [n, p] of bins) {
  for (const f of [0.05, 0.2, 0.5, 0.8, 0.9, 0.97, 0.99]) {
    const k = Math.round(f * n);
    if (k <= 0 || k >= n) continue;
    const cdf = binomcdf(k, n, p);
    const sf = ibeta(p, k, n - k + 1);
    if (cdf > 1e-12) put('binom_cdf', k, n, p, cdf);
    if (sf > 1e-12) put('binom_sf', k, n, p, sf);
  }
}

// Welch's test with unequal variances and sizes: t, nu (Welch-Satterthwaite),
// the two-sided p and the 95 % interval's bounds, written out here from the
// textbook formulas on stdlib's distributions.
const welch = [
  [[10.1, 9.8, 10.4, 10.0], [11.2, 12.9, 10.7, 11.8, 13.1]],
  [[1.02, 0.98, 1.01], [1.21, 1.18, 1.22]],
  [[27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4],
   [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]],
  [[5, 5.5], [3, 9, 4, 12, 7, 1]],
];
for (const [a, b] of welch) {
  const ma = mean(a), mb = mean(b);
  const va = variance(a), vb = variance(b);
  const qa = va / a.length, qb = vb / b.length;
  const se = Math.sqrt(qa + qb);
  const t = (ma - mb) / se;
  const nu = (qa + qb) ** 2 / (qa * qa / (a.length - 1) + qb * qb / (b.length - 1));
  const p = 2 * tcdf(-Math.abs(t), nu);
  const tc = tquant(0.975, nu);
  const spec = `${a.join(',')};${b.join(',')}`;
  put('welch_t', spec, t);
  put('welch_df', spec, nu);
  put('welch_p', spec, p);
  put('welch_lo', spec, ma - mb - tc * se);
  put('welch_hi', spec, ma - mb + tc * se);
}
process.stdout.write(out.join('\n') + '\n');
