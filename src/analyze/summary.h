/* The figures of a run, computed from its records (docs/metrics.md §1-§3,
 * §10). Pure: no I/O, records are not modified, no global state
 * (thread-safe on distinct outputs). docs/results-schema.md documents every
 * figure and the JSON that src/report/summary_json.c writes from it.
 *
 * Which records count: the population rule of analyze/population.h, the
 * same for every figure. infermeter's own distributions (struct im_dist)
 * are read from HDR histograms (core/hist.h, 3 significant digits: each
 * percentile within 0.1 % of the exact nearest-rank value; mean, min and
 * max exact; std from bucket midpoints), and the histograms are kept, so
 * merging the histograms of several runs gives exactly the distribution of
 * their union. The vLLM block keeps vLLM's definitions over exact values.
 *
 * Undefined figures (no samples, an empty window, no SLO given) are NaN in
 * the struct; the JSON writer turns them into null with the reason. */
#ifndef INFERMETER_SUMMARY_H
#define INFERMETER_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/population.h"
#include "core/err.h"
#include "core/hist.h"
#include "record/record.h"
#include "record/rundir.h"

#define IM_MAX_PERCENTILES 8
_Static_assert(IM_MAX_PERCENTILES == IM_RUNDIR_MAX_PERCENTILES, "one limit on disk and in memory");

struct im_summary_config {
  int64_t window_start_ns;                /* end of warm-up (run-relative) */
  int64_t window_end_ns;                  /* last scheduled arrival; >= window_start_ns */
  double percentiles[IM_MAX_PERCENTILES]; /* in (0, 100], e.g. 50 90 95 99 99.9 */
  size_t n_percentiles;
  bool has_slo_ttft, has_slo_tpot, has_slo_e2el;
  double slo_ttft_ms, slo_tpot_ms, slo_e2el_ms;
  /* The metrics whose vLLM figures the table prints (vLLM's
   * --percentile-metrics): bits 1 << IM_PM_TTFT...; 0: all. */
  unsigned pct_metrics;
};
enum { IM_PM_TTFT, IM_PM_TPOT, IM_PM_ITL, IM_PM_E2EL };

/* Fills cfg with the defaults: an empty window [0, 0], percentiles 50 90 95
 * 99 99.9, no SLO. */
void im_summary_config_default(struct im_summary_config *cfg);

/* A distribution in ms, ours: nearest-rank percentiles (docs/metrics.md §2)
 * read from its histogram. n == 0: every double is NaN; std is NaN for
 * n < 2. pct[i] belongs to cfg->percentiles[i]. below: values < 0 (a clock
 * that went backwards), counted apart and in no other field. */
struct im_dist {
  uint64_t n, below;
  double mean, std, min, max; /* std: sample standard deviation */
  double pct[IM_MAX_PERCENTILES];
  /* Distribution-free 95 % CI of each percentile by order statistics
   * (docs/statistics.md, core/stats.h im_stats_pct_ci): [pct_lo, pct_hi]
   * covers the true percentile with probability pct_cov >= 0.95. Read from
   * the histogram conservatively: pct_lo is the lowest value of the bucket
   * holding the lower rank, pct_hi the highest of the bucket holding the
   * upper rank (both clamped to [min, max]). NaN where the sample is too
   * small for that side (no rank has tail probability <= 2.5 %). */
  double pct_lo[IM_MAX_PERCENTILES], pct_hi[IM_MAX_PERCENTILES];
  double pct_cov[IM_MAX_PERCENTILES];
};
#define IM_DIST_PCT_CONF 0.95

/* The histograms behind the distributions, in ns (owned by the summary). */
enum im_summary_hist {
  IM_H_TTFT, IM_H_TTFT_SCHED, IM_H_TTFA, IM_H_TPOT, IM_H_ITL, IM_H_ITL_TOKEN, IM_H_E2EL,
  IM_H_E2EL_SCHED, IM_H_DISPATCH_LAG, IM_H_QUEUE_WAIT, IM_H_CONNECT, IM_H_COUNT_
};
/* "ttft_ns", "ttft_sched_ns", ... (the keys of metrics.histograms). */
const char *im_summary_hist_name(enum im_summary_hist h);

/* vLLM's figures for one metric (benchmark_serving.py): mean, median,
 * population std, and percentiles by linear interpolation (np.percentile). */
struct im_vllm_stat {
  uint64_t n; /* samples; 0: every double is NaN */
  double mean, median, std;
  double pct[IM_MAX_PERCENTILES];
};

/* Classes of traffic (docs/metrics.md §3): user work ("measured"), and what
 * the effective rate excludes. */
enum im_traffic {
  IM_TRAFFIC_MEASURED, IM_TRAFFIC_RETRY, IM_TRAFFIC_HEALTH, IM_TRAFFIC_PROBE, IM_TRAFFIC_DUP_FAIL,
  IM_TRAFFIC_COUNT_
};
/* "measured", "retry", "health", "probe", "dup_fail". */
const char *im_traffic_name(enum im_traffic t);

struct im_summary {
  /* vLLM --save-result compatible (over successful measured requests;
   * duration from the first send to the last completion). */
  uint64_t completed, failed;
  double duration_s;
  uint64_t total_input_tokens, total_output_tokens;
  /* request_goodput: 0 when no SLO is configured (vLLM writes null then). */
  double request_throughput, request_goodput, output_throughput, total_token_throughput;
  double max_output_tokens_per_s; /* vLLM: most token chunks in one 1 s bucket */
  uint32_t max_concurrent_requests;
  struct im_vllm_stat v_ttft, v_tpot, v_itl, v_e2el;
  uint64_t aborted; /* measured logical requests whose final attempt was aborted */

  /* Ours (from hist[]). */
  struct im_hist hist[IM_H_COUNT_];
  struct im_dist ttft, ttft_sched, ttfa, tpot, itl, itl_token, e2el, e2el_sched;
  struct im_dist dispatch_lag, queue_wait, connect;
  double window_s;
  double window_request_rate, window_output_tok_rate, window_total_tok_rate;
  double scheduled_rate, dispatched_rate, completed_rate; /* per s of the window */
  uint64_t scheduled, dispatched;
  uint64_t window_completed; /* completed requests with t_last in the window */
  double concurrency_mean;   /* time-weighted over [t_start, t_last] */
  uint32_t concurrency_max;
  /* SLOs: share of measured logical requests (completed + failed + aborted)
   * meeting each, and all; NaN for an SLO not given. */
  double slo_ttft_attain, slo_tpot_attain, slo_e2el_attain, slo_all_attain;
  uint64_t slo_requests;     /* the attainments' denominator: completed + failed + aborted */
  uint64_t slo_met_ttft, slo_met_tpot, slo_met_e2el, slo_met_all; /* completed meeting it */
  uint64_t goodput_requests; /* completed in the window meeting every SLO */
  double goodput_rps;        /* per s of the window; NaN without SLOs */
  /* Counts. */
  uint64_t by_kind[IM_KIND_COUNT_];               /* every record */
  uint64_t by_kind_cancelled[IM_KIND_COUNT_];     /* ... of which the client cancelled */
  uint64_t by_error[IM_EC_COUNT_];                /* every record */
  uint64_t output_shortfall_requests;             /* ignore_eos requests short of max_tokens */
  uint64_t output_shortfall_tokens;               /* sum of requested - n_out over them */
  uint64_t output_source[IM_COUNT_SOURCE_COUNT_]; /* completed requests */
  /* Effective rate (docs/metrics.md §3), over attempts with t_dispatch in the
   * window; each attempt is in one class: health, probe, retry, dup_fail,
   * or user work. */
  double raw_qps, effective_qps, effective_ratio;
  uint64_t raw_attempts, retry_attempts, health_attempts, probe_attempts;
  uint64_t dup_fail;
  double dup_fail_mean_e2el_ms;
  /* The traffic classes of the effective rate (docs/metrics.md §3), over
   * the attempts dispatched in the window, each attempt in one class: its
   * count, share of the attempts, and latency (t_last - t_start when a
   * token arrived, else t_end - t_start): mean and p99 (exact nearest rank). */
  struct im_traffic_class {
    uint64_t count;
    double share, mean_latency_ms, p99_latency_ms;
  } traffic[IM_TRAFFIC_COUNT_];
  /* Mean latency per kind over every record of the kind: t_last - t_start
   * when a token arrived, else t_end - t_start. */
  double kind_mean_e2el_ms[IM_KIND_COUNT_];
  /* What the responses said about the prefix cache, over completed
   * requests (final attempts): usage.prompt_tokens_details.cached_tokens,
   * DeepSeek's prompt_cache_hit_tokens, llama.cpp's timings.cache_n. */
  uint64_t cache_prompt_tokens, cache_cached_tokens;
  double cache_hit_rate; /* NaN when no prompt token was reported */
};

/* Computes s over a population (analyze/population.h) built for the
 * window cfg->window_start_ns..window_end_ns. IM_INVAL when cfg is invalid
 * (n_percentiles > IM_MAX_PERCENTILES, a percentile outside (0, 100], a
 * negative SLO) or its window differs from the population's; IM_NOMEM on
 * allocation failure. *s is fully written on IM_OK only; release it with
 * im_summary_cleanup. */
enum im_err im_summary_compute_pop(const struct im_population *pop,
                                   const struct im_summary_config *cfg,
                                   struct im_summary *s) IM_WUR;
/* The same from n records (recs may be NULL when n == 0): builds the
 * population for cfg's window and computes over it. */
enum im_err im_summary_compute(const struct im_record *recs, size_t n,
                               const struct im_summary_config *cfg, struct im_summary *s) IM_WUR;
/* Frees the histograms; NULL-safe. */
void im_summary_cleanup(struct im_summary *s);
/* A distribution in ms read from a histogram in ns (nearest rank, as every
 * one of ours; cfg gives the percentiles). */
void im_dist_from_hist(struct im_dist *d, const struct im_hist *h,
                       const struct im_summary_config *cfg);
/* Whether cfg names any SLO. */
bool im_summary_has_slo(const struct im_summary_config *cfg);

#endif
