/* Repeated runs of one configuration (docs/metrics.md §11,
 * docs/statistics.md): each headline figure over k independent runs with a
 * 95 % confidence interval (a Student-t interval over the runs for medians
 * and throughputs, the pooled order-statistic interval for p90 and p99
 * when the runs pass a homogeneity test), and whether the interval is
 * narrow enough to publish (width <= 8 % of the figure, the seed's rule,
 * configurable; a wider one FAILs the set). Pure: no I/O. */
#ifndef IM_ANALYZE_REPEAT_H
#define IM_ANALYZE_REPEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/summary.h"
#include "core/err.h"
#include "core/stats.h"

#define IM_REPEAT_MAX_RUNS 100
#define IM_REPEAT_CONF 0.95
#define IM_REPEAT_MAX_WIDTH 0.08 /* CI width / mean */
/* runs_needed is exact up to this many runs, else this with runs_needed_capped. */
#define IM_REPEAT_RUNS_NEEDED_CAP 10000
/* The pooled tail CI's homogeneity test rejects below this p (docs/statistics.md:
 * 8 tail figures a set, so at most 0.8 % of homogeneous sets fail one). */
#define IM_REPEAT_HOMOG_ALPHA 0.001
/* Open-loop throughputs are exempt from the CI rule when the runs'
 * completed / offered requests is at least this (the server kept up). */
#define IM_REPEAT_EXEMPT_MIN 0.95

/* Which interval a figure gets (docs/statistics.md "Which CI each figure gets"). */
enum im_repeat_ci {
  IM_CI_T,      /* Student-t over the runs' values (medians, throughputs, rates) */
  IM_CI_POOLED, /* order-statistic CI of the pooled requests (p90, p99) */
};
/* "t" or "pooled_order_statistic". */
const char *im_repeat_ci_name(enum im_repeat_ci k);

struct im_repeat_stat {
  size_t n;              /* runs with a value (undefined values left out) */
  double mean, s;        /* s: sample standard deviation (NaN for n < 2) */
  double lo, hi, half;   /* IM_CI_T: mean -+ t(0.975, n-1) s / sqrt(n), lo and hi
                            clipped to the figure's domain; IM_CI_POOLED: the
                            pooled interval, half = (hi - lo) / 2; NaN for n < 2 */
  double rel_width;      /* CI width / |estimate| (unclipped for IM_CI_T); NaN
                            when undefined */
  double min, max, cv;   /* cv = s / |mean| */
  bool wide;             /* rel_width > the limit (or undefined with n >= 2) */
  size_t runs_needed;    /* runs that would bring the width inside the limit
                            (0 when already inside or unknown): IM_CI_T from s,
                            exact up to IM_REPEAT_RUNS_NEEDED_CAP; IM_CI_POOLED
                            from the width's 1/sqrt(requests) scaling */
  bool runs_needed_capped; /* more than IM_REPEAT_RUNS_NEEDED_CAP: runs_needed
                              is the cap, printed "> cap" */
  enum im_repeat_ci kind;
  double estimate;       /* what the interval is around: mean (IM_CI_T) or the
                            pooled percentile (IM_CI_POOLED) */
  /* IM_CI_POOLED: the k-sample quantile test over the runs. */
  bool homog_tested;
  double homog_chi2, homog_df, homog_p, homog_min_expected;
  bool heterogeneous;    /* homog_p < IM_REPEAT_HOMOG_ALPHA: fails the CI rule */
  /* IM_CI_POOLED: the pooled design effect of "above the estimate" among
   * the runs' requests in time order (>= 1) and its degrees of freedom,
   * which divided the test's chi-square and widened [lo, hi]; NaN and 0
   * when no run's order was known (the uncorrected test and interval). */
  double deff, deff_df;
  bool exempt;           /* an open-loop throughput exempt from the CI rule */
};

/* The t statistic of n values (NaN values are left out); max_width <= 0:
 * IM_REPEAT_MAX_WIDTH. The bounds are clipped to [0, +inf) (every
 * headline figure is non-negative); the width judged is the unclipped one.
 * IM_INVAL when n > IM_REPEAT_MAX_RUNS. */
enum im_err im_repeat_stat(const double *v, size_t n, double max_width,
                           struct im_repeat_stat *out) IM_WUR;

/* Batches of the design effect: ceil(units^IM_REPEAT_DEFF_BATCH_EXP)
 * consecutive units of a run (docs/statistics.md "Design effect"). */
#define IM_REPEAT_DEFF_BATCH_EXP 0.6

/* The pooled order-statistic statistic of a tail percentile: est with the
 * pooled interval [lo, hi] (NaN: unbounded side), the k runs' values above
 * est (above[i] of n[i]) for the homogeneity test, the runs' own values v
 * (n_runs, for mean, s, min, max). Pure; IM_INVAL when k or n_runs >
 * IM_REPEAT_MAX_RUNS. */
enum im_err im_repeat_stat_pooled(double est, double lo, double hi, const uint64_t *above,
                                  const uint64_t *n, size_t k, const double *v, size_t n_runs,
                                  double max_width, struct im_repeat_stat *out) IM_WUR;

/* The same with the pooled design effect deff (>= 1; NaN: none known)
 * estimated with deff_df degrees of freedom: the homogeneity chi-square is
 * divided by it and judged against F(k - 1, deff_df) (core/stats.h
 * im_stats_homogeneity_deff); [lo, hi] is the caller's, already widened
 * (im_stats_pct_ci_deff). */
enum im_err im_repeat_stat_pooled_deff(double est, double lo, double hi, const uint64_t *above,
                                       const uint64_t *n, size_t k, const double *v,
                                       size_t n_runs, double deff, double deff_df,
                                       double max_width, struct im_repeat_stat *out) IM_WUR;

/* One run of a repeat set. */
struct im_repeat_run {
  char dir[4200];
  uint64_t seed;
  double start_offset_s;
  int exit;                      /* its exit status */
  /* Its schedule, for the open-loop throughput exemption (0 when unknown). */
  bool open_loop;                /* poisson, gamma or constant arrivals: an offered rate */
  bool oversaturated;            /* its saturation check found the server falling behind */
  double rate;                   /* the offered rate (req/s; NaN: closed loop) */
  double offered, achieved;      /* its window's scheduled and completed requests */
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
  /* Per run and latency: its values and how many exceed the pooled p90
   * ([0]) and p99 ([1]) (im_repeat_count_run); tail_counted once filled. */
  uint64_t tail_n[4][IM_REPEAT_MAX_RUNS];
  uint64_t tail_above[4][2][IM_REPEAT_MAX_RUNS];
  bool tail_counted;
  /* Per latency, tail and run: the design effect of "above the pooled
   * p90 / p99" in its time order (im_repeat_order_run; df 0: unknown). */
  struct im_stats_deff tail_deff[4][2][IM_REPEAT_MAX_RUNS];
  /* The pooled histograms (not owned; im_repeat_pool sets it, valid until
   * im_repeat_analyze): the design-effect-widened intervals read them. */
  const struct im_hist *pool_hist;
  /* The open-loop throughput exemption (im_repeat_analyze): whether the
   * throughputs are exempt, and why or why not ("" for a closed loop). */
  bool tput_exempt;
  char exempt_why[320];
  /* The set's audit (docs/audit.md "Repeated runs"). */
  int repeats_status;              /* enum im_check_status of analyze/validity.h */
  int ci_status;
  int runs_status;
  bool publishable;
};

/* Fills set->pooled from the merged histograms (ns; ttft, tpot, itl, e2el). */
void im_repeat_pool(struct im_repeat_set *set, const struct im_hist pool[4]);

/* Run r's values of each latency (run[4], ns) counted against the pooled
 * p90 and p99 of pool[4] into set->tail_n and set->tail_above; sets
 * set->tail_counted. A run without a histogram passes empty ones. */
void im_repeat_count_run(struct im_repeat_set *set, size_t r, const struct im_hist run[4],
                         const struct im_hist pool[4]);

/* Run r's values of latency m (0..3: ttft, tpot, itl, e2el; ns) in time
 * order of its units (requests by start): v holds the n_values values
 * of the units one unit after another, per[j] how many unit j has (NULL: one each; ITL: a
 * request's gaps). Estimates the design effect of "above the pooled p90 /
 * p99" of pool[m] into set->tail_deff[m][.][r] (core/stats.h
 * im_stats_design_effect, batches of IM_REPEAT_DEFF_BATCH_EXP). Call after
 * im_repeat_count_run's pool is final. IM_NOMEM; IM_INVAL for r or m out of
 * range or per[] not adding up to n_values. */
enum im_err im_repeat_order_run(struct im_repeat_set *set, size_t r, int m, const int64_t *v,
                                size_t n_values, const uint32_t *per, size_t units,
                                const struct im_hist *pool) IM_WUR;

/* Fills set->stat, the reference tests and the audit from set->values and
 * the runs (publish: fewer than 3 runs FAIL instead of WARN). */
void im_repeat_analyze(struct im_repeat_set *set, bool publish);

#endif
