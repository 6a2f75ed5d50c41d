/* The slowest requests' timeline: see analyze/timeline.h. */
#include "analyze/timeline.h"

#include <stdlib.h>
#include <string.h>

static int cmp_gap(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Whether request a ranks before b: longer E2EL, then lower logical id. */
static int before(const struct im_timeline_req *a, const struct im_timeline_req *b) {
  if (a->e2el_ns != b->e2el_ns)
    return a->e2el_ns > b->e2el_ns;
  return a->r->logical_id < b->r->logical_id;
}

/* Places the stalls of t->r; sorted is scratch room for n_chunks values. */
static void place_stalls(struct im_timeline_req *t, double k, int64_t *sorted) {
  const struct im_record *r = t->r;
  if (r->n_chunks < 2 || !r->chunk_us)
    return;
  size_t n = r->n_chunks - 1;
  for (size_t i = 0; i < n; i++)
    sorted[i] = ((int64_t)r->chunk_us[i + 1] - (int64_t)r->chunk_us[i]) * 1000;
  qsort(sorted, n, sizeof *sorted, cmp_gap);
  int64_t med = sorted[(n - 1) / 2]; /* the lower median, as analyze/tokens.c */
  uint64_t tokens = 0;
  for (uint32_t c = 1; c < r->n_chunks; c++) {
    tokens += im_record_chunk_tokens(r, c - 1);
    int64_t from = r->t_start + (int64_t)r->chunk_us[c - 1] * 1000,
            to = r->t_start + (int64_t)r->chunk_us[c] * 1000;
    if (!(med > 0 && (double)(to - from) > k * (double)med))
      continue;
    if (t->n_listed < IM_TIMELINE_STALLS)
      t->stalls[t->n_listed++] = (struct im_timeline_stall){from, to, tokens};
    t->n_stalls++;
  }
}

enum im_err im_timeline_compute(const struct im_population *pop, size_t want, double stall_k,
                                struct im_timeline *tl) {
  memset(tl, 0, sizeof *tl);
  tl->stall_k = stall_k;
  if (!(stall_k > 1))
    return IM_INVAL;
  if (want > IM_TIMELINE_REQUESTS)
    want = IM_TIMELINE_REQUESTS;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_logical *l = &pop->req[i];
    if (l->outcome != IM_OUTCOME_COMPLETED)
      continue;
    tl->completed++;
    struct im_timeline_req c = {.r = l->final, .e2el_ns = l->final->t_last - l->final->t_start};
    if (!want || (tl->n == want && !before(&c, &tl->req[tl->n - 1])))
      continue;
    size_t at = tl->n < want ? tl->n++ : want - 1; /* the last one drops out when full */
    while (at > 0 && before(&c, &tl->req[at - 1])) {
      tl->req[at].r = tl->req[at - 1].r;
      tl->req[at].e2el_ns = tl->req[at - 1].e2el_ns;
      at--;
    }
    tl->req[at].r = c.r;
    tl->req[at].e2el_ns = c.e2el_ns;
  }
  uint32_t longest = 1;
  for (size_t i = 0; i < tl->n; i++)
    longest = tl->req[i].r->n_chunks > longest ? tl->req[i].r->n_chunks : longest;
  int64_t *scratch = malloc(longest * sizeof *scratch);
  if (!scratch) {
    tl->n = 0;
    return IM_NOMEM;
  }
  for (size_t i = 0; i < tl->n; i++)
    place_stalls(&tl->req[i], stall_k, scratch);
  free(scratch);
  return IM_OK;
}
