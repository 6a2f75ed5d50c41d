/* Time-sliced figures: see analyze/timeslice.h. */
#include "analyze/timeslice.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

const char *im_timeslice_metric_name(int m) {
  static const char *const names[IM_TS_METRICS_] = {"ttft", "itl", "e2el"};
  return m >= 0 && m < IM_TS_METRICS_ ? names[m] : "?";
}

void im_timeslices_cleanup(struct im_timeslices *t) {
  if (!t)
    return;
  free(t->v);
  memset(t, 0, sizeof *t);
}

/* A value (ms) that belongs to slice s of metric m. One per output token:
 * 16 bytes (this array is the largest the end of a run holds). */
struct val {
  double ms;
  uint32_t s; /* below IM_TIMESLICE_MAX */
  uint32_t m;
};

struct vals {
  struct val *v;
  size_t n, cap;
};

static int push(struct vals *a, size_t s, int m, double ms) {
  if (a->n == a->cap) {
    size_t cap = a->cap ? 2 * a->cap : 1024;
    struct val *v = realloc(a->v, cap * sizeof *v);
    if (!v)
      return -1;
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n++] = (struct val){ms, (uint32_t)s, (uint32_t)m};
  return 0;
}

static int cmp_val(const void *x, const void *y) {
  const struct val *a = x, *b = y;
  if (a->s != b->s)
    return a->s < b->s ? -1 : 1;
  if (a->m != b->m)
    return a->m < b->m ? -1 : 1;
  return (a->ms > b->ms) - (a->ms < b->ms);
}

int64_t im_timeslice_auto_ns(int64_t len_ns, int64_t max_ns) {
  int64_t want = len_ns / IM_TIMESLICE_AUTO_N, step = 100000000; /* 100 ms */
  for (int k = 0; step < want && step < max_ns; k++)
    step = step / (k % 3 == 1 ? 2 : 1) * (k % 3 == 1 ? 5 : 2); /* 100, 200, 500, 1000 ms... */
  return step < max_ns ? step : max_ns;
}

enum im_err im_timeslices_compute(const struct im_population *pop, int64_t slice_ns,
                                  struct im_timeslices *out) {
  memset(out, 0, sizeof *out);
  if (slice_ns <= 0)
    return IM_INVAL;
  int64_t a = pop->window_start_ns, b = pop->window_end_ns;
  if (b <= a)
    return IM_OK;
  int64_t len = b - a;
  if ((len + slice_ns - 1) / slice_ns > IM_TIMESLICE_MAX)
    slice_ns = (len + IM_TIMESLICE_MAX - 1) / IM_TIMESLICE_MAX;
  size_t n = (size_t)((len + slice_ns - 1) / slice_ns);
  out->v = calloc(n, sizeof *out->v);
  if (!out->v)
    return IM_NOMEM;
  out->n = n;
  out->slice_s = (double)slice_ns / 1e9;
  for (size_t s = 0; s < n; s++) {
    struct im_timeslice *t = &out->v[s];
    int64_t s0 = a + (int64_t)s * slice_ns, s1 = s0 + slice_ns < b ? s0 + slice_ns : b;
    t->start_s = (double)s0 / 1e9;
    t->end_s = (double)s1 / 1e9;
  }
  struct vals vals = {0};
  /* Room for every value at once (a completed request gives at most its
   * chunks + 1: E2EL, TTFT and a gap per chunk after the first), so that
   * the array is not doubled past what it needs. */
  size_t most = 0;
  for (size_t i = 0; i < pop->n_req; i++)
    if (pop->req[i].outcome == IM_OUTCOME_COMPLETED)
      most += (size_t)pop->req[i].final->n_chunks + 1;
  if (most && !(vals.v = malloc(most * sizeof *vals.v)))
    goto oom;
  vals.cap = most;
  /* The window holds both its ends: the last slice takes t == b. */
#define SLICE(t) ((t) >= b ? n - 1 : (size_t)(((t) - a) / slice_ns))
#define IN(t) ((t) >= a && (t) <= b)
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_logical *g = &pop->req[i];
    if (g->outcome != IM_OUTCOME_COMPLETED)
      continue;
    const struct im_record *r = g->final;
    if (IN(r->t_end)) {
      struct im_timeslice *t = &out->v[SLICE(r->t_end)];
      t->completed++;
      if (push(&vals, SLICE(r->t_end), IM_TS_E2EL, (double)(r->t_end - r->t_start) / 1e6))
        goto oom;
    }
    if (IN(r->t_first) &&
        push(&vals, SLICE(r->t_first), IM_TS_TTFT, (double)(r->t_first - r->t_start) / 1e6))
      goto oom;
    for (uint32_t k = 0; r->chunk_us && k < r->n_chunks; k++) {
      int64_t at = r->t_start + (int64_t)r->chunk_us[k] * 1000;
      if (!IN(at))
        continue;
      out->v[SLICE(at)].output_tokens += im_record_chunk_tokens(r, k);
      if (k && push(&vals, SLICE(at), IM_TS_ITL,
                    (double)((int64_t)r->chunk_us[k] - (int64_t)r->chunk_us[k - 1]) / 1e3))
        goto oom;
    }
  }
#undef IN
#undef SLICE
  if (vals.n)
    qsort(vals.v, vals.n, sizeof *vals.v, cmp_val);
  size_t group = 1; /* the largest (slice, metric) group: x holds one group */
  for (size_t i = 0, j; i < vals.n; i = j) {
    for (j = i; j < vals.n && vals.v[j].s == vals.v[i].s && vals.v[j].m == vals.v[i].m; j++)
      ;
    group = j - i > group ? j - i : group;
  }
  double *x = malloc(group * sizeof *x);
  if (!x)
    goto oom;
  for (size_t s = 0; s < n; s++)
    for (int m = 0; m < IM_TS_METRICS_; m++)
      out->v[s].p50_ms[m] = out->v[s].p90_ms[m] = out->v[s].p99_ms[m] = NAN;
  for (size_t i = 0; i < vals.n;) {
    size_t j = i;
    while (j < vals.n && vals.v[j].s == vals.v[i].s && vals.v[j].m == vals.v[i].m)
      x[j - i] = vals.v[j].ms, j++;
    struct im_timeslice *t = &out->v[vals.v[i].s];
    int m = (int)vals.v[i].m;
    t->n[m] = j - i;
    t->p50_ms[m] = im_stats_pct_linear(x, j - i, 0.50);
    t->p90_ms[m] = im_stats_pct_linear(x, j - i, 0.90);
    t->p99_ms[m] = im_stats_pct_linear(x, j - i, 0.99);
    i = j;
  }
  free(x);
  free(vals.v);
  for (size_t s = 0; s < n; s++) {
    struct im_timeslice *t = &out->v[s];
    double d = t->end_s - t->start_s;
    t->request_throughput = (double)t->completed / d;
    t->output_throughput = (double)t->output_tokens / d;
  }
  return IM_OK;
oom:
  free(vals.v);
  im_timeslices_cleanup(out);
  return IM_NOMEM;
}
