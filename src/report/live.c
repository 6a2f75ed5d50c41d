/* The live Prometheus page (live.h). Every update is a relaxed atomic add on
 * a counter the page reads: the writers of several loaders observe at once
 * and never wait for each other or for a scrape. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/tokens.h"
#include "core/stats.h"
#include "proto/promexp.h"
#include "report/live.h"

#define GRID 93               /* 100 µs x 2^(k/4), k = 0..92 */
#define MAX_BOUNDS (GRID + 8) /* plus the alert thresholds */
#define N_STATUS 6            /* none, 1xx .. 5xx */

struct live_hist {
  atomic_uint_fast64_t counts[MAX_BOUNDS + 1];
  atomic_uint_fast64_t count;
  atomic_uint_fast64_t sum_ns;
};

/* Sampling parameter bands (live.h). */
#define N_TEMP 5
#define N_TOPP 4
static const char *const temp_band[N_TEMP] = {"0-0.5", "0.5-1", "1-1.5", "1.5+", "unset"};
static const char *const topp_band[N_TOPP] = {"0-0.5", "0.5-0.9", "0.9-1", "unset"};

struct band {
  atomic_uint_fast64_t n, e2el_ns, tokens;
};

struct im_live {
  atomic_uint_fast64_t attempts[IM_KIND_COUNT_][N_STATUS][IM_EC_COUNT_];
  atomic_uint_fast64_t in_tokens, out_tokens, cached_tokens;
  atomic_uint_fast64_t late, dispatched;
  int64_t late_limit_ns;
  struct live_hist h[IM_LIVE_HIST_COUNT_];
  struct band temp[N_TEMP], topp[N_TOPP];
  struct im_live_gauges g;
  bool has_g;
};

static double bounds[MAX_BOUNDS];
static size_t n_bounds;
static pthread_once_t bounds_once = PTHREAD_ONCE_INIT;

/* 3 significant digits, so that `le` labels read as people write them. */
static double round3(double v) {
  double e = pow(10.0, floor(log10(v)) - 2);
  return round(v / e) * e;
}

static void make_bounds(void) {
  static const double thr[] = IM_LIVE_THRESHOLDS;
  size_t n = 0;
  for (int k = 0; k < GRID; k++)
    bounds[n++] = round3(1e-4 * exp2(k / 4.0));
  for (size_t i = 0; i < sizeof thr / sizeof thr[0] && n < MAX_BOUNDS; i++) {
    bool have = false;
    for (size_t j = 0; j < n; j++)
      have |= fabs(bounds[j] - thr[i]) < 1e-12;
    if (!have)
      bounds[n++] = thr[i];
  }
  im_stats_sort(bounds, n);
  n_bounds = n;
}

const double *im_live_bounds(size_t *n) {
  pthread_once(&bounds_once, make_bounds);
  *n = n_bounds;
  return bounds;
}

enum im_err im_live_new(struct im_live **out) {
  size_t n;
  (void)im_live_bounds(&n);
  *out = calloc(1, sizeof **out); /* zeroed atomics are valid zeroes (C17 7.17.2) */
  return *out ? IM_OK : IM_NOMEM;
}

void im_live_free(struct im_live *l) {
  free(l);
}

void im_live_set_late_limit(struct im_live *l, int64_t limit_ns) {
  l->late_limit_ns = limit_ns;
}

uint64_t im_live_late(struct im_live *l, uint64_t *total) {
  *total = atomic_load_explicit(&l->dispatched, memory_order_relaxed);
  return atomic_load_explicit(&l->late, memory_order_relaxed);
}

static void add(atomic_uint_fast64_t *c, uint64_t v) {
  atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* The first bucket whose bound is >= v (Prometheus: v <= le), n_bounds for
 * above every bound. */
static size_t bucket_of(double v) {
  size_t lo = 0, hi = n_bounds;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (bounds[mid] >= v)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

static void observe_ns(struct live_hist *h, int64_t ns, uint64_t n) {
  if (ns < 0)
    ns = 0; /* a clock step backwards counts in the first bucket, not lost */
  add(&h->counts[bucket_of((double)ns / 1e9)], n); /* divided: 1.2e9 ns is 1.2 exactly */
  add(&h->count, n);
  add(&h->sum_ns, (uint64_t)ns * n);
}

void im_live_observe(struct im_live *l, const struct im_record *r) {
  int st = r->http_status >= 100 && r->http_status < 600 ? r->http_status / 100 : 0;
  add(&l->attempts[r->kind < IM_KIND_COUNT_ ? r->kind : IM_KIND_ABORTED][st]
                  [r->error < IM_EC_COUNT_ ? r->error : IM_EC_NONE],
      1);
  add(&l->in_tokens, r->prompt_tokens);
  add(&l->out_tokens, r->output_tokens);
  add(&l->cached_tokens, r->cached_tokens);
  if (r->t_dispatch >= 0 && r->t_sched >= 0 && r->attempt == 1) {
    int64_t lag = r->t_dispatch - r->t_sched;
    observe_ns(&l->h[IM_LIVE_DISPATCH_LAG], lag, 1);
    add(&l->dispatched, 1);
    if (lag > l->late_limit_ns)
      add(&l->late, 1);
  }
  bool user = r->kind == IM_KIND_MEASURED || r->kind == IM_KIND_RETRY;
  if (!user || r->error != IM_EC_NONE || r->t_first < 0 || r->n_chunks == 0)
    return;
  int64_t ttft = r->t_first - r->t_start, e2el = r->t_last - r->t_start;
  observe_ns(&l->h[IM_LIVE_TTFT], ttft, 1);
  observe_ns(&l->h[IM_LIVE_E2EL], e2el, 1);
  if (r->output_tokens >= 2)
    observe_ns(&l->h[IM_LIVE_TPOT], llround((double)(e2el - ttft) / (r->output_tokens - 1)), 1);
  double t = r->temperature, p = r->top_p;
  int tb = isnan(t) ? 4 : t < 0.5 ? 0 : t < 1.0 ? 1 : t < 1.5 ? 2 : 3;
  int pb = isnan(p) ? 3 : p < 0.5 ? 0 : p < 0.9 ? 1 : 2;
  struct band *bands[2] = {&l->temp[tb], &l->topp[pb]};
  for (int i = 0; i < 2; i++) {
    add(&bands[i]->n, 1);
    add(&bands[i]->e2el_ns, e2el > 0 ? (uint64_t)e2el : 0);
    add(&bands[i]->tokens, r->output_tokens);
  }
  if (!r->chunk_us)
    return;
  for (uint32_t i = 1; i < r->n_chunks; i++)
    observe_ns(&l->h[IM_LIVE_ITL], ((int64_t)r->chunk_us[i] - r->chunk_us[i - 1]) * 1000, 1);
  /* Windows of W gaps (gap i: chunk i - chunk i-1, i >= 1), every S gaps:
   * the mean of a window is its span over W. */
  const uint32_t W = IM_TOKENS_DEFAULT_WINDOW, S = IM_TOKENS_DEFAULT_STRIDE;
  for (uint32_t first = 1; r->n_chunks >= W + 1 && first + W - 1 < r->n_chunks; first += S) {
    int64_t span_us = (int64_t)r->chunk_us[first + W - 1] - r->chunk_us[first - 1];
    observe_ns(&l->h[IM_LIVE_WINDOW_MEAN], span_us * 1000 / W, 1);
  }
}

void im_live_set_gauges(struct im_live *l, const struct im_live_gauges *g) {
  l->g = *g;
  l->has_g = true;
}

/* ---- rendering ----------------------------------------------------------- */

static const char *const status_name[N_STATUS] = {"none", "1xx", "2xx", "3xx", "4xx", "5xx"};

static enum im_err gauge(struct im_buf *b, const char *name, const char *help, double v) {
  enum im_err err;
  if (isnan(v) || v < 0)
    return IM_OK;
  if ((err = im_prom_family(b, name, "gauge", help)))
    return err;
  return im_prom_sample(b, name, NULL, v);
}

static enum im_err counter(struct im_buf *b, const char *name, const char *help,
                           atomic_uint_fast64_t *c) {
  enum im_err err;
  if ((err = im_prom_family(b, name, "counter", help)))
    return err;
  return im_prom_sample(b, name, NULL, (double)atomic_load_explicit(c, memory_order_relaxed));
}

static enum im_err attempts(struct im_live *l, struct im_buf *b) {
  enum im_err err;
  struct im_buf lb;
  if ((err = im_prom_family(b, "infermeter_requests_total", "counter",
                            "Finished attempts by kind, HTTP status class and error class.")))
    return err;
  for (int k = 0; k < IM_KIND_COUNT_; k++)
    for (int s = 0; s < N_STATUS; s++)
      for (int e = 0; e < IM_EC_COUNT_; e++) {
        uint64_t v = atomic_load_explicit(&l->attempts[k][s][e], memory_order_relaxed);
        /* Always the user-facing combinations, so rates start at 0; others
         * once seen. */
        bool base = s == 2 && e == IM_EC_NONE && (k == IM_KIND_MEASURED || k == IM_KIND_WARMUP);
        if (!v && !base)
          continue;
        im_buf_init(&lb, 256);
        const char *ec = e == IM_EC_NONE ? "none" : im_errclass_name((enum im_errclass)e);
        if ((err = im_prom_label(&lb, "kind", im_kind_name((enum im_req_kind)k))) ||
            (err = im_prom_label(&lb, "status", status_name[s])) ||
            (err = im_prom_label(&lb, "error", ec)) || (err = im_buf_append(&lb, "", 1))) {
          im_buf_cleanup(&lb);
          return err;
        }
        err = im_prom_sample(b, "infermeter_requests_total", lb.data, (double)v);
        im_buf_cleanup(&lb);
        if (err)
          return err;
      }
  return IM_OK;
}

static enum im_err hist(struct im_live *l, struct im_buf *b, enum im_live_hist which,
                        const char *name, const char *help) {
  enum im_err err;
  struct live_hist *h = &l->h[which];
  uint64_t counts[MAX_BOUNDS + 1], total = 0;
  for (size_t i = 0; i <= n_bounds; i++)
    total += counts[i] = atomic_load_explicit(&h->counts[i], memory_order_relaxed);
  /* _count equals the +Inf bucket: both from the same reads. */
  struct im_prom_hist ph = {
      .bounds = bounds,
      .n_bounds = n_bounds,
      .counts = counts,
      .sum = (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9,
      .count = total,
  };
  if ((err = im_prom_family(b, name, "histogram", help)))
    return err;
  return im_prom_hist_write(b, name, NULL, &ph);
}

/* infermeter_sampled_{requests_total,e2el_seconds_total,output_tokens_total}
 * by one sampling parameter's band. */
static enum im_err bands(struct im_buf *b, const char *key, struct band *bd,
                         const char *const *names, int n) {
  static const char *const fam[3][2] = {
      {"requests_total", "Successful user requests by sampling band."},
      {"e2el_seconds_total", "Sum of their end-to-end latencies, seconds."},
      {"output_tokens_total", "Sum of their output tokens."}};
  enum im_err err;
  char name[96], lab[64];
  for (int f = 0; f < 3; f++) {
    snprintf(name, sizeof name, "infermeter_%s_%s", key, fam[f][0]);
    if ((err = im_prom_family(b, name, "counter", fam[f][1])))
      return err;
    for (int i = 0; i < n; i++) {
      uint64_t v = atomic_load_explicit(f == 0   ? &bd[i].n
                                        : f == 1 ? &bd[i].e2el_ns
                                                 : &bd[i].tokens,
                                        memory_order_relaxed);
      snprintf(lab, sizeof lab, "band=\"%s\"", names[i]);
      if ((err = im_prom_sample(b, name, lab, f == 1 ? (double)v / 1e9 : (double)v)))
        return err;
    }
  }
  return IM_OK;
}

static enum im_err server(const struct im_live_gauges *g, struct im_buf *b) {
  enum im_err err;
  char name[128];
  for (size_t i = 0; i < g->n_server && i < IM_LIVE_MAX_SERVER; i++) {
    const char *s = g->server_name[i];
    size_t n = strlen(s);
    bool ok = n > 0 && n < 80;
    for (size_t j = 0; ok && j < n; j++)
      ok = (s[j] >= 'a' && s[j] <= 'z') || (s[j] >= '0' && s[j] <= '9') || s[j] == '_';
    if (!ok || isnan(g->server_value[i]))
      continue; /* only names that are valid metric names as they are */
    memcpy(name, "infermeter_server_", 18);
    memcpy(name + 18, s, n + 1);
    if ((err = im_prom_family(b, name, "gauge",
                              "The target's own metric of this concept (docs/server-metrics.md), "
                              "latest scrape.")) ||
        (err = im_prom_sample(b, name, NULL, g->server_value[i])))
      return err;
  }
  return IM_OK;
}

enum im_err im_live_render(struct im_live *l, struct im_buf *b) {
  enum im_err err;
  const struct im_live_gauges *g = &l->g;
  if ((err = attempts(l, b)) ||
      (err = counter(b, "infermeter_input_tokens_total",
                     "Prompt tokens of finished attempts (usage, else the client's count).",
                     &l->in_tokens)) ||
      (err = counter(b, "infermeter_output_tokens_total",
                     "Output tokens of finished attempts (docs/metrics.md section 1).",
                     &l->out_tokens)) ||
      (err = counter(b, "infermeter_cached_tokens_total",
                     "Prompt tokens the server reported as cached.", &l->cached_tokens)) ||
      (err = counter(b, "infermeter_dispatched_late_total",
                     "First attempts dispatched later than the self-check limit.", &l->late)) ||
      (err = hist(l, b, IM_LIVE_TTFT, "infermeter_ttft_seconds",
                  "Time to first token of successful measured/retry attempts.")) ||
      (err = hist(l, b, IM_LIVE_TPOT, "infermeter_tpot_seconds",
                  "Time per output token after the first.")) ||
      (err = hist(l, b, IM_LIVE_ITL, "infermeter_itl_seconds",
                  "Gaps between consecutive token-bearing chunks.")) ||
      (err = hist(l, b, IM_LIVE_E2EL, "infermeter_e2el_seconds",
                  "End-to-end latency, start to last token.")) ||
      (err = hist(l, b, IM_LIVE_DISPATCH_LAG, "infermeter_dispatch_lag_seconds",
                  "Dispatch minus scheduled time of first attempts (the client's own delay).")) ||
      (err = hist(l, b, IM_LIVE_WINDOW_MEAN, "infermeter_itl_window_mean_seconds",
                  "Segmented sampling: mean gap of each window of 8 gaps, stride 4.")) ||
      (err = bands(b, "temperature", l->temp, temp_band, N_TEMP)) ||
      (err = bands(b, "top_p", l->topp, topp_band, N_TOPP)))
    return err;
  if (!l->has_g)
    return IM_OK;
  if ((err = gauge(b, "infermeter_in_flight", "Attempts in flight.", g->in_flight)) ||
      (err = gauge(b, "infermeter_queued", "Arrivals waiting for a --max-concurrency slot.",
                   g->queued)) ||
      (err = gauge(b, "infermeter_scheduled", "Arrivals due so far.", g->scheduled)) ||
      (err = gauge(b, "infermeter_dispatched", "Arrivals acted on so far.", g->dispatched)) ||
      (err = gauge(b, "infermeter_dispatch_lag_max_seconds",
                   "Worst dispatch lag over the last second, all loader threads.",
                   g->dispatch_lag_max_s)) ||
      (err = gauge(b, "infermeter_receive_lag_max_seconds",
                   "Worst receive lag over the last second (how late a readable socket was read).",
                   g->receive_lag_max_s)) ||
      (err = gauge(b, "infermeter_dispatch_late_limit_seconds",
                   "The self-check's dispatch lag limit L.", g->dispatch_late_limit_s)) ||
      (err = gauge(b, "infermeter_tcp_time_wait", "Sockets toward the target in TIME_WAIT.",
                   g->time_wait)) ||
      (err = gauge(b, "infermeter_tcp_established", "Sockets toward the target in ESTABLISHED.",
                   g->established)) ||
      (err = gauge(b, "infermeter_client_valid",
                   "The client self-check so far: 1 pass, 0 fail (provisional; the run's "
                   "audit decides).",
                   g->client_valid)) ||
      (err = gauge(b, "infermeter_run_elapsed_seconds", "Seconds since the stage started.",
                   g->run_elapsed_s)))
    return err;
  return server(g, b);
}
