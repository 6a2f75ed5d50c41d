/* The figures of a run, computed from its records (docs/metrics.md §1-§3, §10).
 * Pure: no I/O, records are not modified, no global state (thread-safe on
 * distinct outputs). docs/results-schema-summary.md documents every figure
 * and the JSON written from it.
 *
 * Which records count (docs/metrics.md is silent on the grouping; our rule):
 *   - Attempts of kind measured, retry, aborted and warmup are grouped into
 *     logical requests by logical_id (id when logical_id is 0). A group that
 *     holds a warmup record is a warm-up request and is left out of every
 *     latency and vLLM figure.
 *   - The group's final attempt is the one with the highest attempt number.
 *     It decides the outcome, once per logical request: kind aborted ->
 *     aborted; error IM_EC_NONE and at least one token chunk -> completed;
 *     anything else -> failed.
 *   - A completed request's latencies come from its final attempt (ttft,
 *     e2el, tpot, itl from that attempt's t_start); the user-visible
 *     ttft_sched / e2el_sched count from t_sched_first, the first attempt's
 *     schedule (falling back to the first attempt's t_sched, then the final
 *     attempt's t_sched, when t_sched_first is absent).
 *   - Health and probe records take part only in by_kind, by_error, the
 *     effective rate and kind_mean_e2el_ms.
 *
 * Undefined figures (no samples, an empty window, no SLO given) are NaN in
 * the struct and null in JSON; JSON never holds NaN or infinity. */
#ifndef INFERMETER_SUMMARY_H
#define INFERMETER_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "record/record.h"

#define IM_MAX_PERCENTILES 8

struct im_summary_config {
  int64_t window_start_ns;                /* end of warm-up (run-relative) */
  int64_t window_end_ns;                  /* last scheduled arrival; >= window_start_ns */
  double percentiles[IM_MAX_PERCENTILES]; /* in (0, 100], e.g. 50 90 95 99 99.9 */
  size_t n_percentiles;
  bool has_slo_ttft, has_slo_tpot, has_slo_e2el;
  double slo_ttft_ms, slo_tpot_ms, slo_e2el_ms;
};

/* Fills cfg with the defaults: an empty window [0, 0], percentiles 50 90 95
 * 99 99.9, no SLO. */
void im_summary_config_default(struct im_summary_config *cfg);

/* A distribution in ms, ours: nearest-rank percentiles (docs/metrics.md §2).
 * n == 0: every double is NaN; std is NaN for n < 2. pct[i] belongs to
 * cfg->percentiles[i]. */
struct im_dist {
  uint64_t n;
  double mean, std, min, max; /* std: sample standard deviation */
  double pct[IM_MAX_PERCENTILES];
};

/* vLLM's figures for one metric (benchmark_serving.py): mean, median,
 * population std, and percentiles by linear interpolation (np.percentile). */
struct im_vllm_stat {
  uint64_t n; /* samples; 0: every double is NaN */
  double mean, median, std;
  double pct[IM_MAX_PERCENTILES];
};

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

  /* Ours. */
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
  uint64_t goodput_requests; /* completed in the window meeting every SLO */
  double goodput_rps;        /* per s of the window; NaN without SLOs */
  /* Counts. */
  uint64_t by_kind[IM_KIND_COUNT_];               /* every record */
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
  /* Mean latency per kind over every record of the kind: t_last - t_start
   * when a token arrived, else t_end - t_start. */
  double kind_mean_e2el_ms[IM_KIND_COUNT_];
};

/* Computes s from n records (recs may be NULL when n == 0). IM_INVAL when
 * cfg is invalid (n_percentiles > IM_MAX_PERCENTILES, a percentile outside
 * (0, 100], a window that ends before it starts, a negative SLO); IM_NOMEM
 * on allocation failure. *s is fully written on IM_OK only. */
enum im_err im_summary_compute(const struct im_record *recs, size_t n,
                               const struct im_summary_config *cfg, struct im_summary *s) IM_WUR;

struct json_t;
/* Adds the vLLM-named keys (duration, completed, ..., mean_ttft_ms,
 * median_ttft_ms, std_ttft_ms, p99_ttft_ms, ... for ttft, tpot, itl, e2el;
 * the percentile word as vLLM writes it: p99, p99.9, p50) to obj, a JSON
 * object. IM_NOMEM on allocation failure (obj may then hold some keys). */
enum im_err im_summary_vllm_json(const struct im_summary *s, const struct im_summary_config *cfg,
                                 struct json_t *obj) IM_WUR;
/* Adds ours to obj, a JSON object: window, counts, rates, concurrency,
 * latency_ms {ttft, ttft_sched, ttfa, tpot, itl, itl_token, e2el,
 * e2el_sched}, client_ms {dispatch_lag, queue_wait, connect} (each {n, mean,
 * std, min, max, p50, ...}), slo, kinds, errors, output, effective_rate.
 * Layout in docs/results-schema-summary.md. IM_NOMEM as above. */
enum im_err im_summary_metrics_json(const struct im_summary *s, const struct im_summary_config *cfg,
                                    struct json_t *obj) IM_WUR;

#endif
