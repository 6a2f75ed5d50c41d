/* The design effect of a repeat set's requests in time order (core/stats.h
 * im_stats_design_effect and friends, analyze/repeat.h
 * im_repeat_order_run), on fixtures whose answer is known. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/repeat.h"
#include "check.h"
#include "core/stats.h"

/* A deterministic generator (splitmix64), so the tolerances below are
 * set once for this seed and never flake. */
static uint64_t seed = 20261204;
static double uniform01(void) {
  uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

/* Worked by hand: a = 1 0 | 0 0 | 1 1 | 0 0, b = 2: batch sums 1, 0, 2,
 * 0 of W_b = 2, p = 3 / 8; deviations 0.25, -0.75, 1.25, -0.75, sum of
 * squares 2.75; deff = 4 / 3 * 2.75 / (8 * 3/8 * 5/8) = 1.955556, df 3.
 * With p_ref = 0.5 only the denominator changes: 4/3 * 2.75 / 2. */
static void test_hand(void) {
  double a[8] = {1, 0, 0, 0, 1, 1, 0, 0}, w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  struct im_stats_deff d;
  CHECK_OK(im_stats_design_effect(a, w, 8, 2, NAN, &d));
  CHECK_NEAR(d.p, 3.0 / 8, 1e-15);
  CHECK_NEAR(d.df, 3, 0);
  CHECK_NEAR(d.deff, 4.0 / 3 * 2.75 / (8 * 3.0 / 8 * 5.0 / 8), 1e-12);
  CHECK_OK(im_stats_design_effect(a, w, 8, 2, 0.5, &d));
  CHECK_NEAR(d.deff, 4.0 / 3 * 2.75 / 2.0, 1e-12);
  /* A remainder of fewer than b units is left out: 9 units, b = 2. */
  double a9[9] = {1, 0, 0, 0, 1, 1, 0, 0, 1}, w9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  CHECK_OK(im_stats_design_effect(a9, w9, 9, 2, NAN, &d));
  CHECK_NEAR(d.deff, 4.0 / 3 * 2.75 / (8 * 3.0 / 8 * 5.0 / 8), 1e-12);
  /* No information: one batch, or nothing above. */
  CHECK_OK(im_stats_design_effect(a, w, 8, 8, NAN, &d));
  CHECK(isnan(d.deff) && d.df == 0);
  double z[8] = {0};
  CHECK_OK(im_stats_design_effect(z, w, 8, 2, NAN, &d));
  CHECK(isnan(d.deff) && d.df == 0);
  /* Bad input. */
  CHECK_EQ(im_stats_design_effect(a, w, 8, 0, NAN, &d), IM_INVAL);
  a[0] = 2;
  CHECK_EQ(im_stats_design_effect(a, w, 8, 2, NAN, &d), IM_INVAL);
  CHECK_EQ(im_stats_design_effect(NULL, w, 8, 2, NAN, &d), IM_INVAL);
}

/* Independent indicators give deff near 1 (B = 100 batches: the estimate
 * is about chi2(99) / 99, sd 0.14; this seed's value checked within
 * 0.35); the same indicators each repeated L = 5 times (perfect blocks)
 * give exactly L times the unrepeated ones' deff at b / L. */
static void test_iid_and_blocks(void) {
  enum { N = 10000, L = 5 };
  double *a = malloc(N * sizeof *a), *w = malloc(N * sizeof *w);
  double *ab = malloc(N * L * sizeof *ab), *wb = malloc(N * L * sizeof *wb);
  CHECK(a && w && ab && wb);
  if (!a || !w || !ab || !wb)
    return;
  for (int i = 0; i < N; i++) {
    a[i] = uniform01() < 0.1;
    w[i] = 1;
    for (int j = 0; j < L; j++) {
      ab[i * L + j] = a[i];
      wb[i * L + j] = 1;
    }
  }
  struct im_stats_deff d, db;
  CHECK_OK(im_stats_design_effect(a, w, N, 100, NAN, &d));
  CHECK_NEAR(d.deff, 1.0, 0.35);
  CHECK_NEAR(d.df, 99, 0);
  CHECK_OK(im_stats_design_effect(ab, wb, N * L, 100 * L, NAN, &db));
  CHECK_NEAR(db.deff, L * d.deff, 1e-9);
  /* ITL-like units: each unit holds its L values (w = L, a = L or 0):
   * the same batches, the same deff. */
  for (int i = 0; i < N; i++) {
    ab[i] = L * a[i];
    wb[i] = L;
  }
  CHECK_OK(im_stats_design_effect(ab, wb, N, 100, NAN, &db));
  CHECK_NEAR(db.deff, L * d.deff, 1e-9);
  free(a);
  free(w);
  free(ab);
  free(wb);
}

/* Pooling: df-weighted mean, floored at 1. The corrected test: chi2 / deff,
 * judged by F(k - 1, df), whose tail for d1 = 2 is (1 + 2x / d2)^(-d2/2). */
static void test_pool_and_test(void) {
  struct im_stats_deff d[3] = {{2, 10, NAN}, {4, 30, NAN}, {NAN, 0, NAN}}, p;
  im_stats_deff_pool(d, 3, &p);
  CHECK_NEAR(p.deff, (20.0 + 120.0) / 40, 1e-12);
  CHECK_NEAR(p.df, 40, 0);
  d[0].deff = 0.5;
  d[1].deff = 0.9;
  im_stats_deff_pool(d, 3, &p);
  CHECK_NEAR(p.deff, 1.0, 0); /* floored */
  im_stats_deff_pool(d + 2, 1, &p);
  CHECK(isnan(p.deff) && p.df == 0);
  /* Three runs of 100: 10, 10, 25 above. X^2 = 6.818... (hand: E = 15,
   * 85; (25 + 25 + 100) / 15 + 150 / 85). */
  uint64_t up[3] = {10, 10, 25}, n[3] = {100, 100, 100};
  double x2 = 150.0 / 15 + 150.0 / 85;
  struct im_stats_homog h;
  CHECK_OK(im_stats_homogeneity_deff(up, n, 3, NAN, 0, &h));
  CHECK_NEAR(h.chi2, x2, 1e-9);
  CHECK_REL(h.p, exp(-x2 / 2), 1e-9);
  CHECK_OK(im_stats_homogeneity_deff(up, n, 3, 2.0, 0, &h));
  CHECK_NEAR(h.chi2, x2 / 2, 1e-9);
  CHECK_REL(h.p, exp(-x2 / 4), 1e-9);
  CHECK_NEAR(h.min_expected, 15.0 / 2, 1e-9);
  CHECK_OK(im_stats_homogeneity_deff(up, n, 3, 2.0, 10, &h));
  CHECK_REL(h.p, pow(1 + 2 * (x2 / 4) / 10, -5), 1e-9);
  CHECK_REL(im_stats_f_sf(3.0, 2, 7), pow(1 + 6.0 / 7, -3.5), 1e-9);
  CHECK_NEAR(im_stats_f_sf(0, 2, 7), 1, 0);
}

/* The widened interval: deff 4 known exactly (df 0) turns n = 1200 into
 * the ranks of n = 300 times 4; a known deff <= 1 changes nothing. */
static void test_pct_ci(void) {
  struct im_stats_pct_ci a, b;
  CHECK_OK(im_stats_pct_ci(300, 0.9, 0.95, &a));
  CHECK_OK(im_stats_pct_ci_deff(1200, 0.9, 0.95, 4.0, 0, &b));
  CHECK_EQ(b.lo_rank, 4 * a.lo_rank);
  CHECK_EQ(b.hi_rank, 4 * a.hi_rank);
  CHECK_OK(im_stats_pct_ci(1200, 0.9, 0.95, &a));
  CHECK_OK(im_stats_pct_ci_deff(1200, 0.9, 0.95, 0.7, 0, &b));
  CHECK_EQ(b.lo_rank, a.lo_rank);
  CHECK_EQ(b.hi_rank, a.hi_rank);
  /* Estimated below 1 (df 5): floored at 1, still widened by t over z. */
  CHECK_OK(im_stats_pct_ci_deff(1200, 0.9, 0.95, 0.7, 5, &b));
  CHECK(b.lo_rank < a.lo_rank && b.hi_rank > a.hi_rank);
  /* An estimated deff widens more than a known one (t over z). */
  struct im_stats_pct_ci c;
  CHECK_OK(im_stats_pct_ci_deff(1200, 0.9, 0.95, 4.0, 0, &b));
  CHECK_OK(im_stats_pct_ci_deff(1200, 0.9, 0.95, 4.0, 5, &c));
  CHECK(c.lo_rank < b.lo_rank && c.hi_rank > b.hi_rank);
  /* Too few effective values for an upper bound: unbounded. */
  CHECK_OK(im_stats_pct_ci_deff(400, 0.99, 0.95, 40.0, 0, &b));
  CHECK_EQ(b.hi_rank, 401);
}

/* A set whose runs' requests came in ascending order (so the values above
 * the pooled p90 came last, together), runs 1..100, 1..100, 51..150 (as
 * in test_repeat.c: pooled p90 120, X^2 = 66.667). b = ceil(100^0.6) =
 * 16, B = 6 batches (units 0..95), p_ref = 30 / 300 = 0.1. Runs 1 and 2
 * have none above: every batch deviates 0, deff 0 with df 5. Run 3 has
 * units 70..95 above: batches 0..3 hold 0, batch 4 holds 10, batch 5 16;
 * its share 26 / 96, deviations -26/6 (four times), 10 - 26/6, 16 - 26/6:
 * deff = 6 / 5 * SS / (96 * 0.09) = 33.80. Pooled (df-weighted) 11.27
 * with df 15; the test divides X^2 by it and reads F(2, 15). */
static void test_set(void) {
  static struct im_repeat_set set;
  struct im_repeat_run runs[3] = {{.publishable_but_repeats = true},
                                  {.publishable_but_repeats = true},
                                  {.publishable_but_repeats = true}};
  memset(&set, 0, sizeof set);
  set.run = runs;
  set.planned = set.runs = 3;
  for (int f = 0; f < IM_RF_COUNT_; f++)
    for (int k = 0; k < 3; k++)
      set.values[f][k] = 100.0 + k * 0.1;
  static const int from[3] = {1, 1, 51};
  struct im_hist run[3][4], pool[4];
  int64_t v[3][100];
  for (int m = 0; m < 4; m++) {
    CHECK_OK(im_hist_init_default(&pool[m]));
    for (int r = 0; r < 3; r++) {
      CHECK_OK(im_hist_init_default(&run[r][m]));
      for (int i = 0; i < 100; i++) {
        v[r][i] = from[r] + i;
        CHECK(im_hist_record(&run[r][m], v[r][i]));
      }
      CHECK_OK(im_hist_merge(&pool[m], &run[r][m]));
    }
  }
  im_repeat_pool(&set, pool);
  for (int r = 0; r < 3; r++)
    im_repeat_count_run(&set, (size_t)r, run[r], pool);
  im_repeat_analyze(&set, true);
  double lo0 = set.stat[IM_RF_TTFT_P90].lo, hi0 = set.stat[IM_RF_TTFT_P90].hi;
  CHECK(isnan(set.stat[IM_RF_TTFT_P90].deff));
  for (int r = 0; r < 3; r++)
    for (int m = 0; m < 4; m++)
      CHECK_OK(im_repeat_order_run(&set, (size_t)r, m, v[r], 100, NULL, 100, &pool[m]));
  CHECK_EQ(im_repeat_order_run(&set, 0, 0, v[0], 99, NULL, 100, &pool[0]), IM_INVAL);
  CHECK_EQ(im_repeat_order_run(&set, 0, 4, v[0], 100, NULL, 100, &pool[0]), IM_INVAL);
  double c = 26.0 / 6, ss = 4 * c * c + (10 - c) * (10 - c) + (16 - c) * (16 - c);
  CHECK_NEAR(set.tail_deff[0][0][0].deff, 0, 1e-12);
  CHECK_NEAR(set.tail_deff[0][0][0].df, 5, 0);
  CHECK_NEAR(set.tail_deff[0][0][2].deff, 6.0 / 5 * ss / (96 * 0.09), 1e-9);
  im_repeat_analyze(&set, true);
  const struct im_repeat_stat *st = &set.stat[IM_RF_TTFT_P90];
  struct im_stats_deff want;
  im_stats_deff_pool(set.tail_deff[0][0], 3, &want);
  CHECK_NEAR(st->deff, want.deff, 1e-12);
  CHECK_NEAR(st->deff, 6.0 / 5 * ss / (96 * 0.09) / 3, 1e-9);
  CHECK_NEAR(st->deff_df, 15, 0);
  CHECK(st->deff > 4.0);
  double x2 = 600.0 / 10 + 600.0 / 90;
  CHECK_NEAR(st->homog_chi2, x2 / st->deff, 1e-9);
  CHECK_REL(st->homog_p, im_stats_f_sf(x2 / st->deff / 2, 2, 15), 1e-9);
  /* The interval widened (or unbounded on a side). */
  CHECK(!(st->lo > lo0) && !(st->hi < hi0));
  CHECK(st->lo < lo0 || st->hi > hi0 || isnan(st->hi));
  for (int m = 0; m < 4; m++) {
    im_hist_cleanup(&pool[m]);
    for (int r = 0; r < 3; r++)
      im_hist_cleanup(&run[r][m]);
  }
}

int main(void) {
  test_hand();
  test_iid_and_blocks();
  test_pool_and_test();
  test_pct_ci();
  test_set();
  return CHECK_DONE();
}
