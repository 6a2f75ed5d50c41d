/* JSON of a run's summary (analyze/summary.h), as docs/results-schema.md
 * lays it out. Renderers only: every figure was computed by analyze/.
 * Undefined figures are null with a reason (report/jsonw.h). Each function
 * adds keys to obj, a JSON object; IM_INVAL when obj is not one, IM_NOMEM
 * when jansson could not allocate (obj may then hold some of the keys). */
#ifndef IM_REPORT_SUMMARY_JSON_H
#define IM_REPORT_SUMMARY_JSON_H

#include <jansson.h>

#include "analyze/summary.h"
#include "core/err.h"

/* vLLM's --save-result keys: duration, completed, ..., mean_ttft_ms,
 * median_ttft_ms, std_ttft_ms, p99_ttft_ms, ... for ttft, tpot, itl, e2el
 * (the percentile word as vLLM writes it: p99, p99.9, p50). */
enum im_err im_summary_vllm_json(const struct im_summary *s, const struct im_summary_config *cfg,
                                 json_t *obj) IM_WUR;
/* Ours: window, counts, rates, concurrency, latency_ms {ttft, ttft_sched,
 * ttfa, tpot, itl, itl_token, e2el, e2el_sched}, client_ms {dispatch_lag,
 * queue_wait, connect} (each {n, below_zero, mean, std, min, max, p50...}),
 * slo, kinds, errors, output, effective_rate. */
enum im_err im_summary_metrics_json(const struct im_summary *s, const struct im_summary_config *cfg,
                                    json_t *obj) IM_WUR;
/* The histograms behind our distributions, one per key "ttft_ns"... in
 * record/hist_json.h's format (exact and mergeable). */
enum im_err im_summary_hists_json(const struct im_summary *s, json_t *obj) IM_WUR;
/* {prompt_tokens, cached_tokens, hit_rate}: what the responses said about
 * the prefix cache. */
enum im_err im_summary_cache_json(const struct im_summary *s, json_t *obj) IM_WUR;

/* Adds key: {n, below_zero, mean, std, min, max, p50, ...} (ms) to parent;
 * 0, or -1 when out of memory. */
int im_dist_json(json_t *parent, const char *key, const struct im_dist *d,
                 const struct im_summary_config *cfg);

#endif
