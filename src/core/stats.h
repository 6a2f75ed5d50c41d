/* Exact statistics over arrays of doubles (docs/metrics.md §2, §7, §11).
 *
 * Pure functions: no allocation unless stated, no global state, safe from
 * any thread. Probabilities and percentiles are fractions in [0, 1]
 * (p = 0.99 is the 99th percentile).
 *
 * Convention: the descriptive functions that return a double return NaN
 * when the figure is undefined (too few values, zero variance); the tests
 * and intervals that fill a struct return enum im_err (IM_INVAL for too few
 * values or an argument outside its domain) and leave *out unspecified on
 * failure. */
#ifndef INFERMETER_STATS_H
#define INFERMETER_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* ---- descriptive */

/* Sorts ascending in place (NaNs last). */
void im_stats_sort(double *x, size_t n);

/* Nearest rank (ours, docs/metrics.md §2): the value at rank max(1, ceil(p*n))
 * of the ascending array; a product p*n within a few ulps of an integer
 * counts as that integer. NaN when n == 0. p is clamped to [0, 1]. */
double im_stats_pct_nearest(const double *sorted, size_t n, double p);
/* Linear interpolation between closest ranks, numpy's default
 * (np.percentile(x, 100*p), method "linear"; what vLLM's benchmark reports):
 * h = (n-1)*p, x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h]),
 * evaluated the way numpy's _lerp does so results match bit for bit in the
 * common cases. NaN when n == 0. */
double im_stats_pct_linear(const double *sorted, size_t n, double p);

/* Mean (compensated summation); NaN when n == 0. */
double im_stats_mean(const double *x, size_t n);
/* Population standard deviation, sqrt(sum (x-mean)^2 / n) (np.std, vLLM);
 * NaN when n == 0. */
double im_stats_std_pop(const double *x, size_t n);
/* Sample standard deviation s, denominator n-1; NaN when n < 2. */
double im_stats_std_sample(const double *x, size_t n);
/* NaN when n == 0. */
double im_stats_min(const double *x, size_t n);
double im_stats_max(const double *x, size_t n);

/* Sample skewness, the adjusted Fisher-Pearson coefficient
 * G1 = sqrt(n(n-1))/(n-2) * m3 / m2^(3/2) (pandas .skew(), Excel SKEW);
 * NaN when n < 3 or all values are equal. */
double im_stats_skewness(const double *x, size_t n);
/* Sample excess kurtosis
 * G2 = ((n+1) g2 + 6) (n-1) / ((n-2)(n-3)), g2 = m4/m2^2 - 3
 * (pandas .kurt(), Excel KURT); NaN when n < 4 or all values are equal. */
double im_stats_kurtosis(const double *x, size_t n);
/* Bimodality coefficient, docs/metrics.md §7:
 * BC = (G1^2 + 1) / (G2 + 3 (n-1)^2 / ((n-2)(n-3))). BC > 5/9 (0.555, the
 * value of a uniform distribution) suggests two modes; a normal sample gives
 * about 1/3. NaN when n < 4 or all values are equal. */
double im_stats_bimodality(const double *x, size_t n);
/* Repetition rate of a sequence of n n-gram hashes: 1 - distinct / n
 * (docs/metrics.md §7, over the 4-grams of an output). Sorts h in place.
 * NaN when n == 0. */
double im_stats_repetition(uint64_t *h, size_t n);
/* The hash of the 4-gram ending with piece hash `cur` after the three
 * previous piece hashes p[0] (oldest) .. p[2]. */
uint64_t im_stats_ngram4(const uint64_t p[3], uint64_t cur);
/* Pearson correlation r of (x[i], y[i]); NaN when n < 2 or either series
 * is constant. */
double im_stats_pearson(const double *x, const double *y, size_t n);

/* ---- distributions (own implementations; see stats.c for the methods) */

/* Regularised incomplete beta I_x(a, b), a, b > 0, x in [0, 1]; NaN
 * outside the domain. */
double im_stats_beta_inc(double x, double a, double b);
/* Student t CDF P(T <= t) with nu > 0 degrees of freedom (nu = INFINITY:
 * the standard normal). NaN for nu <= 0 or NaN arguments. */
double im_stats_t_cdf(double t, double nu);
/* Inverse of im_stats_t_cdf for p in (0, 1): t(p, nu), e.g.
 * t(0.975, 4) = 2.776. Relative accuracy about 1e-12. NaN outside the
 * domain; -INFINITY / INFINITY for p == 0 / 1. */
double im_stats_t_quantile(double p, double nu);
/* Standard normal quantile (probit); same conventions. */
double im_stats_normal_quantile(double p);
/* Binomial CDF P(B <= k), B ~ Binomial(n, p): 0 for k < 0, 1 for k >= n. */
double im_stats_binom_cdf(int64_t k, int64_t n, double p);
/* Binomial upper tail P(B >= k), computed directly (no 1 - cdf
 * cancellation): 1 for k <= 0, 0 for k > n. */
double im_stats_binom_sf(int64_t k, int64_t n, double p);

/* ---- intervals and tests (docs/metrics.md §11) */

/* Confidence interval of a mean: mean +- t((1+conf)/2, df) * s / sqrt(n). */
struct im_stats_mean_ci {
  size_t n; /* values (runs, or batches for batch means) */
  double mean;
  double s;        /* sample standard deviation */
  double se;       /* s / sqrt(n) */
  double df;       /* n - 1 */
  double t_crit;   /* t((1+conf)/2, df) */
  double half;     /* t_crit * se */
  double lo, hi;   /* mean -+ half */
  double rel_half; /* half / |mean| (inf when mean == 0); the audit's
                      precision criterion is rel_half <= 0.04 */
};
/* CI of the mean of n >= 2 independent values (e.g. one metric over k
 * repeated runs) at confidence conf in (0, 1), typically 0.95. */
enum im_err im_stats_mean_ci(const double *x, size_t n, double conf,
                             struct im_stats_mean_ci *out) IM_WUR;
/* Batch means CI for a within-run series whose values are correlated
 * (requests under queueing): the n values, in time order, are cut into
 * `batches` contiguous batches of n/batches values (batch i holds
 * [i*n/batches, (i+1)*n/batches)), and im_stats_mean_ci is applied to the
 * batch means. batches == 0 picks 25 (docs/metrics.md §11 asks for 20-30).
 * IM_INVAL when batches < 2 or n < batches. */
enum im_err im_stats_batch_means(const double *x, size_t n, size_t batches, double conf,
                                 struct im_stats_mean_ci *out) IM_WUR;

struct im_stats_ttest {
  double t;         /* (mean - mu0) / (s / sqrt(n)) */
  double df;        /* n - 1 */
  double p;         /* two-sided p-value */
  double t_crit;    /* t((1+conf)/2, df): 4.303 for n = 3 at conf 0.95 */
  bool significant; /* |t| > t_crit, i.e. p < 1 - conf */
};
/* One-sample t-test of n >= 2 values against mu0. IM_INVAL also when s == 0
 * (t undefined). */
enum im_err im_stats_ttest_one(const double *x, size_t n, double mu0, double conf,
                               struct im_stats_ttest *out) IM_WUR;

struct im_stats_welch {
  double mean_a, mean_b;
  double diff;   /* mean_a - mean_b */
  double se;     /* sqrt(var_a/n_a + var_b/n_b) (sample variances) */
  double t;      /* diff / se */
  double df;     /* Welch-Satterthwaite nu */
  double p;      /* two-sided p-value */
  double t_crit; /* t((1+conf)/2, df) */
  double lo, hi; /* diff -+ t_crit * se */
};
/* Welch's unequal-variance t-test of mean(a) - mean(b), n_a, n_b >= 2.
 * For a ratio (docs/metrics.md §11 "compare"), pass log(metric): exp(diff),
 * exp(lo), exp(hi) are then the ratio and its CI. IM_INVAL when both
 * samples have zero variance. */
enum im_err im_stats_welch(const double *a, size_t na, const double *b, size_t nb, double conf,
                           struct im_stats_welch *out) IM_WUR;
/* The same from summary figures: means, sample variances, sizes. */
enum im_err im_stats_welch_moments(double mean_a, double var_a, size_t na, double mean_b,
                                   double var_b, size_t nb, double conf,
                                   struct im_stats_welch *out) IM_WUR;

/* Distribution-free CI of the p-quantile from order statistics. With
 * B ~ Binomial(n, p) the number of values below the quantile,
 * P(x(l) <= q_p < x(u)) = P(l <= B <= u-1). The interval is equal-tailed:
 * lo_rank is the largest l with P(B <= l-1) <= (1-conf)/2 and hi_rank the
 * smallest u with P(B >= u) <= (1-conf)/2, so coverage >= conf. Ranks are
 * 1-based into the sorted sample; lo_rank == 0 means no lower bound
 * (too few values: -inf), hi_rank == n+1 no upper bound (+inf). */
struct im_stats_pct_ci {
  int64_t lo_rank, hi_rank;
  double coverage; /* P(lo_rank <= B <= hi_rank - 1) */
};
/* n >= 1, p in (0, 1), conf in (0, 1). */
enum im_err im_stats_pct_ci(int64_t n, double p, double conf, struct im_stats_pct_ci *out) IM_WUR;

/* SLO verdict on a p-quantile by the one-sided exact binomial test (MLPerf
 * LoadGen's early stopping). `over` of the n values exceed the limit.
 *   PASS: the conf upper confidence bound of the p-quantile, the order
 *     statistic x(upper_rank) with upper_rank the smallest r such that
 *     P(B <= r-1) >= conf (B ~ Binomial(n, p)), is <= the limit, i.e.
 *     upper_rank <= n - over;
 *   FAIL: the nearest-rank point estimate x(ceil(p n)) exceeds the limit,
 *     i.e. ceil(p n) > n - over;
 *   INCONCLUSIVE otherwise. */
enum im_stats_verdict {
  IM_VERDICT_PASS,
  IM_VERDICT_FAIL,
  IM_VERDICT_INCONCLUSIVE,
};
struct im_stats_early_stop {
  enum im_stats_verdict verdict;
  int64_t upper_rank; /* n + 1 when even x(n) is no valid upper bound */
  /* INCONCLUSIVE only (0 for PASS, -1 for FAIL):
   * more_min: further values needed if none of them exceeds the limit
   *   (MLPerf's minimum query count minus n); exact.
   * more_at_rate: further values needed if they exceed the limit at the
   *   observed rate over/n; -1 when that rate is >= 1 - p (never passes);
   *   found by search over the total, so the smallest such count up to the
   *   rounding of over/n. */
  int64_t more_min;
  int64_t more_at_rate;
};
/* n >= 1, 0 <= over <= n, p in (0, 1), conf in (0, 1) (MLPerf: 0.99). */
enum im_err im_stats_early_stop(int64_t n, int64_t over, double p, double conf,
                                struct im_stats_early_stop *out) IM_WUR;
/* Name of a verdict: "PASS", "FAIL", "INCONCLUSIVE". */
const char *im_stats_verdict_name(enum im_stats_verdict v);

/* ---- multiplicity and homogeneity (docs/statistics.md) */

/* Holm's step-down adjustment of n p-values (S. Holm, "A simple
 * sequentially rejective multiple test procedure", Scand. J. Statist. 6,
 * 1979): with the m finite p-values sorted ascending, p(1) <= ... <= p(m),
 * adj(i) = max over j <= i of min(1, (m - j + 1) p(j)). Rejecting every
 * hypothesis with adj < alpha keeps the chance of any false rejection at
 * most alpha, whatever the dependence between the tests. NaN entries are
 * not tests: their adj is NaN and they do not count in m. Ties keep their
 * input order. O(n^2), no allocation; adj may not alias p. */
void im_stats_holm(const double *p, size_t n, double *adj);

/* Upper tail of the chi-square distribution with df > 0 degrees of
 * freedom at x >= 0: Q(df/2, x/2), the regularised upper incomplete gamma
 * function (DLMF 8.2.4), by its series below x/2 < df/2 + 1 and its
 * continued fraction (DLMF 8.9.2) above. NaN for df <= 0 or x < 0 / NaN. */
double im_stats_chi2_sf(double x, double df);

/* The k-sample quantile test of homogeneity (Mood's median test extended
 * to any quantile; Conover, Practical Nonparametric Statistics, §4.3):
 * run i has n[i] values of which above[i] exceed the pooled sample's
 * quantile. Under homogeneity (every run drawn from one distribution) the
 * 2 x k table (above, not above) by run has independent rows and columns:
 * Pearson's chi-square with k - 1 degrees of freedom. p = 1 when no value
 * or every value is above (no information). IM_INVAL when k < 2, a run is
 * empty or above[i] > n[i]. */
struct im_stats_homog {
  double chi2, df, p;
  double min_expected; /* the smallest expected cell count (Cochran: >= 1) */
};
enum im_err im_stats_homogeneity(const uint64_t *above, const uint64_t *n, size_t k,
                                 struct im_stats_homog *out) IM_WUR;

/* The design effect of a share estimated from units in time order (batch
 * means; docs/statistics.md "Design effect"): unit j has w[j] values of
 * which a[j] are "above" (a request: w 1; a request's ITL gaps: w its
 * gaps). The units are cut into B = floor(n / b) consecutive batches of b
 * (a remainder of fewer than b units is left out), and
 *   deff = B / (B - 1) * sum_b (A_b - p_b W_b)^2 / (W p (1 - p))
 * with A_b, W_b a batch's sums, W their total, p_b the batches' own share
 * A / W (the run's) and p the reference share (p_ref, e.g. the pooled
 * runs'; NaN: p_b). Independent values give deff near 1 (a chi-square
 * with B - 1 df over B - 1), blocks of L alike values L (b a multiple of
 * L). Correlation longer than b is missed: deff is then biased low.
 * deff is NaN and df 0 when B < 2 or p is 0 or 1 (no information); not
 * floored (pool, then floor). IM_INVAL: NULL arrays with n > 0, b == 0,
 * a[j] > w[j] or a negative entry. */
struct im_stats_deff {
  double deff, df; /* df = B - 1 */
  double p;        /* the batches' share A / W */
};
enum im_err im_stats_design_effect(const double *a, const double *w, size_t n, size_t b,
                                   double p_ref, struct im_stats_deff *out) IM_WUR;

/* The homogeneity test above with every run's counts divided by a design
 * effect deff >= 1 estimated with df degrees of freedom (the first-order
 * Rao-Scott correction: J. N. K. Rao and A. J. Scott, JASA 76, 1981):
 * chi2 = X^2 / deff (X^2 Pearson's of the raw counts) and, deff being an
 * estimate, p = P(F(k - 1, df) >= chi2 / (k - 1)) (df = 0 or infinite:
 * the chi-square tail of chi2), also when deff was floored to 1.
 * min_expected is of the effective counts. deff < 1 or NaN reads as 1. Same errors as im_stats_homogeneity. */
enum im_err im_stats_homogeneity_deff(const uint64_t *above, const uint64_t *n, size_t k,
                                      double deff, double df, struct im_stats_homog *out) IM_WUR;
/* Upper tail P(F >= x) of Fisher's F with d1, d2 > 0 degrees of freedom
 * (I_{d2 / (d2 + d1 x)}(d2 / 2, d1 / 2)); 1 for x <= 0, NaN off domain. */
double im_stats_f_sf(double x, double d1, double d2);

/* The design effects of k runs pooled (docs/statistics.md "Design
 * effect"): their df-weighted mean (runs with df 0 left out), df the sum,
 * then floored at 1. deff NaN and df 0 when no run has information. */
void im_stats_deff_pool(const struct im_stats_deff *d, size_t k, struct im_stats_deff *out);

/* im_stats_pct_ci for n values whose "below the quantile" count has
 * variance deff times the binomial one (deff estimated with df degrees of
 * freedom; df 0 or infinite: known): the ranks of the interval of
 * n_eff = n / deff' values scaled back to n, deff' = deff (t(1 - a/2, df)
 * / z(1 - a/2))^2 (a = 1 - conf: the estimate's own noise; deff floored
 * at 1 first), lo down and hi up. deff NaN, or <= 1 with df 0 (known):
 * im_stats_pct_ci. coverage is the effective interval's. Same errors as im_stats_pct_ci. */
enum im_err im_stats_pct_ci_deff(int64_t n, double p, double conf, double deff, double df,
                                 struct im_stats_pct_ci *out) IM_WUR;

#endif
