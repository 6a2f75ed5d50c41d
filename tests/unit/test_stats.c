#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "core/rng.h"
#include "core/stats.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void test_percentiles(void) {
  /* Wikipedia "Percentile", nearest-rank examples on {15, 20, 35, 40, 50}:
   * 5th -> 15, 30th -> 20, 40th -> 20, 50th -> 35, 100th -> 50. */
  const double w[] = {15, 20, 35, 40, 50};
  CHECK_NEAR(im_stats_pct_nearest(w, 5, 0.05), 15, 0);
  CHECK_NEAR(im_stats_pct_nearest(w, 5, 0.30), 20, 0);
  CHECK_NEAR(im_stats_pct_nearest(w, 5, 0.40), 20, 0);
  CHECK_NEAR(im_stats_pct_nearest(w, 5, 0.50), 35, 0);
  CHECK_NEAR(im_stats_pct_nearest(w, 5, 1.00), 50, 0);
  CHECK_NEAR(im_stats_pct_nearest(w, 5, 0.0), 15, 0);
  CHECK_NEAR(im_stats_pct_nearest(w, 5, 0.41), 35, 0); /* ceil(2.05) = 3 */
  /* Linear interpolation between closest ranks (numpy's default), by hand:
   * h = (n-1) p; p = 0.40 -> h = 1.6 -> 20 + 0.6*15 = 29 (also Wikipedia's
   * "C = 1" example); 0.05 -> 0.2 -> 15 + 0.2*5 = 16; 0.30 -> 1.2 -> 23;
   * 0.75 -> 3 -> 40; 0.99 -> 3.96 -> 40 + 0.96*10 = 49.6. */
  CHECK_NEAR(im_stats_pct_linear(w, 5, 0.40), 29, 1e-12);
  CHECK_NEAR(im_stats_pct_linear(w, 5, 0.05), 16, 1e-12);
  CHECK_NEAR(im_stats_pct_linear(w, 5, 0.30), 23, 1e-12);
  CHECK_NEAR(im_stats_pct_linear(w, 5, 0.50), 35, 0);
  CHECK_NEAR(im_stats_pct_linear(w, 5, 0.75), 40, 0);
  CHECK_NEAR(im_stats_pct_linear(w, 5, 0.99), 49.6, 1e-12);
  CHECK_NEAR(im_stats_pct_linear(w, 5, 1.0), 50, 0);
  CHECK_NEAR(im_stats_pct_linear(w, 5, 0.0), 15, 0);
  /* numpy documentation of np.percentile, a = [[10, 7, 4], [3, 2, 1]]:
   * np.percentile(a, 50) -> 3.5; along axis 0 -> [6.5, 4.5, 2.5]. */
  double a[] = {10, 7, 4, 3, 2, 1};
  im_stats_sort(a, N_OF(a));
  CHECK_NEAR(a[0], 1, 0);
  CHECK_NEAR(a[5], 10, 0);
  CHECK_NEAR(im_stats_pct_linear(a, 6, 0.5), 3.5, 0);
  const double c0[] = {3, 10}, c1[] = {2, 7}, c2[] = {1, 4};
  CHECK_NEAR(im_stats_pct_linear(c0, 2, 0.5), 6.5, 0);
  CHECK_NEAR(im_stats_pct_linear(c1, 2, 0.5), 4.5, 0);
  CHECK_NEAR(im_stats_pct_linear(c2, 2, 0.5), 2.5, 0);
  /* vLLM's p99 of 1..10 (np.percentile(x, 99)): h = 8.91 -> 9.91; ours
   * (nearest rank ceil(9.9) = 10) -> 10. */
  double ten[10];
  for (int i = 0; i < 10; i++)
    ten[i] = i + 1;
  CHECK_NEAR(im_stats_pct_linear(ten, 10, 0.99), 9.91, 1e-12);
  CHECK_NEAR(im_stats_pct_nearest(ten, 10, 0.99), 10, 0);
  CHECK_NEAR(im_stats_pct_nearest(ten, 10, 0.9), 9, 0);
  /* N = 1 and N = 0. */
  const double one[] = {4.25};
  CHECK_NEAR(im_stats_pct_nearest(one, 1, 0.0), 4.25, 0);
  CHECK_NEAR(im_stats_pct_nearest(one, 1, 1.0), 4.25, 0);
  CHECK_NEAR(im_stats_pct_linear(one, 1, 0.5), 4.25, 0);
  CHECK(isnan(im_stats_pct_nearest(one, 0, 0.5)));
  CHECK(isnan(im_stats_pct_linear(one, 0, 0.5)));
  /* 1..100: p * n products that round a hair high still give rank p*n. */
  double hundred[100];
  for (int i = 0; i < 100; i++)
    hundred[i] = i + 1;
  CHECK_NEAR(im_stats_pct_nearest(hundred, 100, 0.29), 29, 0);
  CHECK_NEAR(im_stats_pct_nearest(hundred, 100, 0.57), 57, 0);
  CHECK_NEAR(im_stats_pct_nearest(hundred, 100, 0.99), 99, 0);
  /* NaNs sort last. */
  double nans[] = {3, NAN, 1, 2};
  im_stats_sort(nans, 4);
  CHECK(nans[0] == 1 && nans[1] == 2 && nans[2] == 3 && isnan(nans[3]));
}

static void test_descriptive(void) {
  /* Wikipedia "Standard deviation": {2,4,4,4,5,5,7,9} has mean 5,
   * population std 2, sample std sqrt(32/7). */
  const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
  CHECK_NEAR(im_stats_mean(x, 8), 5.0, 1e-15);
  CHECK_NEAR(im_stats_std_pop(x, 8), 2.0, 1e-15);
  CHECK_NEAR(im_stats_std_sample(x, 8), sqrt(32.0 / 7.0), 1e-15);
  CHECK_NEAR(im_stats_min(x, 8), 2, 0);
  CHECK_NEAR(im_stats_max(x, 8), 9, 0);
  /* G1, G2, BC from the formulas in stats.h over exact central moments
   * (Python with fractions.Fraction): m2 = 4, m3 = 21/4, m4 = 45.5. */
  CHECK_NEAR(im_stats_skewness(x, 8), 0.8184875533567996, 1e-13);
  CHECK_NEAR(im_stats_kurtosis(x, 8), 0.940625, 1e-13);
  CHECK_NEAR(im_stats_bimodality(x, 8), 0.2859149277688603, 1e-13);
  CHECK(isnan(im_stats_std_sample(x, 1)));
  CHECK(isnan(im_stats_mean(x, 0)));
  CHECK(isnan(im_stats_skewness(x, 2)));
  CHECK(isnan(im_stats_kurtosis(x, 3)));
  const double flat[] = {3, 3, 3, 3, 3};
  CHECK(isnan(im_stats_bimodality(flat, 5)));
  CHECK_NEAR(im_stats_std_pop(flat, 5), 0.0, 0.0);
  /* Compensated mean: 1e16 + 1 + 1 - 1e16 ... */
  const double big[] = {1e16, 1.0, 1.0, -1e16};
  CHECK_NEAR(im_stats_mean(big, 4), 0.5, 0);

  /* Pearson r of (1..5, {2,4,5,4,5}) = 6 / sqrt(10 * 6) = sqrt(0.6). */
  const double px[] = {1, 2, 3, 4, 5}, py[] = {2, 4, 5, 4, 5};
  CHECK_NEAR(im_stats_pearson(px, py, 5), sqrt(0.6), 1e-15);
  const double ny[] = {10, 8, 6, 4, 2};
  CHECK_NEAR(im_stats_pearson(px, ny, 5), -1.0, 1e-15);
  CHECK(isnan(im_stats_pearson(px, flat, 5)));

  /* Bimodality: two well-separated clusters vs one normal sample. A
   * two-point distribution has BC -> 1; a normal one 1/3; the uniform 5/9. */
  struct im_rng rng;
  im_rng_seed(&rng, 11);
  double bi[2000], uni[2000], grid[1000];
  for (int i = 0; i < 2000; i++) {
    bi[i] = im_rng_normal(&rng) + (i % 2 ? 10.0 : 0.0);
    uni[i] = im_rng_normal(&rng);
  }
  for (int i = 0; i < 1000; i++)
    grid[i] = i;
  double bc_bi = im_stats_bimodality(bi, 2000), bc_uni = im_stats_bimodality(uni, 2000);
  CHECK(bc_bi > 0.555);
  CHECK(bc_bi > 0.8);
  CHECK(bc_uni < 0.555);
  CHECK_NEAR(bc_uni, 1.0 / 3.0, 0.03);
  CHECK_NEAR(im_stats_bimodality(grid, 1000), 5.0 / 9.0, 0.005);
  fprintf(stderr, "BC: bimodal %.4f, normal %.4f\n", bc_bi, bc_uni);
}

static void test_distributions(void) {
  /* Student t two-sided 95 % critical values, any printed t table
   * (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2). */
  CHECK_NEAR(im_stats_t_quantile(0.975, 1), 12.706, 1e-3);
  CHECK_NEAR(im_stats_t_quantile(0.975, 2), 4.303, 1e-3);
  CHECK_NEAR(im_stats_t_quantile(0.975, 4), 2.776, 1e-3);
  CHECK_NEAR(im_stats_t_quantile(0.975, 10), 2.228, 1e-3);
  CHECK_NEAR(im_stats_t_quantile(0.975, 19), 2.093, 1e-3);
  CHECK_NEAR(im_stats_t_quantile(0.975, 30), 2.042, 1e-3);
  CHECK_NEAR(im_stats_t_quantile(0.975, 1e6), 1.960, 1e-3);
  CHECK_NEAR(im_stats_t_quantile(0.975, INFINITY), 1.960, 1e-3);
  CHECK_NEAR(im_stats_t_quantile(0.995, 5), 4.032, 1e-3);
  CHECK_NEAR(im_stats_t_quantile(0.95, 3), 2.353, 1e-3);
  /* Closed forms: nu = 1 is Cauchy, t = tan(pi (p - 1/2)); nu = 2 gives
   * t = (2p - 1) / sqrt(2 p (1 - p)). */
  const double pi = 3.14159265358979323846;
  CHECK_REL(im_stats_t_quantile(0.975, 1), tan(pi * 0.475), 1e-12);
  CHECK_REL(im_stats_t_quantile(0.9995, 1), tan(pi * 0.4995), 1e-10);
  CHECK_REL(im_stats_t_quantile(0.975, 2), 0.95 / sqrt(2 * 0.975 * 0.025), 1e-12);
  CHECK_REL(im_stats_t_quantile(0.025, 2), -0.95 / sqrt(2 * 0.975 * 0.025), 1e-12);
  /* Normal quantiles (A&S table 26.5): 1.959963985, 2.575829304. */
  CHECK_NEAR(im_stats_normal_quantile(0.975), 1.959963985, 1e-9);
  CHECK_NEAR(im_stats_normal_quantile(0.995), 2.575829304, 1e-9);
  CHECK_NEAR(im_stats_normal_quantile(0.5), 0.0, 0.0);
  CHECK(isnan(im_stats_t_quantile(1.5, 3)));
  CHECK(isnan(im_stats_t_quantile(0.5, 0)));
  CHECK(isinf(im_stats_t_quantile(1.0, 3)));
  /* CDF and quantile are inverses; fractional nu too. */
  const double nus[] = {1, 1.5, 2, 3, 7.3, 25, 300, 1e5};
  const double ps[] = {0.6, 0.9, 0.975, 0.999, 0.02};
  for (size_t i = 0; i < N_OF(nus); i++)
    for (size_t j = 0; j < N_OF(ps); j++)
      CHECK_NEAR(im_stats_t_cdf(im_stats_t_quantile(ps[j], nus[i]), nus[i]), ps[j], 1e-12);
  CHECK_NEAR(im_stats_t_cdf(0.0, 4), 0.5, 1e-15);
  /* Incomplete beta identities: I_x(1,1) = x, I_x(a,1) = x^a,
   * I_x(1,b) = 1 - (1-x)^b, I_{1/2}(a,a) = 1/2. */
  CHECK_NEAR(im_stats_beta_inc(0.3, 1, 1), 0.3, 1e-15);
  CHECK_NEAR(im_stats_beta_inc(0.3, 4, 1), pow(0.3, 4), 1e-15);
  CHECK_NEAR(im_stats_beta_inc(0.3, 1, 6), 1 - pow(0.7, 6), 1e-14);
  CHECK_NEAR(im_stats_beta_inc(0.5, 37.5, 37.5), 0.5, 1e-13);
  CHECK_NEAR(im_stats_beta_inc(0.5, 5e5, 5e5), 0.5, 1e-9);
  CHECK(isnan(im_stats_beta_inc(1.2, 1, 1)));
  /* Binomial against direct sums of the pmf. */
  for (int n = 1; n <= 30; n += 7) {
    const double p = 0.37;
    double cdf = 0.0;
    for (int k = 0; k <= n; k++) {
      double pmf = 1.0;
      for (int i = 0; i < k; i++)
        pmf *= (double)(n - i) / (i + 1) * p;
      pmf *= pow(1 - p, n - k);
      double sf = 1.0 - cdf; /* P(B >= k) */
      cdf += pmf;
      CHECK_NEAR(im_stats_binom_cdf(k, n, p), cdf, 1e-13);
      CHECK_NEAR(im_stats_binom_sf(k, n, p), sf, 1e-13);
    }
  }
  CHECK_NEAR(im_stats_binom_cdf(-1, 10, 0.5), 0.0, 0.0);
  CHECK_NEAR(im_stats_binom_cdf(10, 10, 0.5), 1.0, 0.0);
  /* Deep tail: P(B <= 0), B ~ Bin(5000, 0.01) = 0.99^5000. */
  CHECK_REL(im_stats_binom_cdf(0, 5000, 0.01), pow(0.99, 5000), 1e-10);
}

static void test_tests(void) {
  /* k = 3 runs {100, 102, 104}: mean 102, s = 2, se = 2/sqrt(3),
   * half = 4.303 * 1.1547 = 4.9687 (docs/metrics.md §11). */
  const double runs[] = {100, 102, 104};
  struct im_stats_mean_ci ci;
  CHECK_OK(im_stats_mean_ci(runs, 3, 0.95, &ci));
  CHECK_NEAR(ci.mean, 102, 1e-12);
  CHECK_NEAR(ci.s, 2, 1e-12);
  CHECK_NEAR(ci.df, 2, 0);
  CHECK_NEAR(ci.t_crit, 4.303, 1e-3);
  CHECK_NEAR(ci.half, 4.30265 * 2 / sqrt(3.0), 1e-4);
  CHECK_NEAR(ci.lo, 102 - ci.half, 1e-12);
  CHECK_NEAR(ci.hi, 102 + ci.half, 1e-12);
  CHECK_NEAR(ci.rel_half, ci.half / 102, 1e-15);
  CHECK_EQ(im_stats_mean_ci(runs, 1, 0.95, &ci), IM_INVAL);
  CHECK_EQ(im_stats_mean_ci(runs, 3, 1.0, &ci), IM_INVAL);

  /* One-sample t against 95: t = 7 / (2/sqrt(3)) = 6.0622 > 4.303;
   * two-sided p = 0.026148 (Python: Simpson integration of the t(2)
   * density, independent of our incomplete beta). */
  struct im_stats_ttest tt;
  CHECK_OK(im_stats_ttest_one(runs, 3, 95, 0.95, &tt));
  CHECK_NEAR(tt.t, 6.0621778264910695, 1e-12);
  CHECK_NEAR(tt.p, 0.02614831890364578, 1e-8);
  CHECK(tt.significant);
  CHECK_OK(im_stats_ttest_one(runs, 3, 100, 0.95, &tt));
  CHECK(!tt.significant); /* t = 1.732 */
  CHECK(tt.p > 0.05);
  const double same[] = {5, 5, 5};
  CHECK_EQ(im_stats_ttest_one(same, 3, 4, 0.95, &tt), IM_INVAL);

  /* Welch: Wikipedia "Welch's t-test", example 1 (A1, A2 of 15 values each):
   * t = -2.46, nu = 24.99, p = 0.021. Precise figures from the formulas in
   * exact arithmetic (Python fractions); p by Simpson integration of the
   * t density. */
  const double a1[] = {27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1,
                       21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4};
  const double a2[] = {27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0,
                       24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4};
  struct im_stats_welch w;
  CHECK_OK(im_stats_welch(a1, 15, a2, 15, 0.95, &w));
  CHECK_NEAR(w.t, -2.455356398286005, 1e-10);
  CHECK_NEAR(w.df, 24.988529290231416, 1e-9);
  CHECK_NEAR(w.p, 0.021378001462867308, 1e-8);
  CHECK(w.hi < 0); /* p < 0.05: the CI excludes 0 */
  CHECK_NEAR(w.lo, w.diff - w.t_crit * w.se, 1e-12);
  CHECK_NEAR(w.t_crit, im_stats_t_quantile(0.975, w.df), 0);
  /* Symmetric in the arguments. */
  struct im_stats_welch w2;
  CHECK_OK(im_stats_welch(a2, 15, a1, 15, 0.95, &w2));
  CHECK_NEAR(w2.t, -w.t, 1e-12);
  CHECK_NEAR(w2.p, w.p, 1e-15);
  CHECK_EQ(im_stats_welch(same, 3, same, 3, 0.95, &w), IM_INVAL);
  /* Equal variances and sizes: nu = 2(n-1). */
  CHECK_OK(im_stats_welch_moments(1.0, 4.0, 10, 0.0, 4.0, 10, 0.95, &w));
  CHECK_NEAR(w.df, 18, 1e-12);

  /* Batch means: 20 batches of 5 values each, batch b = {b-0.2..b+0.2},
   * so the batch means are 0..19: mean 9.5, s^2 = 20*21/12 = 35,
   * half = t(0.975, 19) * sqrt(35/20). */
  double series[100];
  for (int i = 0; i < 100; i++)
    series[i] = (i / 5) + 0.1 * (i % 5) - 0.2;
  CHECK_OK(im_stats_batch_means(series, 100, 20, 0.95, &ci));
  CHECK_EQ(ci.n, 20);
  CHECK_NEAR(ci.mean, 9.5, 1e-12);
  CHECK_NEAR(ci.s, sqrt(35.0), 1e-12);
  CHECK_NEAR(ci.half, 2.093 * sqrt(35.0 / 20.0), 1e-3);
  CHECK_EQ(im_stats_batch_means(series, 10, 20, 0.95, &ci), IM_INVAL);
  CHECK_OK(im_stats_batch_means(series, 100, 0, 0.95, &ci)); /* default 25 */
  CHECK_EQ(ci.n, 25);
  CHECK_OK(im_stats_batch_means(series, 97, 30, 0.95, &ci)); /* uneven */
  CHECK_EQ(ci.n, 30);
}

/* Brute force: the equal-tailed order-statistic CI from pmf sums. */
static void brute_pct_ci(int n, double p, double conf, int64_t *lo, int64_t *hi) {
  double pmf[64], cdf[64];
  for (int k = 0; k <= n; k++) {
    double v = 1.0;
    for (int i = 0; i < k; i++)
      v *= (double)(n - i) / (i + 1) * p;
    pmf[k] = v * pow(1 - p, n - k);
    cdf[k] = pmf[k] + (k ? cdf[k - 1] : 0.0);
  }
  double tail = (1 - conf) / 2;
  *lo = 0;
  for (int l = 1; l <= n; l++) /* P(B <= l-1) <= tail */
    if (cdf[l - 1] <= tail)
      *lo = l;
  *hi = n + 1;
  for (int u = n; u >= 1; u--) /* P(B >= u) = 1 - cdf[u-1] <= tail */
    if (1.0 - cdf[u - 1] <= tail)
      *hi = u;
}

static void test_order_stats(void) {
  const double ps[] = {0.5, 0.9, 0.95, 0.99, 0.1};
  for (int n = 1; n <= 60; n++)
    for (size_t j = 0; j < N_OF(ps); j++) {
      struct im_stats_pct_ci ci;
      int64_t lo, hi;
      CHECK_OK(im_stats_pct_ci(n, ps[j], 0.95, &ci));
      brute_pct_ci(n, ps[j], 0.95, &lo, &hi);
      if (ci.lo_rank != lo || ci.hi_rank != hi)
        IM__FAIL("n=%d p=%g: ranks [%lld, %lld], brute force [%lld, %lld]", n, ps[j],
                 (long long)ci.lo_rank, (long long)ci.hi_rank, (long long)lo, (long long)hi);
      CHECK(ci.coverage >= 0.95 - 1e-12);
    }
  /* Median of 10: the classic interval [x(2), x(9)], coverage
   * 1 - 2 * 11/1024 = 0.978515625. */
  struct im_stats_pct_ci ci;
  CHECK_OK(im_stats_pct_ci(10, 0.5, 0.95, &ci));
  CHECK_EQ(ci.lo_rank, 2);
  CHECK_EQ(ci.hi_rank, 9);
  CHECK_NEAR(ci.coverage, 1 - 22.0 / 1024, 1e-14);
  /* p99 of 100 values has no upper bound (x(101) = +inf). */
  CHECK_OK(im_stats_pct_ci(100, 0.99, 0.95, &ci));
  CHECK_EQ(ci.hi_rank, 101);
  /* Large n is fast and sensible: about p n -+ 1.96 sqrt(n p (1-p)). */
  CHECK_OK(im_stats_pct_ci(1000000, 0.99, 0.95, &ci));
  CHECK_NEAR(ci.lo_rank, 990000 - 1.96 * sqrt(9900.0), 3);
  CHECK_NEAR(ci.hi_rank, 990000 + 1.96 * sqrt(9900.0), 3);
  CHECK_EQ(im_stats_pct_ci(0, 0.5, 0.95, &ci), IM_INVAL);
  CHECK_EQ(im_stats_pct_ci(10, 1.0, 0.95, &ci), IM_INVAL);

  /* Early stopping, p99 at c = 0.99. With no value over the limit a pass
   * needs 0.99^n <= 0.01, n >= ln 0.01 / ln 0.99 = 458.2 -> 459; with one
   * over, 0.99^n (1 + n/99) <= 0.01 -> n >= 662 (Python, by direct
   * search). */
  struct im_stats_early_stop es;
  CHECK_OK(im_stats_early_stop(459, 0, 0.99, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_PASS);
  CHECK_EQ(es.upper_rank, 459);
  CHECK_OK(im_stats_early_stop(458, 0, 0.99, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_INCONCLUSIVE);
  CHECK_EQ(es.more_min, 1);
  CHECK_EQ(es.more_at_rate, 1);
  CHECK_OK(im_stats_early_stop(100, 1, 0.99, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_INCONCLUSIVE);
  CHECK_EQ(es.more_min, 662 - 100);
  CHECK_EQ(es.more_at_rate, -1); /* 1 % over: the p99 sits at the limit */
  /* p90 at c = 0.99 (MLPerf LoadGen's minimum query counts): with none
   * over, 0.9^n <= 0.01 -> n >= 43.7 -> 44; with one over,
   * 0.9^n + n 0.1 0.9^(n-1) <= 0.01 -> n >= 64. */
  CHECK_OK(im_stats_early_stop(44, 0, 0.9, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_PASS);
  CHECK_OK(im_stats_early_stop(43, 0, 0.9, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_INCONCLUSIVE);
  CHECK_EQ(es.more_min, 1);
  CHECK_OK(im_stats_early_stop(64, 1, 0.9, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_PASS);
  CHECK_OK(im_stats_early_stop(63, 1, 0.9, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_INCONCLUSIVE);
  CHECK_OK(im_stats_early_stop(20, 1, 0.9, 0.99, &es));
  CHECK_EQ(es.more_min, 64 - 20);
  CHECK_OK(im_stats_early_stop(662, 1, 0.99, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_PASS);
  CHECK_OK(im_stats_early_stop(661, 1, 0.99, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_INCONCLUSIVE);
  CHECK_OK(im_stats_early_stop(100, 2, 0.99, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_FAIL); /* x(99) is over the limit */
  CHECK_EQ(es.more_min, -1);
  CHECK_OK(im_stats_early_stop(1000, 5, 0.99, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_INCONCLUSIVE);
  /* At the observed 0.5 % rate it must eventually pass; check the total
   * the search found passes and one fewer (at that rate) does not. */
  CHECK(es.more_at_rate > 0);
  CHECK(es.more_min > 0 && es.more_min < es.more_at_rate);
  {
    int64_t m = 1000 + es.more_at_rate;
    CHECK(im_stats_binom_cdf(m - m / 200 - 1, m, 0.99) >= 0.99);
    int64_t m0 = 1000 + es.more_min;
    CHECK(im_stats_binom_cdf(m0 - 5 - 1, m0, 0.99) >= 0.99);
    CHECK(im_stats_binom_cdf(m0 - 1 - 5 - 1, m0 - 1, 0.99) < 0.99);
  }
  CHECK_OK(im_stats_early_stop(100000, 500, 0.99, 0.99, &es));
  CHECK_EQ(es.verdict, IM_VERDICT_PASS);
  CHECK_STR(im_stats_verdict_name(es.verdict), "PASS");
  CHECK_EQ(im_stats_early_stop(10, 11, 0.99, 0.99, &es), IM_INVAL);
}

/* Repetition rate over 4-gram hashes of a piece sequence (docs/metrics.md
 * §7): "a b c d a b c d" has 5 4-grams, of which 4 are distinct (abcd
 * twice): 1 - 4/5 = 0.2; a loop of one piece is all repetition but one. */
static void test_repetition(void) {
  const char *seqs[3] = {"abcdabcd", "abcdefgh", "aaaaaaaaaaa"};
  const double want[3] = {0.2, 0.0, 1.0 - 1.0 / 8.0};
  for (int k = 0; k < 3; k++) {
    uint64_t p[3] = {0, 0, 0}, g[16];
    size_t n = 0, np = 0;
    for (const char *c = seqs[k]; *c; c++, np++) {
      uint64_t h = (uint64_t)(unsigned char)*c * 0x9e3779b97f4a7c15ull;
      if (np >= 3)
        g[n++] = im_stats_ngram4(p, h);
      p[0] = p[1], p[1] = p[2], p[2] = h;
    }
    CHECK_NEAR(im_stats_repetition(g, n), want[k], 1e-12);
  }
  /* Order matters: a permutation of the pieces is another 4-gram. */
  const uint64_t a[3] = {1, 2, 3}, b[3] = {2, 1, 3};
  CHECK(im_stats_ngram4(a, 4) != im_stats_ngram4(b, 4));
  CHECK(isnan(im_stats_repetition(NULL, 0)));
}

/* Holm's adjustment by hand: p = {0.01, 0.04, 0.03, 0.005, NaN}, m = 4.
 * Sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06),
 * 0.04 (x1 = 0.04 -> the running maximum 0.06). */
static void test_holm(void) {
  double p[5] = {0.01, 0.04, 0.03, 0.005, NAN}, adj[5];
  im_stats_holm(p, 5, adj);
  CHECK_NEAR(adj[0], 0.03, 1e-15);
  CHECK_NEAR(adj[1], 0.06, 1e-15);
  CHECK_NEAR(adj[2], 0.06, 1e-15);
  CHECK_NEAR(adj[3], 0.02, 1e-15);
  CHECK(isnan(adj[4]));
  /* Ties: {0.02, 0.02, 0.9} ranks 1, 2, 3: 3 x 0.02 = 0.06, then
   * max(0.06, 2 x 0.02) = 0.06, then 0.9. Capped at 1 below. */
  double q[3] = {0.02, 0.02, 0.9}, b[3];
  im_stats_holm(q, 3, b);
  CHECK_NEAR(b[0], 0.06, 1e-15);
  CHECK_NEAR(b[1], 0.06, 1e-15);
  CHECK_NEAR(b[2], 0.9, 1e-15);
  double r[2] = {0.7, 0.8}, c[2];
  im_stats_holm(r, 2, c);
  CHECK_NEAR(c[0], 1.0, 0);
  CHECK_NEAR(c[1], 1.0, 0);
  im_stats_holm(r, 0, c); /* no test: nothing written, no crash */
}

/* The chi-square tail against closed forms: df 2 is exp(-x/2), df 1 is
 * erfc(sqrt(x/2)), df 4 is exp(-x/2)(1 + x/2); and the k-sample quantile
 * test on a table worked by hand. */
static void test_homogeneity(void) {
  for (double x = 0.0; x < 60; x += 0.37) {
    CHECK_REL(im_stats_chi2_sf(x, 2), exp(-x / 2), 1e-12);
    CHECK_REL(im_stats_chi2_sf(x, 1), erfc(sqrt(x / 2)), 1e-11);
    CHECK_REL(im_stats_chi2_sf(x, 4), exp(-x / 2) * (1 + x / 2), 1e-11);
  }
  CHECK(isnan(im_stats_chi2_sf(1, 0)));
  CHECK(isnan(im_stats_chi2_sf(-1, 3)));
  /* above {10, 20, 30} of 100 each: 60 above, 20 expected a run above and
   * 80 below; chi2 = (100 + 0 + 100) / 20 + (100 + 0 + 100) / 80 = 12.5,
   * df 2, p = exp(-6.25). */
  uint64_t up[3] = {10, 20, 30}, n[3] = {100, 100, 100};
  struct im_stats_homog h;
  CHECK_OK(im_stats_homogeneity(up, n, 3, &h));
  CHECK_NEAR(h.chi2, 12.5, 1e-12);
  CHECK_NEAR(h.df, 2, 0);
  CHECK_REL(h.p, exp(-6.25), 1e-12);
  CHECK_NEAR(h.min_expected, 20, 1e-12);
  /* Homogeneous: each run's share equal, chi2 0, p 1. */
  uint64_t up2[3] = {2, 4, 6}, n2[3] = {100, 200, 300};
  CHECK_OK(im_stats_homogeneity(up2, n2, 3, &h));
  CHECK_NEAR(h.chi2, 0, 1e-12);
  CHECK_NEAR(h.p, 1, 1e-12);
  /* Nothing above: no information, p 1. */
  uint64_t none[2] = {0, 0};
  CHECK_OK(im_stats_homogeneity(none, n, 2, &h));
  CHECK_NEAR(h.p, 1, 0);
  /* Bad input. */
  uint64_t bad[2] = {101, 0};
  CHECK_EQ(im_stats_homogeneity(bad, n, 2, &h), IM_INVAL);
  CHECK_EQ(im_stats_homogeneity(up, n, 1, &h), IM_INVAL);
}

static int by_value(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

/* The radix path of im_stats_sort (512 values and more) gives the order a
 * comparison sort gives: random latencies, negatives, both zeros, the
 * infinities, subnormals, duplicates and NaNs (last, counted). */
static void test_sort_large(void) {
  struct im_rng g;
  im_rng_seed(&g, 42);
  const size_t sizes[] = {511, 512, 513, 1000, 4097, 100000};
  for (size_t s = 0; s < N_OF(sizes); s++) {
    size_t n = sizes[s];
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    CHECK(a && b);
    if (!a || !b)
      return;
    size_t nans = 0;
    for (size_t i = 0; i < n; i++) {
      double v;
      switch (im_rng_below(&g, 12)) {
      case 0: v = -im_rng_exp(&g) * 1e3; break;
      case 1: v = (im_rng_below(&g, 2) ? -0.0 : 0.0); break;
      case 2: v = (im_rng_below(&g, 2) ? -INFINITY : INFINITY); break;
      case 3: v = 4.9e-324 * (double)im_rng_below(&g, 100); break;
      case 4: v = NAN; nans++; break;
      case 5: v = 120.0; break; /* duplicates */
      default: v = im_rng_exp(&g) * 50.0; break;
      }
      a[i] = v;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (!isnan(a[i]))
        b[m++] = a[i];
    qsort(b, m, sizeof *b, by_value);
    im_stats_sort(a, n);
    CHECK_EQ(m + nans, n);
    size_t bad = 0;
    for (size_t i = 0; i < m; i++)
      bad += a[i] == b[i] ? 0u : 1u;
    for (size_t i = m; i < n; i++)
      bad += isnan(a[i]) ? 0u : 1u;
    CHECK_EQ(bad, 0);
    free(a);
    free(b);
  }
  /* All equal but one: the skipped passes still move the odd one. */
  double same[600];
  for (size_t i = 0; i < N_OF(same); i++)
    same[i] = 7.0;
  same[300] = 6.0;
  im_stats_sort(same, N_OF(same));
  CHECK_NEAR(same[0], 6.0, 0);
  CHECK_NEAR(same[1], 7.0, 0);
  CHECK_NEAR(same[599], 7.0, 0);
}

int main(void) {
  test_sort_large();
  test_holm();
  test_homogeneity();
  test_repetition();
  test_percentiles();
  test_descriptive();
  test_distributions();
  test_tests();
  test_order_stats();
  return CHECK_DONE();
}
