/* Statistics over repeated runs: see analyze/repeat.h. */
#include "analyze/repeat.h"

#include <math.h>
#include <string.h>

#include "analyze/validity.h"
#include "core/stats.h"

enum im_err im_repeat_stat(const double *v, size_t n, double max_width,
                           struct im_repeat_stat *out) {
  memset(out, 0, sizeof *out);
  out->mean = out->s = out->lo = out->hi = out->half = out->rel_width = NAN;
  out->min = out->max = out->cv = NAN;
  if (n > IM_REPEAT_MAX_RUNS)
    return IM_INVAL;
  if (!(max_width > 0))
    max_width = IM_REPEAT_MAX_WIDTH;
  double x[IM_REPEAT_MAX_RUNS];
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(v[i]))
      x[k++] = v[i];
  out->n = k;
  if (!k)
    return IM_OK;
  out->min = out->max = x[0];
  for (size_t i = 0; i < k; i++) {
    out->min = fmin(out->min, x[i]);
    out->max = fmax(out->max, x[i]);
  }
  out->mean = im_stats_mean(x, k);
  if (k < 2)
    return IM_OK;
  struct im_stats_mean_ci ci;
  if (im_stats_mean_ci(x, k, IM_REPEAT_CONF, &ci) != IM_OK)
    return IM_OK;
  out->s = ci.s;
  out->lo = ci.lo;
  out->hi = ci.hi;
  out->half = ci.half;
  out->cv = out->mean != 0 ? ci.s / fabs(out->mean) : NAN;
  out->rel_width = out->mean != 0 ? 2.0 * ci.half / fabs(out->mean) : NAN;
  out->wide = !(out->rel_width <= max_width);
  /* Runs needed at this s: the smallest m with 2 t(0.975, m-1) s / sqrt(m)
   * <= max_width |mean| (assuming s stays what it is). */
  if (out->wide && out->mean != 0 && isfinite(ci.s)) {
    for (size_t m = k + 1; m <= IM_REPEAT_MAX_RUNS; m++) {
      double t = im_stats_t_quantile(0.5 + IM_REPEAT_CONF / 2, (double)(m - 1));
      if (2.0 * t * ci.s / sqrt((double)m) <= max_width * fabs(out->mean)) {
        out->runs_needed = m;
        break;
      }
    }
    if (!out->runs_needed)
      out->runs_needed = IM_REPEAT_MAX_RUNS;
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

void im_repeat_analyze(struct im_repeat_set *set, bool publish) {
  bool wide = false, runs_fail = false;
  if (!(set->max_width > 0))
    set->max_width = IM_REPEAT_MAX_WIDTH;
  for (int f = 0; f < IM_RF_COUNT_; f++) {
    if (im_repeat_stat(set->values[f], set->runs, set->max_width, &set->stat[f]) != IM_OK)
      memset(&set->stat[f], 0, sizeof set->stat[f]);
    im_repeat_ref_test(set->values[f], set->runs, &set->ref[f]);
    wide |= set->stat[f].n >= 2 && set->stat[f].wide;
  }
  for (size_t r = 0; r < set->runs; r++)
    runs_fail |= !set->run[r].publishable_but_repeats;
  set->repeats_status = set->runs >= IM_VALID_MIN_REPEATS ? IM_CHECK_PASS
                        : publish                          ? IM_CHECK_FAIL
                                                           : IM_CHECK_WARN;
  set->ci_status = wide ? IM_CHECK_WARN : IM_CHECK_PASS;
  set->runs_status = runs_fail ? IM_CHECK_FAIL : IM_CHECK_PASS;
  set->publishable = set->repeats_status != IM_CHECK_FAIL && !runs_fail;
}

void im_repeat_pool(struct im_repeat_set *set, const struct im_hist pool[4]) {
  im_summary_config_default(&set->pooled_cfg);
  static const double pct[3] = {50, 90, 99};
  set->pooled_cfg.n_percentiles = 3;
  for (int i = 0; i < 3; i++)
    set->pooled_cfg.percentiles[i] = pct[i];
  for (int m = 0; m < 4; m++)
    im_dist_from_hist(&set->pooled[m], &pool[m], &set->pooled_cfg);
}
