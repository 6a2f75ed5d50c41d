/* Latency by context length, content class and session: see
 * analyze/breakdown.h. */
#include "analyze/breakdown.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

static const unsigned bucket_lo[IM_CTX_BUCKETS + 1] = {0, 4096, 8192, 16384, 32768, UINT32_MAX};
static const char *const bucket_names[IM_CTX_BUCKETS] = {"0-4K", "4-8K", "8-16K", "16-32K", "32K+"};

unsigned im_breakdown_bucket_lo(int i) {
  return i >= 0 && i <= IM_CTX_BUCKETS ? bucket_lo[i] : UINT32_MAX;
}

const char *im_breakdown_bucket_name(int i) {
  return i >= 0 && i < IM_CTX_BUCKETS ? bucket_names[i] : "?";
}

int im_breakdown_bucket(unsigned tokens) {
  int b = 0;
  while (b + 1 < IM_CTX_BUCKETS && tokens >= bucket_lo[b + 1])
    b++;
  return b;
}

static unsigned context_of(const struct im_record *r) {
  return r->prompt_tokens ? r->prompt_tokens : r->context_tokens;
}

void im_bd_dist_fill(struct im_bd_dist *d, double *x, size_t n,
                     const struct im_summary_config *sc) {
  d->n = n;
  im_stats_sort(x, n);
  d->mean = n ? im_stats_mean(x, n) : NAN;
  d->p50 = n ? im_stats_pct_nearest(x, n, 0.5) : NAN;
  d->p90 = n ? im_stats_pct_nearest(x, n, 0.9) : NAN;
  d->p99 = n ? im_stats_pct_nearest(x, n, 0.99) : NAN;
  for (size_t i = 0; i < IM_MAX_PERCENTILES; i++)
    d->pct[i] = n && i < sc->n_percentiles
                    ? im_stats_pct_nearest(x, n, sc->percentiles[i] / 100.0)
                    : NAN;
}

/* The group of the completed requests `pick` maps to `key`; scratch holds
 * room for 3 * n doubles, gaps for every gap of the completed requests. */
static void group_fill(struct im_bd_group *g, const struct im_population *pop, int key,
                       int (*pick)(const struct im_record *), const struct im_summary_config *sc,
                       double *scratch, double *gaps) {
  size_t cap = pop->n_req, n = 0, n_tpot = 0, n_tok = 0, n_gap = 0;
  double *ttft = scratch, *tpot = scratch + cap, *tok = scratch + 2 * cap;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_record *r = pop->req[i].final;
    if (pop->req[i].outcome != IM_OUTCOME_COMPLETED || pick(r) != key)
      continue;
    double t = (double)(r->t_first - r->t_start) / 1e6;
    ttft[n++] = t;
    if (r->prompt_tokens > r->cached_tokens)
      tok[n_tok++] = t / (double)(r->prompt_tokens - r->cached_tokens);
    if (r->output_tokens >= 2)
      tpot[n_tpot++] = (double)(r->t_last - r->t_first) / 1e6 / (double)(r->output_tokens - 1);
    for (uint32_t c = 1; r->chunk_us && c < r->n_chunks; c++)
      gaps[n_gap++] = ((double)r->chunk_us[c] - (double)r->chunk_us[c - 1]) / 1e3;
  }
  g->n = n;
  im_bd_dist_fill(&g->itl, gaps, n_gap, sc);
  im_bd_dist_fill(&g->ttft, ttft, n, sc);
  im_bd_dist_fill(&g->tpot, tpot, n_tpot, sc);
  im_bd_dist_fill(&g->ttft_per_uncached_token, tok, n_tok, sc);
}

static int pick_bucket(const struct im_record *r) { return im_breakdown_bucket(context_of(r)); }
static int pick_class(const struct im_record *r) { return (int)r->content_class; }

/* Sessions are numbered densely from 1 per run: a bitmap counts them. */
static enum im_err sessions_fill(struct im_breakdown *b, const struct im_population *pop) {
  uint64_t max_sid = 0;
  for (size_t i = 0; i < pop->n_req; i++)
    if (pop->req[i].outcome != IM_OUTCOME_WARMUP && pop->req[i].final->session > max_sid)
      max_sid = pop->req[i].final->session;
  if (max_sid > (uint64_t)pop->n_recs + 1) /* ids beyond the records: not dense, count anyway */
    max_sid = (uint64_t)pop->n_recs + 1;
  unsigned char *seen = calloc(max_sid + 1, 1);
  if (!seen)
    return IM_NOMEM;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_logical *g = &pop->req[i];
    const struct im_record *r = g->final;
    if (g->outcome == IM_OUTCOME_WARMUP || !r->session)
      continue;
    uint64_t sid = r->session <= max_sid ? r->session : max_sid;
    b->sess.sessions += !seen[sid];
    seen[sid] = 1;
    if (g->outcome == IM_OUTCOME_COMPLETED)
      b->sess.turns_completed++;
    else if (g->outcome == IM_OUTCOME_FAILED)
      b->sess.turns_failed++;
    if (r->turn > b->sess.max_turn)
      b->sess.max_turn = r->turn;
    if (context_of(r) > b->sess.context_tokens_max)
      b->sess.context_tokens_max = context_of(r);
  }
  free(seen);
  b->sess.turns_per_session_mean =
      b->sess.sessions ? (double)b->sess.turns_completed / (double)b->sess.sessions : NAN;
  return IM_OK;
}

/* docs/metrics.md §9: uncached prefill per token, longest bucket over the
 * shortest (raw TTFT always grows with the prompt; per token it should not). */
static void long_context(struct im_breakdown *b) {
  b->lc_short_bucket = b->lc_long_bucket = -1;
  b->lc_growth = NAN;
  for (int k = 0; k < IM_CTX_BUCKETS; k++) {
    if (!b->ctx[k].ttft_per_uncached_token.n)
      continue;
    if (b->lc_short_bucket < 0)
      b->lc_short_bucket = k;
    b->lc_long_bucket = k;
  }
  if (b->lc_short_bucket < 0 || b->lc_long_bucket == b->lc_short_bucket)
    return;
  double lo = b->ctx[b->lc_short_bucket].ttft_per_uncached_token.p50;
  double hi = b->ctx[b->lc_long_bucket].ttft_per_uncached_token.p50;
  if (lo > 0) {
    b->lc_growth = hi / lo - 1.0;
    b->lc_flag = b->lc_growth > IM_LONG_CONTEXT_GROWTH_REF;
  }
}

enum im_err im_breakdown_compute(const struct im_population *pop,
                                 const struct im_summary_config *sc, struct im_breakdown *b) {
  memset(b, 0, sizeof *b);
  size_t total_gaps = 1;
  for (size_t i = 0; i < pop->n_req; i++)
    if (pop->req[i].outcome == IM_OUTCOME_COMPLETED && pop->req[i].final->n_chunks > 1)
      total_gaps += pop->req[i].final->n_chunks - 1;
  double *scratch = malloc(3 * (pop->n_req ? pop->n_req : 1) * sizeof *scratch);
  double *gaps = malloc(total_gaps * sizeof *gaps);
  if (!scratch || !gaps) {
    free(scratch);
    free(gaps);
    return IM_NOMEM;
  }
  int first = -1;
  for (size_t i = 0; i < pop->n_req; i++) {
    if (pop->req[i].outcome != IM_OUTCOME_COMPLETED)
      continue;
    b->any_session |= pop->req[i].final->session != 0;
    int k = pick_bucket(pop->req[i].final);
    if (first < 0)
      first = k;
    else if (k != first)
      b->several_buckets = true;
  }
  for (int k = 0; k < IM_CTX_BUCKETS; k++)
    group_fill(&b->ctx[k], pop, k, pick_bucket, sc, scratch, gaps);
  for (int c = IM_CLASS_TEXT; c < IM_CLASS_COUNT_; c++)
    group_fill(&b->cls[c], pop, c, pick_class, sc, scratch, gaps);
  free(scratch);
  free(gaps);
  long_context(b);
  return sessions_fill(b, pop);
}
