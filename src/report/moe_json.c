/* metrics.moe and analyze-routing's document (contract in moe_json.h). */
#include "report/moe_json.h"

#include <math.h>
#include <string.h>

#include <jansson.h>

#include "report/jsonw.h"

/* What a scrape cannot give: per-token expert ids. */
#define JITTER_WHY                                                                          \
  "not collected: needs per-token expert ids, which only a routing trace has (infermeter " \
  "serve --routing-log FILE --routing-detail N, then infermeter analyze-routing FILE)"

static json_t *num_array(const double *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, isfinite(v[i]) ? json_real(v[i]) : json_null())) {
      json_decref(a);
      return NULL;
    }
  return a;
}

static int warning_json(json_t *o, double ref, const uint32_t *low, size_t n_low) {
  json_t *layers = json_array();
  if (!layers || json_object_set_new(o, "low_balancedness_layers", layers))
    return -1;
  for (size_t i = 0; i < n_low; i++)
    if (json_array_append_new(layers, json_integer(low[i])))
      return -1;
  char w[160];
  snprintf(w, sizeof w, "%zu layer(s) below balancedness %.2f", n_low, ref);
  return json_object_set_new(o, "warning", n_low ? json_string(w) : json_null());
}

enum im_err im_moe_scrape_json(const struct im_moe_scrape *s, double ref, const uint32_t *low,
                               size_t n_low, json_t *metrics) {
  json_t *o = im_jw_child(metrics, "moe");
  if (!o)
    return IM_NOMEM;
  if (!s->source) {
    return json_object_set_new(
               o, "not_collected",
               json_string("no expert-load metric scraped: the target exports none that "
                           "infermeter reads (the built-in server's "
                           "infermeter_sim_expert_window_imbalance / _window_g1 per layer; SGLang's "
                           "sglang:eplb_balancedness; vLLM logs EPLB balancedness but "
                           "exports no metric)"))
               ? IM_NOMEM
               : IM_OK;
  }
  bool sim = !strcmp(s->source, "infermeter_sim");
  json_t *why = im_jw_child(o, "null_reasons");
  if (!why ||
      json_object_set_new(o, "source",
                          json_string(sim ? "infermeter_sim_expert_window_imbalance and "
                                            "infermeter_sim_expert_window_g1{layer} of /metrics "
                                            "(load over the last ~128 engine steps, at each "
                                            "scrape)"
                                          : "sglang:eplb_balancedness (summary over forward "
                                            "passes, growth over the stage)")) ||
      im_jw_uint(o, "pages", s->pages) || im_jw_num(o, "balancedness_mean", s->balancedness_mean, NULL) ||
      json_object_set_new(o, "balancedness_ref", json_real(ref)) ||
      json_object_set_new(o, "jitter", json_null()) ||
      json_object_set_new(why, "jitter", json_string(JITTER_WHY)) ||
      json_object_set_new(o, "jaccard_distance", json_null()) ||
      json_object_set_new(why, "jaccard_distance", json_string(JITTER_WHY)))
    return IM_NOMEM;
  if (!sim) {
    const char *w = "not collected: SGLang's summary has no per-layer or per-expert counts";
    return json_object_set_new(o, "g1_mean", json_null()) ||
                   json_object_set_new(why, "g1_mean", json_string(w)) ||
                   json_object_set_new(o, "per_layer", json_null()) ||
                   json_object_set_new(why, "per_layer", json_string(w)) ||
                   warning_json(o, ref, low, 0)
               ? IM_NOMEM
               : IM_OK;
  }
  json_t *pl = im_jw_child(o, "per_layer");
  char sum[400];
  im_moe_scrape_summary(s, ref, n_low, sum, sizeof sum);
  if (!pl || im_jw_num(o, "g1_mean", s->g1_mean, NULL) ||
      json_object_set_new(o, "summary", json_string(sum)) ||
      json_object_set_new(o, "judged_against_chance", json_boolean(s->judged_against_chance)) ||
      im_jw_num(o, "window_picks_mean", s->chance_pages ? s->picks_mean : NAN,
                "the server exports no count of routed picks") ||
      im_jw_num(o, "chance_max_over_mean", s->chance_pages ? s->chance_max_over_mean : NAN,
                "the server exports no count of routed picks") ||
      json_object_set_new(o, "chance_factor", json_real(IM_MOE_CHANCE_FACTOR)) ||
      im_jw_uint(o, "layers_below_ref", s->below_ref) ||
      im_jw_num(o, "max_over_mean_mean", s->max_over_mean_mean, NULL) ||
      json_object_set_new(pl, "balancedness", num_array(s->balancedness, s->n_layers)) ||
      json_object_set_new(pl, "g1", num_array(s->g1, s->n_layers)) ||
      json_object_set_new(pl, "max_over_mean", num_array(s->max_over_mean, s->n_layers)) ||
      warning_json(o, ref, low, n_low))
    return IM_NOMEM;
  return IM_OK;
}

void im_moe_scrape_text(FILE *f, const struct im_moe_scrape *s, double ref, const uint32_t *low,
                        size_t n_low) {
  if (!f || !s->source)
    return;
  (void)low;
  /* The verdict (WARN or not) is the audit's moe_balance line, in the
   * same words: said once. */
  char sum[400];
  im_moe_scrape_summary(s, ref, n_low, sum, sizeof sum);
  fprintf(f, "MoE load (%s; balancedness = mean / max tokens per expert, 1 = even): %s\n",
          s->source, sum);
}

enum im_err im_kv_frag_json(const struct im_moe_scrape *s, json_t *metrics) {
  json_t *o = im_jw_child(metrics, "kv_fragmentation");
  if (!o)
    return IM_NOMEM;
  if (!s->kv_frag_pages)
    return json_object_set_new(o, "not_collected",
                               json_string("the target exports no KV fragmentation gauge (the "
                                           "built-in server's infermeter_sim_kv_fragmentation)"))
               ? IM_NOMEM
               : IM_OK;
  return json_object_set_new(o, "source", json_string("infermeter_sim_kv_fragmentation")) ||
                 im_jw_uint(o, "pages", s->kv_frag_pages) ||
                 im_jw_num(o, "mean", s->kv_frag_mean, NULL) ||
                 im_jw_num(o, "max", s->kv_frag_max, NULL)
             ? IM_NOMEM
             : IM_OK;
}

static json_t *layer_json(const struct im_moe_layer_stats *l, uint32_t index) {
  json_t *o = json_object(), *hot = json_array(), *why = json_object();
  if (!o || !hot || !why || json_object_set_new(o, "hottest", hot)) {
    json_decref(o);
    json_decref(hot);
    json_decref(why);
    return NULL;
  }
  const char *nt = "no consecutive tokens of one sequence (serve --routing-detail N)";
  if (im_jw_uint(o, "layer", index) || im_jw_uint(o, "transitions", l->transitions) ||
      im_jw_num(o, "jitter", l->jitter, NULL) ||
      im_jw_num(o, "jaccard_distance", l->jaccard_distance, NULL) ||
      im_jw_num(o, "g1_step_mean", l->g1_step_mean, NULL) ||
      im_jw_num(o, "max_over_mean_step_mean", l->max_over_mean_step_mean, NULL) ||
      im_jw_num(o, "balancedness_step_mean", l->balancedness_step_mean, NULL) ||
      im_jw_num(o, "g1_total", l->g1_total, NULL) ||
      im_jw_num(o, "balancedness_total", l->balancedness_total, NULL)) {
    json_decref(o);
    json_decref(why);
    return NULL;
  }
  if (isnan(l->jitter)) {
    json_object_set_new(why, "jitter", json_string(nt));
    json_object_set_new(why, "jaccard_distance", json_string(nt));
  }
  if (json_object_size(why))
    json_object_set_new(o, "null_reasons", why);
  else
    json_decref(why);
  for (int h = 0; h < IM_MOE_HOTTEST; h++)
    if (l->hottest_share[h] > 0)
      json_array_append_new(hot, json_pack("{s:I, s:f}", "expert", (json_int_t)l->hottest[h],
                                           "share", l->hottest_share[h]));
  return o;
}

json_t *im_moe_result_json(const struct im_moe_result *r, double ref) {
  json_t *o = json_object(), *layers = json_array(), *ser = json_array(), *low = json_array();
  if (!o || !layers || !ser || !low || json_object_set_new(o, "layers", layers) ||
      json_object_set_new(o, "series", ser) ||
      json_object_set_new(o, "low_balancedness_layers", low))
    goto oom;
  if (im_jw_uint(o, "n_layers", r->n_layers) || im_jw_uint(o, "n_experts", r->n_experts) ||
      im_jw_uint(o, "top_k", r->top_k) || im_jw_uint(o, "steps", r->steps) ||
      im_jw_uint(o, "tokens", r->tokens) || im_jw_uint(o, "sequences", r->sequences) ||
      im_jw_uint(o, "sequences_not_followed", r->sequences_not_followed) ||
      im_jw_num(o, "jitter", r->jitter, "no consecutive tokens (serve --routing-detail N)") ||
      im_jw_num(o, "jaccard_distance", r->jaccard_distance,
                "no consecutive tokens (serve --routing-detail N)") ||
      im_jw_num(o, "g1_step_mean", r->g1_step_mean, "no step counts") ||
      im_jw_num(o, "balancedness_step_mean", r->balancedness_step_mean, "no step counts") ||
      im_jw_num(o, "g1_total_mean", r->g1_total_mean, "no step counts") ||
      im_jw_num(o, "balancedness_total_mean", r->balancedness_total_mean, "no step counts") ||
      json_object_set_new(o, "balancedness_ref", json_real(ref)) ||
      im_jw_uint(o, "window_steps", r->window_steps))
    goto oom;
  for (uint32_t l = 0; l < r->n_layers; l++) {
    json_t *lj = layer_json(&r->layers[l], l);
    if (!lj || json_array_append_new(layers, lj))
      goto oom;
    if (r->layers[l].balancedness_total < ref)
      json_array_append_new(low, json_integer(l));
  }
  for (size_t i = 0; i < r->n_series; i++) {
    const struct im_moe_window *w = &r->series[i];
    json_t *p = json_object();
    if (!p || json_array_append_new(ser, p) || im_jw_uint(p, "first_step", w->first_step) ||
        im_jw_uint(p, "steps", w->steps) || im_jw_num(p, "g1_mean", w->g1_mean, NULL) ||
        im_jw_num(p, "balancedness_mean", w->balancedness_mean, NULL) ||
        im_jw_num(p, "balancedness_min", w->balancedness_min, NULL) ||
        json_object_set_new(p, "expert_share", num_array(r->heat + i * r->n_experts,
                                                         r->n_experts)))
      goto oom;
  }
  return o;
oom:
  json_decref(o);
  return NULL;
}
