/* Agent-chain figures: see analyze/agents.h. */
#include "analyze/agents.h"

#include <stdlib.h>
#include <string.h>

struct turn {
  const struct im_logical *g;
  uint64_t session;
  uint32_t turn;
};

static int cmp_turn(const void *a, const void *b) {
  const struct turn *x = a, *y = b;
  if (x->session != y->session)
    return x->session < y->session ? -1 : 1;
  if (x->turn != y->turn)
    return x->turn < y->turn ? -1 : 1;
  return x->g < y->g ? -1 : x->g > y->g;
}

static bool is_tool_call(const struct im_logical *g) {
  return g->outcome == IM_OUTCOME_COMPLETED && !strcmp(g->final->finish_reason, "tool_calls");
}

static double ms(int64_t ns) {
  return (double)ns / 1e6;
}

/* Per-hop and final-answer values into x (arrays of n doubles each). */
static void turn_figures(struct im_agent_figs *f, const struct turn *t, size_t n,
                         const struct im_summary_config *sc, double *x) {
  size_t cap = n ? n : 1;
  double *ttft = x, *call = x + cap, *args = x + 2 * cap;
  for (uint32_t h = 0; h < IM_AGENT_MAX_HOPS; h++) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
      uint32_t hop = t[i].turn > IM_AGENT_MAX_HOPS ? IM_AGENT_MAX_HOPS : t[i].turn;
      if (!is_tool_call(t[i].g) || hop != h + 1)
        continue;
      const struct im_record *r = t[i].g->final;
      ttft[k] = ms(r->t_first - r->t_start);
      call[k] = ms(r->t_last - r->t_start);
      args[k] = r->output_tokens > r->reasoning_tokens ? r->output_tokens - r->reasoning_tokens : 0;
      k++;
    }
    struct im_agent_hop *row = &f->hop[h];
    row->n = k;
    if (k && h + 1 > f->max_hop)
      f->max_hop = h + 1;
    im_bd_dist_fill(&row->ttft, ttft, k, sc);
    im_bd_dist_fill(&row->tool_call, call, k, sc);
    im_bd_dist_fill(&row->args_tokens, args, k, sc);
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const struct im_record *r = t[i].g->final;
    if (t[i].g->outcome != IM_OUTCOME_COMPLETED || is_tool_call(t[i].g))
      continue;
    ttft[k] = ms(r->t_first - r->t_start);
    call[k++] = ms(r->t_last - r->t_start);
  }
  f->final.n = k;
  im_bd_dist_fill(&f->final.ttft, ttft, k, sc);
  im_bd_dist_fill(&f->final.e2el, call, k, sc);
}

/* Chains: runs of one session in t (sorted). */
static void chain_figures(struct im_agent_figs *f, const struct turn *t, size_t n,
                          const struct im_summary_config *sc, double *x) {
  size_t cap = n ? n : 1, k = 0;
  double *e2e = x, *model = x + cap, *tool = x + 2 * cap, *share = x + 3 * cap, *hops = x + 4 * cap;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    bool failed = false;
    double model_ns = 0;
    uint32_t n_hops = 0;
    bool warm = false;
    for (; j < n && t[j].session == t[i].session; j++) {
      const struct im_logical *g = t[j].g;
      warm |= g->outcome == IM_OUTCOME_WARMUP;
      if (g->outcome != IM_OUTCOME_COMPLETED)
        failed = true;
      else
        model_ns += (double)(g->final->t_last - g->final->t_start);
      n_hops += is_tool_call(g);
    }
    if (warm) { /* a chain that began in the warm-up is not measured */
      i = j;
      continue;
    }
    f->chains++;
    const struct im_logical *last = t[j - 1].g;
    if (failed) {
      f->chains_failed++;
    } else if (is_tool_call(last)) {
      f->chains_unfinished++;
    } else {
      f->chains_complete++;
      double span = (double)(last->final->t_last - t[i].g->final->t_start);
      e2e[k] = span / 1e6;
      model[k] = model_ns / 1e6;
      tool[k] = (span - model_ns) / 1e6;
      share[k] = span > 0 ? model_ns / span : 1.0;
      hops[k] = n_hops;
      k++;
    }
    i = j;
  }
  im_bd_dist_fill(&f->e2e, e2e, k, sc);
  im_bd_dist_fill(&f->model, model, k, sc);
  im_bd_dist_fill(&f->tool, tool, k, sc);
  im_bd_dist_fill(&f->model_share, share, k, sc);
  im_bd_dist_fill(&f->hops, hops, k, sc);
}

enum im_err im_agents_compute(const struct im_population *pop, const struct im_summary_config *sc,
                              struct im_agent_figs *f) {
  memset(f, 0, sizeof *f);
  size_t cap = pop->n_req ? pop->n_req : 1, n = 0;
  struct turn *t = malloc(cap * sizeof *t);
  double *x = malloc(5 * cap * sizeof *x);
  if (!t || !x) {
    free(t);
    free(x);
    return IM_NOMEM;
  }
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_logical *g = &pop->req[i];
    if (!g->final->tools)
      continue;
    t[n++] = (struct turn){g, g->final->session, g->final->turn};
    f->tool_calls += is_tool_call(g);
    f->turns += g->outcome != IM_OUTCOME_WARMUP;
  }
  qsort(t, n, sizeof *t, cmp_turn);
  turn_figures(f, t, n, sc, x);
  chain_figures(f, t, n, sc, x);
  free(t);
  free(x);
  return IM_OK;
}
