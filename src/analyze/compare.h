/* A/B comparison of one figure over repeated runs (docs/statistics.md,
 * docs/metrics.md §11 "compare"). Pure: no I/O, no allocation, no global
 * state; safe from any thread.
 *
 * Welch's t-test on log(metric): with Δ = mean(log B) - mean(log A), SE its
 * standard error and ν the Welch-Satterthwaite degrees of freedom, the ratio
 * B/A is exp(Δ) (the ratio of the geometric means) and its interval
 * exp(Δ ± t(0.975, ν) SE). A change is called only when p < alpha and the
 * whole interval lies outside the noise band [1 - noise, 1 + noise], and
 * only with at least IM_CMP_MIN_RUNS runs on each side. im_cmp_runs judges
 * every figure of a comparison as one family: p is replaced by Holm's
 * adjusted p-value (core/stats.h im_stats_holm) before the verdict. */
#ifndef IM_ANALYZE_COMPARE_H
#define IM_ANALYZE_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "record/headline.h"

/* Fewer runs than this on either side: the ratio (and, from 2 runs, its
 * interval) is given, but no change is called. */
#define IM_CMP_MIN_RUNS 3

enum im_cmp_verdict {
  IM_CMP_NO_CHANGE, /* p >= alpha, or the interval reaches into the noise band */
  IM_CMP_IMPROVED,  /* changed, in the better direction */
  IM_CMP_REGRESSED, /* changed, in the worse direction */
  IM_CMP_TOO_FEW,   /* fewer than IM_CMP_MIN_RUNS runs on a side: not called */
  IM_CMP_UNDEFINED, /* a side has no usable value (missing, zero or negative) */
};

/* "no change", "improved", "regressed", "too few runs", "n/a". */
const char *im_cmp_verdict_name(enum im_cmp_verdict v);

struct im_cmp_opts {
  double noise; /* half-width of the noise band as a fraction (0.02: ±2 %) */
  double alpha; /* significance level (0.05) */
  bool higher_is_better;
};

struct im_cmp_result {
  size_t n_a, n_b;       /* values used (finite and > 0) */
  double mean_a, mean_b; /* arithmetic means of the values (for display) */
  double ratio;          /* exp(Δ); NaN when UNDEFINED */
  double lo, hi;         /* its interval; NaN with fewer than 2 runs on a side */
  double df;             /* ν; INFINITY when both sides have zero variance */
  double p;              /* two-sided p-value; NaN with fewer than 2 runs on a side */
  double p_holm;         /* Holm-adjusted over the comparison's tested figures
                            (im_cmp_runs only; NaN when not tested) */
  enum im_cmp_verdict verdict;
  const char *why; /* static text for TOO_FEW and UNDEFINED, else NULL */
};

/* Compares the n_a values of side A with the n_b values of side B.
 * Values that are NaN, infinite, zero or negative are skipped (a log ratio
 * needs positive values) and not counted in n_a, n_b.
 * Zero variance on both sides (deterministic runs): SE = 0; the interval
 * collapses to the ratio, p = 1 when the means of the logs are equal and
 * 0 otherwise, ν = INFINITY.
 * IM_INVAL when opts is out of domain (noise outside [0, 1), alpha outside
 * (0, 1)) or an array is NULL with a non-zero count. */
enum im_err im_cmp_figure(const double *a, size_t n_a, const double *b, size_t n_b,
                          const struct im_cmp_opts *opts, struct im_cmp_result *out) IM_WUR;

/* Direction of a headline figure: throughputs, goodput, SLO attainment and
 * the effective rate are better higher; latencies (TTFT, TPOT, ITL, E2EL
 * percentiles) are better lower. */
bool im_cmp_higher_is_better(enum im_headline_fig f);

/* Every headline figure of every stage, side A (the baseline) against B. */
struct im_cmp_stage {
  char label[160];
  struct im_cmp_result fig[IM_FIG_COUNT];
};
struct im_cmp_report {
  size_t runs_a, runs_b;
  double noise, alpha;
  size_t n_stages;
  bool any_improved, any_regressed;
  size_t tests; /* figures tested (Holm's m): at least IM_CMP_MIN_RUNS runs a side, p defined */
  struct im_cmp_stage stage[IM_HEADLINE_MAX_STAGES];
};

/* Compares runs A[0..n_a) with B[0..n_b) stage by stage (same index), then
 * corrects for multiplicity: every tested figure of every stage is one
 * family, a change is called only when its Holm-adjusted p (p_holm) is
 * below alpha and its interval lies outside the noise band (the interval
 * itself stays the per-figure 95 % one).
 * IM_INVAL (with a message naming the run) when the runs do not all have
 * the same number of stages, a side is empty, or noise/alpha are out of
 * domain; IM_LIMIT with more than IM_HEADLINE_MAX_RUNS runs on a side. out is
 * caller-owned (about 104 KiB: keep it on the heap). */
enum im_err im_cmp_runs(const struct im_headline *a, size_t n_a, const struct im_headline *b,
                        size_t n_b, double noise, double alpha, struct im_cmp_report *out,
                        char *msg, size_t msg_len) IM_WUR;

#endif
