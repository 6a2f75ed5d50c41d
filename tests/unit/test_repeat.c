/* Statistics over repeated runs (analyze/repeat.h), worked by hand. */
#include <math.h>

#include <string.h>

#include "analyze/repeat.h"
#include "check.h"
#include "core/stats.h"

static void test_stat(void) {
  struct im_repeat_stat st;
  /* k = 3: {10, 12, 14}: mean 12, s = 2, t(0.975, 2) = 4.302653,
   * half = 4.302653 * 2 / sqrt(3) = 4.968275, width 9.93655 / 12. */
  double a[3] = {10, 12, 14};
  CHECK_OK(im_repeat_stat(a, 3, 0, &st));
  CHECK_EQ(st.n, 3);
  CHECK_NEAR(st.mean, 12.0, 1e-12);
  CHECK_NEAR(st.s, 2.0, 1e-12);
  CHECK_NEAR(st.half, 4.302652729911 * 2.0 / sqrt(3.0), 1e-9);
  CHECK_NEAR(st.rel_width, 2.0 * st.half / 12.0, 1e-12);
  CHECK_NEAR(st.cv, 2.0 / 12.0, 1e-12);
  CHECK(st.wide);
  /* Runs needed at s = 2, mean 12, width <= 8 % (0.96): the smallest m
   * with 2 t(0.975, m-1) * 2 / sqrt(m) <= 0.96, checked against the
   * inequality itself on both sides. */
  CHECK(st.runs_needed > 3);
  double m = (double)st.runs_needed;
  CHECK(2.0 * 2.0 * 2.0 / sqrt(m) <= 0.96 + 1e-9 || st.runs_needed == IM_REPEAT_MAX_RUNS);
  /* k = 2: {100, 102}: s = sqrt(2), t(0.975, 1) = 12.7062. */
  double b[2] = {100, 102};
  CHECK_OK(im_repeat_stat(b, 2, 0, &st));
  CHECK_NEAR(st.half, 12.70620473617 * sqrt(2.0) / sqrt(2.0), 1e-9);
  /* k = 10, values 100..109: mean 104.5, s = 3.02765; half =
   * 2.262157 * 3.02765 / sqrt(10) = 2.16585; width 4.1 % < 8 %. */
  double c[10];
  for (int i = 0; i < 10; i++)
    c[i] = 100 + i;
  CHECK_OK(im_repeat_stat(c, 10, 0, &st));
  CHECK_NEAR(st.mean, 104.5, 1e-12);
  CHECK_NEAR(st.s, sqrt(110.0 / 12.0), 1e-12);
  CHECK_NEAR(st.half, 2.262157162799 * sqrt(110.0 / 12.0) / sqrt(10.0), 1e-9);
  CHECK(!st.wide);
  CHECK_EQ(st.runs_needed, 0);
  /* Zero variance: a CI of width 0, not wide. */
  double z[3] = {5, 5, 5};
  CHECK_OK(im_repeat_stat(z, 3, 0, &st));
  CHECK_NEAR(st.half, 0.0, 1e-12);
  CHECK(!st.wide);
  /* One run (and undefined values left out): a mean, no interval. */
  double one[3] = {7, NAN, NAN};
  CHECK_OK(im_repeat_stat(one, 3, 0, &st));
  CHECK_EQ(st.n, 1);
  CHECK_NEAR(st.mean, 7.0, 1e-12);
  CHECK(isnan(st.half));
  CHECK(!st.wide);
}

/* The set's audit: fewer than 3 runs WARN, FAIL under --publish; a run
 * that fails another check fails the set. */
static void test_set(void) {
  static struct im_repeat_set set;
  struct im_repeat_run runs[3] = {{.publishable_but_repeats = true},
                                  {.publishable_but_repeats = true},
                                  {.publishable_but_repeats = true}};
  set.run = runs;
  set.planned = set.runs = 2;
  for (int f = 0; f < IM_RF_COUNT_; f++)
    for (int r = 0; r < 3; r++)
      set.values[f][r] = 100.0 + r * 0.1;
  im_repeat_analyze(&set, false);
  CHECK_EQ(set.repeats_status, 1 /* WARN */);
  CHECK(set.publishable);
  im_repeat_analyze(&set, true);
  CHECK_EQ(set.repeats_status, 2 /* FAIL */);
  CHECK(!set.publishable);
  set.planned = set.runs = 3;
  im_repeat_analyze(&set, true);
  CHECK_EQ(set.repeats_status, 0 /* PASS */);
  CHECK_EQ(set.ci_status, 0);
  CHECK(set.publishable);
  /* A limit of 0.1 %: the 0.1 spread over 100 is too wide for it; the
   * runs needed are computed against it. */
  set.max_width = 0.001;
  im_repeat_analyze(&set, true);
  CHECK_EQ(set.ci_status, 2 /* FAIL: docs/metrics.md §11 */);
  CHECK(!set.publishable);
  CHECK(set.stat[IM_RF_REQ_TPUT].wide && set.stat[IM_RF_REQ_TPUT].runs_needed > 3);
  set.max_width = 0; /* the default, 8 % */
  im_repeat_analyze(&set, true);
  CHECK_NEAR(set.max_width, 0.08, 0);
  CHECK_EQ(set.ci_status, 0);
  runs[1].publishable_but_repeats = false;
  im_repeat_analyze(&set, true);
  CHECK(!set.publishable);
  CHECK(im_repeat_fig_higher_better(IM_RF_REQ_TPUT));
  CHECK(!im_repeat_fig_higher_better(IM_RF_TTFT_P99));
}

/* --reference: the one-sample t-test, worked by hand. With 2 degrees of
 * freedom the t distribution has a closed form,
 * P(T > t) = (1 - t / sqrt(2 + t^2)) / 2. */
static void test_reference(void) {
  /* {10, 11, 12} against 9: mean 11, s = 1, t = 2 / (1/sqrt 3) = 3.464102,
   * p = 1 - 3.464102 / sqrt(14) = 0.074180 (not significant at 5 %). */
  double a[3] = {10, 11, 12};
  struct im_repeat_ref r = {.given = true, .value = 9};
  im_repeat_ref_test(a, 3, &r);
  CHECK(r.tested);
  CHECK_NEAR(r.t, 2.0 * sqrt(3.0), 1e-12);
  CHECK_NEAR(r.df, 2.0, 0);
  CHECK_NEAR(r.p, 1.0 - 2.0 * sqrt(3.0) / sqrt(14.0), 1e-10);
  CHECK(!r.significant);
  CHECK_NEAR(r.ratio, 11.0 / 9.0, 1e-12);
  /* Against 7: t = 4 sqrt 3 = 6.928203, p = 1 - 6.928203 / sqrt(50) =
   * 0.020204: significant; a NaN run is left out (still n = 3). */
  double b[4] = {10, NAN, 11, 12};
  r = (struct im_repeat_ref){.given = true, .value = 7};
  im_repeat_ref_test(b, 4, &r);
  CHECK_NEAR(r.t, 4.0 * sqrt(3.0), 1e-12);
  CHECK_NEAR(r.p, 1.0 - 4.0 * sqrt(3.0) / sqrt(50.0), 1e-10);
  CHECK(r.significant);
  /* Below the reference: t < 0, same p by symmetry. */
  r = (struct im_repeat_ref){.given = true, .value = 15};
  im_repeat_ref_test(a, 3, &r);
  CHECK_NEAR(r.t, -4.0 * sqrt(3.0), 1e-12);
  CHECK_NEAR(r.p, 1.0 - 4.0 * sqrt(3.0) / sqrt(50.0), 1e-10);
  /* Zero variance: the difference is exact. */
  double c[3] = {5, 5, 5};
  r = (struct im_repeat_ref){.given = true, .value = 5};
  im_repeat_ref_test(c, 3, &r);
  CHECK(r.tested && isnan(r.t) && r.p == 1.0 && !r.significant);
  r = (struct im_repeat_ref){.given = true, .value = 4};
  im_repeat_ref_test(c, 3, &r);
  CHECK(r.tested && isnan(r.t) && r.p == 0.0 && r.significant);
  CHECK_NEAR(r.ratio, 1.25, 1e-12);
  /* One run: the ratio only. No reference: nothing. A zero reference: no
   * ratio, the test still runs. */
  r = (struct im_repeat_ref){.given = true, .value = 4};
  im_repeat_ref_test(c, 1, &r);
  CHECK(!r.tested && isnan(r.p) && !r.significant);
  CHECK_NEAR(r.ratio, 1.25, 1e-12);
  r = (struct im_repeat_ref){.value = 4};
  im_repeat_ref_test(c, 3, &r);
  CHECK(!r.given && !r.tested && isnan(r.ratio));
  r = (struct im_repeat_ref){.given = true, .value = 0};
  im_repeat_ref_test(a, 3, &r);
  CHECK(r.tested && isnan(r.ratio) && r.significant);
  /* Through the set. */
  static struct im_repeat_set set;
  struct im_repeat_run runs[3] = {{.publishable_but_repeats = true},
                                  {.publishable_but_repeats = true},
                                  {.publishable_but_repeats = true}};
  set.run = runs;
  set.planned = set.runs = 3;
  for (int f = 0; f < IM_RF_COUNT_; f++)
    for (int k = 0; k < 3; k++)
      set.values[f][k] = a[k];
  set.ref[IM_RF_TTFT_P99] = (struct im_repeat_ref){.given = true, .value = 7};
  im_repeat_analyze(&set, false);
  CHECK(set.ref[IM_RF_TTFT_P99].significant);
  CHECK(!set.ref[IM_RF_REQ_TPUT].given && !set.ref[IM_RF_REQ_TPUT].tested);
}

/* The pooled distributions: two runs' histograms merged. */
static void test_pool(void) {
  static struct im_repeat_set set;
  struct im_hist pool[4];
  for (int m = 0; m < 4; m++) {
    CHECK_OK(im_hist_init_default(&pool[m]));
    for (int i = 1; i <= 100; i++) /* 10 ns .. 1000 ns: exact in the histogram */
      CHECK(im_hist_record(&pool[m], 10 * i * (m + 1)));
  }
  im_repeat_pool(&set, pool);
  CHECK_EQ(set.pooled_cfg.n_percentiles, 3);
  CHECK_EQ(set.pooled[0].n, 100);
  CHECK_NEAR(set.pooled[0].pct[0], 500e-6, 1e-15); /* p50 of 10..1000 ns: rank 50 */
  /* e2el p90: rank 90 = 3600 ns, read as its bucket's top (2 ns wide there) */
  CHECK_NEAR(set.pooled[3].pct[1], 4 * 900e-6, 2e-6);
  CHECK(set.pooled[0].pct_lo[0] < set.pooled[0].pct[0] && set.pooled[0].pct_hi[0] > set.pooled[0].pct[0]);
  for (int m = 0; m < 4; m++)
    im_hist_cleanup(&pool[m]);
}

/* runs_needed exact past the old cap of 100, "> cap" past the cap; the
 * interval clipped to the domain while the width judged is its own. */
static void test_runs_needed(void) {
  struct im_repeat_stat st;
  /* {10, 20, 30}: s = 10, mean 20, 8 % = 1.6: about (2 * 1.96 * 10 / 1.6)^2
   * = 600 runs. The answer m satisfies the rule and m - 1 does not. */
  double a[3] = {10, 20, 30};
  CHECK_OK(im_repeat_stat(a, 3, 0, &st));
  CHECK(!st.runs_needed_capped);
  CHECK(st.runs_needed > 100);
  double m = (double)st.runs_needed;
  CHECK(2 * im_stats_t_quantile(0.975, m - 1) * 10 / sqrt(m) <= 1.6);
  CHECK(2 * im_stats_t_quantile(0.975, m - 2) * 10 / sqrt(m - 1) > 1.6);
  CHECK_EQ(st.runs_needed, 603);
  /* {10, 12, 14} at 0.5 %: (2 * 1.96 * 2 / 0.06)^2 = 17,074 > the cap. */
  double b[3] = {10, 12, 14};
  CHECK_OK(im_repeat_stat(b, 3, 0.005, &st));
  CHECK(st.runs_needed_capped);
  CHECK_EQ(st.runs_needed, IM_REPEAT_RUNS_NEEDED_CAP);
  /* {1, 2, 30}: mean 11, half = 4.302653 * 16.462 / sqrt(3) = 40.9: the
   * lower bound -29.9 is clipped to 0, the width stays 2 * 40.9 / 11. */
  double c[3] = {1, 2, 30};
  CHECK_OK(im_repeat_stat(c, 3, 0, &st));
  CHECK_NEAR(st.lo, 0.0, 0);
  CHECK_NEAR(st.hi, 11 + st.half, 1e-9);
  CHECK_NEAR(st.rel_width, 2 * st.half / 11, 1e-12);
  CHECK_NEAR(st.half, 4.302652729911 * sqrt(((10 * 10) + (9 * 9) + (19 * 19)) / 2.0) / sqrt(3.0),
             1e-6);
  CHECK_EQ(st.kind, IM_CI_T);
}

/* Three runs' histograms: run r records the values from[r] .. from[r] + 99
 * (ns, exact in the histogram's linear range). */
static void three_runs(struct im_repeat_set *set, const int from[3]) {
  struct im_hist run[3][4], pool[4];
  for (int m = 0; m < 4; m++) {
    CHECK_OK(im_hist_init_default(&pool[m]));
    for (int r = 0; r < 3; r++) {
      CHECK_OK(im_hist_init_default(&run[r][m]));
      for (int i = 0; i < 100; i++)
        CHECK(im_hist_record(&run[r][m], from[r] + i));
      CHECK_OK(im_hist_merge(&pool[m], &run[r][m]));
    }
  }
  im_repeat_pool(set, pool);
  for (int r = 0; r < 3; r++)
    im_repeat_count_run(set, (size_t)r, run[r], pool);
  for (int m = 0; m < 4; m++) {
    im_hist_cleanup(&pool[m]);
    for (int r = 0; r < 3; r++)
      im_hist_cleanup(&run[r][m]);
  }
}

/* The pooled order-statistic CI of p90 and p99 and its homogeneity test,
 * on fixtures whose answer is known. */
static void test_pooled(void) {
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
  /* Homogeneous: three runs of 1..100. The pooled p90 (rank 270 of 300)
   * is 90; every run has 10 values above it: chi2 = 0, p = 1. */
  const int same[3] = {1, 1, 1};
  three_runs(&set, same);
  CHECK(set.tail_counted);
  CHECK_EQ(set.tail_n[0][1], 100);
  CHECK_EQ(set.tail_above[0][0][0], 10);
  CHECK_EQ(set.tail_above[0][1][2], 1); /* p99: rank 297 = 99, one above */
  im_repeat_analyze(&set, true);
  const struct im_repeat_stat *st = &set.stat[IM_RF_TTFT_P90];
  CHECK_EQ(st->kind, IM_CI_POOLED);
  CHECK_NEAR(st->estimate, 90e-6, 1e-15);
  CHECK(st->homog_tested && !st->heterogeneous);
  CHECK_NEAR(st->homog_chi2, 0, 1e-12);
  CHECK_NEAR(st->homog_p, 1, 1e-12);
  /* The interval is the pooled distribution's (ranks of n = 300). */
  CHECK_NEAR(st->lo, set.pooled[0].pct_lo[1], 0);
  CHECK_NEAR(st->hi, set.pooled[0].pct_hi[1], 0);
  CHECK(st->lo < st->estimate && st->estimate < st->hi);
  CHECK_NEAR(st->rel_width, (st->hi - st->lo) / st->estimate, 1e-12);
  /* Medians and throughputs keep the t interval. */
  CHECK_EQ(set.stat[IM_RF_TTFT_P50].kind, IM_CI_T);
  CHECK_EQ(set.stat[IM_RF_REQ_TPUT].kind, IM_CI_T);
  /* Heterogeneous: run 3 holds 51..150. Pooled: 1..50 twice, 51..100
   * three times (250 values <= 100), then 101..150: rank 270 is 120.
   * Above 120: 0, 0 and 30 (121..150); expected 10 each (30 of 300), 90
   * not above: chi2 = (100 + 100 + 400) / 10 + (100 + 100 + 400) / 90 =
   * 66.667, df 2, p = exp(-33.333). */
  const int shifted[3] = {1, 1, 51};
  memset(set.tail_above, 0, sizeof set.tail_above);
  three_runs(&set, shifted);
  im_repeat_analyze(&set, true);
  st = &set.stat[IM_RF_TTFT_P90];
  CHECK_NEAR(st->estimate, 120e-6, 1e-15);
  CHECK_EQ(set.tail_above[0][0][2], 30);
  CHECK_NEAR(st->homog_chi2, 600.0 / 10 + 600.0 / 90, 1e-9);
  CHECK_REL(st->homog_p, exp(-(600.0 / 10 + 600.0 / 90) / 2), 1e-9);
  CHECK(st->heterogeneous);
  CHECK_EQ(set.ci_status, 2 /* FAIL */);
  CHECK(!set.publishable);
  /* ITL pools 10 gaps a request: its counts are scaled to the requests
   * (TPOT's count) before the test. Gaps above: 100, 100, 130 of 1,000
   * each, 100 requests a run: tested as 10, 10, 13 of 100: E = 11 above,
   * 89 not: chi2 = 6 / 11 + 6 / 89 (as gaps it would be 61.3). */
  for (int r = 0; r < 3; r++) {
    set.tail_n[1][r] = 100;
    set.tail_n[2][r] = 1000;
    set.tail_above[2][0][r] = r == 2 ? 130 : 100;
  }
  im_repeat_analyze(&set, true);
  st = &set.stat[IM_RF_ITL_P90];
  CHECK_NEAR(st->homog_chi2, 6.0 / 11 + 6.0 / 89, 1e-9);
  CHECK(!st->heterogeneous);
}

/* A pooled interval with an unbounded upper side (too few requests for
 * p99): wide, and "> 3 runs" rather than 0. A bounded one keeps its
 * estimate from the width: 3 runs at 16 % need 3 x 2^2 = 12. */
static void test_pooled_unbounded(void) {
  const uint64_t above[3] = {1, 1, 1}, n[3] = {100, 100, 100};
  const double v[3] = {100, 101, 102};
  struct im_repeat_stat st;
  CHECK_OK(im_repeat_stat_pooled(100, 90, NAN, above, n, 3, v, 3, 0.08, &st));
  CHECK(st.wide);
  CHECK_EQ(st.runs_needed, 3);
  CHECK(st.runs_needed_capped);
  CHECK_OK(im_repeat_stat_pooled(100, 92, 108, above, n, 3, v, 3, 0.08, &st));
  CHECK(st.wide);
  CHECK_EQ(st.runs_needed, 12);
  CHECK(!st.runs_needed_capped);
}

/* The open-loop exemption of the throughputs: judged by completed /
 * offered; never a latency. */
static void test_exemption(void) {
  static struct im_repeat_set set;
  struct im_repeat_run runs[3];
  memset(&set, 0, sizeof set);
  for (int r = 0; r < 3; r++)
    runs[r] = (struct im_repeat_run){.publishable_but_repeats = true, .open_loop = true,
                                     .rate = 2, .offered = 40, .achieved = 40};
  set.run = runs;
  set.planned = set.runs = 3;
  /* Latencies within 8 %, throughputs (Poisson counts) 30 % apart. */
  for (int f = 0; f < IM_RF_COUNT_; f++)
    for (int k = 0; k < 3; k++)
      set.values[f][k] = 100.0 + k * 0.5;
  for (int k = 0; k < 3; k++) {
    set.values[IM_RF_REQ_TPUT][k] = 1.7 + 0.3 * k;
    set.values[IM_RF_OUT_TPUT][k] = 217 + 38 * k;
  }
  im_repeat_analyze(&set, true);
  CHECK(set.tput_exempt);
  CHECK(set.stat[IM_RF_REQ_TPUT].wide && set.stat[IM_RF_REQ_TPUT].exempt);
  CHECK(!set.stat[IM_RF_TTFT_P50].exempt);
  CHECK(strstr(set.exempt_why, "achieved / offered 1.000") != NULL);
  CHECK_EQ(set.ci_status, 0);
  CHECK(set.publishable);
  /* The server fell behind: 108 of 120 completed (0.9 < 0.95). */
  runs[1].achieved = 28;
  im_repeat_analyze(&set, true);
  CHECK(!set.tput_exempt && !set.stat[IM_RF_REQ_TPUT].exempt);
  CHECK(strstr(set.exempt_why, "not exempt: achieved / offered 0.900") != NULL);
  CHECK_EQ(set.ci_status, 2);
  CHECK(!set.publishable);
  /* Oversaturated, or a closed loop: not exempt either. */
  runs[1].achieved = 40;
  runs[2].oversaturated = true;
  im_repeat_analyze(&set, true);
  CHECK(!set.tput_exempt && strstr(set.exempt_why, "oversaturated"));
  runs[2].oversaturated = false;
  for (int r = 0; r < 3; r++)
    runs[r].open_loop = false;
  im_repeat_analyze(&set, true);
  CHECK(!set.tput_exempt && set.exempt_why[0] == '\0');
  CHECK_EQ(set.ci_status, 2);
  /* A wide latency is never exempt, open loop or not. */
  for (int r = 0; r < 3; r++)
    runs[r].open_loop = true;
  for (int k = 0; k < 3; k++)
    set.values[IM_RF_ITL_P50][k] = 10.0 + 3 * k;
  im_repeat_analyze(&set, true);
  CHECK(set.tput_exempt && !set.stat[IM_RF_ITL_P50].exempt && set.stat[IM_RF_ITL_P50].wide);
  CHECK_EQ(set.ci_status, 2);
  /* SLO attainment is a share: {0.9, 0.99, 1}: mean 0.963, half 0.14,
   * the upper bound clipped to 1, the lower one kept. */
  double slo[3] = {0.9, 0.99, 1.0};
  for (int k = 0; k < 3; k++)
    set.values[IM_RF_SLO][k] = slo[k];
  im_repeat_analyze(&set, true);
  CHECK_NEAR(set.stat[IM_RF_SLO].hi, 1.0, 0);
  CHECK_NEAR(set.stat[IM_RF_SLO].lo, set.stat[IM_RF_SLO].mean - set.stat[IM_RF_SLO].half, 1e-12);
  CHECK(set.stat[IM_RF_SLO].lo > 0);
}

int main(void) {
  test_runs_needed();
  test_pooled();
  test_pooled_unbounded();
  test_exemption();
  test_stat();
  test_pool();
  test_set();
  test_reference();
  return CHECK_DONE();
}
