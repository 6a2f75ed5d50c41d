/* Repeated runs of one configuration (docs/metrics.md §11,
 * docs/statistics.md): each headline figure over k independent runs, its
 * mean with a Student-t 95 % confidence interval, and whether the interval
 * is narrow enough to publish (width <= 8 % of the mean, the seed's rule,
 * configurable). Pure: no I/O. */
#ifndef IM_ANALYZE_REPEAT_H
#define IM_ANALYZE_REPEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/summary.h"
#include "core/err.h"

#define IM_REPEAT_MAX_RUNS 100
#define IM_REPEAT_CONF 0.95
#define IM_REPEAT_MAX_WIDTH 0.08 /* CI width / mean */

struct im_repeat_stat {
  size_t n;              /* runs with a value (undefined values left out) */
  double mean, s;        /* s: sample standard deviation (NaN for n < 2) */
  double lo, hi, half;   /* mean -+ t(0.975, n-1) s / sqrt(n); NaN for n < 2 */
  double rel_width;      /* (hi - lo) / |mean|; NaN when undefined */
  double min, max, cv;   /* cv = s / |mean| */
  bool wide;             /* rel_width > the limit (or undefined with n >= 2) */
  size_t runs_needed;    /* runs that would bring the width inside the limit,
                            from s (0 when already inside or unknown; capped
                            at IM_REPEAT_MAX_RUNS) */
};

/* The statistic of n values (NaN values are left out); max_width <= 0:
 * IM_REPEAT_MAX_WIDTH. IM_INVAL when n > IM_REPEAT_MAX_RUNS. */
enum im_err im_repeat_stat(const double *v, size_t n, double max_width,
                           struct im_repeat_stat *out) IM_WUR;

/* One run of a repeat set. */
struct im_repeat_run {
  char dir[4200];
  uint64_t seed;
  double start_offset_s;
  int exit;                      /* its exit status */
  bool publishable_but_repeats;  /* its audit has no FAIL but (maybe) `repeats` */
  char fails[200];               /* its other failing checks, comma-separated */
};

/* The headline figures (docs/statistics.md). */
enum im_repeat_fig {
  IM_RF_REQ_TPUT, IM_RF_OUT_TPUT, IM_RF_GOODPUT, IM_RF_TTFT_P50, IM_RF_TTFT_P90, IM_RF_TTFT_P99,
  IM_RF_TPOT_P50, IM_RF_TPOT_P90, IM_RF_TPOT_P99, IM_RF_ITL_P50, IM_RF_ITL_P90, IM_RF_ITL_P99,
  IM_RF_E2EL_P50, IM_RF_E2EL_P90, IM_RF_E2EL_P99, IM_RF_SLO, IM_RF_EFFECTIVE, IM_RF_COUNT_
};
/* Its key ("request_throughput", "ttft_p99_ms", ...) and whether higher is better. */
const char *im_repeat_fig_name(enum im_repeat_fig f);
bool im_repeat_fig_higher_better(enum im_repeat_fig f);

/* The one-sample t-test of a figure's runs against a reference value
 * (--reference; docs/statistics.md): t = (mean - value) / (s / sqrt(n)),
 * two-sided p with n - 1 degrees of freedom. With s = 0 the difference is
 * exact: t is NaN and p is 1 when mean == value, else 0. */
struct im_repeat_ref {
  bool given;        /* a reference value for this figure */
  double value;
  bool tested;       /* given and n >= 2 */
  double ratio;      /* mean / value (NaN when value == 0) */
  double t, df, p;   /* NaN when not tested (t also when s == 0) */
  bool significant;  /* p < 1 - IM_REPEAT_CONF */
};

/* Tests stat's runs (v: n values, NaN left out) against ref->value; fills
 * the rest of *ref. Pure. */
void im_repeat_ref_test(const double *v, size_t n, struct im_repeat_ref *ref);

struct im_repeat_set {
  size_t planned, runs;
  const struct im_repeat_run *run; /* runs of them (not owned) */
  double values[IM_RF_COUNT_][IM_REPEAT_MAX_RUNS]; /* NaN: undefined in that run */
  struct im_repeat_stat stat[IM_RF_COUNT_];
  /* --reference: set ref[f].given and .value before im_repeat_analyze,
   * which does the tests. */
  struct im_repeat_ref ref[IM_RF_COUNT_];
  const char *ref_source; /* where the references came from (not owned); NULL: none */
  double max_width;       /* the CI width / mean limit (<= 0: IM_REPEAT_MAX_WIDTH) */
  /* The pooled histograms' distributions (every run's requests): ttft,
   * tpot, itl, e2el with p50, p90, p99 and their order-statistic CIs
   * (pooled_cfg's percentiles). */
  struct im_dist pooled[4];
  struct im_summary_config pooled_cfg;
  /* The set's audit (docs/audit.md "Repeated runs"). */
  int repeats_status;              /* enum im_check_status of analyze/validity.h */
  int ci_status;
  int runs_status;
  bool publishable;
};

/* Fills set->pooled from the merged histograms (ns; ttft, tpot, itl, e2el). */
void im_repeat_pool(struct im_repeat_set *set, const struct im_hist pool[4]);

/* Fills set->stat, the reference tests and the audit from set->values and
 * the runs (publish: fewer than 3 runs FAIL instead of WARN). */
void im_repeat_analyze(struct im_repeat_set *set, bool publish);

#endif
