/* See report/agents_json.h. */
#include "report/agents_json.h"

#include "report/breakdown_json.h"
#include "report/jsonw.h"

static int put(json_t *o, const char *k, json_t *v) {
  return !v || json_object_set_new(o, k, v);
}

json_t *im_agents_json(const struct im_agent_figs *f, const struct im_summary_config *sc) {
  json_t *o = json_object(), *hops = json_array(), *fin = json_object(), *chain = json_object();
  if (!o || !hops || !fin || !chain || put(o, "per_hop", hops) || put(o, "final_answer", fin) ||
      put(o, "per_chain", chain)) {
    json_decref(o);
    return NULL;
  }
  int bad = im_jw_uint(o, "turns", f->turns) || im_jw_uint(o, "tool_calls", f->tool_calls) ||
            im_jw_uint(o, "chains", f->chains) ||
            im_jw_uint(o, "chains_complete", f->chains_complete) ||
            im_jw_uint(o, "chains_failed", f->chains_failed) ||
            im_jw_uint(o, "chains_unfinished", f->chains_unfinished);
  for (uint32_t h = 0; !bad && h < f->max_hop; h++) {
    const struct im_agent_hop *r = &f->hop[h];
    json_t *row = json_object();
    bad = !row || json_array_append_new(hops, row) || im_jw_uint(row, "hop", h + 1) ||
          im_jw_uint(row, "n", r->n) || put(row, "ttft_ms", im_bd_dist_json(&r->ttft, sc)) ||
          put(row, "tool_call_ms", im_bd_dist_json(&r->tool_call, sc)) ||
          put(row, "args_tokens", im_bd_dist_json(&r->args_tokens, sc));
  }
  bad = bad || im_jw_uint(fin, "n", f->final.n) ||
        put(fin, "ttft_ms", im_bd_dist_json(&f->final.ttft, sc)) ||
        put(fin, "e2el_ms", im_bd_dist_json(&f->final.e2el, sc)) ||
        put(chain, "e2e_ms", im_bd_dist_json(&f->e2e, sc)) ||
        put(chain, "model_ms", im_bd_dist_json(&f->model, sc)) ||
        put(chain, "tool_ms", im_bd_dist_json(&f->tool, sc)) ||
        put(chain, "model_share", im_bd_dist_json(&f->model_share, sc)) ||
        put(chain, "hops", im_bd_dist_json(&f->hops, sc));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

void im_agents_text(FILE *o, const struct im_agent_figs *f) {
  if (!f->turns)
    return;
  fprintf(o,
          "Agent chains: %llu chains (%llu complete, %llu failed, %llu unfinished), %llu tool "
          "calls in %llu turns\n",
          (unsigned long long)f->chains, (unsigned long long)f->chains_complete,
          (unsigned long long)f->chains_failed, (unsigned long long)f->chains_unfinished,
          (unsigned long long)f->tool_calls, (unsigned long long)f->turns);
  fprintf(o, "  hop      n  TTFT p50(ms)  tool call p50(ms)  args tokens p50\n");
  for (uint32_t h = 0; h < f->max_hop; h++)
    fprintf(o, "  %-5u %5llu  %12.1f  %17.1f  %15.0f\n", h + 1, (unsigned long long)f->hop[h].n,
            f->hop[h].ttft.p50, f->hop[h].tool_call.p50, f->hop[h].args_tokens.p50);
  fprintf(o, "  final %5llu  %12.1f  %17.1f (E2E)\n", (unsigned long long)f->final.n,
          f->final.ttft.p50, f->final.e2el.p50);
  if (f->chains_complete)
    fprintf(o,
            "  per chain p50: E2E %.1f ms, in the model %.1f ms, in tools %.1f ms (model share "
            "%.0f %%), %.0f hops\n",
            f->e2e.p50, f->model.p50, f->tool.p50, 100 * f->model_share.p50, f->hops.p50);
}

json_t *im_cancel_json(const struct im_cancel_figs *c, const struct im_summary_config *sc) {
  json_t *o = json_object();
  if (!o || im_jw_uint(o, "requests", c->requests) || im_jw_uint(o, "cancelled", c->cancelled) ||
      im_jw_num(o, "share", c->share, "no request") ||
      im_jw_uint(o, "before_first_token", c->before_first_token) ||
      im_jw_uint(o, "warmup", c->warmup) ||
      put(o, "after_ms", im_bd_dist_json(&c->after_ms, sc)) ||
      put(o, "tokens", im_bd_dist_json(&c->tokens, sc))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

void im_cancel_text(FILE *o, const struct im_cancel_figs *c) {
  if (c->cancelled)
    fprintf(o,
            "Cancelled by the client: %llu of %llu requests (%.1f %%), %llu before their first "
            "token; left after p50 %.1f ms, %.0f tokens (not in the latency figures)\n",
            (unsigned long long)c->cancelled, (unsigned long long)c->requests, 100 * c->share,
            (unsigned long long)c->before_first_token, c->after_ms.p50, c->tokens.p50);
  if (c->warmup)
    fprintf(o, "%s%llu warm-up request%s (not cut streams)\n",
            c->cancelled ? "  ... and " : "Cancelled by the client: ",
            (unsigned long long)c->warmup, c->warmup == 1 ? "" : "s");
}

json_t *im_models_json(const struct im_models *m, const struct im_summary_config *sc) {
  json_t *o = json_object();
  for (size_t k = 0; o && k < m->n; k++) {
    const struct im_model_group *g = &m->g[k];
    json_t *row = json_object();
    if (!row || json_object_set_new(o, g->name, row) || im_jw_uint(row, "n", g->n) ||
        put(row, "ttft_ms", im_bd_dist_json(&g->ttft, sc)) ||
        put(row, "tpot_ms", im_bd_dist_json(&g->tpot, sc)) ||
        put(row, "itl_ms", im_bd_dist_json(&g->itl, sc))) {
      json_decref(o);
      return NULL;
    }
  }
  return o;
}

void im_models_text(FILE *o, const struct im_models *m) {
  if (!m->n)
    return;
  fprintf(o, "By model (--model-mix):\n  model                 n  TTFT p50(ms)  TPOT p50(ms)  TPOT "
             "p99(ms)\n");
  for (size_t k = 0; k < m->n; k++)
    fprintf(o, "  %-18.18s %5llu  %12.1f  %12.2f  %12.2f\n", m->g[k].name,
            (unsigned long long)m->g[k].n, m->g[k].ttft.p50, m->g[k].tpot.p50, m->g[k].tpot.p99);
}
