/* Statistics library; contracts in src/core/stats.h.
 *
 * Sources for the formulas (facts, not code):
 *   - incomplete beta continued fraction: DLMF 8.17.22
 *     (https://dlmf.nist.gov/8.17.E22), evaluated with the modified Lentz
 *     algorithm (Thompson & Barnett, J. Comput. Phys. 64, 1986);
 *   - Student t CDF through I_x(nu/2, 1/2): Abramowitz & Stegun 26.5.27
 *     (A(t|nu) = 1 - I_{nu/(nu+t^2)}(nu/2, 1/2)) and 26.7.1;
 *   - Stirling series for log Gamma: DLMF 5.11.1 (Bernoulli numbers);
 *   - binomial CDF as an incomplete beta: A&S 26.5.24;
 *   - Welch-Satterthwaite degrees of freedom: Welch, Biometrika 34 (1947);
 *   - order-statistic CI of a quantile: Hahn & Meeker, "Statistical
 *     Intervals" (1991) §5.2; early stopping: MLPerf LoadGen
 *     docs (early stopping for latency percentiles);
 *   - G1 and G2: Joanes & Gill, The Statistician 47 (1998), the estimators
 *     pandas and Excel use; bimodality coefficient as docs/metrics.md §7 writes
 *     it (SAS documentation of PROC CLUSTER).
 */
#include "core/stats.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- basics */

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  if (isnan(a))
    return isnan(b) ? 0 : 1;
  if (isnan(b))
    return -1;
  return (a > b) - (a < b);
}

/* Below this many values qsort is as quick as the radix passes. */
#define RADIX_MIN 512

/* The double's bits as an unsigned key in the doubles' order: sign bit
 * set for positives, every bit flipped for negatives. -0.0 is written back
 * as +0.0 first (the two compare equal), so they are one key. */
static uint64_t radix_key(double *v) {
  if (*v == 0.0)
    *v = 0.0;
  uint64_t u;
  memcpy(&u, v, sizeof u);
  return u >> 63 ? ~u : u | UINT64_C(0x8000000000000000);
}

/* LSD radix sort of n non-NaN values, 8 bits a pass (a pass where every
 * key has the same byte is skipped). false when tmp cannot be had. */
static bool radix_sort(double *x, size_t n) {
  uint64_t *k = malloc(n * sizeof *k), *t = malloc(n * sizeof *t);
  size_t(*cnt)[256] = calloc(8, sizeof *cnt);
  if (!k || !t || !cnt) {
    free(k);
    free(t);
    free(cnt);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    k[i] = radix_key(&x[i]);
    for (unsigned b = 0; b < 8; b++)
      cnt[b][(k[i] >> (8 * b)) & 0xff]++;
  }
  for (unsigned b = 0; b < 8; b++) {
    if (cnt[b][(k[0] >> (8 * b)) & 0xff] == n)
      continue; /* one byte value for all */
    size_t at = 0;
    for (unsigned d = 0; d < 256; d++) {
      size_t c = cnt[b][d];
      cnt[b][d] = at;
      at += c;
    }
    for (size_t i = 0; i < n; i++)
      t[cnt[b][(k[i] >> (8 * b)) & 0xff]++] = k[i];
    uint64_t *sw = k;
    k = t;
    t = sw;
  }
  for (size_t i = 0; i < n; i++) {
    uint64_t u = k[i] >> 63 ? k[i] & ~UINT64_C(0x8000000000000000) : ~k[i];
    memcpy(&x[i], &u, sizeof u);
  }
  free(k);
  free(t);
  free(cnt);
  return true;
}

void im_stats_sort(double *x, size_t n) {
  if (n < RADIX_MIN) {
    if (n > 1)
      qsort(x, n, sizeof *x, cmp_double);
    return;
  }
  /* NaNs to the end (their order among themselves is not defined), the
   * rest by radix; qsort when no memory. */
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!isnan(x[i])) {
      double v = x[i];
      x[i] = x[m];
      x[m++] = v;
    }
  if (m > 1 && !radix_sort(x, m))
    qsort(x, m, sizeof *x, cmp_double);
}

static double clamp01(double p) {
  if (isnan(p) || p < 0.0)
    return 0.0;
  return p > 1.0 ? 1.0 : p;
}

double im_stats_pct_nearest(const double *sorted, size_t n, double p) {
  if (n == 0)
    return NAN;
  p = clamp01(p);
  double x = p * (double)n, f = floor(x);
  size_t rank = (size_t)f;
  /* 0.99 * 100 may land a hair above 99; that is still rank 99. */
  if (x - f > 8.0 * x * DBL_EPSILON)
    rank++;
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return sorted[rank - 1];
}

double im_stats_pct_linear(const double *sorted, size_t n, double p) {
  if (n == 0)
    return NAN;
  p = clamp01(p);
  /* numpy: virtual index (n-1)*q, neighbours floor and floor+1 clipped to
   * n-1, gamma = index - floor, then _lerp. */
  double h = (double)(n - 1) * p, f = floor(h);
  size_t i = (size_t)f;
  if (i >= n - 1)
    return sorted[n - 1];
  double a = sorted[i], b = sorted[i + 1], t = h - f, d = b - a;
  /* numpy's _lerp: a + d*t below 0.5, b - d*(1-t) from 0.5 (monotone and
   * exact at both ends). */
  return t >= 0.5 ? b - d * (1.0 - t) : a + d * t;
}

double im_stats_mean(const double *x, size_t n) {
  if (n == 0)
    return NAN;
  /* Neumaier's compensated sum. */
  double s = 0.0, c = 0.0;
  for (size_t i = 0; i < n; i++) {
    double t = s + x[i];
    if (fabs(s) >= fabs(x[i]))
      c += (s - t) + x[i];
    else
      c += (x[i] - t) + s;
    s = t;
  }
  return (s + c) / (double)n;
}

/* Sum of squared deviations from the mean (two passes, with the usual
 * correction term for the rounding of the mean). */
static double sum_sq_dev(const double *x, size_t n, double mean) {
  double ss = 0.0, sd = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = x[i] - mean;
    ss += d * d;
    sd += d;
  }
  return ss - sd * sd / (double)n;
}

double im_stats_std_pop(const double *x, size_t n) {
  if (n == 0)
    return NAN;
  double ss = sum_sq_dev(x, n, im_stats_mean(x, n));
  return sqrt(ss > 0.0 ? ss / (double)n : 0.0);
}

double im_stats_std_sample(const double *x, size_t n) {
  if (n < 2)
    return NAN;
  double ss = sum_sq_dev(x, n, im_stats_mean(x, n));
  return sqrt(ss > 0.0 ? ss / (double)(n - 1) : 0.0);
}

double im_stats_min(const double *x, size_t n) {
  if (n == 0)
    return NAN;
  double m = x[0];
  for (size_t i = 1; i < n; i++)
    if (x[i] < m)
      m = x[i];
  return m;
}

double im_stats_max(const double *x, size_t n) {
  if (n == 0)
    return NAN;
  double m = x[0];
  for (size_t i = 1; i < n; i++)
    if (x[i] > m)
      m = x[i];
  return m;
}

/* Central moments m2, m3, m4 (denominator n). */
static void central_moments(const double *x, size_t n, double *m2, double *m3, double *m4) {
  double mean = im_stats_mean(x, n), s2 = 0.0, s3 = 0.0, s4 = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = x[i] - mean, d2 = d * d;
    s2 += d2;
    s3 += d2 * d;
    s4 += d2 * d2;
  }
  *m2 = s2 / (double)n;
  *m3 = s3 / (double)n;
  *m4 = s4 / (double)n;
}

double im_stats_skewness(const double *x, size_t n) {
  if (n < 3)
    return NAN;
  double m2, m3, m4;
  central_moments(x, n, &m2, &m3, &m4);
  if (!(m2 > 0.0))
    return NAN;
  double dn = (double)n;
  return sqrt(dn * (dn - 1.0)) / (dn - 2.0) * m3 / pow(m2, 1.5);
}

double im_stats_kurtosis(const double *x, size_t n) {
  if (n < 4)
    return NAN;
  double m2, m3, m4;
  central_moments(x, n, &m2, &m3, &m4);
  if (!(m2 > 0.0))
    return NAN;
  double dn = (double)n, g2 = m4 / (m2 * m2) - 3.0;
  return ((dn + 1.0) * g2 + 6.0) * (dn - 1.0) / ((dn - 2.0) * (dn - 3.0));
}

double im_stats_bimodality(const double *x, size_t n) {
  if (n < 4)
    return NAN;
  double g = im_stats_skewness(x, n), k = im_stats_kurtosis(x, n), dn = (double)n;
  if (isnan(g) || isnan(k))
    return NAN;
  return (g * g + 1.0) / (k + 3.0 * (dn - 1.0) * (dn - 1.0) / ((dn - 2.0) * (dn - 3.0)));
}

double im_stats_pearson(const double *x, const double *y, size_t n) {
  if (n < 2)
    return NAN;
  double mx = im_stats_mean(x, n), my = im_stats_mean(y, n), sxy = 0.0, sxx = 0.0, syy = 0.0;
  for (size_t i = 0; i < n; i++) {
    double dx = x[i] - mx, dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (!(sxx > 0.0) || !(syy > 0.0))
    return NAN;
  double r = sxy / sqrt(sxx * syy);
  return r > 1.0 ? 1.0 : r < -1.0 ? -1.0 : r;
}

/* ---------------------------------------------------------- distributions */

/* log Gamma(z) for z > 0. libm's lgamma() writes the global `signgam`
 * (not thread-safe), so we use the Stirling series (DLMF 5.11.1) with
 * Bernoulli terms up to B14, after shifting z up to >= 10 with
 * Gamma(z) = Gamma(z+m) / (z (z+1) ... (z+m-1)). The first omitted term is
 * below 4e-17 at z = 10. */
static double log_gamma(double z) {
  double shift = 0.0;
  if (z < 10.0) {
    double prod = 1.0;
    while (z < 10.0) {
      prod *= z;
      z += 1.0;
    }
    shift = log(prod);
  }
  double iz = 1.0 / z, iz2 = iz * iz;
  /* B_2k / (2k (2k-1)) for k = 1..7, summed by Horner in 1/z^2. */
  static const double coef[] = {1.0 / 12,   -1.0 / 360,      1.0 / 1260, -1.0 / 1680,
                                1.0 / 1188, -691.0 / 360360, 1.0 / 156};
  double acc = 0.0;
  for (int i = 6; i >= 0; i--)
    acc = acc * iz2 + coef[i];
  double series = iz * acc;
  return (z - 0.5) * log(z) - z + 0.91893853320467274178 /* log(2 pi)/2 */ + series - shift;
}

/* Continued fraction of I_x(a, b) (DLMF 8.17.22) by modified Lentz:
 * I_x(a,b) = x^a (1-x)^b / (a B(a,b)) * 1 / (1 + d1 / (1 + d2 / (1 + ...)))
 * with d_{2m+1} = -(a+m)(a+b+m) x / ((a+2m)(a+2m+1)),
 *      d_{2m}   = m (b-m) x / ((a+2m-1)(a+2m)).
 * Converges fast for x < (a+1)/(a+b+2); the caller ensures that. */
static double beta_cf(double a, double b, double x) {
  const double tiny = 1e-300, eps = 1e-16;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (fabs(d) < tiny)
    d = tiny;
  d = 1.0 / d;
  double f = d;
  for (int m = 1; m <= 100000; m++) {
    double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + aa * d;
    if (fabs(d) < tiny)
      d = tiny;
    c = 1.0 + aa / c;
    if (fabs(c) < tiny)
      c = tiny;
    d = 1.0 / d;
    f *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + aa * d;
    if (fabs(d) < tiny)
      d = tiny;
    c = 1.0 + aa / c;
    if (fabs(c) < tiny)
      c = tiny;
    d = 1.0 / d;
    double del = d * c;
    f *= del;
    if (fabs(del - 1.0) < eps)
      break;
  }
  return f;
}

/* I_x(a, b) given both x and y = 1 - x (so that callers who know y more
 * precisely than 1 - x, e.g. t^2/(nu+t^2), do not lose it). */
static double beta_inc2(double x, double y, double a, double b) {
  if (x <= 0.0)
    return 0.0;
  if (y <= 0.0)
    return 1.0;
  double lfront = a * log(x) + b * log(y) - (log_gamma(a) + log_gamma(b) - log_gamma(a + b));
  if (x < (a + 1.0) / (a + b + 2.0))
    return exp(lfront) * beta_cf(a, b, x) / a;
  return 1.0 - exp(lfront) * beta_cf(b, a, y) / b;
}

double im_stats_beta_inc(double x, double a, double b) {
  if (isnan(x) || !(a > 0.0) || !(b > 0.0) || x < 0.0 || x > 1.0)
    return NAN;
  return beta_inc2(x, 1.0 - x, a, b);
}

/* P(T > t) for t >= 0: 0.5 * I_{nu/(nu+t^2)}(nu/2, 1/2) (A&S 26.7.1). */
static double t_upper(double t, double nu) {
  if (isinf(nu))
    return 0.5 * erfc(t / sqrt(2.0));
  double t2 = t * t;
  return 0.5 * beta_inc2(nu / (nu + t2), t2 / (nu + t2), 0.5 * nu, 0.5);
}

double im_stats_t_cdf(double t, double nu) {
  if (isnan(t) || isnan(nu) || !(nu > 0.0))
    return NAN;
  if (isinf(t))
    return t > 0 ? 1.0 : 0.0;
  return t >= 0.0 ? 1.0 - t_upper(t, nu) : t_upper(-t, nu);
}

/* Solves t_upper(t, nu) = alpha for t >= 0 by bracketing and bisection;
 * t_upper is strictly decreasing, so bisection always converges. 200 steps
 * take the bracket to the resolution of a double. */
static double t_upper_inverse(double alpha, double nu) {
  double lo = 0.0, hi = 1.0;
  while (t_upper(hi, nu) > alpha) {
    lo = hi;
    hi *= 2.0;
    if (isinf(hi))
      return INFINITY;
  }
  for (int i = 0; i < 200; i++) {
    double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi)
      break;
    if (t_upper(mid, nu) > alpha)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

double im_stats_t_quantile(double p, double nu) {
  if (isnan(p) || isnan(nu) || !(nu > 0.0) || p < 0.0 || p > 1.0)
    return NAN;
  if (p == 0.0)
    return -INFINITY;
  if (p == 1.0)
    return INFINITY;
  if (p == 0.5)
    return 0.0;
  return p > 0.5 ? t_upper_inverse(1.0 - p, nu) : -t_upper_inverse(p, nu);
}

double im_stats_normal_quantile(double p) {
  return im_stats_t_quantile(p, INFINITY);
}

double im_stats_binom_cdf(int64_t k, int64_t n, double p) {
  if (k < 0)
    return 0.0;
  if (k >= n)
    return 1.0;
  if (p <= 0.0)
    return 1.0;
  if (p >= 1.0)
    return 0.0;
  /* A&S 26.5.24: P(B <= k) = I_{1-p}(n-k, k+1). */
  return beta_inc2(1.0 - p, p, (double)(n - k), (double)(k + 1));
}

double im_stats_binom_sf(int64_t k, int64_t n, double p) {
  if (k <= 0)
    return 1.0;
  if (k > n)
    return 0.0;
  if (p <= 0.0)
    return 0.0;
  if (p >= 1.0)
    return 1.0;
  /* P(B >= k) = I_p(k, n-k+1). */
  return beta_inc2(p, 1.0 - p, (double)k, (double)(n - k + 1));
}

/* ------------------------------------------------------ intervals, tests */

static bool conf_ok(double conf) {
  return conf > 0.0 && conf < 1.0;
}

static void fill_mean_ci(double mean, double s, size_t n, double conf,
                         struct im_stats_mean_ci *out) {
  out->n = n;
  out->mean = mean;
  out->s = s;
  out->se = s / sqrt((double)n);
  out->df = (double)(n - 1);
  out->t_crit = im_stats_t_quantile(0.5 + 0.5 * conf, out->df);
  out->half = out->t_crit * out->se;
  out->lo = mean - out->half;
  out->hi = mean + out->half;
  out->rel_half = mean != 0.0 ? out->half / fabs(mean) : INFINITY;
}

enum im_err im_stats_mean_ci(const double *x, size_t n, double conf, struct im_stats_mean_ci *out) {
  if (n < 2 || !conf_ok(conf))
    return IM_INVAL;
  fill_mean_ci(im_stats_mean(x, n), im_stats_std_sample(x, n), n, conf, out);
  return IM_OK;
}

enum im_err im_stats_batch_means(const double *x, size_t n, size_t batches, double conf,
                                 struct im_stats_mean_ci *out) {
  if (batches == 0)
    batches = 25;
  if (batches < 2 || n < batches || !conf_ok(conf))
    return IM_INVAL;
  double *means = malloc(batches * sizeof *means);
  if (!means)
    return IM_NOMEM;
  for (size_t b = 0; b < batches; b++) {
    /* Boundaries b*n/batches; computed so that b*n cannot overflow. */
    size_t start = b * (n / batches) + b * (n % batches) / batches;
    size_t end = (b + 1) * (n / batches) + (b + 1) * (n % batches) / batches;
    means[b] = im_stats_mean(x + start, end - start);
  }
  enum im_err err = im_stats_mean_ci(means, batches, conf, out);
  free(means);
  return err;
}

enum im_err im_stats_ttest_one(const double *x, size_t n, double mu0, double conf,
                               struct im_stats_ttest *out) {
  if (n < 2 || !conf_ok(conf))
    return IM_INVAL;
  double mean = im_stats_mean(x, n), s = im_stats_std_sample(x, n);
  if (!(s > 0.0))
    return IM_INVAL;
  out->df = (double)(n - 1);
  out->t = (mean - mu0) / (s / sqrt((double)n));
  out->p = 2.0 * t_upper(fabs(out->t), out->df);
  out->t_crit = im_stats_t_quantile(0.5 + 0.5 * conf, out->df);
  out->significant = fabs(out->t) > out->t_crit;
  return IM_OK;
}

enum im_err im_stats_welch_moments(double mean_a, double var_a, size_t na, double mean_b,
                                   double var_b, size_t nb, double conf,
                                   struct im_stats_welch *out) {
  if (na < 2 || nb < 2 || !conf_ok(conf) || !(var_a >= 0.0) || !(var_b >= 0.0))
    return IM_INVAL;
  double qa = var_a / (double)na, qb = var_b / (double)nb, v = qa + qb;
  if (!(v > 0.0))
    return IM_INVAL;
  out->mean_a = mean_a;
  out->mean_b = mean_b;
  out->diff = mean_a - mean_b;
  out->se = sqrt(v);
  out->t = out->diff / out->se;
  /* Welch-Satterthwaite. */
  out->df = v * v / (qa * qa / (double)(na - 1) + qb * qb / (double)(nb - 1));
  out->p = 2.0 * t_upper(fabs(out->t), out->df);
  out->t_crit = im_stats_t_quantile(0.5 + 0.5 * conf, out->df);
  out->lo = out->diff - out->t_crit * out->se;
  out->hi = out->diff + out->t_crit * out->se;
  return IM_OK;
}

enum im_err im_stats_welch(const double *a, size_t na, const double *b, size_t nb, double conf,
                           struct im_stats_welch *out) {
  if (na < 2 || nb < 2)
    return IM_INVAL;
  double sa = im_stats_std_sample(a, na), sb = im_stats_std_sample(b, nb);
  return im_stats_welch_moments(im_stats_mean(a, na), sa * sa, na, im_stats_mean(b, nb), sb * sb,
                                nb, conf, out);
}

/* Binary searches over binomial tail predicates. */
struct binom_query {
  int64_t n;
  double p, level;
};
static bool cdf_ge(const struct binom_query *q, int64_t k) {
  return im_stats_binom_cdf(k, q->n, q->p) >= q->level;
}
static bool cdf_gt(const struct binom_query *q, int64_t k) {
  return im_stats_binom_cdf(k, q->n, q->p) > q->level;
}
static bool sf_le(const struct binom_query *q, int64_t k) {
  return im_stats_binom_sf(k, q->n, q->p) <= q->level;
}
/* Smallest k in [lo, hi] with pred(k) true, for a predicate that is false
 * then true as k grows; hi + 1 when it is never true. */
static int64_t first_true(const struct binom_query *q,
                          bool (*pred)(const struct binom_query *, int64_t), int64_t lo,
                          int64_t hi) {
  int64_t end = hi + 1;
  while (lo < end) {
    int64_t mid = lo + (end - lo) / 2;
    if (pred(q, mid))
      end = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

enum im_err im_stats_pct_ci(int64_t n, double p, double conf, struct im_stats_pct_ci *out) {
  if (n < 1 || !(p > 0.0 && p < 1.0) || !conf_ok(conf))
    return IM_INVAL;
  double tail = 0.5 * (1.0 - conf);
  /* lo: largest l in [0, n] with P(B <= l-1) <= tail, i.e. one below the
   * first k = l-1 in [0, n] where the CDF exceeds tail. */
  struct binom_query q = {n, p, tail};
  int64_t k = first_true(&q, cdf_gt, 0, n); /* P(B <= k) > tail */
  out->lo_rank = k;                         /* l - 1 = k - 1 */
  /* hi: smallest u in [1, n+1] with P(B >= u) <= tail. */
  out->hi_rank = first_true(&q, sf_le, 1, n);
  out->coverage =
      im_stats_binom_cdf(out->hi_rank - 1, n, p) - im_stats_binom_cdf(out->lo_rank - 1, n, p);
  return IM_OK;
}

/* MLPerf-style pass test at total m with h values over the limit. */
static bool passes(int64_t m, int64_t h, double p, double conf) {
  return im_stats_binom_cdf(m - h - 1, m, p) >= conf;
}

enum im_err im_stats_early_stop(int64_t n, int64_t over, double p, double conf,
                                struct im_stats_early_stop *out) {
  if (n < 1 || over < 0 || over > n || !(p > 0.0 && p < 1.0) || !conf_ok(conf))
    return IM_INVAL;
  struct binom_query q = {n, p, conf};
  /* upper_rank: smallest r in [1, n] with P(B <= r-1) >= conf. */
  out->upper_rank = first_true(&q, cdf_ge, 0, n - 1) + 1;
  out->more_min = out->more_at_rate = 0;
  if (out->upper_rank <= n - over) {
    out->verdict = IM_VERDICT_PASS;
    return IM_OK;
  }
  double pn = p * (double)n, f = floor(pn);
  int64_t point_rank = (int64_t)f + (pn - f > 8.0 * pn * DBL_EPSILON);
  if (point_rank < 1)
    point_rank = 1;
  if (point_rank > n - over) {
    out->verdict = IM_VERDICT_FAIL;
    out->more_min = out->more_at_rate = -1;
    return IM_OK;
  }
  out->verdict = IM_VERDICT_INCONCLUSIVE;
  /* more_min: passes(m, over) is monotone in m; double then bisect. Totals
   * are capped at 2^50 (beyond any run) to keep the search finite. */
  const int64_t cap = (int64_t)1 << 50;
  int64_t lo = n, hi = n;
  while (!passes(hi, over, p, conf)) {
    lo = hi;
    if (hi >= cap) {
      hi = -1;
      break;
    }
    hi *= 2;
  }
  if (hi < 0) {
    out->more_min = -1;
  } else {
    while (lo + 1 < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (passes(mid, over, p, conf))
        hi = mid;
      else
        lo = mid;
    }
    out->more_min = hi - n;
  }
  /* more_at_rate: totals m with floor(m * over / n) values over the limit. */
  double rate = (double)over / (double)n;
  if (rate >= 1.0 - p) {
    out->more_at_rate = -1;
    return IM_OK;
  }
  lo = n;
  hi = n;
  for (;;) {
    lo = hi;
    if (hi >= cap) {
      out->more_at_rate = -1;
      return IM_OK;
    }
    hi *= 2;
    if (passes(hi, (int64_t)floor((double)hi * rate), p, conf))
      break;
  }
  while (lo + 1 < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (passes(mid, (int64_t)floor((double)mid * rate), p, conf))
      hi = mid;
    else
      lo = mid;
  }
  out->more_at_rate = hi - n;
  return IM_OK;
}

const char *im_stats_verdict_name(enum im_stats_verdict v) {
  switch (v) {
  case IM_VERDICT_PASS:
    return "PASS";
  case IM_VERDICT_FAIL:
    return "FAIL";
  case IM_VERDICT_INCONCLUSIVE:
    return "INCONCLUSIVE";
  }
  return "?";
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return (a > b) - (a < b);
}

double im_stats_repetition(uint64_t *h, size_t n) {
  if (n == 0)
    return NAN;
  qsort(h, n, sizeof *h, cmp_u64);
  size_t distinct = 1;
  for (size_t i = 1; i < n; i++)
    distinct += h[i] != h[i - 1];
  return 1.0 - (double)distinct / (double)n;
}

/* splitmix64's finaliser: a strong 64-bit mix (Steele, Lea and Flood 2014). */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t im_stats_ngram4(const uint64_t p[3], uint64_t cur) {
  uint64_t h = mix64(p[0]);
  h = mix64(h ^ p[1]);
  h = mix64(h ^ p[2]);
  return mix64(h ^ cur);
}

/* ------------------------------------------- multiplicity and homogeneity */

void im_stats_holm(const double *p, size_t n, double *adj) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    m += isnan(p[i]) ? 0u : 1u;
  /* rank(i): 1 + the finite p-values before it in (value, index) order. */
  for (size_t i = 0; i < n; i++) {
    if (isnan(p[i])) {
      adj[i] = NAN;
      continue;
    }
    double best = 0.0;
    for (size_t j = 0; j < n; j++) {
      if (isnan(p[j]) || p[j] > p[i] || (p[j] == p[i] && j > i))
        continue;
      size_t rank = 1;
      for (size_t k = 0; k < n; k++)
        rank += !isnan(p[k]) && (p[k] < p[j] || (p[k] == p[j] && k < j)) ? 1u : 0u;
      double a = fmin(1.0, (double)(m - rank + 1) * p[j]);
      best = fmax(best, a);
    }
    adj[i] = best;
  }
}

/* Q(a, x), the regularised upper incomplete gamma function, a > 0, x >= 0. */
static double gamma_q(double a, double x) {
  if (x == 0.0)
    return 1.0;
  const double eps = 1e-16, tiny = 1e-300;
  double lpre = -x + a * log(x) - log_gamma(a);
  if (x < a + 1.0) {
    /* P(a, x) = x^a e^-x / Gamma(a) * sum_n x^n / (a (a+1) ... (a+n)). */
    double term = 1.0 / a, sum = term;
    for (int i = 1; i < 10000; i++) {
      term *= x / (a + i);
      sum += term;
      if (fabs(term) < fabs(sum) * eps)
        break;
    }
    return 1.0 - sum * exp(lpre);
  }
  /* Continued fraction for Q by modified Lentz (DLMF 8.9.2, even form). */
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 10000; i++) {
    double an = -(double)i * ((double)i - a);
    b += 2.0;
    d = an * d + b;
    if (fabs(d) < tiny)
      d = tiny;
    c = b + an / c;
    if (fabs(c) < tiny)
      c = tiny;
    d = 1.0 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1.0) < eps)
      break;
  }
  return exp(lpre) * h;
}

double im_stats_chi2_sf(double x, double df) {
  if (!(df > 0) || !(x >= 0))
    return NAN;
  if (isinf(x))
    return 0.0;
  return fmin(1.0, fmax(0.0, gamma_q(df / 2.0, x / 2.0)));
}

enum im_err im_stats_homogeneity(const uint64_t *above, const uint64_t *n, size_t k,
                                 struct im_stats_homog *out) {
  if (!above || !n || !out || k < 2)
    return IM_INVAL;
  double tot = 0.0, up = 0.0;
  for (size_t i = 0; i < k; i++) {
    if (!n[i] || above[i] > n[i])
      return IM_INVAL;
    tot += (double)n[i];
    up += (double)above[i];
  }
  *out = (struct im_stats_homog){.chi2 = 0.0, .df = (double)(k - 1), .p = 1.0, .min_expected = 0.0};
  if (up == 0.0 || up == tot)
    return IM_OK;
  double share = up / tot, chi2 = 0.0, min_e = INFINITY;
  for (size_t i = 0; i < k; i++) {
    double e_up = (double)n[i] * share, e_down = (double)n[i] - e_up;
    double d = (double)above[i] - e_up; /* the not-above cell's deviation is -d */
    chi2 += d * d / e_up + d * d / e_down;
    min_e = fmin(min_e, fmin(e_up, e_down));
  }
  out->chi2 = chi2;
  out->min_expected = min_e;
  out->p = im_stats_chi2_sf(chi2, out->df);
  return IM_OK;
}

double im_stats_f_sf(double x, double d1, double d2) {
  if (!(d1 > 0) || !(d2 > 0) || isnan(x))
    return NAN;
  if (x <= 0)
    return 1.0;
  if (isinf(d2))
    return im_stats_chi2_sf(x * d1, d1);
  return im_stats_beta_inc(d2 / (d2 + d1 * x), d2 / 2.0, d1 / 2.0);
}

enum im_err im_stats_design_effect(const double *a, const double *w, size_t n, size_t b,
                                   double p_ref, struct im_stats_deff *out) {
  if (!out || !b || (n && (!a || !w)))
    return IM_INVAL;
  *out = (struct im_stats_deff){.deff = NAN, .df = 0.0, .p = NAN};
  for (size_t j = 0; j < n; j++)
    if (!(a[j] >= 0) || !(w[j] >= a[j]))
      return IM_INVAL;
  size_t nb = n / b;
  double up = 0.0, tot = 0.0;
  for (size_t j = 0; j < nb * b; j++) {
    up += a[j];
    tot += w[j];
  }
  if (tot > 0)
    out->p = up / tot;
  double p = isnan(p_ref) ? out->p : p_ref;
  if (nb < 2 || !(tot > 0) || !(p > 0 && p < 1))
    return IM_OK;
  double ss = 0.0;
  for (size_t k = 0; k < nb; k++) {
    double ab = 0.0, wb = 0.0;
    for (size_t j = k * b; j < (k + 1) * b; j++) {
      ab += a[j];
      wb += w[j];
    }
    double d = ab - out->p * wb;
    ss += d * d;
  }
  out->df = (double)(nb - 1);
  out->deff = (double)nb / out->df * ss / (tot * p * (1.0 - p));
  return IM_OK;
}

enum im_err im_stats_homogeneity_deff(const uint64_t *above, const uint64_t *n, size_t k,
                                      double deff, double df, struct im_stats_homog *out) {
  enum im_err e = im_stats_homogeneity(above, n, k, out);
  if (e != IM_OK || out->chi2 == 0.0)
    return e;
  double d = deff > 1.0 ? deff : 1.0;
  out->chi2 /= d;
  out->min_expected /= d;
  out->p = df > 0 && isfinite(df) ? im_stats_f_sf(out->chi2 / out->df, out->df, df)
                                  : im_stats_chi2_sf(out->chi2, out->df);
  return IM_OK;
}

void im_stats_deff_pool(const struct im_stats_deff *d, size_t k, struct im_stats_deff *out) {
  double sum = 0.0, df = 0.0;
  for (size_t i = 0; i < k; i++)
    if (d[i].df > 0 && isfinite(d[i].deff)) {
      sum += d[i].df * d[i].deff;
      df += d[i].df;
    }
  out->p = NAN;
  out->df = df;
  out->deff = df > 0 ? fmax(1.0, sum / df) : NAN;
}

enum im_err im_stats_pct_ci_deff(int64_t n, double p, double conf, double deff, double df,
                                 struct im_stats_pct_ci *out) {
  bool est = df > 0 && isfinite(df);
  if (!(deff > 1.0 || (est && deff >= 0)) || n < 1)
    return im_stats_pct_ci(n, p, conf, out);
  if (!conf_ok(conf))
    return IM_INVAL;
  deff = fmax(deff, 1.0);
  if (est) {
    double r = im_stats_t_quantile(0.5 + conf / 2, df) / im_stats_normal_quantile(0.5 + conf / 2);
    deff *= r * r;
  }
  double scale = fmax(1.0, floor((double)n / deff)), ratio = (double)n / scale;
  enum im_err e = im_stats_pct_ci((int64_t)scale, p, conf, out);
  if (e != IM_OK)
    return e;
  out->lo_rank = (int64_t)floor((double)out->lo_rank * ratio);
  out->hi_rank = out->hi_rank > (int64_t)scale ? n + 1 : (int64_t)ceil((double)out->hi_rank * ratio);
  if (out->hi_rank > n + 1)
    out->hi_rank = n + 1;
  return IM_OK;
}
