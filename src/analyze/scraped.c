/* Server and machine figures from series.jsonl samples (contract in
 * server.h; definitions in docs/metrics.md §5 and docs/server-metrics.md). */
#include "analyze/scraped.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "proto/promparse.h"

/* Indices of the concepts the figures read (namemap's names), -1 absent. */
enum { KV, QUERIES, HITS, HIT_RATE, RUNNING, WAITING, PREEMPT, PROMPT, GEN, N_IDX };
static const char *const idx_names[N_IDX] = {
    "kv_cache_usage",   "prefix_cache_queries", "prefix_cache_hits", "prefix_cache_hit_rate",
    "requests_running", "requests_waiting",     "preemptions",       "prompt_tokens",
    "generation_tokens"};

struct view {
  const struct im_series_set *set;
  const struct im_series_source *src;
  int idx[N_IDX];
};

static double val(const struct view *w, const struct im_series_server *p, int which) {
  return w->idx[which] < 0 ? NAN : p->v[w->idx[which]];
}

/* A counter's increase over (a, b]; NaN when absent or it went down. */
static double delta(const struct view *w, const struct im_series_server *a,
                    const struct im_series_server *b, int which) {
  double d = val(w, b, which) - val(w, a, which);
  return isnan(d) || d < 0 ? NAN : d;
}

/* Prefix-cache hit rate over (a, b]: Δhits/Δqueries, else the engine's own
 * rate gauge at b (docs/metrics.md §5). */
static double hit_rate(const struct view *w, const struct im_series_server *a,
                       const struct im_series_server *b) {
  double q = delta(w, a, b, QUERIES), h = delta(w, a, b, HITS);
  if (!isnan(q) && !isnan(h) && q > 0)
    return h / q;
  return val(w, b, HIT_RATE);
}

void im_server_hist_delta(const struct im_series_hist *a, const struct im_series_hist *b,
                          struct im_series_hist *out) {
  memset(out, 0, sizeof *out);
  if (!b)
    return;
  out->n = b->n < IM_SERIES_MAX_BUCKETS ? b->n : IM_SERIES_MAX_BUCKETS;
  for (size_t i = 0; i < out->n; i++) {
    double prev = 0;
    for (size_t j = 0; a && j < a->n && j < IM_SERIES_MAX_BUCKETS; j++)
      if (a->b[j].le == b->b[i].le)
        prev = a->b[j].count;
    out->b[i] = (struct im_series_bucket){b->b[i].le, b->b[i].count - prev};
  }
  out->sum = b->sum - (a ? a->sum : 0);
  out->count = b->count - (a ? a->count : 0);
}

double im_server_hist_quantile(const struct im_series_hist *a, const struct im_series_hist *b,
                               double q) {
  if (!b || !b->n)
    return NAN;
  struct im_series_hist h;
  im_server_hist_delta(a, b, &h);
  struct im_prom_bucket d[IM_SERIES_MAX_BUCKETS];
  for (size_t i = 0; i < h.n; i++)
    d[i] = (struct im_prom_bucket){h.b[i].le, h.b[i].count};
  double out = NAN;
  if (im_prom_histogram_quantile(q, d, h.n, &out) != IM_OK)
    return NAN;
  return out;
}

static void null_if(struct im_server_source_figs *f, double v, const char *key, const char *why) {
  if (isnan(v) && f->n_nulls < IM_SERVER_MAX_NULLS)
    f->nulls[f->n_nulls++] = (struct im_server_null){key, why};
}

/* Index of the last point at or before t, else the first point. */
static size_t at_or_before(const struct im_series_source *s, int64_t t) {
  size_t k = 0;
  for (size_t i = 0; i < s->n_pts; i++)
    if (s->pts[i].t_mono <= t)
      k = i;
  return k;
}

/* Index of the first point at or after t, else the last point. */
static size_t at_or_after(const struct im_series_source *s, int64_t t) {
  for (size_t i = 0; i < s->n_pts; i++)
    if (s->pts[i].t_mono >= t)
      return i;
  return s->n_pts ? s->n_pts - 1 : 0;
}

static double max_nan(double m, double v) {
  return isnan(v) ? m : isnan(m) || v > m ? v : m;
}

/* Gauges over the samples a..b: KV usage mean and max, queue maxima. */
static void gauges(const struct view *w, size_t a, size_t b, struct im_server_source_figs *f) {
  double usage_sum = 0;
  size_t usage_n = 0;
  f->kv_cache_usage_max = f->waiting_max = f->running_max = NAN;
  for (size_t i = a; i <= b; i++) {
    const struct im_series_server *p = &w->src->pts[i];
    double u = val(w, p, KV);
    if (!isnan(u)) {
      usage_sum += u;
      usage_n++;
    }
    f->kv_cache_usage_max = max_nan(f->kv_cache_usage_max, u);
    f->waiting_max = max_nan(f->waiting_max, val(w, p, WAITING));
    f->running_max = max_nan(f->running_max, val(w, p, RUNNING));
  }
  f->kv_cache_usage_mean = usage_n ? usage_sum / (double)usage_n : NAN;
}

/* KV usage against the hit rate of each interval in a..b (Pearson r). */
static enum im_err usage_hit_r(const struct view *w, size_t a, size_t b, double *r) {
  size_t n = b - a + 1, k = 0;
  double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  *r = NAN;
  if (!x || !y) {
    free(x);
    free(y);
    return IM_NOMEM;
  }
  for (size_t i = a + 1; i <= b; i++) {
    double h = hit_rate(w, &w->src->pts[i - 1], &w->src->pts[i]), u = val(w, &w->src->pts[i], KV);
    if (!isnan(h) && !isnan(u)) {
      x[k] = u;
      y[k] = h;
      k++;
    }
  }
  if (k >= 3)
    *r = im_stats_pearson(x, y, k);
  free(x);
  free(y);
  return IM_OK;
}

static double raw_number(const struct im_series_source *s, const char *metric, const char *label) {
  for (size_t i = 0; i < s->n_raw; i++)
    if (!strcmp(s->raw[i].metric, metric) && !strcmp(s->raw[i].label, label))
      return s->raw[i].value;
  return NAN;
}

/* Memory of one GPU from the last NVML sample, 0 when none. */
static double gpu_memory_total(const struct im_series_set *s) {
  if (!s->n_gpu || !s->gpu[s->n_gpu - 1].n_gpus || !s->gpu[s->n_gpu - 1].gpu[0].has_mem)
    return 0;
  return (double)s->gpu[s->n_gpu - 1].gpu[0].mem_total_bytes;
}

/* KV residency = KV-cache bytes in use / GPU memory (docs/metrics.md §5).
 * The capacity in tokens comes from vLLM's cache_config_info; the bytes per
 * token must be declared (no engine exports them); the GPU memory is
 * declared or read through NVML. */
static void residency(const struct view *w, const struct im_server_ctx *ctx,
                      struct im_server_source_figs *f) {
  double blocks = raw_number(w->src, "vllm:cache_config_info", "num_gpu_blocks");
  double bsize = raw_number(w->src, "vllm:cache_config_info", "block_size");
  double mem = ctx->gpu_memory_bytes > 0 ? ctx->gpu_memory_bytes : gpu_memory_total(w->set);
  f->kv_residency_reason = NULL;
  if (isnan(blocks) || isnan(bsize))
    f->kv_residency_reason = "the server exports no KV-cache geometry (vllm:cache_config_info)";
  else if (!(ctx->kv_bytes_per_token > 0))
    f->kv_residency_reason = "KV bytes per token not declared (--kv-bytes-per-token)";
  else if (!(mem > 0))
    f->kv_residency_reason = "GPU memory unknown (no NVML; --gpu-memory)";
  f->kv_cache_capacity_tokens = blocks * bsize;
  double per_usage = blocks * bsize * ctx->kv_bytes_per_token / mem;
  f->kv_residency = f->kv_residency_reason ? NAN : f->kv_cache_usage_mean * per_usage;
  f->kv_residency_max = f->kv_residency_reason ? NAN : f->kv_cache_usage_max * per_usage;
  f->kv_residency_ref = ctx->kv_residency_ref;
  null_if(f, f->kv_cache_capacity_tokens, "kv_cache_capacity_tokens", f->kv_residency_reason);
}

static void reasons(struct im_server_source_figs *f) {
  null_if(f, f->kv_cache_usage_mean, "kv_cache_usage_mean", "the server exports no KV-cache usage");
  null_if(f, f->kv_cache_usage_max, "kv_cache_usage_max", "the server exports no KV-cache usage");
  null_if(f, f->prefix_cache_hit_rate, "prefix_cache_hit_rate",
          "no prefix-cache counters or hit-rate gauge, no lookup in the window, or a counter reset");
  null_if(f, f->waiting_max, "waiting_max", "the server exports no waiting-requests gauge");
  null_if(f, f->running_max, "running_max", "the server exports no running-requests gauge");
  static const char *const counter = "the server exports no such counter, or it went down (restart)";
  null_if(f, f->preemptions, "preemptions", counter);
  null_if(f, f->prompt_tokens, "prompt_tokens", counter);
  null_if(f, f->generation_tokens, "generation_tokens", counter);
  static const char *const hist = "no such histogram on the page, or no observation in the window";
  null_if(f, f->server_ttft_p50_ms, "server_ttft_p50_ms", hist);
  null_if(f, f->server_ttft_p99_ms, "server_ttft_p99_ms", hist);
  null_if(f, f->server_itl_p50_ms, "server_itl_p50_ms", hist);
  null_if(f, f->server_itl_p99_ms, "server_itl_p99_ms", hist);
  static const char *const client = "no successful measured request";
  null_if(f, f->client_ttft_p50_ms, "client_ttft_p50_ms", client);
  null_if(f, f->client_ttft_p99_ms, "client_ttft_p99_ms", client);
  null_if(f, f->ttft_gap_p50_ms, "ttft_gap_p50_ms", "the server's or the client's TTFT p50 is null");
  null_if(f, f->kv_usage_hit_rate_r, "kv_usage_hit_rate_r",
          "fewer than 3 intervals with both KV usage and a hit rate, or one of them constant");
}

/* A counter that went down is a server restart: counted, and the deltas
 * across it are not used. */
static uint64_t counter_resets(const struct view *w) {
  static const int counters[] = {QUERIES, HITS, PREEMPT, PROMPT, GEN};
  uint64_t n = 0;
  for (size_t i = 1; i < w->src->n_pts; i++)
    for (size_t c = 0; c < sizeof counters / sizeof counters[0]; c++)
      if (val(w, &w->src->pts[i], counters[c]) < val(w, &w->src->pts[i - 1], counters[c]))
        n++;
  return n;
}

/* Whether a sample at absolute t belongs in the series. */
static bool in_series(const struct im_server_ctx *ctx, int64_t t) {
  if (!ctx->series_from_ns && !ctx->series_to_ns)
    return true;
  int64_t rel = t - ctx->t0_mono;
  return rel >= ctx->series_from_ns && rel <= ctx->series_to_ns;
}

static enum im_err source_series(const struct view *w, const struct im_server_ctx *ctx,
                                 struct im_server_source_figs *f) {
  const struct im_series_source *s = w->src;
  f->series = calloc(s->n_pts ? s->n_pts : 1, sizeof *f->series);
  if (!f->series)
    return IM_NOMEM;
  for (size_t i = 0; i < s->n_pts; i++) {
    const struct im_series_server *p = &s->pts[i], *prev = i ? &s->pts[i - 1] : NULL;
    if (!in_series(ctx, p->t_mono))
      continue;
    double dt = prev ? (double)(p->t_mono - prev->t_mono) / 1e9 : 0;
    f->series[f->n_series++] = (struct im_server_series_pt){
        .t_s = (double)(p->t_mono - ctx->t0_mono) / 1e9,
        .kv_cache_usage = val(w, p, KV),
        .requests_running = val(w, p, RUNNING),
        .requests_waiting = val(w, p, WAITING),
        .prefix_cache_hit_rate = prev ? hit_rate(w, prev, p) : NAN,
        .preemptions = delta(w, &s->pts[0], p, PREEMPT),
        .generation_tokens_per_s = prev && dt > 0 ? delta(w, prev, p, GEN) / dt : NAN};
  }
  return IM_OK;
}

/* The window's figures of a source with at least two samples. */
static enum im_err window_figures(const struct view *w, const struct im_server_ctx *ctx,
                                  struct im_server_source_figs *f) {
  const struct im_series_source *s = w->src;
  size_t a = at_or_before(s, ctx->t0_mono + ctx->window_start_ns);
  size_t b = at_or_after(s, ctx->t0_mono + ctx->window_end_ns);
  if (b <= a)
    b = s->n_pts - 1;
  const struct im_series_server *pa = &s->pts[a], *pb = &s->pts[b];
  gauges(w, a, b, f);
  f->prefix_cache_hit_rate = hit_rate(w, pa, pb);
  f->preemptions = delta(w, pa, pb, PREEMPT);
  f->prompt_tokens = delta(w, pa, pb, PROMPT);
  f->generation_tokens = delta(w, pa, pb, GEN);
  f->server_ttft_p50_ms = im_server_hist_quantile(&pa->ttft, &pb->ttft, 0.5) * 1e3;
  f->server_ttft_p99_ms = im_server_hist_quantile(&pa->ttft, &pb->ttft, 0.99) * 1e3;
  f->client_ttft_p50_ms = ctx->client_ttft_p50_ms;
  f->client_ttft_p99_ms = ctx->client_ttft_p99_ms;
  /* What the server does not see: the network and the client. Bucket
   * interpolation limits its precision to the histogram's buckets. */
  f->ttft_gap_p50_ms = ctx->client_ttft_p50_ms - f->server_ttft_p50_ms;
  f->server_itl_p50_ms = im_server_hist_quantile(&pa->itl, &pb->itl, 0.5) * 1e3;
  f->server_itl_p99_ms = im_server_hist_quantile(&pa->itl, &pb->itl, 0.99) * 1e3;
  im_server_hist_delta(&pa->ttft, &pb->ttft, &f->ttft_window);
  im_server_hist_delta(&pa->itl, &pb->itl, &f->itl_window);
  enum im_err err = usage_hit_r(w, a, b, &f->kv_usage_hit_rate_r);
  if (err)
    return err;
  residency(w, ctx, f);
  reasons(f);
  return IM_OK;
}

static enum im_err source_figures(const struct im_series_set *set, size_t i,
                                  const struct im_server_ctx *ctx, struct im_server_source_figs *f) {
  struct view w = {.set = set, .src = &set->src[i]};
  const struct im_series_source *s = w.src;
  for (int k = 0; k < N_IDX; k++)
    w.idx[k] = im_series_name_index(set, idx_names[k]);
  memcpy(f->url, s->url, sizeof f->url);
  f->dcgm = s->dcgm;
  f->scrapes = s->n_pts;
  f->failed_scrapes = s->failures;
  for (size_t k = 0; k < s->n_pts; k++)
    f->malformed_lines += s->pts[k].malformed_lines;
  f->counter_resets = counter_resets(&w);
  memcpy(f->engines, s->engines, sizeof f->engines);
  f->n_engines = s->n_engines;
  if (s->n_per_series) {
    f->per_series = malloc(s->n_per_series * sizeof *f->per_series);
    if (!f->per_series)
      return IM_NOMEM;
    memcpy(f->per_series, s->per_series, s->n_per_series * sizeof *f->per_series);
    f->n_per_series = s->n_per_series;
  }
  for (size_t k = 0; k < s->n_raw; k++)
    if (!s->raw[k].label[0])
      f->unmapped[f->n_unmapped++] = s->raw[k];
  enum im_err err = source_series(&w, ctx, f);
  if (err || s->n_pts >= 2)
    return err ? err : window_figures(&w, ctx, f);
  snprintf(f->not_collected, sizeof f->not_collected, "%s: %s",
           s->n_pts ? "one scrape only" : "no scrape succeeded",
           s->last_error[0] ? s->last_error : "no scrape yet");
  return IM_OK;
}

/* ---- TCP and GPU ---- */

static enum im_err tcp_figures(const struct im_series_set *s, const struct im_server_ctx *ctx,
                               struct im_server_tcp_figs *t) {
  t->connections_opened = ctx->connections_opened;
  t->requests_per_connection =
      ctx->connections_opened ? (double)ctx->attempts / (double)ctx->connections_opened : NAN;
  if (!s->n_tcp) {
    snprintf(t->not_collected, sizeof t->not_collected, "%s", s->tcp_why[0] ? s->tcp_why : "no sample");
    return IM_OK;
  }
  struct im_tcp_summary sum;
  im_tcp_summarize(s->tcp, s->n_tcp, &sum);
  t->samples = sum.n;
  t->procfs = s->tcp[s->n_tcp - 1].procfs;
  t->time_wait_max = sum.time_wait_max;
  t->time_wait_growth_per_s = sum.time_wait_growth_per_s;
  t->established_max = sum.established_max;
  t->time_wait_growing = sum.growing;
  t->warning = sum.growing ? "TIME_WAIT grows through the run: connections are being closed and "
                             "reopened (keep-alive off, or the server closes them); connect time "
                             "enters TTFT"
                           : NULL;
  if (!(t->series = calloc(s->n_tcp, sizeof *t->series)))
    return IM_NOMEM;
  for (size_t i = 0; i < s->n_tcp; i++) {
    const struct im_series_tcp *p = &s->tcp[i];
    if (in_series(ctx, p->t_mono))
      t->series[t->n_series++] = (struct im_server_tcp_series_pt){
          .t_s = (double)(p->t_mono - ctx->t0_mono) / 1e9,
          .established = p->state[IM_TCP_ESTABLISHED],
          .time_wait = p->state[IM_TCP_TIME_WAIT],
          .close_wait = p->state[IM_TCP_CLOSE_WAIT],
          .syn_sent = p->state[IM_TCP_SYN_SENT],
          .fin_wait = p->state[IM_TCP_FIN_WAIT1] + p->state[IM_TCP_FIN_WAIT2]};
  }
  return IM_OK;
}

static enum im_err gpu_series(const struct im_series_set *s, const struct im_server_ctx *ctx,
                              struct im_server_gpu_figs *g) {
  if (!(g->series = calloc(s->n_gpu ? s->n_gpu : 1, sizeof *g->series)))
    return IM_NOMEM;
  for (size_t i = 0; i < s->n_gpu; i++) {
    const struct im_gpu_snapshot *snap = &s->gpu[i];
    if (!in_series(ctx, snap->t_ns))
      continue;
    double m = 0, p = 0, b = 0, u = 0;
    unsigned nb = 0, ng = snap->n_gpus < IM_GPU_MAX ? snap->n_gpus : IM_GPU_MAX;
    for (unsigned k = 0; k < ng; k++) {
      const struct im_gpu_sample *x = &snap->gpu[k];
      m += x->has_mem ? (double)x->mem_used_bytes : 0;
      p += isnan(x->power_w) ? 0 : x->power_w;
      u += isnan(x->util_gpu_pct) ? 0 : x->util_gpu_pct;
      if (!isnan(x->dram_bw_util)) {
        b += x->dram_bw_util;
        nb++;
      }
    }
    g->series[g->n_series++] = (struct im_server_gpu_series_pt){
        .t_s = (double)(snap->t_ns - ctx->t0_mono) / 1e9, .memory_used_bytes = m, .power_w = p,
        .dram_bw_util = nb ? b / nb : NAN, .gpu_util_percent = ng ? u / ng : NAN};
  }
  return IM_OK;
}

static enum im_err gpu_figures(const struct im_series_set *s, const struct im_server_ctx *ctx,
                               struct im_server_gpu_figs *g) {
  g->sampled = s->n_gpu > 0;
  if (!s->n_gpu) {
    snprintf(g->not_available, sizeof g->not_available, "%s", s->gpu_why[0] ? s->gpu_why : "no sample");
    return IM_OK;
  }
  enum im_err err = gpu_series(s, ctx, g);
  struct im_gpu_summary sum;
  if (err)
    return err;
  if (im_gpu_summarize(s->gpu, s->n_gpu, ctx->t0_mono + ctx->window_start_ns,
                       ctx->t0_mono + ctx->window_end_ns, &sum) != IM_OK) {
    snprintf(g->not_available, sizeof g->not_available, "no sample inside the window");
    return IM_OK;
  }
  g->gpus = sum.n_gpus;
  g->has_mem = sum.has_mem;
  g->memory_used_max_bytes = sum.mem_used_max_bytes;
  g->memory_total_bytes = sum.mem_total_bytes;
  g->dram_bw_util_mean = sum.dram_bw_util_mean;
  g->dram_bw_util_max = sum.dram_bw_util_max;
  g->dram_bw_util_ref = ctx->bw_util_ref;
  g->tensor_active_mean = sum.tensor_active_mean;
  g->sm_active_mean = sum.sm_active_mean;
  g->power_w_mean = sum.power_w_mean;
  g->energy_j = sum.energy_j;
  g->energy_source = sum.energy_source;
  g->tokens_per_joule = im_gpu_tokens_per_joule(ctx->output_tokens, sum.energy_j);
  return IM_OK;
}

enum im_err im_server_figures_compute(const struct im_series_set *s, const struct im_server_ctx *ctx,
                                      struct im_server_figures *out) {
  if (!s || !ctx || !out)
    return IM_INVAL;
  memset(out, 0, sizeof *out);
  enum im_err err = IM_OK;
  if (s->n_src && !(out->src = calloc(s->n_src, sizeof *out->src)))
    return IM_NOMEM;
  for (size_t i = 0; i < s->n_src && !err; i++) {
    out->n_src++;
    err = source_figures(s, i, ctx, &out->src[i]);
  }
  if (!err)
    err = tcp_figures(s, ctx, &out->tcp);
  if (!err)
    err = gpu_figures(s, ctx, &out->gpu);
  return err;
}

void im_server_figures_cleanup(struct im_server_figures *f) {
  if (!f)
    return;
  for (size_t i = 0; i < f->n_src; i++) {
    free(f->src[i].per_series);
    free(f->src[i].series);
  }
  free(f->src);
  free(f->tcp.series);
  free(f->gpu.series);
  memset(f, 0, sizeof *f);
}
