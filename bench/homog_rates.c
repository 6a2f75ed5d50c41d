/* False-alarm and detection rates of the repeat set's homogeneity test, and
 * the coverage of the pooled order-statistic CI it guards (docs/statistics.md
 * "Which CI each figure gets"), by simulation: k runs of n requests each,
 * log-normal latencies (sigma 0.3), the test at alpha 0.001 on the pooled
 * p90 and p99 as src/analyze/repeat.c runs it (core/stats.h
 * im_stats_homogeneity, im_stats_pct_ci). Cases:
 *   iid:       every request independent, every run alike (the null);
 *   ar(rho):   every run alike, but a run's requests correlated in time
 *              (AR(1) on the log scale, marginal sigma unchanged): requests
 *              that queue together or share engine steps;
 *   shift(x):  one run's latencies x times the others' (heterogeneous).
 * Prints per case the share of sets the test called heterogeneous at p90 and
 * p99, and the share whose pooled 95 % CI covered the true percentile. Prints
 * figures; asserts nothing. Build and run from the repo root:
 *
 *   cmake --build build --target homog_rates && build/bench/homog_rates [SETS] [K] [N]
 *
 * (SETS 2000, K 5, N 300 by default.) */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

#define SIGMA 0.3
#define ALPHA 0.001

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void) { /* Box-Muller */
  return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

struct tally {
  int het[2], covered[2], sets;
  int het_c[2], covered_c[2]; /* with the design-effect correction */
  double deff_sum[2];
};

static double batch_exp = 0.5; /* batches of n^batch_exp requests */

/* Whether the interval of ranks ci over the sorted pool covers truth (a
 * side no rank bounds is infinite: the set would be wide, not wrong). */
static bool covers(const double *pool, size_t N, const struct im_stats_pct_ci *ci, double truth) {
  return (ci->lo_rank < 1 || pool[ci->lo_rank - 1] <= truth) &&
         (ci->hi_rank > (int64_t)N || truth <= pool[ci->hi_rank - 1]);
}

/* One set: k runs of n values (log scale AR(1) with rho, run 0 times
 * shift), the test and the CI at p90 and p99. */
static void one_set(size_t k, size_t n, double rho, double shift, struct tally *t) {
  double *all = malloc(k * n * sizeof *all);
  if (!all)
    exit(1);
  for (size_t r = 0; r < k; r++) {
    double x = normal() * SIGMA;
    for (size_t i = 0; i < n; i++) {
      x = rho * x + sqrt(1 - rho * rho) * SIGMA * normal();
      all[r * n + i] = exp(x) * (r == 0 ? shift : 1.0);
    }
  }
  double *pool = malloc(k * n * sizeof *pool);
  if (!pool)
    exit(1);
  memcpy(pool, all, k * n * sizeof *pool);
  double *ind = malloc(n * sizeof *ind), *one = malloc(n * sizeof *one);
  if (!ind || !one)
    exit(1);
  qsort(pool, k * n, sizeof *pool, cmp_d);
  static const double ps[2] = {0.90, 0.99};
  for (int j = 0; j < 2; j++) {
    size_t N = k * n, rank = (size_t)ceil(ps[j] * (double)N);
    double q = pool[rank - 1];
    uint64_t up[64], cnt[64];
    for (size_t r = 0; r < k; r++) {
      up[r] = 0;
      cnt[r] = n;
      for (size_t i = 0; i < n; i++)
        up[r] += all[r * n + i] > q;
    }
    struct im_stats_homog h;
    if (im_stats_homogeneity(up, cnt, k, &h) == IM_OK && h.p < ALPHA)
      t->het[j]++;
    /* The correction: each run's design effect from batch means of its
     * indicator "above q" in request order, pooled over the runs. */
    struct im_stats_deff d[64], dp;
    size_t b = (size_t)ceil(pow((double)n, batch_exp));
    for (size_t r = 0; r < k; r++) {
      for (size_t i = 0; i < n; i++) {
        ind[i] = all[r * n + i] > q;
        one[i] = 1;
      }
      if (im_stats_design_effect(ind, one, n, b, (double)(N - rank) / (double)N, &d[r]) != IM_OK)
        exit(1);
    }
    im_stats_deff_pool(d, k, &dp);
    t->deff_sum[j] += isfinite(dp.deff) ? dp.deff : 1.0;
    if (im_stats_homogeneity_deff(up, cnt, k, dp.deff, dp.df, &h) == IM_OK && h.p < ALPHA)
      t->het_c[j]++;
    /* The true percentile of the mixture (shift 1: of one log-normal). */
    double truth = exp(SIGMA * im_stats_normal_quantile(ps[j]));
    struct im_stats_pct_ci ci;
    if (im_stats_pct_ci((int64_t)N, ps[j], 0.95, &ci) == IM_OK && covers(pool, N, &ci, truth))
      t->covered[j]++;
    if (im_stats_pct_ci_deff((int64_t)N, ps[j], 0.95, dp.deff, dp.df, &ci) == IM_OK &&
        covers(pool, N, &ci, truth))
      t->covered_c[j]++;
  }
  free(ind);
  free(one);
  t->sets++;
  free(all);
  free(pool);
}

int main(int argc, char **argv) {
  int sets = argc > 1 ? atoi(argv[1]) : 2000;
  size_t k = argc > 2 ? (size_t)atoi(argv[2]) : 5, n = argc > 3 ? (size_t)atoi(argv[3]) : 300;
  batch_exp = argc > 4 ? atof(argv[4]) : 0.5;
  if (sets < 1 || k < 2 || k > 64 || n < 10 || !(batch_exp > 0 && batch_exp < 1)) {
    fprintf(stderr, "usage: homog_rates [SETS >= 1] [K 2..64] [N >= 10] [BATCH_EXP (0, 1)]\n");
    return 2;
  }
  struct {
    const char *name;
    double rho, shift;
  } cases[] = {{"iid", 0, 1},           {"ar(0.5)", 0.5, 1},      {"ar(0.9)", 0.9, 1},
               {"ar(0.98)", 0.98, 1},   {"shift(1.05)", 0, 1.05}, {"shift(1.10)", 0, 1.10},
               {"shift(1.20)", 0, 1.20}, {"ar.5+sh1.2", 0.5, 1.20}, {"ar.9+sh1.2", 0.9, 1.20}};
  printf("%d sets of %zu runs x %zu requests, log-normal sigma %.1f, test alpha %g; corrected: "
         "design effect from batches of n^%g = %.0f requests\n",
         sets, k, n, SIGMA, ALPHA, batch_exp, ceil(pow((double)n, batch_exp)));
  printf("%-12s %8s %8s %8s %8s | %8s %8s %8s %8s | %6s %6s\n", "case", "het p90", "het p99",
         "cov p90", "cov p99", "het90 c", "het99 c", "cov90 c", "cov99 c", "deff90", "deff99");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    struct tally t;
    memset(&t, 0, sizeof t);
    for (int s = 0; s < sets; s++)
      one_set(k, n, cases[c].rho, cases[c].shift, &t);
    double S = 100.0 / t.sets;
    printf("%-12s %7.2f%% %7.2f%% %7.1f%% %7.1f%% | %7.2f%% %7.2f%% %7.1f%% %7.1f%% | %6.2f %6.2f\n",
           cases[c].name, S * t.het[0], S * t.het[1], S * t.covered[0], S * t.covered[1],
           S * t.het_c[0], S * t.het_c[1], S * t.covered_c[0], S * t.covered_c[1],
           t.deff_sum[0] / t.sets, t.deff_sum[1] / t.sets);
  }
  printf("(coverage is of the common percentile; under shift it is of the unshifted runs'; "
         "c: with the correction; deff: the pooled design effect's mean)\n");
  return 0;
}
