/* See report/stage_json.h. */
#include "report/timeslice_json.h"
#include "report/stage_json.h"

#include <math.h>

#include "report/analysis_json.h"
#include "report/agents_json.h"
#include "report/reasoning_json.h"
#include "report/batch_json.h"
#include "report/breakdown_json.h"
#include "report/jsonw.h"
#include "report/summary_text.h"
#include "report/summary_json.h"
#include "report/targets_json.h"

json_t *im_saturation_json(const struct im_stage_figures *f) {
  if (!f->sat_judged)
    return json_null();
  const struct im_saturation *s = &f->sat;
  json_t *o = json_object();
  if (!o || json_object_set_new(o, "oversaturated", json_boolean(s->growing)) ||
      im_jw_num(o, "inflight_slope_per_s", s->slope, "no slope") ||
      /* An exact fit has an infinite t statistic: written as a large number. */
      im_jw_num(o, "t_stat", isfinite(s->t_stat) ? s->t_stat : 1e300, NULL) ||
      im_jw_num(o, "inflight_first_third", s->first_mean, "no samples") ||
      im_jw_num(o, "inflight_last_third", s->last_mean, "no samples") ||
      json_object_set_new(o, "reason", json_string(s->reason ? s->reason : ""))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* Per loader thread: {t_s, cpu_share, dispatch_lag_max_ms, in_flight}. */
static json_t *client_series(const struct im_stage_input *in) {
  json_t *self = json_array();
  for (uint32_t k = 0; self && k < in->threads; k++) {
    json_t *t = json_array(), *cpu = json_array(), *lag = json_array(), *inf = json_array();
    json_t *o = json_pack("{s:o, s:o, s:o, s:o}", "t_s", t, "cpu_share", cpu,
                          "dispatch_lag_max_ms", lag, "in_flight", inf);
    if (!o || json_array_append_new(self, o)) {
      json_decref(self);
      return NULL;
    }
    for (size_t i = 0; i < in->n_samples; i++) {
      const struct im_client_sample *s = &in->samples[i];
      if (s->thread != k)
        continue;
      json_array_append_new(t, json_real((double)s->t / 1e9));
      json_array_append_new(cpu, isfinite(s->cpu_share) ? json_real(s->cpu_share) : json_null());
      json_array_append_new(lag, isfinite(s->lag_max_ms) ? json_real(s->lag_max_ms) : json_null());
      json_array_append_new(inf, json_integer(s->in_flight));
    }
  }
  return self;
}

static int set(json_t *o, const char *key, json_t *v) { return !v || json_object_set_new(o, key, v); }

enum im_err im_stage_json(const struct im_stage_figures *f, const struct im_stage_input *in,
                          const struct im_stage_meta *m, json_t *dst) {
  const struct im_summary_config *sc = &in->cfg;
  json_t *summary = im_jw_child(dst, "summary"), *metrics = im_jw_child(dst, "metrics");
  json_t *audit = im_jw_child(dst, "audit"), *series = im_jw_child(dst, "series");
  json_t *hists = metrics ? im_jw_child(metrics, "histograms") : NULL;
  json_t *cache = metrics ? im_jw_child(metrics, "cache_client") : NULL;
  json_t *client = metrics ? im_jw_child(metrics, "client") : NULL;
  if (!summary || !metrics || !audit || !series || !hists || !cache || !client)
    return IM_NOMEM;
  if (im_summary_vllm_json(&f->sum, sc, summary) || im_summary_metrics_json(&f->sum, sc, metrics) ||
      im_summary_hists_json(&f->sum, hists) || im_summary_cache_json(&f->sum, cache) ||
      im_client_check_json(&f->check, audit))
    return IM_NOMEM;
  if (set(metrics, "by_context", im_breakdown_context_json(&f->bd, sc)) ||
      set(metrics, "batch_means", im_batch_means_json(&f->bm)) ||
      (m->by_class && set(metrics, "by_class", im_breakdown_class_json(&f->bd, sc))) ||
      (m->sessions && set(metrics, "sessions", im_breakdown_sessions_json(&f->bd))) ||
      set(metrics, "timeslices", im_timeslices_json(&f->slices)) ||
      (f->reasoning.n && set(metrics, "reasoning", im_reasoning_json(&f->reasoning, sc))) ||
      (f->agents.turns && set(metrics, "agents", im_agents_json(&f->agents, sc))) ||
      ((f->cancel.cancelled || f->cancel.warmup) && set(metrics, "cancelled", im_cancel_json(&f->cancel, sc))) ||
      (f->models.n && set(metrics, "by_model", im_models_json(&f->models, sc))) ||
      (f->targets.n && set(metrics, "by_target", im_targets_json(&f->targets, sc))))
    return IM_NOMEM;
  if (im_analysis_json(f, sc, dst))
    return IM_NOMEM;
  if (im_jw_num(client, "elapsed_s", (double)m->elapsed_ns / 1e9, NULL) ||
      im_jw_uint(client, "scheduled", in->counters.scheduled) ||
      im_jw_uint(client, "dispatched", in->counters.dispatched) ||
      im_jw_uint(client, "attempts", in->n_recs) ||
      im_jw_num(client, "cpu_share", in->counters.cpu_share, "not measured") ||
      im_jw_uint(client, "threads", in->threads))
    return IM_NOMEM;
  if (set(series, "client", client_series(in)) || set(dst, "saturation", im_saturation_json(f)) ||
      set(dst, "t0_monotonic_ns", m->t0_mono >= 0 ? json_integer(m->t0_mono) : json_null()))
    return IM_NOMEM;
  return IM_OK;
}
