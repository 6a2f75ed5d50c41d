/* JSON of a run's summary (analyze/summary.h): the vLLM-compatible block
 * and infermeter's own figures, laid out as docs/results-schema.md says. */
#include "report/summary_json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "record/hist_json.h"
#include "report/jsonw.h"

static int vllm_metric(json_t *obj, const char *name, const struct im_vllm_stat *v,
                       const struct im_summary_config *cfg, const char *none) {
  char key[64], word[32];
  const char *why = v->n ? NULL : none;
  snprintf(key, sizeof key, "mean_%s_ms", name);
  if (im_jw_num(obj, key, v->mean, why))
    return -1;
  snprintf(key, sizeof key, "median_%s_ms", name);
  if (im_jw_num(obj, key, v->median, why))
    return -1;
  snprintf(key, sizeof key, "std_%s_ms", name);
  if (im_jw_num(obj, key, v->std, why))
    return -1;
  for (size_t i = 0; i < cfg->n_percentiles && i < IM_MAX_PERCENTILES; i++) {
    im_jw_pct_word(cfg->percentiles[i], word, sizeof word);
    snprintf(key, sizeof key, "p%s_%s_ms", word, name);
    if (im_jw_num(obj, key, v->pct[i], why))
      return -1;
  }
  return 0;
}

enum im_err im_summary_vllm_json(const struct im_summary *s, const struct im_summary_config *cfg,
                                 json_t *obj) {
  if (!s || !cfg || !json_is_object(obj))
    return IM_INVAL;
  bool goodput = im_summary_has_slo(cfg);
  const char *no_req = s->completed ? NULL : "no completed request";
  if (im_jw_num(obj, "duration", s->duration_s, no_req) || im_jw_uint(obj, "completed", s->completed) ||
      im_jw_uint(obj, "failed", s->failed) ||
      im_jw_uint(obj, "total_input_tokens", s->total_input_tokens) ||
      im_jw_uint(obj, "total_output_tokens", s->total_output_tokens) ||
      im_jw_num(obj, "request_throughput", s->request_throughput, no_req) ||
      im_jw_num(obj, "request_goodput", goodput ? s->request_goodput : NAN, goodput ? no_req : "no SLO given") ||
      im_jw_num(obj, "output_throughput", s->output_throughput, no_req) ||
      im_jw_num(obj, "total_token_throughput", s->total_token_throughput, no_req) ||
      im_jw_num(obj, "max_output_tokens_per_s", s->max_output_tokens_per_s, no_req) ||
      im_jw_uint(obj, "max_concurrent_requests", s->max_concurrent_requests) ||
      vllm_metric(obj, "ttft", &s->v_ttft, cfg, "no completed request") ||
      vllm_metric(obj, "tpot", &s->v_tpot, cfg, "no completed request with 2 or more output tokens") ||
      vllm_metric(obj, "itl", &s->v_itl, cfg, "no completed request with 2 or more token chunks") ||
      vllm_metric(obj, "e2el", &s->v_e2el, cfg, "no completed request"))
    return IM_NOMEM;
  return IM_OK;
}

/* "pP_ci": the percentile's distribution-free 95 % interval (analyze/summary.h),
 * or null when the sample is empty or P is 100. */
static int pct_ci_json(json_t *o, const char *pkey, const struct im_dist *d, size_t i) {
  char k[48];
  snprintf(k, sizeof k, "%s_ci", pkey);
  if (isnan(d->pct_cov[i]))
    return im_jw_num(o, k, NAN, d->n ? "no interval for the maximum" : "no samples");
  json_t *c = im_jw_child(o, k);
  return !c ||
         im_jw_num(c, "lo", d->pct_lo[i], "too few samples for a lower bound at 95 %") ||
         im_jw_num(c, "hi", d->pct_hi[i], "too few samples for an upper bound at 95 %") ||
         im_jw_num(c, "coverage", d->pct_cov[i], NULL);
}

int im_dist_json(json_t *parent, const char *key, const struct im_dist *d,
                 const struct im_summary_config *cfg) {
  json_t *o = json_object();
  if (!o || json_object_set_new(parent, key, o))
    return -1;
  const char *why = d->n ? NULL : "no samples";
  if (im_jw_uint(o, "n", d->n) || im_jw_uint(o, "below_zero", d->below) ||
      im_jw_num(o, "mean", d->mean, why) ||
      im_jw_num(o, "std", d->std, d->n ? "fewer than 2 samples" : why) ||
      im_jw_num(o, "min", d->min, why) || im_jw_num(o, "max", d->max, why))
    return -1;
  for (size_t i = 0; i < cfg->n_percentiles && i < IM_MAX_PERCENTILES; i++) {
    char word[32], k[40];
    im_jw_pct_word(cfg->percentiles[i], word, sizeof word);
    snprintf(k, sizeof k, "p%s", word);
    if (im_jw_num(o, k, d->pct[i], why) || pct_ci_json(o, k, d, i))
      return -1;
  }
  return 0;
}


static int json_window(json_t *obj, const struct im_summary *s,
                       const struct im_summary_config *cfg) {
  const char *ew = s->window_s > 0 ? NULL : "empty measured window";
  json_t *w = im_jw_child(obj, "window"), *c = im_jw_child(obj, "counts"), *r = im_jw_child(obj, "rates"),
         *k = im_jw_child(obj, "concurrency");
  return !w || !c || !r || !k ||
         im_jw_int(w, "start_ns", cfg->window_start_ns) ||
         im_jw_int(w, "end_ns", cfg->window_end_ns) ||
         im_jw_num(w, "seconds", s->window_s, ew) || im_jw_uint(c, "completed", s->completed) ||
         im_jw_uint(c, "failed", s->failed) || im_jw_uint(c, "aborted", s->aborted) ||
         im_jw_uint(c, "scheduled", s->scheduled) || im_jw_uint(c, "dispatched", s->dispatched) ||
         im_jw_uint(c, "completed_in_window", s->window_completed) ||
         im_jw_num(r, "scheduled_rps", s->scheduled_rate, ew) ||
         im_jw_num(r, "dispatched_rps", s->dispatched_rate, ew) ||
         im_jw_num(r, "completed_rps", s->completed_rate, ew) ||
         im_jw_num(r, "output_tok_per_s", s->window_output_tok_rate, ew) ||
         im_jw_num(r, "total_tok_per_s", s->window_total_tok_rate, ew) ||
         im_jw_num(k, "mean", s->concurrency_mean, "no completed request spans time") || im_jw_uint(k, "max", s->concurrency_max);
}

static int json_dists(json_t *obj, const struct im_summary *s,
                      const struct im_summary_config *cfg) {
  json_t *l = im_jw_child(obj, "latency_ms"), *c = im_jw_child(obj, "client_ms");
  return !l || !c || im_dist_json(l, "ttft", &s->ttft, cfg) ||
         im_dist_json(l, "ttft_sched", &s->ttft_sched, cfg) || im_dist_json(l, "ttfa", &s->ttfa, cfg) ||
         im_dist_json(l, "tpot", &s->tpot, cfg) || im_dist_json(l, "itl", &s->itl, cfg) ||
         im_dist_json(l, "itl_token", &s->itl_token, cfg) || im_dist_json(l, "e2el", &s->e2el, cfg) ||
         im_dist_json(l, "e2el_sched", &s->e2el_sched, cfg) ||
         im_dist_json(c, "dispatch_lag", &s->dispatch_lag, cfg) ||
         im_dist_json(c, "queue_wait", &s->queue_wait, cfg) ||
         im_dist_json(c, "connect", &s->connect, cfg);
}

static int json_slo(json_t *obj, const struct im_summary *s, const struct im_summary_config *cfg) {
  const char *none = "no SLO given", *noreq = "no measured request";
  json_t *o = im_jw_child(obj, "slo"), *lim = o ? im_jw_child(o, "limits_ms") : NULL,
         *att = o ? im_jw_child(o, "attainment") : NULL;
  return !o || !lim || !att || im_jw_num(lim, "ttft", cfg->has_slo_ttft ? cfg->slo_ttft_ms : NAN, none) ||
         im_jw_num(lim, "tpot", cfg->has_slo_tpot ? cfg->slo_tpot_ms : NAN, none) ||
         im_jw_num(lim, "e2el", cfg->has_slo_e2el ? cfg->slo_e2el_ms : NAN, none) ||
         im_jw_num(att, "ttft", s->slo_ttft_attain, cfg->has_slo_ttft ? noreq : none) || im_jw_num(att, "tpot", s->slo_tpot_attain, cfg->has_slo_tpot ? noreq : none) ||
         im_jw_num(att, "e2el", s->slo_e2el_attain, cfg->has_slo_e2el ? noreq : none) || im_jw_num(att, "all", s->slo_all_attain, im_summary_has_slo(cfg) ? noreq : none) ||
         im_jw_uint(o, "goodput_requests", s->goodput_requests) ||
         im_jw_num(o, "goodput_rps", s->goodput_rps, im_summary_has_slo(cfg) ? "empty measured window" : none);
}

static int json_counts(json_t *obj, const struct im_summary *s) {
  json_t *kinds = im_jw_child(obj, "kinds"), *errs = im_jw_child(obj, "errors"), *out = im_jw_child(obj, "output"),
         *src = out ? im_jw_child(out, "source") : NULL;
  if (!kinds || !errs || !out || !src)
    return -1;
  for (int k = 0; k < IM_KIND_COUNT_; k++) {
    json_t *o = im_jw_child(kinds, im_kind_name((enum im_req_kind)k));
    if (!o || im_jw_uint(o, "count", s->by_kind[k]) ||
        im_jw_uint(o, "cancelled", s->by_kind_cancelled[k]) ||
        im_jw_num(o, "mean_latency_ms", s->kind_mean_e2el_ms[k], "no attempt of this kind"))
      return -1;
  }
  for (int e = 0; e < IM_EC_COUNT_; e++) {
    const char *name = e == IM_EC_NONE ? "none" : im_errclass_name((enum im_errclass)e);
    if (im_jw_uint(errs, name, s->by_error[e]))
      return -1;
  }
  for (int c = 0; c < IM_COUNT_SOURCE_COUNT_; c++)
    if (im_jw_uint(src, im_count_source_name((enum im_count_source)c), s->output_source[c]))
      return -1;
  return im_jw_uint(out, "shortfall_requests", s->output_shortfall_requests) ||
         im_jw_uint(out, "shortfall_tokens", s->output_shortfall_tokens);
}

/* effective_rate.classes: each traffic class's count, share and latency. */
static int traffic_json(json_t *e, const struct im_summary *s) {
  json_t *c = im_jw_child(e, "classes");
  for (int t = 0; c && t < IM_TRAFFIC_COUNT_; t++) {
    const struct im_traffic_class *k = &s->traffic[t];
    json_t *o = im_jw_child(c, im_traffic_name((enum im_traffic)t));
    if (!o || im_jw_uint(o, "count", k->count) ||
        im_jw_num(o, "share", k->share, "no attempt dispatched in the window") ||
        im_jw_num(o, "mean_latency_ms", k->mean_latency_ms, "no attempt of this class") ||
        im_jw_num(o, "p99_latency_ms", k->p99_latency_ms, "no attempt of this class"))
      return -1;
  }
  return !c;
}

static int json_effective(json_t *obj, const struct im_summary *s) {
  json_t *e = im_jw_child(obj, "effective_rate");
  const char *ew = s->window_s > 0 ? NULL : "empty measured window";
  return !e || im_jw_num(e, "raw_qps", s->raw_qps, ew) || im_jw_num(e, "effective_qps", s->effective_qps, ew) ||
         im_jw_num(e, "effective_ratio", s->effective_ratio, "no attempt dispatched in the window") ||
         im_jw_uint(e, "attempts", s->raw_attempts) || im_jw_uint(e, "retry", s->retry_attempts) ||
         im_jw_uint(e, "health", s->health_attempts) || im_jw_uint(e, "probe", s->probe_attempts) ||
         im_jw_uint(e, "dup_fail", s->dup_fail) ||
         im_jw_num(e, "dup_fail_mean_latency_ms", s->dup_fail_mean_e2el_ms, "no dup_fail attempt") ||
         traffic_json(e, s);
}

enum im_err im_summary_metrics_json(const struct im_summary *s, const struct im_summary_config *cfg,
                                    json_t *obj) {
  if (!s || !cfg || !json_is_object(obj))
    return IM_INVAL;
  if (json_window(obj, s, cfg) || json_dists(obj, s, cfg) || json_slo(obj, s, cfg) ||
      json_counts(obj, s) || json_effective(obj, s))
    return IM_NOMEM;
  return IM_OK;
}

enum im_err im_summary_hists_json(const struct im_summary *s, json_t *obj) {
  for (int i = 0; i < IM_H_COUNT_; i++) {
    json_t *j = NULL;
    if (im_hist_to_json(&s->hist[i], &j) != IM_OK ||
        json_object_set_new(obj, im_summary_hist_name((enum im_summary_hist)i), j))
      return IM_NOMEM;
  }
  return IM_OK;
}

enum im_err im_summary_cache_json(const struct im_summary *s, json_t *obj) {
  if (im_jw_uint(obj, "prompt_tokens", s->cache_prompt_tokens) ||
      im_jw_uint(obj, "cached_tokens", s->cache_cached_tokens) ||
      im_jw_num(obj, "hit_rate", s->cache_hit_rate, "no prompt tokens reported"))
    return IM_NOMEM;
  return IM_OK;
}
