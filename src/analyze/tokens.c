/* Segmented sampling and stalls: see analyze/tokens.h. */
#include "analyze/tokens.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void im_tokens_config_default(struct im_tokens_config *cfg) {
  cfg->window = IM_TOKENS_DEFAULT_WINDOW;
  cfg->stride = IM_TOKENS_DEFAULT_STRIDE;
  cfg->stall_k = IM_TOKENS_DEFAULT_STALL_K;
}

void im_tokens_peak_text(const struct im_tokens *t, char *buf, size_t len) {
  if (!t->stalls || t->peak_position < 0) {
    snprintf(buf, len, "no stall");
    return;
  }
  snprintf(buf, len, "%llu of %llu stall%s at token %lld +- %u", (unsigned long long)t->peak_stalls,
           (unsigned long long)t->stalls, t->stalls == 1 ? "" : "s", (long long)t->peak_position,
           t->peak_spread);
}

void im_tokens_cleanup(struct im_tokens *t) {
  if (!t)
    return;
  im_hist_cleanup(&t->win_mean);
  im_hist_cleanup(&t->win_max);
}

/* One stall, for the alignment pass. */
struct stall {
  int64_t t;     /* run-relative ns of the arrival that ended it */
  size_t req;    /* which request */
};

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static int cmp_stall(const void *a, const void *b) {
  const struct stall *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return (x->req > y->req) - (x->req < y->req);
}

/* Gaps of r in ns into g (room for n_chunks - 1); their count. */
static size_t gaps_of(const struct im_record *r, int64_t *g) {
  size_t n = 0;
  for (uint32_t i = 1; r->chunk_us && i < r->n_chunks; i++)
    g[n++] = ((int64_t)r->chunk_us[i] - (int64_t)r->chunk_us[i - 1]) * 1000;
  return n;
}

/* The lower median of n values (sorts scratch, a copy). */
static int64_t median(const int64_t *v, size_t n, int64_t *scratch) {
  memcpy(scratch, v, n * sizeof *v);
  qsort(scratch, n, sizeof *scratch, cmp_i64);
  return scratch[(n - 1) / 2];
}

/* Windows of one request's gaps into the histograms. */
static void windows_of(struct im_tokens *t, const int64_t *g, size_t n) {
  const struct im_tokens_config *c = &t->cfg;
  for (size_t k = 0; k + c->window <= n; k += c->stride) {
    int64_t sum = 0, max = g[k];
    for (size_t i = k; i < k + c->window; i++) {
      sum += g[i];
      max = g[i] > max ? g[i] : max;
    }
    (void)im_hist_record(&t->win_mean, llround((double)sum / c->window));
    (void)im_hist_record(&t->win_max, max);
    t->windows++;
  }
}

struct pass {
  int64_t *gaps, *scratch;  /* per request, room for the longest */
  uint64_t *idx;            /* token index of every stall */
  size_t n_idx, cap_idx;
  struct stall *stalls;     /* every stall */
  size_t n_stalls, cap_stalls;
  int64_t *all_gaps;        /* every gap, for the global median */
  size_t n_all;
};

static enum im_err push_stall(struct pass *p, struct stall s) {
  if (p->n_stalls == p->cap_stalls) {
    size_t cap = p->cap_stalls ? p->cap_stalls * 2 : 256;
    struct stall *v = realloc(p->stalls, cap * sizeof *v);
    if (!v)
      return IM_NOMEM;
    p->stalls = v;
    p->cap_stalls = cap;
  }
  p->stalls[p->n_stalls++] = s;
  return IM_OK;
}

static enum im_err push_idx(struct pass *p, uint64_t i) {
  if (p->n_idx == p->cap_idx) {
    size_t cap = p->cap_idx ? p->cap_idx * 2 : 256;
    uint64_t *v = realloc(p->idx, cap * sizeof *v);
    if (!v)
      return IM_NOMEM;
    p->idx = v;
    p->cap_idx = cap;
  }
  p->idx[p->n_idx++] = i;
  return IM_OK;
}

/* Whether the gap ending at chunk of r would be within limit without the
 * longest host stall the probe saw during it. */
static bool host_explains(const struct im_tokens *t, const struct im_record *r, uint32_t chunk,
                          int64_t gap, double limit) {
  if (!t->cfg.host)
    return false;
  int64_t late = im_hostlat_stall_within(t->cfg.host, r->t_start + (int64_t)r->chunk_us[chunk - 1] * 1000,
                                         r->t_start + (int64_t)r->chunk_us[chunk] * 1000);
  return late > 0 && (double)(gap - late) <= limit;
}

/* Stalls of one request: placed by token index, context and time. */
static enum im_err stalls_of(struct im_tokens *t, struct pass *p, const struct im_record *r,
                             size_t req, size_t n) {
  int64_t med = median(p->gaps, n, p->scratch);
  bool any = false;
  uint64_t tokens = im_record_chunk_tokens(r, 0);
  for (size_t i = 0; i < n; i++) {
    uint32_t chunk = (uint32_t)i + 1;
    double limit = t->cfg.stall_k * (double)med;
    if ((double)p->gaps[i] > limit && med > 0 && host_explains(t, r, chunk, p->gaps[i], limit))
      t->host_stalls++;
    else if ((double)p->gaps[i] > limit && med > 0) {
      size_t b = tokens / IM_TOKENS_POS_WIDTH;
      t->by_position[b < IM_TOKENS_POS_BUCKETS ? b : IM_TOKENS_POS_BUCKETS - 1]++;
      unsigned ctx = (r->prompt_tokens ? r->prompt_tokens : r->context_tokens) + (unsigned)tokens;
      t->by_context[im_breakdown_bucket(ctx)]++;
      t->stalls++;
      any = true;
      enum im_err err = push_stall(
          p, (struct stall){r->t_start + (int64_t)r->chunk_us[chunk] * 1000, req});
      if (!err)
        err = push_idx(p, tokens);
      if (err)
        return err;
    }
    tokens += im_record_chunk_tokens(r, chunk);
  }
  t->stalled_requests += any;
  return IM_OK;
}

/* Stalls ending within +-tol of stalls of >= 2 other requests. */
static void align(struct im_tokens *t, struct pass *p) {
  if (!p->n_stalls)
    return;
  qsort(p->stalls, p->n_stalls, sizeof *p->stalls, cmp_stall);
  size_t lo = 0;
  for (size_t i = 0; i < p->n_stalls; i++) {
    while (p->stalls[lo].t < p->stalls[i].t - t->align_tol_ns)
      lo++;
    /* Distinct other requests in [t - tol, t + tol]: the stalls are sorted
     * by time, so count changes of request while scanning (a request's own
     * stalls inside the tolerance are skipped). */
    size_t others = 0, last = SIZE_MAX;
    for (size_t j = lo; j < p->n_stalls && p->stalls[j].t <= p->stalls[i].t + t->align_tol_ns &&
                        others < IM_TOKENS_ALIGN_OTHERS;
         j++) {
      size_t q = p->stalls[j].req;
      if (q != p->stalls[i].req && q != last) {
        others++;
        last = q;
      }
    }
    t->aligned += others >= IM_TOKENS_ALIGN_OTHERS;
  }
}

/* The histogram's width: the smallest power of two covering `longest`
 * tokens in IM_TOKENS_HIST_BINS bins. */
static uint32_t hist_width(uint64_t longest) {
  uint32_t w = 1;
  while ((uint64_t)w * IM_TOKENS_HIST_BINS < longest && w < (UINT32_C(1) << 30))
    w *= 2;
  return w;
}

/* Where the stalls cluster: over the sorted indices, the window
 * [v, v + 2 tol] holding the most (ties: the earliest); peak_position is the
 * median index inside it (lower median), peak_stalls those within +-tol of
 * that index, peak_spread their largest distance to it. */
static void localise(struct im_tokens *t, uint64_t *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_u64);
  size_t best_lo = 0, best_n = 0;
  for (size_t lo = 0, hi = 0; lo < n; lo++) {
    if (hi < lo)
      hi = lo;
    while (hi < n && v[hi] <= v[lo] + 2 * IM_TOKENS_PEAK_TOL)
      hi++;
    if (hi - lo > best_n) {
      best_n = hi - lo;
      best_lo = lo;
    }
  }
  uint64_t peak = v[best_lo + (best_n - 1) / 2];
  t->peak_position = (int64_t)peak;
  for (size_t i = 0; i < n; i++) {
    uint64_t d = v[i] > peak ? v[i] - peak : peak - v[i];
    if (d > IM_TOKENS_PEAK_TOL)
      continue;
    t->peak_stalls++;
    t->peak_spread = (uint32_t)d > t->peak_spread ? (uint32_t)d : t->peak_spread;
  }
  for (size_t i = 0; i < n; i++) {
    uint64_t b = v[i] / t->hist_width;
    t->by_index[b < IM_TOKENS_HIST_BINS ? b : IM_TOKENS_HIST_BINS]++;
  }
}

enum im_err im_tokens_compute(const struct im_population *pop, const struct im_tokens_config *cfg,
                              struct im_tokens *t) {
  memset(t, 0, sizeof *t);
  t->cfg = *cfg;
  t->peak_position = -1;
  t->aligned_share = NAN;
  if (cfg->window < 1 || cfg->stride < 1 || !(cfg->stall_k > 1))
    return IM_INVAL;
  struct pass p;
  memset(&p, 0, sizeof p);
  size_t longest = 1, total = 1;
  uint64_t longest_out = 1;
  for (size_t i = 0; i < pop->n_req; i++)
    if (pop->req[i].outcome == IM_OUTCOME_COMPLETED) {
      const struct im_record *r = pop->req[i].final;
      uint32_t n = r->n_chunks;
      longest = n > longest ? n : longest;
      total += n;
      uint64_t out = r->output_tokens > n ? r->output_tokens : n;
      longest_out = out > longest_out ? out : longest_out;
    }
  t->hist_width = hist_width(longest_out);
  enum im_err err = IM_NOMEM;
  if (im_hist_init_default(&t->win_mean) || im_hist_init_default(&t->win_max) ||
      !(p.gaps = malloc(longest * sizeof *p.gaps)) ||
      !(p.scratch = malloc(longest * sizeof *p.scratch)) ||
      !(p.all_gaps = malloc(total * sizeof *p.all_gaps)))
    goto out;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_record *r = pop->req[i].final;
    if (pop->req[i].outcome != IM_OUTCOME_COMPLETED || r->n_chunks < 2 || !r->chunk_us)
      continue;
    size_t n = gaps_of(r, p.gaps);
    t->requests++;
    t->gaps += n;
    memcpy(p.all_gaps + p.n_all, p.gaps, n * sizeof *p.gaps);
    p.n_all += n;
    windows_of(t, p.gaps, n);
    if ((err = stalls_of(t, &p, r, i, n)))
      goto out;
  }
  if (p.n_all) {
    qsort(p.all_gaps, p.n_all, sizeof *p.all_gaps, cmp_i64);
    t->median_gap_ns = p.all_gaps[(p.n_all - 1) / 2];
  }
  t->align_tol_ns = IM_TOKENS_ALIGN_FLOOR_NS;
  if ((double)t->median_gap_ns * IM_TOKENS_ALIGN_GAP_SHARE > (double)t->align_tol_ns)
    t->align_tol_ns = llround((double)t->median_gap_ns * IM_TOKENS_ALIGN_GAP_SHARE);
  align(t, &p);
  if (t->stalls) {
    t->aligned_share = (double)t->aligned / (double)t->stalls;
    localise(t, p.idx, p.n_idx);
  }
  err = IM_OK;
out:
  free(p.gaps);
  free(p.scratch);
  free(p.stalls);
  free(p.idx);
  free(p.all_gaps);
  if (err)
    im_tokens_cleanup(t);
  return err;
}
