/* Batch means within one run: see analyze/batch.h. */
#include "analyze/batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

const char *im_batch_fig_name(enum im_batch_fig f) {
  static const char *const names[IM_BF_COUNT_] = {"request_throughput", "ttft_p50_ms",
                                                  "tpot_p50_ms", "e2el_p50_ms"};
  return (unsigned)f < IM_BF_COUNT_ ? names[f] : "?";
}

size_t im_batch_count(size_t n) {
  size_t b = n / IM_BATCH_MIN_SIZE;
  return b < IM_BATCH_TARGET ? b : IM_BATCH_TARGET;
}

void im_batch_ci_of(const double *values, size_t b, bool drift, struct im_batch_ci *out) {
  memset(out, 0, sizeof *out);
  out->mean = out->lo = out->hi = out->half = out->rel_half = NAN;
  out->drift_ratio = out->drift_p = NAN;
  out->batches = b;
  struct im_stats_mean_ci ci;
  if (b < 2 || im_stats_mean_ci(values, b, 0.95, &ci) != IM_OK)
    return;
  out->ok = true;
  out->mean = ci.mean;
  out->lo = ci.lo;
  out->hi = ci.hi;
  out->half = ci.half;
  out->rel_half = ci.rel_half;
  if (!drift || b < 4 || b > IM_BATCH_TARGET)
    return;
  double lg[IM_BATCH_TARGET];
  for (size_t i = 0; i < b; i++)
    if (!((lg[i] = log(values[i])) > -INFINITY))
      return; /* a zero median: no ratio */
  size_t h = b / 2;
  struct im_stats_welch w;
  if (im_stats_welch(lg, h, lg + h, b - h, 0.95, &w) == IM_OK) {
    out->drift_judged = true;
    out->drift_ratio = exp(-w.diff); /* second half over first */
    out->drift_p = w.p;
  } else { /* both halves without spread: the difference is exact */
    double a = im_stats_mean(lg, h), c = im_stats_mean(lg + h, b - h);
    out->drift_judged = true;
    out->drift_ratio = exp(c - a);
    out->drift_p = a == c ? 1.0 : 0.0;
  }
}

struct item {
  int64_t t;
  double v[3]; /* ttft, tpot (NaN for fewer than 2 tokens), e2el; ms */
};

static int by_time(const void *a, const void *b) {
  int64_t x = ((const struct item *)a)->t, y = ((const struct item *)b)->t;
  return (x > y) - (x < y);
}

/* The median of batch [lo, hi) of field k, skipping NaNs; NaN when none. */
static double batch_median(const struct item *it, size_t lo, size_t hi, int k, double *scratch) {
  size_t m = 0;
  for (size_t i = lo; i < hi; i++)
    if (!isnan(it[i].v[k]))
      scratch[m++] = it[i].v[k];
  if (!m)
    return NAN;
  im_stats_sort(scratch, m);
  return im_stats_pct_nearest(scratch, m, 0.5);
}

enum im_err im_batch_means_compute(const struct im_population *pop, struct im_batch_means *out) {
  memset(out, 0, sizeof *out);
  for (int f = 0; f < IM_BF_COUNT_; f++)
    im_batch_ci_of(NULL, 0, false, &out->fig[f]);
  struct item *it = malloc((pop->n_req ? pop->n_req : 1) * sizeof *it);
  double *scratch = malloc((pop->n_req ? pop->n_req : 1) * sizeof *scratch);
  if (!it || !scratch) {
    free(it);
    free(scratch);
    return IM_NOMEM;
  }
  size_t n = 0;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_logical *g = &pop->req[i];
    int64_t t = im_logical_sched_base(g);
    if (g->outcome != IM_OUTCOME_COMPLETED || !im_population_in_window(pop, t))
      continue;
    const struct im_record *r = g->final;
    struct item *x = &it[n++];
    x->t = t;
    x->v[0] = (double)(r->t_first - r->t_start) / 1e6;
    x->v[1] = r->output_tokens >= 2
                  ? (double)(r->t_last - r->t_first) / 1e6 / (double)(r->output_tokens - 1)
                  : NAN;
    x->v[2] = (double)(r->t_last - r->t_start) / 1e6;
  }
  out->requests = n;
  qsort(it, n, sizeof *it, by_time);
  size_t b = im_batch_count(n);
  double vals[IM_BATCH_TARGET];
  if (b >= IM_BATCH_MIN) {
    /* Latencies: batch i holds the requests [i n / b, (i + 1) n / b). */
    for (int k = 0; k < 3; k++) {
      bool all = true;
      for (size_t i = 0; i < b; i++)
        all &= !isnan(vals[i] = batch_median(it, i * n / b, (i + 1) * n / b, k, scratch));
      if (all)
        im_batch_ci_of(vals, b, true, &out->fig[IM_BF_TTFT_P50 + k]);
    }
    /* Throughput: completions per s in b equal slices of the window (by
     * the time the last token arrived, as the window's completed rate). */
    double span = (double)(pop->window_end_ns - pop->window_start_ns);
    if (span > 0) {
      size_t count[IM_BATCH_TARGET] = {0};
      for (size_t i = 0; i < pop->n_req; i++) {
        const struct im_logical *g = &pop->req[i];
        if (g->outcome != IM_OUTCOME_COMPLETED)
          continue;
        double rel = (double)(g->final->t_last - pop->window_start_ns) / span;
        if (rel >= 0 && rel <= 1)
          count[rel >= 1 ? b - 1 : (size_t)(rel * (double)b)]++;
      }
      for (size_t i = 0; i < b; i++)
        vals[i] = (double)count[i] / (span / 1e9 / (double)b);
      im_batch_ci_of(vals, b, false, &out->fig[IM_BF_THROUGHPUT]);
    }
  }
  free(it);
  free(scratch);
  return IM_OK;
}
