/* results.json pieces of the server and machine figures (contract in
 * server_json.h). Key names and order are those results.json has always
 * had (docs/results-schema.md); scripts read them. */
#include "report/scraped_json.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "analyze/machine.h"

static json_t *num(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

/* o when ok, else NULL (o released). */
static json_t *done(json_t *o, bool ok) {
  if (!ok) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* Sets key to v in o; false when v is NULL (out of memory). */
static bool put(json_t *o, const char *key, json_t *v) {
  return v && json_object_set_new(o, key, v) == 0;
}

/* o[key] = the window's histogram {"le_ms", "cumulative", "count"} (the
 * +Inf bucket as count), when the page had it. */
static bool window_hist(json_t *o, const char *key, const struct im_series_hist *h) {
  if (!h->n)
    return true;
  json_t *le = json_array(), *cum = json_array();
  double total = h->count;
  bool ok = le && cum;
  for (size_t i = 0; ok && i < h->n; i++) {
    if (isinf(h->b[i].le)) {
      total = h->b[i].count;
      continue;
    }
    ok = json_array_append_new(le, json_real(h->b[i].le * 1e3)) == 0 &&
         json_array_append_new(cum, json_real(h->b[i].count)) == 0;
  }
  json_t *v = ok ? json_pack("{s:o, s:o, s:o}", "le_ms", le, "cumulative", cum, "count",
                             num(total))
                 : NULL;
  if (!v) {
    if (!ok) {
      json_decref(le);
      json_decref(cum);
    }
    return false;
  }
  return put(o, key, v);
}

static bool source_window(json_t *o, const struct im_server_source_figs *f) {
  const struct {
    const char *key;
    double v;
  } figs[] = {{"kv_cache_usage_mean", f->kv_cache_usage_mean},
              {"kv_cache_usage_max", f->kv_cache_usage_max},
              {"prefix_cache_hit_rate", f->prefix_cache_hit_rate},
              {"waiting_max", f->waiting_max},
              {"running_max", f->running_max},
              {"preemptions", f->preemptions},
              {"prompt_tokens", f->prompt_tokens},
              {"generation_tokens", f->generation_tokens},
              {"server_ttft_p50_ms", f->server_ttft_p50_ms},
              {"server_ttft_p99_ms", f->server_ttft_p99_ms},
              {"client_ttft_p50_ms", f->client_ttft_p50_ms},
              {"client_ttft_p99_ms", f->client_ttft_p99_ms},
              {"ttft_gap_p50_ms", f->ttft_gap_p50_ms},
              {"server_itl_p50_ms", f->server_itl_p50_ms},
              {"server_itl_p99_ms", f->server_itl_p99_ms},
              {"kv_usage_hit_rate_r", f->kv_usage_hit_rate_r},
              {"kv_cache_capacity_tokens", f->kv_cache_capacity_tokens},
              {"kv_residency", f->kv_residency},
              {"kv_residency_max", f->kv_residency_max}};
  bool ok = true;
  for (size_t i = 0; ok && i < sizeof figs / sizeof figs[0]; i++)
    ok = put(o, figs[i].key, num(figs[i].v));
  if (ok && f->kv_residency_reason)
    ok = put(o, "kv_residency_reason", json_string(f->kv_residency_reason));
  ok = ok && put(o, "kv_residency_ref", num(f->kv_residency_ref));
  ok = ok && window_hist(o, "server_ttft_histogram", &f->ttft_window) &&
       window_hist(o, "server_itl_histogram", &f->itl_window);
  json_t *per = json_array();
  for (size_t i = 0; ok && per && i < f->n_per_series; i++) {
    const struct im_series_labelled *l = &f->per_series[i];
    ok = json_array_append_new(per, json_pack("{s:s, s:s, s:s, s:o}", "concept", l->concept, "engine",
                                              l->engine, "key", l->key, "value", num(l->value))) == 0;
  }
  ok = put(o, "per_series", per) && ok;
  if (ok && f->n_unmapped) {
    json_t *raw = json_object();
    for (size_t i = 0; raw && i < f->n_unmapped; i++)
      json_object_set_new(raw, f->unmapped[i].metric, num(f->unmapped[i].value));
    ok = put(o, "unmapped", raw);
  }
  if (ok && f->n_nulls) {
    json_t *why = json_object();
    for (size_t i = 0; why && i < f->n_nulls; i++)
      json_object_set_new(why, f->nulls[i].key, json_string(f->nulls[i].why));
    ok = put(o, "null_reasons", why);
  }
  return ok;
}

static json_t *source_json(const struct im_server_source_figs *f) {
  json_t *o = json_object(), *eng = json_array();
  bool ok = o && eng;
  for (size_t i = 0; ok && i < f->n_engines; i++)
    ok = json_array_append_new(eng, json_string(f->engines[i])) == 0;
  ok = ok && put(o, "url", json_string(f->url)) &&
       put(o, "scrapes", json_integer((json_int_t)f->scrapes)) &&
       put(o, "failed_scrapes", json_integer((json_int_t)f->failed_scrapes)) &&
       put(o, "malformed_lines", json_integer((json_int_t)f->malformed_lines)) &&
       put(o, "counter_resets", json_integer((json_int_t)f->counter_resets));
  ok = ok && put(o, "engines", eng);
  if (!ok)
    json_decref(eng);
  eng = NULL;
  if (ok && f->not_collected[0])
    ok = put(o, "not_collected", json_string(f->not_collected));
  else if (ok)
    ok = source_window(o, f);
  return done(o, ok);
}

static json_t *tcp_json(const struct im_server_tcp_figs *t) {
  json_t *o = json_object();
  bool ok = o && put(o, "connections_opened", json_integer((json_int_t)t->connections_opened)) &&
            put(o, "requests_per_connection", num(t->requests_per_connection));
  if (ok && t->not_collected[0])
    ok = put(o, "not_collected", json_string(t->not_collected));
  else if (ok)
    ok = put(o, "samples", json_integer((json_int_t)t->samples)) &&
         put(o, "path", json_string(t->procfs ? "procfs" : "netlink")) &&
         put(o, "time_wait_max", json_integer(t->time_wait_max)) &&
         put(o, "time_wait_growth_per_s", num(t->time_wait_growth_per_s)) &&
         put(o, "established_max", json_integer(t->established_max)) &&
         put(o, "time_wait_growing", json_boolean(t->time_wait_growing)) &&
         (!t->warning || put(o, "warning", json_string(t->warning)));
  return done(o, ok);
}

static json_t *gpu_json(const struct im_server_gpu_figs *g) {
  json_t *o = json_object();
  if (!o || g->not_available[0])
    return done(o, o && put(o, "not_available", json_string(g->not_available)));
  json_t *used = g->has_mem ? json_integer((json_int_t)g->memory_used_max_bytes) : json_null();
  json_t *total = g->has_mem ? json_integer((json_int_t)g->memory_total_bytes) : json_null();
  bool ok = put(o, "gpus", json_integer(g->gpus)) && put(o, "memory_used_max_bytes", used);
  ok = put(o, "memory_total_bytes", total) && ok;
  ok = ok && put(o, "dram_bw_util_mean", num(g->dram_bw_util_mean)) &&
       put(o, "dram_bw_util_max", num(g->dram_bw_util_max)) &&
       put(o, "dram_bw_util_ref", num(g->dram_bw_util_ref)) &&
       put(o, "tensor_active_mean", num(g->tensor_active_mean)) &&
       put(o, "sm_active_mean", num(g->sm_active_mean)) &&
       put(o, "power_w_mean", num(g->power_w_mean)) && put(o, "energy_j", num(g->energy_j)) &&
       put(o, "energy_source", json_string(im_gpu_energy_source_name(g->energy_source))) &&
       put(o, "tokens_per_joule", num(g->tokens_per_joule));
  return done(o, ok);
}

/* Adds parallel arrays to o, one per name (NULL o: a new object); NULL
 * when out of memory (o is released). */
static json_t *columns(json_t *o, const char *const *names, size_t n, json_t **cols) {
  bool ok = o != NULL;
  for (size_t i = 0; i < n; i++) {
    cols[i] = json_array();
    ok = ok && put(o, names[i], cols[i]);
  }
  return done(o, ok);
}

static json_t *source_series(const struct im_server_source_figs *f) {
  static const char *const names[] = {"t_s", "kv_cache_usage", "requests_running", "requests_waiting",
                                      "prefix_cache_hit_rate", "preemptions", "generation_tokens_per_s"};
  json_t *c[7], *o = json_object();
  if (o && !put(o, "url", json_string(f->url))) {
    json_decref(o);
    o = NULL;
  }
  o = columns(o, names, 7, c);
  for (size_t i = 0; o && i < f->n_series; i++) {
    const struct im_server_series_pt *p = &f->series[i];
    const double v[7] = {p->t_s, p->kv_cache_usage, p->requests_running, p->requests_waiting,
                         p->prefix_cache_hit_rate, p->preemptions, p->generation_tokens_per_s};
    for (int k = 0; k < 7; k++)
      json_array_append_new(c[k], num(v[k]));
  }
  return o;
}

static json_t *tcp_series(const struct im_server_tcp_figs *t) {
  static const char *const names[] = {"t_s", "established", "time_wait", "close_wait", "syn_sent",
                                      "fin_wait"};
  json_t *c[6], *o = columns(json_object(), names, 6, c);
  for (size_t i = 0; o && i < t->n_series; i++) {
    const struct im_server_tcp_series_pt *p = &t->series[i];
    json_array_append_new(c[0], num(p->t_s));
    json_array_append_new(c[1], json_integer(p->established));
    json_array_append_new(c[2], json_integer(p->time_wait));
    json_array_append_new(c[3], json_integer(p->close_wait));
    json_array_append_new(c[4], json_integer(p->syn_sent));
    json_array_append_new(c[5], json_integer(p->fin_wait));
  }
  return o;
}

static json_t *gpu_series(const struct im_server_gpu_figs *g) {
  static const char *const names[] = {"t_s", "memory_used_bytes", "power_w", "dram_bw_util",
                                      "gpu_util_percent"};
  json_t *c[5], *o = columns(json_object(), names, 5, c);
  for (size_t i = 0; o && i < g->n_series; i++) {
    const struct im_server_gpu_series_pt *p = &g->series[i];
    const double v[5] = {p->t_s, p->memory_used_bytes, p->power_w, p->dram_bw_util, p->gpu_util_percent};
    for (int k = 0; k < 5; k++)
      json_array_append_new(c[k], num(v[k]));
  }
  return o;
}

enum im_err im_server_json(const struct im_server_figures *f, json_t *metrics, json_t *series) {
  if (!f || !metrics || !series)
    return IM_INVAL;
  json_t *servers = json_array(), *sseries = json_array();
  bool ok = servers && sseries;
  for (size_t i = 0; ok && i < f->n_src; i++)
    ok = json_array_append_new(servers, source_json(&f->src[i])) == 0 &&
         json_array_append_new(sseries, source_series(&f->src[i])) == 0;
  /* metrics.server is the target's page; every page is under servers. */
  json_t *first = ok ? json_array_get(servers, 0) : NULL;
  if (ok && first)
    ok = json_object_set(metrics, "server", first) == 0;
  else if (ok)
    ok = put(metrics, "server", json_pack("{s:s}", "not_collected", "no --scrape URL"));
  ok = ok && put(metrics, "servers", servers);
  servers = NULL;
  ok = ok && put(metrics, "tcp", tcp_json(&f->tcp)) && put(metrics, "gpu", gpu_json(&f->gpu)) &&
       put(series, "server", sseries);
  sseries = NULL;
  ok = ok && put(series, "tcp", tcp_series(&f->tcp));
  if (ok && f->gpu.sampled)
    ok = put(series, "gpu", gpu_series(&f->gpu));
  json_decref(servers);
  json_decref(sseries);
  return ok ? IM_OK : IM_NOMEM;
}

enum im_err im_client_series_json(const struct im_series_set *s, uint32_t stage, uint32_t threads,
                                  json_t **out) {
  static const char *const names[] = {"t_s", "cpu_share", "dispatch_lag_max_ms", "in_flight"};
  json_t *arr = json_array();
  bool ok = arr != NULL;
  for (uint32_t k = 0; ok && k < threads; k++) {
    json_t *c[4], *o = columns(json_object(), names, 4, c);
    ok = o && json_array_append_new(arr, o) == 0;
    for (size_t i = 0; ok && i < s->n_client; i++) {
      const struct im_series_client *p = &s->client[i];
      if (p->stage != stage || p->thread != k)
        continue;
      json_array_append_new(c[0], num((double)p->t / 1e9));
      json_array_append_new(c[1], num(p->cpu_share));
      json_array_append_new(c[2], num(p->dispatch_lag_max_ms));
      json_array_append_new(c[3], json_integer((json_int_t)p->in_flight));
    }
  }
  if (!ok) {
    json_decref(arr);
    arr = NULL;
  }
  *out = arr;
  return ok ? IM_OK : IM_NOMEM;
}

/* The engines' own tokens/s gauges, kept among the unmapped samples
 * (docs/server-metrics.md "Everything else"): shown as the server reported
 * them, beside the rates infermeter computes from the token counters, which
 * they do not replace (llama.cpp's are its averages over the time it spent
 * processing, not rates over the window). Names as llama.cpp b10587 exports
 * them (tests/fixtures/metrics/llamacpp_b10587.prom). */
static const struct {
  const char *metric, *what;
} own_rates[] = {
    {"llamacpp:predicted_tokens_seconds", "generation"},
    {"llamacpp:prompt_tokens_seconds", "prompt"},
};

static void own_rates_text(FILE *o, const struct im_server_source_figs *s) {
  int shown = 0;
  for (size_t k = 0; k < sizeof own_rates / sizeof own_rates[0]; k++)
    for (size_t i = 0; i < s->n_unmapped; i++)
      if (!strcmp(s->unmapped[i].metric, own_rates[k].metric) && isfinite(s->unmapped[i].value))
        fprintf(o, "%s%.1f %s tok/s", shown++ ? ", " : "; its own gauges: ",
                s->unmapped[i].value, own_rates[k].what);
}

void im_server_text(FILE *o, const struct im_server_figures *f, double window_s) {
  for (size_t k = 0; f && k < f->n_src; k++) {
    const struct im_server_source_figs *s = &f->src[k];
    if (s->dcgm || s->not_collected[0])
      continue;
    fprintf(o, "Server (its /metrics):                   waiting max %.0f, running max %.0f",
            s->waiting_max, s->running_max);
    if (isfinite(s->kv_cache_usage_mean))
      fprintf(o, ", KV cache %.0f%% (max %.0f%%)", 100.0 * s->kv_cache_usage_mean,
              100.0 * s->kv_cache_usage_max);
    if (isfinite(s->prefix_cache_hit_rate))
      fprintf(o, ", prefix-cache hit rate %.3f", s->prefix_cache_hit_rate);
    if (isfinite(s->generation_tokens) && window_s > 0)
      fprintf(o, ", %.1f output tok/s", s->generation_tokens / window_s);
    if (isfinite(s->prompt_tokens) && window_s > 0)
      fprintf(o, ", %.1f prompt tok/s", s->prompt_tokens / window_s);
    if (isfinite(s->preemptions) && s->preemptions > 0)
      fprintf(o, ", %.0f preemptions", s->preemptions);
    own_rates_text(o, s);
    fputc('\n', o);
  }
}
