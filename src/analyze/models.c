/* Latency per model name: see analyze/models.h. */
#include "analyze/models.h"

#include <stdio.h>
#include <string.h>

#include "analyze/latsets.h"

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
  struct im_latsets s;
  if (im_latsets_init(&s, pop))
    return IM_NOMEM;
  /* Names first, so each group is filled in one pass of its own. */
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_record *r = pop->req[i].final;
    if (pop->req[i].outcome == IM_OUTCOME_COMPLETED && r->model[0] && group_of(m, r->model) < 0)
      m->other++;
  }
  for (size_t k = 0; k < m->n; k++) {
    struct im_model_group *g = &m->g[k];
    for (size_t i = 0; i < pop->n_req; i++) {
      const struct im_record *r = pop->req[i].final;
      if (pop->req[i].outcome != IM_OUTCOME_COMPLETED || strncmp(r->model, g->name, sizeof g->name))
        continue;
      im_latsets_add(&s, r);
    }
    g->n = s.n;
    im_latsets_flush(&s, sc, &g->ttft, &g->tpot, &g->itl);
  }
  im_latsets_free(&s);
  return IM_OK;
}
