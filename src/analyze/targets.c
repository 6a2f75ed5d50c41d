/* Figures per target: see analyze/targets.h. */
#include "analyze/targets.h"

#include <stdbool.h>
#include <string.h>

#include "analyze/latsets.h"

enum im_err im_targets_compute(const struct im_population *pop, const struct im_summary_config *sc,
                               struct im_targets *t) {
  memset(t, 0, sizeof *t);
  bool seen[IM_RECORD_MAX_TARGETS + 1] = {false};
  for (size_t i = 0; i < pop->n_req; i++) {
    uint16_t k = pop->req[i].final->target;
    if (k && k <= IM_RECORD_MAX_TARGETS)
      seen[k] = true;
  }
  struct im_latsets s;
  if (im_latsets_init(&s, pop))
    return IM_NOMEM;
  for (uint32_t k = 1; k <= IM_RECORD_MAX_TARGETS; k++) {
    if (!seen[k])
      continue;
    struct im_target_group *g = &t->g[t->n++];
    g->index = k - 1;
    for (size_t i = 0; i < pop->n_req; i++) {
      const struct im_record *r = pop->req[i].final;
      if (r->target != k)
        continue;
      if (pop->req[i].outcome == IM_OUTCOME_FAILED)
        g->failed++;
      if (pop->req[i].outcome != IM_OUTCOME_COMPLETED)
        continue;
      g->completed++;
      g->output_tokens += r->output_tokens;
      im_latsets_add(&s, r);
    }
    im_latsets_flush(&s, sc, &g->ttft, &g->tpot, &g->itl);
  }
  im_latsets_free(&s);
  return IM_OK;
}
