/* Reasoning figures: see analyze/reasoning.h. */
#include "analyze/reasoning.h"

#include <stdlib.h>
#include <string.h>

enum { F_TTFT, F_TTFA, F_RTOK, F_ATOK, F_TPOT_R, F_TPOT_A, F_SHARE, F_COUNT };

/* One request's figures; NaN-free: has[] says which exist. */
struct one {
  double v[F_COUNT];
  bool has[F_COUNT];
  bool from_usage, no_answer;
};

static bool reasoned(const struct im_record *r) {
  return r->reasoning_tokens > 0 || (r->t_answer >= 0 && r->t_answer > r->t_first);
}

static void measure(const struct im_record *r, struct one *o) {
  memset(o, 0, sizeof *o);
  bool answered = r->t_answer >= 0;
  int64_t bound_us = answered ? (r->t_answer - r->t_start) / 1000 : INT64_MAX;
  uint64_t n_r = 0, n_a = 0;
  uint32_t last_r = 0;
  for (uint32_t i = 0; i < r->n_chunks; i++) {
    uint32_t k = im_record_chunk_tokens(r, i);
    if ((int64_t)r->chunk_us[i] < bound_us) {
      n_r += k;
      last_r = i;
    } else {
      n_a += k;
    }
  }
  o->from_usage = r->reasoning_tokens > 0;
  o->no_answer = !answered;
  double rt = o->from_usage ? (double)r->reasoning_tokens : (double)n_r;
  o->v[F_TTFT] = (double)(r->t_first - r->t_start) / 1e6;
  o->has[F_TTFT] = true;
  if (answered) {
    o->v[F_TTFA] = (double)(r->t_answer - r->t_start) / 1e6;
    o->has[F_TTFA] = true;
  }
  o->v[F_RTOK] = rt;
  o->has[F_RTOK] = true;
  o->v[F_ATOK] = (double)r->output_tokens > rt ? (double)r->output_tokens - rt : 0;
  o->has[F_ATOK] = true;
  if (n_r >= 2) {
    int64_t t_lr = r->t_start + (int64_t)r->chunk_us[last_r] * 1000;
    o->v[F_TPOT_R] = (double)(t_lr - r->t_first) / 1e6 / (double)(n_r - 1);
    o->has[F_TPOT_R] = o->v[F_TPOT_R] >= 0;
  }
  if (answered && n_a >= 2) {
    o->v[F_TPOT_A] = (double)(r->t_last - r->t_answer) / 1e6 / (double)(n_a - 1);
    o->has[F_TPOT_A] = true;
  }
  int64_t e2e = r->t_last - r->t_start;
  if (e2e > 0) {
    o->v[F_SHARE] = (double)((answered ? r->t_answer : r->t_last) - r->t_first) / (double)e2e;
    o->has[F_SHARE] = true;
  }
}

static unsigned context_of(const struct im_record *r) {
  return r->prompt_tokens ? r->prompt_tokens : r->context_tokens;
}

/* The group of requests whose bucket is `bucket` (-1: all). x: F_COUNT
 * arrays of n_req doubles. */
static void group_fill(struct im_reasoning_group *g, const struct im_population *pop, int bucket,
                       const struct im_summary_config *sc, double **x) {
  size_t n[F_COUNT] = {0};
  g->n = 0;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_record *r = pop->req[i].final;
    if (pop->req[i].outcome != IM_OUTCOME_COMPLETED || !reasoned(r))
      continue;
    if (bucket >= 0 && im_breakdown_bucket(context_of(r)) != bucket)
      continue;
    struct one o;
    measure(r, &o);
    g->n++;
    for (int f = 0; f < F_COUNT; f++)
      if (o.has[f])
        x[f][n[f]++] = o.v[f];
  }
  struct im_bd_dist *d[F_COUNT] = {&g->ttft,           &g->ttfa,           &g->reasoning_tokens,
                                   &g->answer_tokens,  &g->tpot_reasoning, &g->tpot_answer,
                                   &g->reasoning_share};
  for (int f = 0; f < F_COUNT; f++)
    im_bd_dist_fill(d[f], x[f], n[f], sc);
}

enum im_err im_reasoning_compute(const struct im_population *pop,
                                 const struct im_summary_config *sc, struct im_reasoning *r) {
  memset(r, 0, sizeof *r);
  size_t cap = pop->n_req ? pop->n_req : 1;
  double *buf = malloc((size_t)F_COUNT * cap * sizeof *buf);
  if (!buf)
    return IM_NOMEM;
  double *x[F_COUNT];
  for (int f = 0; f < F_COUNT; f++)
    x[f] = buf + (size_t)f * cap;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_record *rec = pop->req[i].final;
    if (pop->req[i].outcome != IM_OUTCOME_COMPLETED)
      continue;
    r->completed++;
    if (!reasoned(rec))
      continue;
    r->n++;
    r->tokens_from_usage += rec->reasoning_tokens > 0;
    r->no_answer += rec->t_answer < 0;
  }
  group_fill(&r->all, pop, -1, sc, x);
  for (int k = 0; k < IM_CTX_BUCKETS; k++)
    group_fill(&r->ctx[k], pop, k, sc, x);
  free(buf);
  return IM_OK;
}
