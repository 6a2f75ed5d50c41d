/* Statistics over repeated runs: see analyze/repeat.h. */
#include "analyze/repeat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/validity.h"
#include "core/stats.h"

const char *im_repeat_ci_name(enum im_repeat_ci k) {
  return k == IM_CI_POOLED ? "pooled_order_statistic" : "t";
}

static void stat_init(struct im_repeat_stat *out) {
  memset(out, 0, sizeof *out);
  out->mean = out->s = out->lo = out->hi = out->half = out->rel_width = NAN;
  out->min = out->max = out->cv = out->estimate = NAN;
  out->homog_chi2 = out->homog_df = out->homog_p = out->homog_min_expected = NAN;
  out->deff = NAN;
}

/* The finite values of v[0..n) into x; their count. */
static size_t finite_of(const double *v, size_t n, double *x) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i]))
      x[k++] = v[i];
  return k;
}

/* n, mean, min, max of the runs' values into out; the values into x. */
static void describe(const double *v, size_t n, double *x, struct im_repeat_stat *out) {
  size_t k = finite_of(v, n, x);
  out->n = k;
  if (!k)
    return;
  out->min = out->max = x[0];
  for (size_t i = 0; i < k; i++) {
    out->min = fmin(out->min, x[i]);
    out->max = fmax(out->max, x[i]);
  }
  out->mean = im_stats_mean(x, k);
  out->estimate = out->mean;
}

/* The smallest m > k with 2 t(0.975, m-1) s / sqrt(m) <= w (w: the width
 * allowed), exact up to the cap. The normal quantile gives a lower bound
 * (t > z), so the search starts there and takes a few steps. */
static size_t t_runs_needed(size_t k, double s, double w, bool *capped) {
  *capped = false;
  double z = im_stats_normal_quantile(0.5 + IM_REPEAT_CONF / 2);
  double m0 = ceil(4.0 * z * z * s * s / (w * w));
  if (!(m0 <= IM_REPEAT_RUNS_NEEDED_CAP)) {
    *capped = true;
    return IM_REPEAT_RUNS_NEEDED_CAP;
  }
  size_t m = (size_t)m0 > k + 1 ? (size_t)m0 : k + 1;
  for (; m <= IM_REPEAT_RUNS_NEEDED_CAP; m++) {
    double t = im_stats_t_quantile(0.5 + IM_REPEAT_CONF / 2, (double)(m - 1));
    if (2.0 * t * s / sqrt((double)m) <= w)
      return m;
  }
  *capped = true;
  return IM_REPEAT_RUNS_NEEDED_CAP;
}

enum im_err im_repeat_stat(const double *v, size_t n, double max_width,
                           struct im_repeat_stat *out) {
  stat_init(out);
  if (n > IM_REPEAT_MAX_RUNS)
    return IM_INVAL;
  if (!(max_width > 0))
    max_width = IM_REPEAT_MAX_WIDTH;
  double x[IM_REPEAT_MAX_RUNS];
  describe(v, n, x, out);
  size_t k = out->n;
  if (k < 2)
    return IM_OK;
  struct im_stats_mean_ci ci;
  if (im_stats_mean_ci(x, k, IM_REPEAT_CONF, &ci) != IM_OK)
    return IM_OK;
  out->s = ci.s;
  /* Clipped to the domain (no figure is negative); the width judged below
   * is the interval's own. */
  out->lo = fmax(ci.lo, 0.0);
  out->hi = ci.hi;
  out->half = ci.half;
  out->cv = out->mean != 0 ? ci.s / fabs(out->mean) : NAN;
  out->rel_width = out->mean != 0 ? 2.0 * ci.half / fabs(out->mean) : NAN;
  out->wide = !(out->rel_width <= max_width);
  /* Runs needed at this s (assuming s stays what it is). */
  if (out->wide && out->mean != 0 && isfinite(ci.s))
    out->runs_needed =
        t_runs_needed(k, ci.s, max_width * fabs(out->mean), &out->runs_needed_capped);
  return IM_OK;
}

enum im_err im_repeat_stat_pooled(double est, double lo, double hi, const uint64_t *above,
                                  const uint64_t *n, size_t k, const double *v, size_t n_runs,
                                  double max_width, struct im_repeat_stat *out) {
  return im_repeat_stat_pooled_deff(est, lo, hi, above, n, k, v, n_runs, NAN, 0.0, max_width, out);
}

enum im_err im_repeat_stat_pooled_deff(double est, double lo, double hi, const uint64_t *above,
                                       const uint64_t *n, size_t k, const double *v,
                                       size_t n_runs, double deff, double deff_df,
                                       double max_width, struct im_repeat_stat *out) {
  stat_init(out);
  if (k > IM_REPEAT_MAX_RUNS || n_runs > IM_REPEAT_MAX_RUNS)
    return IM_INVAL;
  if (!(max_width > 0))
    max_width = IM_REPEAT_MAX_WIDTH;
  double x[IM_REPEAT_MAX_RUNS];
  describe(v, n_runs, x, out);
  out->kind = IM_CI_POOLED;
  out->estimate = est;
  if (out->n >= 2) {
    out->s = im_stats_std_sample(x, out->n);
    out->cv = out->mean != 0 ? out->s / fabs(out->mean) : NAN;
  }
  out->lo = lo;
  out->hi = hi;
  out->half = (hi - lo) / 2.0;
  out->rel_width = est > 0 ? (hi - lo) / est : NAN;
  /* The runs that have values enter the test. */
  uint64_t up[IM_REPEAT_MAX_RUNS], cnt[IM_REPEAT_MAX_RUNS];
  size_t used = 0;
  for (size_t i = 0; i < k; i++)
    if (n[i]) {
      up[used] = above[i];
      cnt[used++] = n[i];
    }
  struct im_stats_homog h;
  out->deff = deff > 1.0 ? deff : (isnan(deff) ? NAN : 1.0);
  out->deff_df = isnan(deff) ? 0.0 : deff_df;
  if (used >= 2 && im_stats_homogeneity_deff(up, cnt, used, deff, out->deff_df, &h) == IM_OK) {
    out->homog_tested = true;
    out->homog_chi2 = h.chi2;
    out->homog_df = h.df;
    out->homog_p = h.p;
    out->homog_min_expected = h.min_expected;
    out->heterogeneous = h.p < IM_REPEAT_HOMOG_ALPHA;
  }
  out->wide = !(out->rel_width <= max_width);
  /* The order-statistic interval narrows as 1/sqrt(requests), and the
   * requests grow with the runs: k (w / limit)^2 runs. */
  if (out->wide && isfinite(out->rel_width) && used) {
    double m = ceil((double)used * (out->rel_width / max_width) * (out->rel_width / max_width));
    out->runs_needed_capped = !(m <= IM_REPEAT_RUNS_NEEDED_CAP);
    out->runs_needed = out->runs_needed_capped ? IM_REPEAT_RUNS_NEEDED_CAP : (size_t)m;
  } else if (out->wide && used) {
    /* A side too few requests bound: more runs than these ("> k"); the
     * missing width cannot say how many. */
    out->runs_needed = used;
    out->runs_needed_capped = true;
  }
  return IM_OK;
}

static const char *const fig_names[IM_RF_COUNT_] = {
    "request_throughput", "output_throughput", "goodput_rps", "ttft_p50_ms", "ttft_p90_ms",
    "ttft_p99_ms", "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms", "itl_p50_ms", "itl_p90_ms",
    "itl_p99_ms", "e2el_p50_ms", "e2el_p90_ms", "e2el_p99_ms", "slo_attainment", "effective_qps"};

const char *im_repeat_fig_name(enum im_repeat_fig f) {
  return (unsigned)f < IM_RF_COUNT_ ? fig_names[f] : "?";
}

bool im_repeat_fig_higher_better(enum im_repeat_fig f) {
  return f == IM_RF_REQ_TPUT || f == IM_RF_OUT_TPUT || f == IM_RF_GOODPUT || f == IM_RF_SLO ||
         f == IM_RF_EFFECTIVE;
}

void im_repeat_ref_test(const double *v, size_t n, struct im_repeat_ref *ref) {
  double value = ref->value;
  bool given = ref->given;
  memset(ref, 0, sizeof *ref);
  ref->given = given;
  ref->value = value;
  ref->ratio = ref->t = ref->df = ref->p = NAN;
  if (!given || !isfinite(value) || n > IM_REPEAT_MAX_RUNS)
    return;
  double x[IM_REPEAT_MAX_RUNS];
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i]))
      x[k++] = v[i];
  if (k && value != 0)
    ref->ratio = im_stats_mean(x, k) / value;
  if (k < 2)
    return;
  ref->tested = true;
  ref->df = (double)(k - 1);
  struct im_stats_ttest tt;
  if (im_stats_ttest_one(x, k, value, IM_REPEAT_CONF, &tt) == IM_OK) {
    ref->t = tt.t;
    ref->p = tt.p;
  } else { /* s == 0: every run gave the same value */
    ref->p = x[0] == value ? 1.0 : 0.0;
  }
  ref->significant = ref->p < 1.0 - IM_REPEAT_CONF;
}

/* Whether figure f is a tail percentile (p90 or p99 of a latency); its
 * latency (0..3) and tail (0: p90, 1: p99). */
static bool tail_of(int f, int *m, int *t) {
  if (f < IM_RF_TTFT_P50 || f > IM_RF_E2EL_P99)
    return false;
  int i = f - IM_RF_TTFT_P50;
  *m = i / 3;
  *t = i % 3 - 1;
  return *t >= 0;
}

/* The open-loop rates: throughputs and the effective request rate, which in
 * an open loop count the client's own arrivals. */
static bool is_throughput(int f) {
  return f == IM_RF_REQ_TPUT || f == IM_RF_OUT_TPUT || f == IM_RF_GOODPUT || f == IM_RF_EFFECTIVE;
}

/* The open-loop exemption of the throughputs (docs/statistics.md): every
 * run open loop at an offered rate, none oversaturated, and the runs'
 * completed / offered requests of their windows at least
 * IM_REPEAT_EXEMPT_MIN. Under those the throughputs count the client's own
 * arrivals (their spread is the Poisson noise of the schedule), not the
 * server. */
static void judge_exemption(struct im_repeat_set *set) {
  set->tput_exempt = false;
  set->exempt_why[0] = '\0';
  double off = 0, got = 0, rate = NAN;
  size_t open = 0, over = 0;
  for (size_t r = 0; r < set->runs; r++) {
    const struct im_repeat_run *ru = &set->run[r];
    open += ru->open_loop;
    over += ru->open_loop && ru->oversaturated;
    if (ru->open_loop && isfinite(ru->offered) && isfinite(ru->achieved)) {
      off += ru->offered;
      got += ru->achieved;
      rate = ru->rate;
    }
  }
  if (!set->runs || !open)
    return; /* a closed loop: the throughputs measure the server */
  double ratio = off > 0 ? got / off : NAN;
  if (open < set->runs)
    snprintf(set->exempt_why, sizeof set->exempt_why,
             "throughputs not exempt: %zu of %zu runs closed loop", set->runs - open, set->runs);
  else if (over)
    snprintf(set->exempt_why, sizeof set->exempt_why,
             "throughputs not exempt: %zu run(s) oversaturated (the server fell behind the "
             "offered %g req/s)", over, rate);
  else if (!(ratio >= IM_REPEAT_EXEMPT_MIN))
    snprintf(set->exempt_why, sizeof set->exempt_why,
             "throughputs not exempt: achieved / offered %.3f < %g (the server fell behind the "
             "offered %g req/s)", ratio, IM_REPEAT_EXEMPT_MIN, rate);
  else {
    set->tput_exempt = true;
    snprintf(set->exempt_why, sizeof set->exempt_why,
             "request, output and goodput throughputs and effective_qps exempt: open loop at "
             "%g req/s offered, "
             "achieved / offered %.3f >= %g and no run oversaturated, so their spread is the "
             "schedule's own arrival noise, not the server's", rate, ratio, IM_REPEAT_EXEMPT_MIN);
  }
}

/* The homogeneity test's counts of latency m, tail t. ITL pools every gap
 * of every request, and a request's gaps are not independent (they share
 * its batch and its host): counted as gaps, homogeneous runs would look
 * heterogeneous. Each run's counts are scaled to its requests (the TPOT
 * count), the design-effect correction at its upper bound (every gap of a
 * request alike; Rao & Scott, JASA 76, 1981): conservative. Used only
 * when no run's order is known (per_request); otherwise the estimated
 * design effect of the gaps (im_repeat_order_run) replaces it. */
static void test_counts(const struct im_repeat_set *set, int m, int t, bool per_request,
                        uint64_t *up, uint64_t *n) {
  for (size_t r = 0; r < set->runs && r < IM_REPEAT_MAX_RUNS; r++) {
    up[r] = set->tail_above[m][t][r];
    n[r] = set->tail_n[m][r];
    uint64_t units = set->tail_n[1][r]; /* TPOT: one value per request of 2+ tokens */
    if (per_request && m == 2 && units && n[r] > units) {
      up[r] = (uint64_t)llround((double)up[r] * (double)units / (double)n[r]);
      n[r] = units;
    }
  }
}

/* The value (ms) at 1-based rank r of h's sorted values: the lowest (low)
 * or highest value of the bucket holding it, within h's minimum. */
static double rank_ms(const struct im_hist *h, int64_t r, bool low) {
  int64_t v = im_hist_percentile(h, (double)r / (double)im_hist_count(h));
  if (low && r > 1) {
    int64_t b = im_hist_bucket_lowest(h, im_hist_index_of(h, v));
    v = b > im_hist_min(h) ? b : im_hist_min(h);
  }
  return (double)v / 1e6;
}

/* Latency m, tail t: the runs' design effects pooled into *d (df 0: no
 * run's order known), and when known the pooled interval widened by it. */
static void pooled_deff(const struct im_repeat_set *set, int m, int t, struct im_stats_deff *d,
                        double *lo, double *hi) {
  im_stats_deff_pool(set->tail_deff[m][t], set->runs, d);
  const struct im_hist *h = set->pool_hist ? &set->pool_hist[m] : NULL;
  int64_t n = h ? im_hist_count(h) : 0;
  struct im_stats_pct_ci ci;
  static const double tail[2] = {0.90, 0.99};
  if (!(d->df > 0) || n < 1 ||
      im_stats_pct_ci_deff(n, tail[t], IM_REPEAT_CONF, d->deff, d->df, &ci) != IM_OK)
    return;
  *lo = ci.lo_rank >= 1 ? rank_ms(h, ci.lo_rank, true) : NAN;
  *hi = ci.hi_rank <= n ? rank_ms(h, ci.hi_rank, false) : NAN;
}

/* Figure f's statistic: the pooled interval for a tail percentile when
 * every run's requests were counted against the pool (with the design
 * effect when the runs' orders are known), else the t one. */
static void figure_stat(struct im_repeat_set *set, int f) {
  struct im_repeat_stat *st = &set->stat[f];
  int m, t;
  enum im_err e;
  if (tail_of(f, &m, &t) && set->tail_counted && set->pooled[m].n) {
    const struct im_dist *d = &set->pooled[m];
    uint64_t up[IM_REPEAT_MAX_RUNS], n[IM_REPEAT_MAX_RUNS];
    struct im_stats_deff de;
    double lo = d->pct_lo[t + 1], hi = d->pct_hi[t + 1];
    pooled_deff(set, m, t, &de, &lo, &hi);
    bool known = de.df > 0;
    test_counts(set, m, t, !known, up, n);
    e = im_repeat_stat_pooled_deff(d->pct[t + 1], lo, hi, up, n, set->runs, set->values[f],
                                   set->runs, known ? de.deff : NAN, de.df, set->max_width, st);
  } else {
    e = im_repeat_stat(set->values[f], set->runs, set->max_width, st);
  }
  if (e != IM_OK)
    memset(st, 0, sizeof *st);
  if (f == IM_RF_SLO && st->hi > 1.0) /* a share: its domain is [0, 1] */
    st->hi = 1.0;
  st->exempt = set->tput_exempt && is_throughput(f);
}

void im_repeat_analyze(struct im_repeat_set *set, bool publish) {
  bool fails = false, runs_fail = false;
  if (!(set->max_width > 0))
    set->max_width = IM_REPEAT_MAX_WIDTH;
  judge_exemption(set);
  for (int f = 0; f < IM_RF_COUNT_; f++) {
    figure_stat(set, f);
    im_repeat_ref_test(set->values[f], set->runs, &set->ref[f]);
    const struct im_repeat_stat *st = &set->stat[f];
    fails |= st->n >= 2 && !st->exempt && (st->wide || st->heterogeneous);
  }
  for (size_t r = 0; r < set->runs; r++)
    runs_fail |= !set->run[r].publishable_but_repeats;
  set->repeats_status = set->runs >= IM_VALID_MIN_REPEATS ? IM_CHECK_PASS
                        : publish                          ? IM_CHECK_FAIL
                                                           : IM_CHECK_WARN;
  set->ci_status = fails ? IM_CHECK_FAIL : IM_CHECK_PASS;
  set->runs_status = runs_fail ? IM_CHECK_FAIL : IM_CHECK_PASS;
  set->publishable = set->repeats_status != IM_CHECK_FAIL && !runs_fail && !fails;
}

void im_repeat_pool(struct im_repeat_set *set, const struct im_hist pool[4]) {
  im_summary_config_default(&set->pooled_cfg);
  static const double pct[3] = {50, 90, 99};
  set->pooled_cfg.n_percentiles = 3;
  for (int i = 0; i < 3; i++)
    set->pooled_cfg.percentiles[i] = pct[i];
  for (int m = 0; m < 4; m++)
    im_dist_from_hist(&set->pooled[m], &pool[m], &set->pooled_cfg);
  set->pool_hist = pool;
}

/* Values of h strictly above q (q: a bucket's highest value, as the
 * pooled percentile is, or the pooled maximum). */
static uint64_t count_above(const struct im_hist *h, int64_t q) {
  uint64_t up = 0;
  struct im_hist_iter it;
  im_hist_iter_init(&it, h);
  while (im_hist_iter_next(&it))
    if (it.lowest > q)
      up += (uint64_t)it.count;
  return up;
}

void im_repeat_count_run(struct im_repeat_set *set, size_t r, const struct im_hist run[4],
                         const struct im_hist pool[4]) {
  if (r >= IM_REPEAT_MAX_RUNS)
    return;
  static const double tail[2] = {0.90, 0.99};
  for (int m = 0; m < 4; m++) {
    int64_t n = im_hist_count(&run[m]);
    set->tail_n[m][r] = n > 0 ? (uint64_t)n : 0;
    for (int t = 0; t < 2; t++)
      set->tail_above[m][t][r] =
          n > 0 && im_hist_count(&pool[m]) ? count_above(&run[m], im_hist_percentile(&pool[m], tail[t]))
                                           : 0;
  }
  set->tail_counted = true;
}

enum im_err im_repeat_order_run(struct im_repeat_set *set, size_t r, int m, const int64_t *v,
                                size_t n_values, const uint32_t *per, size_t units,
                                const struct im_hist *pool) {
  if (r >= IM_REPEAT_MAX_RUNS || m < 0 || m > 3 || (n_values && !v) || !pool)
    return IM_INVAL;
  size_t sum = 0;
  for (size_t j = 0; j < units; j++)
    sum += per ? per[j] : 1;
  if (sum != n_values)
    return IM_INVAL;
  int64_t np = im_hist_count(pool);
  double *a = calloc(units ? units : 1, sizeof *a), *w = calloc(units ? units : 1, sizeof *w);
  enum im_err e = a && w ? IM_OK : IM_NOMEM;
  size_t b = (size_t)ceil(pow((double)units, IM_REPEAT_DEFF_BATCH_EXP));
  static const double tail[2] = {0.90, 0.99};
  for (int t = 0; t < 2 && e == IM_OK; t++) {
    set->tail_deff[m][t][r] = (struct im_stats_deff){.deff = NAN, .df = 0.0, .p = NAN};
    if (np < 1 || !units)
      continue;
    int64_t q = im_hist_percentile(pool, tail[t]);
    size_t at = 0;
    for (size_t j = 0; j < units; j++) {
      uint32_t c = per ? per[j] : 1;
      a[j] = 0;
      w[j] = c;
      for (uint32_t i = 0; i < c; i++)
        a[j] += v[at + i] > q;
      at += c;
    }
    double p_ref = (double)count_above(pool, q) / (double)np;
    e = im_stats_design_effect(a, w, units, b ? b : 1, p_ref, &set->tail_deff[m][t][r]);
  }
  free(a);
  free(w);
  return e;
}
