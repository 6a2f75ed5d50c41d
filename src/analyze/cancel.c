/* Cancelled requests: see analyze/cancel.h. */
#include "analyze/cancel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum im_err im_cancel_compute(const struct im_population *pop, const struct im_summary_config *sc,
                              struct im_cancel_figs *c) {
  memset(c, 0, sizeof *c);
  size_t cap = pop->n_req ? pop->n_req : 1, k = 0;
  double *after = malloc(2 * cap * sizeof *after);
  if (!after)
    return IM_NOMEM;
  double *tokens = after + cap;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_logical *g = &pop->req[i];
    if (g->outcome == IM_OUTCOME_WARMUP) {
      c->warmup += g->final->cancelled;
      continue;
    }
    c->requests++;
    if (g->outcome != IM_OUTCOME_CANCELLED)
      continue;
    const struct im_record *r = g->final;
    c->cancelled++;
    c->before_first_token += r->t_first < 0;
    if (r->t_end >= 0 && r->t_start >= 0) {
      after[k] = (double)(r->t_end - r->t_start) / 1e6;
      tokens[k++] = r->output_tokens;
    }
  }
  c->share = c->requests ? (double)c->cancelled / (double)c->requests : NAN;
  im_bd_dist_fill(&c->after_ms, after, k, sc);
  im_bd_dist_fill(&c->tokens, tokens, k, sc);
  free(after);
  return IM_OK;
}
