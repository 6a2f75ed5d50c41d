/* A run's figures from its records (docs/metrics.md §1-§3). The grouping rule
 * and the undefined-value convention are stated in summary.h; every figure
 * is defined in docs/results-schema-summary.md.
 *
 * vLLM's definitions are those of vllm/benchmarks/serve.py
 * (calculate_metrics, benchmark) and
 * vllm/benchmarks/lib/endpoint_request_func.py in vllm-project/vllm. */
#include "analyze/summary.h"

#include <jansson.h>
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

static enum im_err dvec_push(struct dvec *d, double x) {
  if (d->n == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 64;
    double *v = realloc(d->v, cap * sizeof *v);
    if (!v)
      return IM_NOMEM;
    d->v = v;
    d->cap = cap;
  }
  d->v[d->n++] = x;
  return IM_OK;
}

static void dvec_free(struct dvec *d) {
  free(d->v);
  d->v = NULL;
  d->n = d->cap = 0;
}

/* ---- small helpers */

static bool attempt_ok(const struct im_record *r) {
  return r->error == IM_EC_NONE && r->n_chunks >= 1 && r->t_start >= 0 && r->t_first >= 0 &&
         r->t_last >= 0;
}

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

/* ---- logical requests */

struct att_ref {
  uint64_t key;
  uint32_t attempt;
  size_t idx;
};

static int cmp_att_ref(const void *a, const void *b) {
  const struct att_ref *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  if (x->attempt != y->attempt)
    return x->attempt < y->attempt ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

enum outcome { OUT_WARMUP, OUT_COMPLETED, OUT_FAILED, OUT_ABORTED };

/* One logical request: its first and final attempts and what became of it. */
struct logical {
  const struct im_record *first, *final;
  enum outcome outcome;
  size_t begin, end; /* its attempts: refs[begin, end) */
};

static bool grouped_kind(enum im_req_kind k) {
  return k == IM_KIND_MEASURED || k == IM_KIND_RETRY || k == IM_KIND_ABORTED || k == IM_KIND_WARMUP;
}

/* Groups the attempts of user requests (refs sorted by key, attempt) into
 * logical requests. *out has room for nrefs entries. */
static size_t group_logical(const struct im_record *recs, const struct att_ref *refs, size_t nrefs,
                            struct logical *out) {
  size_t ng = 0;
  for (size_t i = 0; i < nrefs;) {
    size_t j = i;
    bool warm = false;
    while (j < nrefs && refs[j].key == refs[i].key) {
      warm |= recs[refs[j].idx].kind == IM_KIND_WARMUP;
      j++;
    }
    struct logical *g = &out[ng++];
    g->first = &recs[refs[i].idx];
    g->final = &recs[refs[j - 1].idx];
    g->begin = i;
    g->end = j;
    if (warm)
      g->outcome = OUT_WARMUP;
    else if (g->final->kind == IM_KIND_ABORTED)
      g->outcome = OUT_ABORTED;
    else
      g->outcome = attempt_ok(g->final) ? OUT_COMPLETED : OUT_FAILED;
    i = j;
  }
  return ng;
}

/* The user-visible schedule time of a logical request. */
static int64_t sched_base(const struct logical *g) {
  if (g->final->t_sched_first >= 0)
    return g->final->t_sched_first;
  if (g->first->t_sched >= 0)
    return g->first->t_sched;
  return g->final->t_sched;
}

/* ---- sample collection */

struct samples {
  struct dvec ttft, ttft_sched, ttfa, tpot, itl, itl_token, e2el, e2el_sched;
  struct dvec dispatch_lag, queue_wait, connect;
  struct dvec chunk_sec; /* vLLM's per-second token buckets, as seconds from the first start */
};

static void samples_free(struct samples *sm) {
  struct dvec *all[] = {&sm->ttft,         &sm->ttft_sched, &sm->ttfa,    &sm->tpot,
                        &sm->itl,          &sm->itl_token,  &sm->e2el,    &sm->e2el_sched,
                        &sm->dispatch_lag, &sm->queue_wait, &sm->connect, &sm->chunk_sec};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    dvec_free(all[i]);
}

/* Per-request latencies of a completed request (its final attempt r). */
static enum im_err collect_completed(struct samples *sm, const struct logical *g) {
  const struct im_record *r = g->final;
  enum im_err err = IM_OK;
  int64_t base = sched_base(g);
  double ttft = (double)(r->t_first - r->t_start) / NS_PER_MS;
  double e2el = (double)(r->t_last - r->t_start) / NS_PER_MS;
  if ((err = dvec_push(&sm->ttft, ttft)) || (err = dvec_push(&sm->e2el, e2el)))
    return err;
  if (base >= 0 && ((err = dvec_push(&sm->ttft_sched, (double)(r->t_first - base) / NS_PER_MS)) ||
                    (err = dvec_push(&sm->e2el_sched, (double)(r->t_last - base) / NS_PER_MS))))
    return err;
  if (r->t_answer >= 0 &&
      (err = dvec_push(&sm->ttfa, (double)(r->t_answer - r->t_start) / NS_PER_MS)))
    return err;
  if (r->output_tokens >= 2 && (err = dvec_push(&sm->tpot, (e2el - ttft) / (r->output_tokens - 1))))
    return err;
  if (!r->chunk_us)
    return IM_OK;
  for (uint32_t i = 1; i < r->n_chunks; i++) {
    /* Signed: a clock that went backwards must show, not wrap. */
    double gap = ((double)r->chunk_us[i] - (double)r->chunk_us[i - 1]) / 1e3;
    uint32_t tok = im_record_chunk_tokens(r, i);
    if ((err = dvec_push(&sm->itl, gap)))
      return err;
    for (uint32_t k = 0; k < tok; k++)
      if ((err = dvec_push(&sm->itl_token, gap / tok)))
        return err;
  }
  return IM_OK;
}

/* Client-side delays of one attempt of a measured request. */
static enum im_err collect_client(struct samples *sm, const struct im_record *r) {
  enum im_err err = IM_OK;
  if (r->t_sched >= 0 && r->t_dispatch >= 0 &&
      (err = dvec_push(&sm->dispatch_lag, (double)(r->t_dispatch - r->t_sched) / NS_PER_MS)))
    return err;
  if (r->t_dispatch >= 0 && r->t_start >= 0 &&
      (err = dvec_push(&sm->queue_wait, (double)(r->t_start - r->t_dispatch) / NS_PER_MS)))
    return err;
  if (r->t_start >= 0 && r->t_send >= 0 &&
      (err = dvec_push(&sm->connect,
                       r->conn_new ? (double)(r->t_send - r->t_start) / NS_PER_MS : 0.0)))
    return err;
  return IM_OK;
}

/* ---- distributions */

static void dist_fill(struct im_dist *d, struct dvec *x, const struct im_summary_config *cfg) {
  memset(d, 0, sizeof *d);
  d->n = x->n;
  im_stats_sort(x->v, x->n);
  d->mean = x->n ? im_stats_mean(x->v, x->n) : NAN;
  d->std = x->n >= 2 ? im_stats_std_sample(x->v, x->n) : NAN;
  d->min = x->n ? x->v[0] : NAN;
  d->max = x->n ? x->v[x->n - 1] : NAN;
  for (size_t i = 0; i < IM_MAX_PERCENTILES; i++)
    d->pct[i] = (i < cfg->n_percentiles && x->n)
                    ? im_stats_pct_nearest(x->v, x->n, cfg->percentiles[i] / 100.0)
                    : NAN;
}

/* x must be sorted (dist_fill sorted it). */
static void vstat_fill(struct im_vllm_stat *v, const struct dvec *x,
                       const struct im_summary_config *cfg) {
  memset(v, 0, sizeof *v);
  v->n = x->n;
  v->mean = x->n ? im_stats_mean(x->v, x->n) : NAN;
  v->median = x->n ? im_stats_pct_linear(x->v, x->n, 0.5) : NAN;
  v->std = x->n ? im_stats_std_pop(x->v, x->n) : NAN;
  for (size_t i = 0; i < IM_MAX_PERCENTILES; i++)
    v->pct[i] = (i < cfg->n_percentiles && x->n)
                    ? im_stats_pct_linear(x->v, x->n, cfg->percentiles[i] / 100.0)
                    : NAN;
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
static double max_per_second(struct dvec *secs) {
  if (!secs->n)
    return 0;
  im_stats_sort(secs->v, secs->n);
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

static bool any_slo(const struct im_summary_config *cfg) {
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
    if (user && !attempt_ok(r) && r->t_end >= 0)
      fails[nf++] = (struct fail_ref){content_key(r), r->requested_tokens, r->stage, r->t_end,
                                      group_key(r)};
  }
  qsort(fails, nf, sizeof *fails, cmp_fail_ref);

  double dup_lat = 0;
  uint64_t dup_lat_n = 0;
  for (size_t i = 0; i < n; i++) {
    const struct im_record *r = &recs[i];
    if (!in_window(r->t_dispatch, cfg))
      continue;
    s->raw_attempts++;
    if (r->kind == IM_KIND_HEALTH) {
      s->health_attempts++;
    } else if (r->kind == IM_KIND_PROBE) {
      s->probe_attempts++;
    } else if (r->kind == IM_KIND_RETRY || r->attempt > 1) {
      s->retry_attempts++;
    } else if (is_dup_fail(r, fails, nf)) {
      s->dup_fail++;
      double l = rec_latency_ms(r);
      if (!isnan(l)) {
        dup_lat += l;
        dup_lat_n++;
      }
    }
  }
  free(fails);

  double window_s = (double)(cfg->window_end_ns - cfg->window_start_ns) / NS_PER_S;
  uint64_t excluded = s->retry_attempts + s->health_attempts + s->probe_attempts + s->dup_fail;
  s->raw_qps = per_window((double)s->raw_attempts, window_s);
  s->effective_qps = per_window((double)(s->raw_attempts - excluded), window_s);
  s->effective_ratio =
      s->raw_attempts ? (double)(s->raw_attempts - excluded) / (double)s->raw_attempts : NAN;
  s->dup_fail_mean_e2el_ms = dup_lat_n ? dup_lat / (double)dup_lat_n : NAN;

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
};

static void pass_attempt_span(struct pass *p, const struct im_record *r) {
  int64_t end = attempt_ok(r) ? r->t_last : (r->t_end >= 0 ? r->t_end : r->t_last);
  if (r->t_start >= 0 && (p->v_first_send < 0 || r->t_start < p->v_first_send))
    p->v_first_send = r->t_start;
  if (end > p->v_last_end)
    p->v_last_end = end;
}

static enum im_err pass_completed(struct pass *p, const struct logical *g,
                                  const struct im_summary_config *cfg, struct im_summary *s) {
  const struct im_record *r = g->final;
  enum im_err err = collect_completed(&p->sm, g);
  if (err)
    return err;
  s->completed++;
  s->total_input_tokens += r->prompt_tokens;
  s->total_output_tokens += r->output_tokens;
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

static enum im_err pass_logical(struct pass *p, const struct im_record *recs,
                                const struct att_ref *refs, const struct logical *g, size_t ng,
                                const struct im_summary_config *cfg, struct im_summary *s) {
  enum im_err err = IM_OK;
  for (size_t i = 0; i < ng; i++) {
    if (g[i].outcome == OUT_WARMUP)
      continue;
    for (size_t a = g[i].begin; a < g[i].end; a++) {
      const struct im_record *r = &recs[refs[a].idx];
      if ((err = collect_client(&p->sm, r)))
        return err;
      if (g[i].outcome != OUT_ABORTED)
        pass_attempt_span(p, r);
    }
    if (g[i].outcome == OUT_ABORTED) {
      s->aborted++;
    } else if (g[i].outcome == OUT_FAILED) {
      s->failed++;
    } else if ((err = pass_completed(p, &g[i], cfg, s))) {
      return err;
    }
  }
  return IM_OK;
}

static enum im_err collect_chunk_seconds(struct pass *p, const struct logical *g, size_t ng) {
  int64_t t0 = -1;
  enum im_err err = IM_OK;
  for (size_t i = 0; i < ng; i++)
    if (g[i].outcome == OUT_COMPLETED && (t0 < 0 || g[i].final->t_start < t0))
      t0 = g[i].final->t_start;
  for (size_t i = 0; i < ng; i++) {
    const struct im_record *r = g[i].final;
    if (g[i].outcome != OUT_COMPLETED || !r->chunk_us)
      continue;
    for (uint32_t c = 0; c < r->n_chunks; c++) {
      double t = (double)(r->t_start - t0) + (double)r->chunk_us[c] * 1e3;
      if ((err = dvec_push(&p->sm.chunk_sec, floor(t / NS_PER_S))))
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
  s->request_goodput = any_slo(cfg) ? (double)p->slo.all / vd : 0.0;

  double w = (double)(cfg->window_end_ns - cfg->window_start_ns) / NS_PER_S;
  s->window_s = w;
  s->window_request_rate = per_window((double)s->window_completed, w);
  s->window_output_tok_rate = per_window((double)p->win_out, w);
  s->window_total_tok_rate = per_window((double)(p->win_in + p->win_out), w);
  s->scheduled_rate = per_window((double)s->scheduled, w);
  s->dispatched_rate = per_window((double)s->dispatched, w);
  s->completed_rate = s->window_request_rate;

  double den = (double)(s->completed + s->failed + s->aborted);
  s->slo_ttft_attain = cfg->has_slo_ttft && den > 0 ? (double)p->slo.ttft / den : NAN;
  s->slo_tpot_attain = cfg->has_slo_tpot && den > 0 ? (double)p->slo.tpot / den : NAN;
  s->slo_e2el_attain = cfg->has_slo_e2el && den > 0 ? (double)p->slo.e2el / den : NAN;
  s->slo_all_attain = any_slo(cfg) && den > 0 ? (double)p->slo.all / den : NAN;
  s->goodput_rps = any_slo(cfg) ? per_window((double)s->goodput_requests, w) : NAN;
}

static void census(const struct im_record *recs, size_t n, const struct im_summary_config *cfg,
                   struct im_summary *s) {
  for (size_t i = 0; i < n; i++) {
    const struct im_record *r = &recs[i];
    if ((unsigned)r->kind < IM_KIND_COUNT_)
      s->by_kind[r->kind]++;
    if ((unsigned)r->error < IM_EC_COUNT_)
      s->by_error[r->error]++;
    /* The schedule's own arrivals: first attempts of non-warm-up work. */
    if (r->attempt <= 1 && (r->kind == IM_KIND_MEASURED || r->kind == IM_KIND_ABORTED)) {
      s->scheduled += in_window(r->t_sched, cfg);
      s->dispatched += in_window(r->t_dispatch, cfg);
    }
  }
}

static void fill_dists(struct samples *sm, const struct im_summary_config *cfg,
                       struct im_summary *s) {
  dist_fill(&s->ttft, &sm->ttft, cfg);
  dist_fill(&s->ttft_sched, &sm->ttft_sched, cfg);
  dist_fill(&s->ttfa, &sm->ttfa, cfg);
  dist_fill(&s->tpot, &sm->tpot, cfg);
  dist_fill(&s->itl, &sm->itl, cfg);
  dist_fill(&s->itl_token, &sm->itl_token, cfg);
  dist_fill(&s->e2el, &sm->e2el, cfg);
  dist_fill(&s->e2el_sched, &sm->e2el_sched, cfg);
  dist_fill(&s->dispatch_lag, &sm->dispatch_lag, cfg);
  dist_fill(&s->queue_wait, &sm->queue_wait, cfg);
  dist_fill(&s->connect, &sm->connect, cfg);
  vstat_fill(&s->v_ttft, &sm->ttft, cfg);
  vstat_fill(&s->v_tpot, &sm->tpot, cfg);
  vstat_fill(&s->v_itl, &sm->itl, cfg);
  vstat_fill(&s->v_e2el, &sm->e2el, cfg);
}

enum im_err im_summary_compute(const struct im_record *recs, size_t n,
                               const struct im_summary_config *cfg, struct im_summary *s) {
  enum im_err err = IM_INVAL;
  struct att_ref *refs = NULL;
  struct logical *groups = NULL;
  struct pass p = {.v_first_send = -1, .v_last_end = -1};
  struct im_summary out;
  memset(&out, 0, sizeof out);
  if (!cfg || !s || (n && !recs) || !config_valid(cfg))
    goto done;

  err = IM_NOMEM;
  size_t cap = n ? n : 1;
  refs = malloc(cap * sizeof *refs);
  groups = malloc(cap * sizeof *groups);
  p.ev = malloc(2 * cap * sizeof *p.ev);
  if (!refs || !groups || !p.ev)
    goto done;
  size_t nrefs = 0;
  for (size_t i = 0; i < n; i++)
    if (grouped_kind(recs[i].kind))
      refs[nrefs++] = (struct att_ref){group_key(&recs[i]), recs[i].attempt, i};
  qsort(refs, nrefs, sizeof *refs, cmp_att_ref);
  size_t ng = group_logical(recs, refs, nrefs, groups);

  census(recs, n, cfg, &out);
  if ((err = pass_logical(&p, recs, refs, groups, ng, cfg, &out)) ||
      (err = collect_chunk_seconds(&p, groups, ng)) || (err = effective_rate(recs, n, cfg, &out)))
    goto done;
  sweep(p.ev, p.nev, &out.concurrency_mean, &out.concurrency_max);
  out.max_concurrent_requests = out.concurrency_max;
  out.max_output_tokens_per_s = max_per_second(&p.sm.chunk_sec);
  finish_rates(&p, cfg, &out);
  fill_dists(&p.sm, cfg, &out);
  *s = out;
  err = IM_OK;
done:
  samples_free(&p.sm);
  free(p.ev);
  free(groups);
  free(refs);
  return err;
}

/* ---- JSON */

/* The percentile word as vLLM's serve.py writes it:
 * str(int(p)) if int(p) == p else str(p). Python's str of a float is the
 * shortest repr that round-trips; %.*g with the smallest such precision
 * gives the same digits for p in (0, 100] (both switch to an exponent below
 * 1e-4). */
static void pct_word(double p, char *buf, size_t len) {
  if (p == floor(p) && fabs(p) < 1e15) {
    snprintf(buf, len, "%lld", (long long)p);
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, len, "%.*g", prec, p);
    if (strtod(buf, NULL) == p)
      return;
  }
}

/* json_object_set_new takes the value's reference even when it fails, and
 * a NULL value (failed allocation) makes it fail. */
static int set_num(json_t *o, const char *key, double v) {
  return json_object_set_new(o, key, isfinite(v) ? json_real(v) : json_null());
}

static int set_uint(json_t *o, const char *key, uint64_t v) {
  return json_object_set_new(o, key, json_integer((json_int_t)(v > INT64_MAX ? INT64_MAX : v)));
}

static int vllm_metric(json_t *obj, const char *name, const struct im_vllm_stat *v,
                       const struct im_summary_config *cfg) {
  char key[64], word[32];
  snprintf(key, sizeof key, "mean_%s_ms", name);
  if (set_num(obj, key, v->mean))
    return -1;
  snprintf(key, sizeof key, "median_%s_ms", name);
  if (set_num(obj, key, v->median))
    return -1;
  snprintf(key, sizeof key, "std_%s_ms", name);
  if (set_num(obj, key, v->std))
    return -1;
  for (size_t i = 0; i < cfg->n_percentiles && i < IM_MAX_PERCENTILES; i++) {
    pct_word(cfg->percentiles[i], word, sizeof word);
    snprintf(key, sizeof key, "p%s_%s_ms", word, name);
    if (set_num(obj, key, v->pct[i]))
      return -1;
  }
  return 0;
}

enum im_err im_summary_vllm_json(const struct im_summary *s, const struct im_summary_config *cfg,
                                 json_t *obj) {
  if (!s || !cfg || !json_is_object(obj))
    return IM_INVAL;
  bool goodput = any_slo(cfg);
  if (set_num(obj, "duration", s->duration_s) || set_uint(obj, "completed", s->completed) ||
      set_uint(obj, "failed", s->failed) ||
      set_uint(obj, "total_input_tokens", s->total_input_tokens) ||
      set_uint(obj, "total_output_tokens", s->total_output_tokens) ||
      set_num(obj, "request_throughput", s->request_throughput) ||
      set_num(obj, "request_goodput", goodput ? s->request_goodput : NAN) ||
      set_num(obj, "output_throughput", s->output_throughput) ||
      set_num(obj, "total_token_throughput", s->total_token_throughput) ||
      set_num(obj, "max_output_tokens_per_s", s->max_output_tokens_per_s) ||
      set_uint(obj, "max_concurrent_requests", s->max_concurrent_requests) ||
      vllm_metric(obj, "ttft", &s->v_ttft, cfg) || vllm_metric(obj, "tpot", &s->v_tpot, cfg) ||
      vllm_metric(obj, "itl", &s->v_itl, cfg) || vllm_metric(obj, "e2el", &s->v_e2el, cfg))
    return IM_NOMEM;
  return IM_OK;
}

/* Adds key: {n, mean, std, min, max, p50, ...} to parent. */
static int dist_json(json_t *parent, const char *key, const struct im_dist *d,
                     const struct im_summary_config *cfg) {
  json_t *o = json_object();
  if (!o || json_object_set_new(parent, key, o))
    return -1;
  if (set_uint(o, "n", d->n) || set_num(o, "mean", d->mean) || set_num(o, "std", d->std) ||
      set_num(o, "min", d->min) || set_num(o, "max", d->max))
    return -1;
  for (size_t i = 0; i < cfg->n_percentiles && i < IM_MAX_PERCENTILES; i++) {
    char word[32], k[40];
    pct_word(cfg->percentiles[i], word, sizeof word);
    snprintf(k, sizeof k, "p%s", word);
    if (set_num(o, k, d->pct[i]))
      return -1;
  }
  return 0;
}

/* A new object set under parent[key]; NULL on failure. */
static json_t *child(json_t *parent, const char *key) {
  json_t *o = json_object();
  if (!o || json_object_set_new(parent, key, o))
    return NULL;
  return o;
}

static int json_window(json_t *obj, const struct im_summary *s,
                       const struct im_summary_config *cfg) {
  json_t *w = child(obj, "window"), *c = child(obj, "counts"), *r = child(obj, "rates"),
         *k = child(obj, "concurrency");
  return !w || !c || !r || !k ||
         json_object_set_new(w, "start_ns", json_integer(cfg->window_start_ns)) ||
         json_object_set_new(w, "end_ns", json_integer(cfg->window_end_ns)) ||
         set_num(w, "seconds", s->window_s) || set_uint(c, "completed", s->completed) ||
         set_uint(c, "failed", s->failed) || set_uint(c, "aborted", s->aborted) ||
         set_uint(c, "scheduled", s->scheduled) || set_uint(c, "dispatched", s->dispatched) ||
         set_uint(c, "completed_in_window", s->window_completed) ||
         set_num(r, "scheduled_rps", s->scheduled_rate) ||
         set_num(r, "dispatched_rps", s->dispatched_rate) ||
         set_num(r, "completed_rps", s->completed_rate) ||
         set_num(r, "output_tok_per_s", s->window_output_tok_rate) ||
         set_num(r, "total_tok_per_s", s->window_total_tok_rate) ||
         set_num(k, "mean", s->concurrency_mean) || set_uint(k, "max", s->concurrency_max);
}

static int json_dists(json_t *obj, const struct im_summary *s,
                      const struct im_summary_config *cfg) {
  json_t *l = child(obj, "latency_ms"), *c = child(obj, "client_ms");
  return !l || !c || dist_json(l, "ttft", &s->ttft, cfg) ||
         dist_json(l, "ttft_sched", &s->ttft_sched, cfg) || dist_json(l, "ttfa", &s->ttfa, cfg) ||
         dist_json(l, "tpot", &s->tpot, cfg) || dist_json(l, "itl", &s->itl, cfg) ||
         dist_json(l, "itl_token", &s->itl_token, cfg) || dist_json(l, "e2el", &s->e2el, cfg) ||
         dist_json(l, "e2el_sched", &s->e2el_sched, cfg) ||
         dist_json(c, "dispatch_lag", &s->dispatch_lag, cfg) ||
         dist_json(c, "queue_wait", &s->queue_wait, cfg) ||
         dist_json(c, "connect", &s->connect, cfg);
}

static int json_slo(json_t *obj, const struct im_summary *s, const struct im_summary_config *cfg) {
  json_t *o = child(obj, "slo"), *lim = o ? child(o, "limits_ms") : NULL,
         *att = o ? child(o, "attainment") : NULL;
  return !o || !lim || !att || set_num(lim, "ttft", cfg->has_slo_ttft ? cfg->slo_ttft_ms : NAN) ||
         set_num(lim, "tpot", cfg->has_slo_tpot ? cfg->slo_tpot_ms : NAN) ||
         set_num(lim, "e2el", cfg->has_slo_e2el ? cfg->slo_e2el_ms : NAN) ||
         set_num(att, "ttft", s->slo_ttft_attain) || set_num(att, "tpot", s->slo_tpot_attain) ||
         set_num(att, "e2el", s->slo_e2el_attain) || set_num(att, "all", s->slo_all_attain) ||
         set_uint(o, "goodput_requests", s->goodput_requests) ||
         set_num(o, "goodput_rps", s->goodput_rps);
}

static int json_counts(json_t *obj, const struct im_summary *s) {
  json_t *kinds = child(obj, "kinds"), *errs = child(obj, "errors"), *out = child(obj, "output"),
         *src = out ? child(out, "source") : NULL;
  if (!kinds || !errs || !out || !src)
    return -1;
  for (int k = 0; k < IM_KIND_COUNT_; k++) {
    json_t *o = child(kinds, im_kind_name((enum im_req_kind)k));
    if (!o || set_uint(o, "count", s->by_kind[k]) ||
        set_num(o, "mean_latency_ms", s->kind_mean_e2el_ms[k]))
      return -1;
  }
  for (int e = 0; e < IM_EC_COUNT_; e++) {
    const char *name = e == IM_EC_NONE ? "none" : im_errclass_name((enum im_errclass)e);
    if (set_uint(errs, name, s->by_error[e]))
      return -1;
  }
  for (int c = 0; c < IM_COUNT_SOURCE_COUNT_; c++)
    if (set_uint(src, im_count_source_name((enum im_count_source)c), s->output_source[c]))
      return -1;
  return set_uint(out, "shortfall_requests", s->output_shortfall_requests) ||
         set_uint(out, "shortfall_tokens", s->output_shortfall_tokens);
}

static int json_effective(json_t *obj, const struct im_summary *s) {
  json_t *e = child(obj, "effective_rate");
  return !e || set_num(e, "raw_qps", s->raw_qps) || set_num(e, "effective_qps", s->effective_qps) ||
         set_num(e, "effective_ratio", s->effective_ratio) ||
         set_uint(e, "attempts", s->raw_attempts) || set_uint(e, "retry", s->retry_attempts) ||
         set_uint(e, "health", s->health_attempts) || set_uint(e, "probe", s->probe_attempts) ||
         set_uint(e, "dup_fail", s->dup_fail) ||
         set_num(e, "dup_fail_mean_latency_ms", s->dup_fail_mean_e2el_ms);
}

enum im_err im_summary_metrics_json(const struct im_summary *s, const struct im_summary_config *cfg,
                                    json_t *obj) {
  if (!s || !cfg || !json_is_object(obj))
    return IM_INVAL;
  if (json_window(obj, s, cfg) || json_dists(obj, s, cfg) || json_slo(obj, s, cfg) ||
      json_counts(obj, s) || json_effective(obj, s))
    return IM_NOMEM;
  return IM_OK;
}
