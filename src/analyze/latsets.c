/* Latency samples of a group of requests: see analyze/latsets.h. */
#include "analyze/latsets.h"

#include <stdlib.h>
#include <string.h>

enum im_err im_latsets_init(struct im_latsets *s, const struct im_population *pop) {
  memset(s, 0, sizeof *s);
  size_t cap = pop->n_req ? pop->n_req : 1, n_gaps = 0;
  for (size_t i = 0; i < pop->n_req; i++)
    if (pop->req[i].outcome == IM_OUTCOME_COMPLETED)
      n_gaps += pop->req[i].final->n_chunks;
  s->ttft = malloc(2 * cap * sizeof *s->ttft);
  s->gaps = malloc((n_gaps ? n_gaps : 1) * sizeof *s->gaps);
  if (!s->ttft || !s->gaps) {
    im_latsets_free(s);
    return IM_NOMEM;
  }
  s->tpot = s->ttft + cap;
  return IM_OK;
}

void im_latsets_add(struct im_latsets *s, const struct im_record *r) {
  s->ttft[s->n++] = (double)(r->t_first - r->t_start) / 1e6;
  if (r->output_tokens >= 2)
    s->tpot[s->n_tpot++] = (double)(r->t_last - r->t_first) / 1e6 / (double)(r->output_tokens - 1);
  for (uint32_t c = 1; r->chunk_us && c < r->n_chunks; c++)
    s->gaps[s->n_gap++] = ((double)r->chunk_us[c] - (double)r->chunk_us[c - 1]) / 1e3;
}

void im_latsets_flush(struct im_latsets *s, const struct im_summary_config *sc,
                      struct im_bd_dist *ttft, struct im_bd_dist *tpot, struct im_bd_dist *itl) {
  im_bd_dist_fill(ttft, s->ttft, s->n, sc);
  im_bd_dist_fill(tpot, s->tpot, s->n_tpot, sc);
  im_bd_dist_fill(itl, s->gaps, s->n_gap, sc);
  s->n = s->n_tpot = s->n_gap = 0;
}

void im_latsets_free(struct im_latsets *s) {
  free(s->ttft);
  free(s->gaps);
  memset(s, 0, sizeof *s);
}
