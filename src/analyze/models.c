/* Latency per model name: see analyze/models.h. */
#include "analyze/models.h"

#include <stdlib.h>
#include <string.h>

static int group_of(struct im_models *m, const char *name) {
  for (size_t i = 0; i < m->n; i++)
    if (!strncmp(m->g[i].name, name, sizeof m->g[i].name))
      return (int)i;
  if (m->n == IM_MODELS_MAX)
    return -1;
  snprintf(m->g[m->n].name, sizeof m->g[m->n].name, "%s", name);
  return (int)m->n++;
}

enum im_err im_models_compute(const struct im_population *pop, const struct im_summary_config *sc,
                              struct im_models *m) {
  memset(m, 0, sizeof *m);
  size_t cap = pop->n_req ? pop->n_req : 1, n_gaps = 0;
  for (size_t i = 0; i < pop->n_req; i++)
    if (pop->req[i].outcome == IM_OUTCOME_COMPLETED)
      n_gaps += pop->req[i].final->n_chunks;
  double *ttft = malloc(2 * cap * sizeof *ttft),
         *gaps = malloc((n_gaps ? n_gaps : 1) * sizeof *gaps);
  if (!ttft || !gaps) {
    free(ttft);
    free(gaps);
    return IM_NOMEM;
  }
  double *tpot = ttft + cap;
  /* Names first, so each group is filled in one pass of its own. */
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_record *r = pop->req[i].final;
    if (pop->req[i].outcome == IM_OUTCOME_COMPLETED && r->model[0] && group_of(m, r->model) < 0)
      m->other++;
  }
  for (size_t k = 0; k < m->n; k++) {
    struct im_model_group *g = &m->g[k];
    size_t n = 0, n_tpot = 0, n_gap = 0;
    for (size_t i = 0; i < pop->n_req; i++) {
      const struct im_record *r = pop->req[i].final;
      if (pop->req[i].outcome != IM_OUTCOME_COMPLETED || strncmp(r->model, g->name, sizeof g->name))
        continue;
      ttft[n++] = (double)(r->t_first - r->t_start) / 1e6;
      if (r->output_tokens >= 2)
        tpot[n_tpot++] = (double)(r->t_last - r->t_first) / 1e6 / (double)(r->output_tokens - 1);
      for (uint32_t c = 1; r->chunk_us && c < r->n_chunks; c++)
        gaps[n_gap++] = ((double)r->chunk_us[c] - (double)r->chunk_us[c - 1]) / 1e3;
    }
    g->n = n;
    im_bd_dist_fill(&g->ttft, ttft, n, sc);
    im_bd_dist_fill(&g->tpot, tpot, n_tpot, sc);
    im_bd_dist_fill(&g->itl, gaps, n_gap, sc);
  }
  free(ttft);
  free(gaps);
  return IM_OK;
}
