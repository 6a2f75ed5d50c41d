/* A run's figures from its records (docs/metrics.md §1-§3). The population
 * rule is analyze/population.h's; the undefined-value convention is stated
 * in summary.h; every figure is defined in docs/results-schema.md.
 *
 * vLLM's definitions are those of vllm/benchmarks/serve.py
 * (calculate_metrics, benchmark) and
 * vllm/benchmarks/lib/endpoint_request_func.py in vllm-project/vllm. */
#include "analyze/summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

#define NS_PER_MS 1e6
#define NS_PER_S 1e9
/* docs/metrics.md §3: a dup_fail repeats a failure "within the previous second". */
#define DUP_FAIL_WINDOW_NS INT64_C(1000000000)

/* ---- growable arrays of doubles */

struct dvec {
  double *v;
  size_t n, cap;
};

/* Makes room for one more element of `size` bytes in *v (n used of *cap),
 * doubling; IM_NOMEM leaves *v as it was. Shared by both vector kinds. */
static enum im_err grow(void **v, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return IM_OK;
  size_t c = *cap ? *cap * 2 : 64;
  void *p = realloc(*v, c * size);
  if (!p)
    return IM_NOMEM;
  *v = p;
  *cap = c;
  return IM_OK;
}

static enum im_err dvec_push(struct dvec *d, double x) {
  enum im_err err = grow((void **)&d->v, &d->cap, d->n, sizeof *d->v);
  if (!err)
    d->v[d->n++] = x;
  return err;
}

static void dvec_free(struct dvec *d) {
  free(d->v);
  d->v = NULL;
  d->n = d->cap = 0;
}

/* ---- growable arrays of 32-bit integers: every token gap in µs (vLLM's
 * pooled ITL) and every chunk's second, 4 bytes per chunk as the records
 * themselves hold. */

struct ivec {
  int32_t *v;
  size_t n, cap;
};

static enum im_err ivec_push(struct ivec *d, int32_t x) {
  enum im_err err = grow((void **)&d->v, &d->cap, d->n, sizeof *d->v);
  if (!err)
    d->v[d->n++] = x;
  return err;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* ---- small helpers */

static bool in_window(int64_t t, const struct im_summary_config *cfg) {
  return t >= 0 && t >= cfg->window_start_ns && t <= cfg->window_end_ns;
}

static uint64_t group_key(const struct im_record *r) {
  return r->logical_id ? r->logical_id : r->id;
}

/* Per-second rate over the window; NaN for an empty window. */
static double per_window(double count, double window_s) {
  return window_s > 0 ? count / window_s : NAN;
}

static const char *const hist_names[IM_H_COUNT_] = {
    "ttft_ns",      "ttft_sched_ns",   "ttfa_ns",       "tpot_ns",
    "itl_ns",       "itl_token_ns",    "e2el_ns",       "e2el_sched_ns",
    "dispatch_lag_ns", "queue_wait_ns", "connect_ns"};

const char *im_summary_hist_name(enum im_summary_hist h) {
  return (unsigned)h < IM_H_COUNT_ ? hist_names[h] : "?";
}

/* ---- sample collection */

/* The vLLM block's exact per-request values (ms) and pooled gaps (µs). */
struct samples {
  struct dvec ttft, tpot, e2el;
  struct ivec itl_us;
  struct ivec chunk_sec; /* vLLM's per-second token buckets: seconds from the first start */
};

static void samples_free(struct samples *sm) {
  dvec_free(&sm->ttft);
  dvec_free(&sm->tpot);
  dvec_free(&sm->e2el);
  free(sm->itl_us.v);
  free(sm->chunk_sec.v);
}

/* Records v (ns) in h; false only when h could not take it (never for the
 * default layout: out-of-range values are counted as below/above). */
static void rec_ns(struct im_hist *h, int64_t v) { (void)im_hist_record(h, v); }

/* Per-request latencies of a completed request (its final attempt r). */
static enum im_err collect_completed(struct samples *sm, struct im_hist *h,
                                     const struct im_logical *g) {
  const struct im_record *r = g->final;
  enum im_err err = IM_OK;
  int64_t base = im_logical_sched_base(g);
  int64_t ttft_ns = r->t_first - r->t_start, e2el_ns = r->t_last - r->t_start;
  double ttft = (double)ttft_ns / NS_PER_MS, e2el = (double)e2el_ns / NS_PER_MS;
  if ((err = dvec_push(&sm->ttft, ttft)) || (err = dvec_push(&sm->e2el, e2el)))
    return err;
  rec_ns(&h[IM_H_TTFT], ttft_ns);
  rec_ns(&h[IM_H_E2EL], e2el_ns);
  if (base >= 0) {
    rec_ns(&h[IM_H_TTFT_SCHED], r->t_first - base);
    rec_ns(&h[IM_H_E2EL_SCHED], r->t_last - base);
  }
  if (r->t_answer >= 0)
    rec_ns(&h[IM_H_TTFA], r->t_answer - r->t_start);
  if (r->output_tokens >= 2) {
    if ((err = dvec_push(&sm->tpot, (e2el - ttft) / (r->output_tokens - 1))))
      return err;
    rec_ns(&h[IM_H_TPOT], llround((double)(e2el_ns - ttft_ns) / (r->output_tokens - 1)));
  }
  if (!r->chunk_us)
    return IM_OK;
  for (uint32_t i = 1; i < r->n_chunks; i++) {
    /* Signed: a clock that went backwards must show (as `below`), not wrap. */
    int64_t gap_us = (int64_t)r->chunk_us[i] - (int64_t)r->chunk_us[i - 1];
    uint32_t tok = im_record_chunk_tokens(r, i);
    if ((err = ivec_push(&sm->itl_us, (int32_t)(gap_us > INT32_MAX ? INT32_MAX : gap_us))))
      return err;
    rec_ns(&h[IM_H_ITL], gap_us * 1000);
    if (tok)
      (void)im_hist_record_n(&h[IM_H_ITL_TOKEN], llround((double)gap_us * 1000.0 / tok), tok);
  }
  return IM_OK;
}

/* Client-side delays of one attempt of a non-warm-up request. */
static void collect_client(struct im_hist *h, const struct im_record *r) {
  if (r->t_sched >= 0 && r->t_dispatch >= 0)
    rec_ns(&h[IM_H_DISPATCH_LAG], r->t_dispatch - r->t_sched);
  if (r->t_dispatch >= 0 && r->t_start >= 0)
    rec_ns(&h[IM_H_QUEUE_WAIT], r->t_start - r->t_dispatch);
  if (r->t_start >= 0 && r->t_send >= 0)
    rec_ns(&h[IM_H_CONNECT], r->conn_new ? r->t_send - r->t_start : 0);
}

/* ---- distributions */

/* The value at 1-based rank r of the histogram's sorted values: the
 * lowest (low) or highest value of the bucket holding it, within [min, max]. */
static double hist_rank_ms(const struct im_hist *h, int64_t r, bool low) {
  int64_t n = im_hist_count(h);
  /* r / n read back by the nearest-rank rule is rank r (products within a
   * few ulps of an integer count as that integer, core/hist.h). */
  int64_t v = im_hist_percentile(h, (double)r / (double)n);
  if (low && r > 1) {
    int64_t b = im_hist_bucket_lowest(h, im_hist_index_of(h, v));
    v = b > im_hist_min(h) ? b : im_hist_min(h);
  }
  return (double)v / NS_PER_MS;
}

static void pct_ci_from_hist(struct im_dist *d, size_t i, const struct im_hist *h, double p) {
  struct im_stats_pct_ci ci;
  int64_t n = im_hist_count(h);
  if (!(p > 0 && p < 1) || im_stats_pct_ci(n, p, IM_DIST_PCT_CONF, &ci) != IM_OK)
    return; /* p = 100: the maximum, no interval */
  d->pct_cov[i] = ci.coverage;
  if (ci.lo_rank >= 1)
    d->pct_lo[i] = hist_rank_ms(h, ci.lo_rank, true);
  if (ci.hi_rank <= n)
    d->pct_hi[i] = hist_rank_ms(h, ci.hi_rank, false);
}

void im_dist_from_hist(struct im_dist *d, const struct im_hist *h,
                       const struct im_summary_config *cfg) {
  memset(d, 0, sizeof *d);
  int64_t n = im_hist_count(h);
  d->n = (uint64_t)n;
  d->below = (uint64_t)h->below;
  d->mean = n ? im_hist_mean(h) / NS_PER_MS : NAN;
  /* The histogram's std divides by N; ours is the sample std (N - 1). */
  d->std = n >= 2 ? im_hist_stddev(h) * sqrt((double)n / (double)(n - 1)) / NS_PER_MS : NAN;
  d->min = n ? (double)im_hist_min(h) / NS_PER_MS : NAN;
  d->max = n ? (double)im_hist_max(h) / NS_PER_MS : NAN;
  for (size_t i = 0; i < IM_MAX_PERCENTILES; i++) {
    d->pct[i] = (i < cfg->n_percentiles && n)
                    ? (double)im_hist_percentile(h, cfg->percentiles[i] / 100.0) / NS_PER_MS
                    : NAN;
    d->pct_lo[i] = d->pct_hi[i] = d->pct_cov[i] = NAN;
    if (i < cfg->n_percentiles && n)
      pct_ci_from_hist(d, i, h, cfg->percentiles[i] / 100.0);
  }
}

/* x must be sorted. */
static void vstat_fill(struct im_vllm_stat *v, struct dvec *x, const struct im_summary_config *cfg) {
  memset(v, 0, sizeof *v);
  im_stats_sort(x->v, x->n);
  v->n = x->n;
  v->mean = x->n ? im_stats_mean(x->v, x->n) : NAN;
  v->median = x->n ? im_stats_pct_linear(x->v, x->n, 0.5) : NAN;
  v->std = x->n ? im_stats_std_pop(x->v, x->n) : NAN;
  for (size_t i = 0; i < IM_MAX_PERCENTILES; i++)
    v->pct[i] = (i < cfg->n_percentiles && x->n)
                    ? im_stats_pct_linear(x->v, x->n, cfg->percentiles[i] / 100.0)
                    : NAN;
}

/* numpy's linear percentile (im_stats_pct_linear) over sorted µs, in ms. */
static double pct_linear_us(const int32_t *v, size_t n, double p) {
  double h = (double)(n - 1) * p, f = floor(h);
  size_t i = (size_t)f;
  if (i >= n - 1)
    return v[n - 1] / 1e3;
  double a = v[i] / 1e3, b = v[i + 1] / 1e3, t = h - f, d = b - a;
  return t >= 0.5 ? b - d * (1.0 - t) : a + d * t;
}

/* vLLM's ITL over every pooled gap, from 4-byte µs values. */
static void vstat_fill_us(struct im_vllm_stat *v, struct ivec *x,
                          const struct im_summary_config *cfg) {
  memset(v, 0, sizeof *v);
  size_t n = x->n;
  v->n = n;
  v->mean = v->median = v->std = NAN;
  for (size_t i = 0; i < IM_MAX_PERCENTILES; i++)
    v->pct[i] = NAN;
  if (!n)
    return;
  qsort(x->v, n, sizeof *x->v, cmp_i32);
  int64_t sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += x->v[i];
  double mean = (double)sum / (double)n, ss = 0;
  for (size_t i = 0; i < n; i++) {
    double dv = x->v[i] / 1e3 - mean / 1e3;
    ss += dv * dv;
  }
  v->mean = mean / 1e3;
  v->std = sqrt(ss / (double)n);
  v->median = pct_linear_us(x->v, n, 0.5);
  for (size_t i = 0; i < cfg->n_percentiles && i < IM_MAX_PERCENTILES; i++)
    v->pct[i] = pct_linear_us(x->v, n, cfg->percentiles[i] / 100.0);
}

/* ---- concurrency: sweep over half-open [t_start, t_last) intervals */

struct event {
  int64_t t;
  int delta;
};

static int cmp_event(const void *a, const void *b) {
  const struct event *x = a, *y = b;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  /* An end before a start at the same instant, as vLLM's sweep does, so
   * back-to-back requests are not counted as overlapping. */
  return x->delta - y->delta;
}

static void sweep(struct event *ev, size_t n, double *mean, uint32_t *max) {
  *mean = NAN;
  *max = 0;
  if (!n)
    return;
  qsort(ev, n, sizeof *ev, cmp_event);
  int64_t cur = 0, peak = 0;
  double area = 0;
  for (size_t i = 0; i < n; i++) {
    if (i)
      area += (double)cur * (double)(ev[i].t - ev[i - 1].t);
    cur += ev[i].delta;
    if (cur > peak)
      peak = cur;
  }
  double span = (double)(ev[n - 1].t - ev[0].t);
  *mean = span > 0 ? area / span : NAN;
  *max = (uint32_t)(peak > UINT32_MAX ? UINT32_MAX : peak);
}

/* vLLM's max_output_tokens_per_s: every token chunk of the completed
 * requests falls in the 1 s bucket floor(t - first start); the fullest
 * bucket's count. secs is sorted here. */
static double max_per_second(struct ivec *secs) {
  if (!secs->n)
    return 0;
  qsort(secs->v, secs->n, sizeof *secs->v, cmp_i32);
  size_t best = 0;
  for (size_t i = 0, j = 0; i < secs->n; i = j) {
    while (j < secs->n && secs->v[j] == secs->v[i])
      j++;
    if (j - i > best)
      best = j - i;
  }
  return (double)best;
}

/* ---- SLOs */

struct slo_count {
  uint64_t ttft, tpot, e2el, all;
};

/* vLLM's rule: a request without a TPOT (one output token) meets the TPOT
 * SLO (serve.py: "if output_len <= 1, we regard tpot as 0 for goodput"). */
static void slo_check(const struct im_record *r, const struct im_summary_config *cfg,
                      struct slo_count *c, bool *all) {
  double ttft = (double)(r->t_first - r->t_start) / NS_PER_MS;
  double e2el = (double)(r->t_last - r->t_start) / NS_PER_MS;
  double tpot = r->output_tokens >= 2 ? (e2el - ttft) / (r->output_tokens - 1) : 0.0;
  bool ok_ttft = !cfg->has_slo_ttft || ttft <= cfg->slo_ttft_ms;
  bool ok_tpot = !cfg->has_slo_tpot || tpot <= cfg->slo_tpot_ms;
  bool ok_e2el = !cfg->has_slo_e2el || e2el <= cfg->slo_e2el_ms;
  c->ttft += ok_ttft;
  c->tpot += ok_tpot;
  c->e2el += ok_e2el;
  *all = ok_ttft && ok_tpot && ok_e2el;
  c->all += *all;
}

bool im_summary_has_slo(const struct im_summary_config *cfg) {
  return cfg->has_slo_ttft || cfg->has_slo_tpot || cfg->has_slo_e2el;
}

/* ---- effective rate */

struct fail_ref {
  uint64_t prompt; /* the content hash, or prompt_tokens when there is none */
  uint32_t requested, stage;
  int64_t t_end;
  uint64_t key;
};

/* What makes two requests "identical" (docs/metrics.md §3): the hash of what was
 * sent when the engine recorded one, else (older files) the lengths. */
static uint64_t content_key(const struct im_record *r) {
  return r->content_hash ? r->content_hash : r->prompt_tokens;
}

static int cmp_fail_ref(const void *a, const void *b) {
  const struct fail_ref *x = a, *y = b;
  if (x->prompt != y->prompt)
    return x->prompt < y->prompt ? -1 : 1;
  if (x->requested != y->requested)
    return x->requested < y->requested ? -1 : 1;
  if (x->stage != y->stage)
    return x->stage < y->stage ? -1 : 1;
  return x->t_end < y->t_end ? -1 : x->t_end > y->t_end;
}

/* Whether r repeats (same content, requested_tokens and stage) a
 * failure of another logical request that ended within the second before
 * r's dispatch. fails is sorted by cmp_fail_ref. */
static bool is_dup_fail(const struct im_record *r, const struct fail_ref *fails, size_t nf) {
  struct fail_ref probe = {content_key(r), r->requested_tokens, r->stage,
                           r->t_dispatch - DUP_FAIL_WINDOW_NS, 0};
  size_t lo = 0, hi = nf;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_fail_ref(&fails[mid], &probe) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t i = lo; i < nf; i++) {
    const struct fail_ref *f = &fails[i];
    if (f->prompt != probe.prompt || f->requested != probe.requested || f->stage != probe.stage ||
        f->t_end > r->t_dispatch)
      return false;
    if (f->key != group_key(r))
      return true;
  }
  return false;
}

static double rec_latency_ms(const struct im_record *r) {
  if (r->t_start < 0)
    return NAN;
  if (r->t_last >= 0)
    return (double)(r->t_last - r->t_start) / NS_PER_MS;
  if (r->t_end >= 0)
    return (double)(r->t_end - r->t_start) / NS_PER_MS;
  return NAN;
}

const char *im_traffic_name(enum im_traffic t) {
  static const char *const names[IM_TRAFFIC_COUNT_] = {"measured", "retry", "health", "probe",
                                                       "dup_fail"};
  return (unsigned)t < IM_TRAFFIC_COUNT_ ? names[t] : "?";
}

/* Mean and p99 (nearest rank) of each class's latencies (cls[i] is the
 * class of lat[i]). */
static void traffic_latency(struct im_summary *s, const double *lat, const unsigned char *cls,
                            size_t m) {
  double *v = malloc((m ? m : 1) * sizeof *v);
  for (int t = 0; t < IM_TRAFFIC_COUNT_; t++) {
    size_t k = 0;
    for (size_t i = 0; v && i < m; i++)
      if (cls[i] == t)
        v[k++] = lat[i];
    im_stats_sort(v, k);
    s->traffic[t].mean_latency_ms = k ? im_stats_mean(v, k) : NAN;
    s->traffic[t].p99_latency_ms = k ? im_stats_pct_nearest(v, k, 0.99) : NAN;
  }
  free(v);
}

/* Counts per class over the attempts dispatched in the window, and the
 * per-kind mean latencies. */
static enum im_err effective_rate(const struct im_record *recs, size_t n,
                                  const struct im_summary_config *cfg, struct im_summary *s) {
  struct fail_ref *fails = malloc((n ? n : 1) * sizeof *fails);
  if (!fails)
    return IM_NOMEM;
  size_t nf = 0;
  for (size_t i = 0; i < n; i++) {
    const struct im_record *r = &recs[i];
    bool user =
        r->kind == IM_KIND_MEASURED || r->kind == IM_KIND_RETRY || r->kind == IM_KIND_WARMUP;
    if (user && !r->cancelled && !im_attempt_succeeded(r) && r->t_end >= 0)
      fails[nf++] = (struct fail_ref){content_key(r), r->requested_tokens, r->stage, r->t_end,
                                      group_key(r)};
  }
  qsort(fails, nf, sizeof *fails, cmp_fail_ref);

  /* Each attempt's class, then its latency into that class's values. */
  double *lat = malloc((n ? n : 1) * sizeof *lat);
  unsigned char *cls = malloc(n ? n : 1);
  if (!lat || !cls) {
    free(fails);
    free(lat);
    free(cls);
    return IM_NOMEM;
  }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const struct im_record *r = &recs[i];
    if (!in_window(r->t_dispatch, cfg))
      continue;
    s->raw_attempts++;
    enum im_traffic t = IM_TRAFFIC_MEASURED;
    if (r->kind == IM_KIND_HEALTH) {
      s->health_attempts++;
      t = IM_TRAFFIC_HEALTH;
    } else if (r->kind == IM_KIND_PROBE) {
      s->probe_attempts++;
      t = IM_TRAFFIC_PROBE;
    } else if (r->kind == IM_KIND_RETRY || r->attempt > 1) {
      s->retry_attempts++;
      t = IM_TRAFFIC_RETRY;
    } else if (is_dup_fail(r, fails, nf)) {
      s->dup_fail++;
      t = IM_TRAFFIC_DUP_FAIL;
    }
    s->traffic[t].count++;
    double l = rec_latency_ms(r);
    if (!isnan(l)) {
      lat[m] = l;
      cls[m++] = (unsigned char)t;
    }
  }
  free(fails);
  traffic_latency(s, lat, cls, m);
  free(lat);
  free(cls);

  double window_s = (double)(cfg->window_end_ns - cfg->window_start_ns) / NS_PER_S;
  uint64_t excluded = s->retry_attempts + s->health_attempts + s->probe_attempts + s->dup_fail;
  s->raw_qps = per_window((double)s->raw_attempts, window_s);
  s->effective_qps = per_window((double)(s->raw_attempts - excluded), window_s);
  s->effective_ratio =
      s->raw_attempts ? (double)(s->raw_attempts - excluded) / (double)s->raw_attempts : NAN;
  s->dup_fail_mean_e2el_ms = s->traffic[IM_TRAFFIC_DUP_FAIL].mean_latency_ms;
  for (int t = 0; t < IM_TRAFFIC_COUNT_; t++)
    s->traffic[t].share =
        s->raw_attempts ? (double)s->traffic[t].count / (double)s->raw_attempts : NAN;

  double sum[IM_KIND_COUNT_] = {0};
  uint64_t cnt[IM_KIND_COUNT_] = {0};
  for (size_t i = 0; i < n; i++) {
    double l = rec_latency_ms(&recs[i]);
    if ((unsigned)recs[i].kind < IM_KIND_COUNT_ && !isnan(l)) {
      sum[recs[i].kind] += l;
      cnt[recs[i].kind]++;
    }
  }
  for (int k = 0; k < IM_KIND_COUNT_; k++)
    s->kind_mean_e2el_ms[k] = cnt[k] ? sum[k] / (double)cnt[k] : NAN;
  return IM_OK;
}

/* ---- the whole computation */

void im_summary_config_default(struct im_summary_config *cfg) {
  static const double def[] = {50, 90, 95, 99, 99.9};
  memset(cfg, 0, sizeof *cfg);
  memcpy(cfg->percentiles, def, sizeof def);
  cfg->n_percentiles = sizeof def / sizeof def[0];
}

static bool config_valid(const struct im_summary_config *cfg) {
  if (cfg->n_percentiles > IM_MAX_PERCENTILES || cfg->window_end_ns < cfg->window_start_ns)
    return false;
  for (size_t i = 0; i < cfg->n_percentiles; i++)
    if (!(cfg->percentiles[i] > 0 && cfg->percentiles[i] <= 100))
      return false;
  return !(cfg->has_slo_ttft && !(cfg->slo_ttft_ms >= 0)) &&
         !(cfg->has_slo_tpot && !(cfg->slo_tpot_ms >= 0)) &&
         !(cfg->has_slo_e2el && !(cfg->slo_e2el_ms >= 0));
}

/* Accumulators of the pass over logical requests. */
struct pass {
  struct samples sm;
  struct event *ev;
  size_t nev;
  int64_t v_first_send, v_last_end; /* vLLM duration */
  struct slo_count slo;             /* over completed requests */
  uint64_t win_out, win_in;
  uint64_t sched_at_end; /* arrivals at the window's last instant (docs/metrics.md §2) */
};

static void pass_attempt_span(struct pass *p, const struct im_record *r) {
  int64_t end = im_attempt_succeeded(r) ? r->t_last : (r->t_end >= 0 ? r->t_end : r->t_last);
  if (r->t_start >= 0 && (p->v_first_send < 0 || r->t_start < p->v_first_send))
    p->v_first_send = r->t_start;
  if (end > p->v_last_end)
    p->v_last_end = end;
}

static enum im_err pass_completed(struct pass *p, struct im_hist *h, const struct im_logical *g,
                                  const struct im_summary_config *cfg, struct im_summary *s) {
  const struct im_record *r = g->final;
  enum im_err err = collect_completed(&p->sm, h, g);
  if (err)
    return err;
  s->completed++;
  s->total_input_tokens += r->prompt_tokens;
  s->total_output_tokens += r->output_tokens;
  s->cache_prompt_tokens += r->prompt_tokens;
  s->cache_cached_tokens += r->cached_tokens;
  if ((unsigned)r->output_source < IM_COUNT_SOURCE_COUNT_)
    s->output_source[r->output_source]++;
  if (r->ignore_eos && r->output_tokens < r->requested_tokens) {
    s->output_shortfall_requests++;
    s->output_shortfall_tokens += r->requested_tokens - r->output_tokens;
  }
  p->ev[p->nev++] = (struct event){r->t_start, +1};
  p->ev[p->nev++] = (struct event){r->t_last, -1};
  bool good = false;
  slo_check(r, cfg, &p->slo, &good);
  if (in_window(r->t_last, cfg)) {
    s->window_completed++;
    p->win_out += r->output_tokens;
    p->win_in += r->prompt_tokens;
    s->goodput_requests += good;
  }
  return IM_OK;
}

static enum im_err pass_logical(struct pass *p, const struct im_population *pop,
                                const struct im_summary_config *cfg, struct im_summary *s) {
  enum im_err err = IM_OK;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_logical *g = &pop->req[i];
    if (g->outcome == IM_OUTCOME_WARMUP)
      continue;
    for (size_t a = g->begin; a < g->end; a++) {
      collect_client(s->hist, pop->attempts[a]);
      if (g->outcome != IM_OUTCOME_ABORTED && g->outcome != IM_OUTCOME_CANCELLED)
        pass_attempt_span(p, pop->attempts[a]);
    }
    if (g->outcome == IM_OUTCOME_CANCELLED)
      continue; /* analyze/cancel.h reports them */
    if (g->outcome == IM_OUTCOME_ABORTED)
      s->aborted++;
    else if (g->outcome == IM_OUTCOME_FAILED)
      s->failed++;
    else if ((err = pass_completed(p, s->hist, g, cfg, s)))
      return err;
  }
  return IM_OK;
}

static enum im_err collect_chunk_seconds(struct pass *p, const struct im_population *pop) {
  int64_t t0 = -1;
  enum im_err err = IM_OK;
  for (size_t i = 0; i < pop->n_req; i++)
    if (pop->req[i].outcome == IM_OUTCOME_COMPLETED && (t0 < 0 || pop->req[i].final->t_start < t0))
      t0 = pop->req[i].final->t_start;
  for (size_t i = 0; i < pop->n_req; i++) {
    const struct im_record *r = pop->req[i].final;
    if (pop->req[i].outcome != IM_OUTCOME_COMPLETED || !r->chunk_us)
      continue;
    for (uint32_t c = 0; c < r->n_chunks; c++) {
      double t = (double)(r->t_start - t0) + (double)r->chunk_us[c] * 1e3;
      if ((err = ivec_push(&p->sm.chunk_sec, (int32_t)floor(t / NS_PER_S))))
        return err;
    }
  }
  return IM_OK;
}

static void finish_rates(struct pass *p, const struct im_summary_config *cfg,
                         struct im_summary *s) {
  double dur = p->v_first_send >= 0 && p->v_last_end >= p->v_first_send
                   ? (double)(p->v_last_end - p->v_first_send) / NS_PER_S
                   : NAN;
  s->duration_s = dur;
  double vd = dur > 0 ? dur : NAN;
  s->request_throughput = (double)s->completed / vd;
  s->output_throughput = (double)s->total_output_tokens / vd;
  s->total_token_throughput = (double)(s->total_input_tokens + s->total_output_tokens) / vd;
  s->request_goodput = im_summary_has_slo(cfg) ? (double)p->slo.all / vd : 0.0;

  double w = (double)(cfg->window_end_ns - cfg->window_start_ns) / NS_PER_S;
  s->window_s = w;
  s->window_request_rate = per_window((double)s->window_completed, w);
  s->window_output_tok_rate = per_window((double)p->win_out, w);
  s->window_total_tok_rate = per_window((double)(p->win_in + p->win_out), w);
  /* An open loop's window ends on its last arrival: counting that arrival
   * too reads one arrival per window high (n arrivals over the time to the
   * n-th: (n - 1) / T is the unbiased rate). */
  s->scheduled_rate = per_window((double)(s->scheduled - p->sched_at_end), w);
  s->dispatched_rate = per_window((double)s->dispatched, w);
  s->completed_rate = s->window_request_rate;

  double den = (double)(s->completed + s->failed + s->aborted);
  s->slo_requests = s->completed + s->failed + s->aborted;
  s->slo_met_ttft = p->slo.ttft;
  s->slo_met_tpot = p->slo.tpot;
  s->slo_met_e2el = p->slo.e2el;
  s->slo_met_all = p->slo.all;
  s->slo_ttft_attain = cfg->has_slo_ttft && den > 0 ? (double)p->slo.ttft / den : NAN;
  s->slo_tpot_attain = cfg->has_slo_tpot && den > 0 ? (double)p->slo.tpot / den : NAN;
  s->slo_e2el_attain = cfg->has_slo_e2el && den > 0 ? (double)p->slo.e2el / den : NAN;
  s->slo_all_attain = im_summary_has_slo(cfg) && den > 0 ? (double)p->slo.all / den : NAN;
  s->goodput_rps = im_summary_has_slo(cfg) ? per_window((double)s->goodput_requests, w) : NAN;
  s->cache_hit_rate = s->cache_prompt_tokens
                          ? (double)s->cache_cached_tokens / (double)s->cache_prompt_tokens
                          : NAN;
}

static void census(const struct im_record *recs, size_t n, const struct im_summary_config *cfg,
                   struct im_summary *s, uint64_t *at_end) {
  for (size_t i = 0; i < n; i++) {
    const struct im_record *r = &recs[i];
    if ((unsigned)r->kind < IM_KIND_COUNT_) {
      s->by_kind[r->kind]++;
      s->by_kind_cancelled[r->kind] += r->cancelled;
    }
    if ((unsigned)r->error < IM_EC_COUNT_)
      s->by_error[r->error]++;
    /* The schedule's own arrivals: first attempts of non-warm-up work. */
    if (r->attempt <= 1 && (r->kind == IM_KIND_MEASURED || r->kind == IM_KIND_ABORTED ||
                            r->kind == IM_KIND_CANCELLED)) {
      s->scheduled += in_window(r->t_sched, cfg);
      *at_end += in_window(r->t_sched, cfg) && r->t_sched == cfg->window_end_ns &&
                         cfg->window_end_ns > cfg->window_start_ns
                     ? 1u
                     : 0u;
      s->dispatched += in_window(r->t_dispatch, cfg);
    }
  }
}

static void fill_dists(struct samples *sm, const struct im_summary_config *cfg,
                       struct im_summary *s) {
  struct im_dist *d[IM_H_COUNT_] = {
      [IM_H_TTFT] = &s->ttft,         [IM_H_TTFT_SCHED] = &s->ttft_sched,
      [IM_H_TTFA] = &s->ttfa,         [IM_H_TPOT] = &s->tpot,
      [IM_H_ITL] = &s->itl,           [IM_H_ITL_TOKEN] = &s->itl_token,
      [IM_H_E2EL] = &s->e2el,         [IM_H_E2EL_SCHED] = &s->e2el_sched,
      [IM_H_DISPATCH_LAG] = &s->dispatch_lag, [IM_H_QUEUE_WAIT] = &s->queue_wait,
      [IM_H_CONNECT] = &s->connect};
  for (int i = 0; i < IM_H_COUNT_; i++)
    im_dist_from_hist(d[i], &s->hist[i], cfg);
  vstat_fill(&s->v_ttft, &sm->ttft, cfg);
  vstat_fill(&s->v_tpot, &sm->tpot, cfg);
  vstat_fill_us(&s->v_itl, &sm->itl_us, cfg);
  vstat_fill(&s->v_e2el, &sm->e2el, cfg);
}

void im_summary_cleanup(struct im_summary *s) {
  if (!s)
    return;
  for (int i = 0; i < IM_H_COUNT_; i++)
    im_hist_cleanup(&s->hist[i]);
}

enum im_err im_summary_compute_pop(const struct im_population *pop,
                                   const struct im_summary_config *cfg, struct im_summary *s) {
  enum im_err err = IM_INVAL;
  struct pass p = {.v_first_send = -1, .v_last_end = -1};
  struct im_summary *out = calloc(1, sizeof *out);
  if (!out)
    return IM_NOMEM;
  if (!pop || !cfg || !s || !config_valid(cfg) || cfg->window_start_ns != pop->window_start_ns ||
      cfg->window_end_ns != pop->window_end_ns)
    goto done;
  err = IM_NOMEM;
  for (int i = 0; i < IM_H_COUNT_; i++)
    if (im_hist_init_default(&out->hist[i]) != IM_OK)
      goto done;
  if (!(p.ev = malloc(2 * (pop->n_req ? pop->n_req : 1) * sizeof *p.ev)))
    goto done;
  census(pop->recs, pop->n_recs, cfg, out, &p.sched_at_end);
  if ((err = pass_logical(&p, pop, cfg, out)) || (err = collect_chunk_seconds(&p, pop)) ||
      (err = effective_rate(pop->recs, pop->n_recs, cfg, out)))
    goto done;
  sweep(p.ev, p.nev, &out->concurrency_mean, &out->concurrency_max);
  out->max_concurrent_requests = out->concurrency_max;
  out->max_output_tokens_per_s = max_per_second(&p.sm.chunk_sec);
  finish_rates(&p, cfg, out);
  fill_dists(&p.sm, cfg, out);
  *s = *out;
  memset(out, 0, sizeof *out); /* the histograms now belong to s */
  err = IM_OK;
done:
  im_summary_cleanup(out);
  free(out);
  samples_free(&p.sm);
  free(p.ev);
  return err;
}

enum im_err im_summary_compute(const struct im_record *recs, size_t n,
                               const struct im_summary_config *cfg, struct im_summary *s) {
  struct im_population pop;
  if (!cfg || !config_valid(cfg))
    return IM_INVAL;
  enum im_err err = im_population_build(recs, n, cfg->window_start_ns, cfg->window_end_ns, &pop);
  if (!err)
    err = im_summary_compute_pop(&pop, cfg, s);
  im_population_cleanup(&pop);
  return err;
}
