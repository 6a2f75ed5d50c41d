/* The population rule: see analyze/population.h. */
#include "analyze/population.h"

#include <stdlib.h>
#include <string.h>

bool im_attempt_succeeded(const struct im_record *r) {
  return !r->cancelled && r->error == IM_EC_NONE && r->n_chunks >= 1 && r->t_start >= 0 && r->t_first >= 0 &&
         r->t_last >= 0;
}

bool im_population_in_window(const struct im_population *pop, int64_t t) {
  return t >= 0 && t >= pop->window_start_ns && t <= pop->window_end_ns;
}

int64_t im_logical_sched_base(const struct im_logical *g) {
  if (g->final->t_sched_first >= 0)
    return g->final->t_sched_first;
  if (g->first->t_sched >= 0)
    return g->first->t_sched;
  return g->final->t_sched;
}

static bool user_kind(enum im_req_kind k) {
  return k == IM_KIND_MEASURED || k == IM_KIND_RETRY || k == IM_KIND_ABORTED ||
         k == IM_KIND_CANCELLED || k == IM_KIND_WARMUP;
}

static uint64_t group_key(const struct im_record *r) {
  return r->logical_id ? r->logical_id : r->id;
}

/* Attempts sorted by (logical id, attempt, position in the file): the last
 * key (both point into one array) makes the order total, so equal inputs
 * give equal populations. */
static int cmp_attempt(const void *a, const void *b) {
  const struct im_record *x = *(const struct im_record *const *)a;
  const struct im_record *y = *(const struct im_record *const *)b;
  uint64_t kx = group_key(x), ky = group_key(y);
  if (kx != ky)
    return kx < ky ? -1 : 1;
  if (x->attempt != y->attempt)
    return x->attempt < y->attempt ? -1 : 1;
  return x < y ? -1 : x > y;
}

static enum im_outcome outcome_of(const struct im_record *const *att, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (att[i]->kind == IM_KIND_WARMUP)
      return IM_OUTCOME_WARMUP;
  const struct im_record *fin = att[n - 1];
  if (fin->kind == IM_KIND_ABORTED)
    return IM_OUTCOME_ABORTED;
  if (fin->kind == IM_KIND_CANCELLED || fin->cancelled)
    return IM_OUTCOME_CANCELLED;
  return im_attempt_succeeded(fin) ? IM_OUTCOME_COMPLETED : IM_OUTCOME_FAILED;
}

enum im_err im_population_build(const struct im_record *recs, size_t n, int64_t window_start_ns,
                                int64_t window_end_ns, struct im_population *pop) {
  memset(pop, 0, sizeof *pop);
  if (window_end_ns < window_start_ns || (n && !recs))
    return IM_INVAL;
  size_t cap = n ? n : 1;
  pop->attempts = malloc(cap * sizeof *pop->attempts);
  pop->other = malloc(cap * sizeof *pop->other);
  pop->req = malloc(cap * sizeof *pop->req);
  if (!pop->attempts || !pop->other || !pop->req) {
    im_population_cleanup(pop);
    return IM_NOMEM;
  }
  pop->recs = recs;
  pop->n_recs = n;
  pop->window_start_ns = window_start_ns;
  pop->window_end_ns = window_end_ns;
  for (size_t i = 0; i < n; i++) {
    if (user_kind(recs[i].kind))
      pop->attempts[pop->n_attempts++] = &recs[i];
    else
      pop->other[pop->n_other++] = &recs[i];
  }
  qsort(pop->attempts, pop->n_attempts, sizeof *pop->attempts, cmp_attempt);
  for (size_t i = 0; i < pop->n_attempts;) {
    size_t j = i + 1;
    while (j < pop->n_attempts && group_key(pop->attempts[j]) == group_key(pop->attempts[i]))
      j++;
    struct im_logical *g = &pop->req[pop->n_req++];
    g->first = pop->attempts[i];
    g->final = pop->attempts[j - 1];
    g->begin = i;
    g->end = j;
    g->outcome = outcome_of(&pop->attempts[i], j - i);
    i = j;
  }
  return IM_OK;
}

void im_population_cleanup(struct im_population *pop) {
  if (!pop)
    return;
  free(pop->req);
  free(pop->attempts);
  free(pop->other);
  memset(pop, 0, sizeof *pop);
}
