/* Server and machine figures from series lines (src/analyze/scraped.c),
 * against a fixture whose figures are computed by hand below: window hit
 * rate, KV usage mean and max, queue maxima, counter deltas, Pearson r of
 * KV usage and the interval hit rate, TTFT quantiles from bucket deltas,
 * KV residency, a counter reset, TIME_WAIT slope, tokens per joule, the
 * series cut, and the reasons of what cannot be computed. The lines go
 * through the writers and the reader, as a run's do. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "analyze/scraped.h"
#include "check.h"
#include "record/series.h"

#define NS 1000000000LL
#define T0 (1000 * NS)

static struct im_buf line;

static void add(struct im_series_set *s, enum im_err fmt) {
  CHECK_EQ(fmt, IM_OK);
  CHECK_EQ(im_series_add_line(s, line.data, line.len - 1), IM_OK);
  im_buf_reset(&line);
}

/* Source 0: six scrapes, one a second from T0; the last after a restart. */
static void add_server(struct im_series_set *s) {
  static const double kv[6] = {0.1, 0.2, 0.4, 0.3, 0.5, 0.1};
  static const double queries[6] = {0, 100, 200, 400, 500, 50};
  static const double hits[6] = {0, 10, 50, 150, 250, 5};
  static const double running[6] = {0, 2, 4, 3, 1, 0}, waiting[6] = {0, 1, 5, 2, 0, 0};
  static const double preempt[6] = {0, 0, 1, 1, 3, 3}, gen[6] = {0, 50, 100, 150, 200, 250};
  static const double ttft_c[6][4] = {{0, 0, 0, 0},     {2, 5, 5, 5},     {4, 10, 20, 20},
                                      {8, 20, 30, 30}, {12, 35, 45, 45}, {12, 35, 45, 45}};
  const char *engines[] = {"vllm-v1", "infermeter"};
  struct im_series_raw raw[2] = {{"vllm:cache_config_info", "num_gpu_blocks", 1000},
                                 {"vllm:cache_config_info", "block_size", 16}};
  struct im_series_labelled lab = {"kv_cache_usage", "vllm-v1", "engine=0", 0.1};
  add(s, im_series_fmt_source(&line, 0, "http://127.0.0.1:8000/metrics", false));
  for (int i = 0; i < 6; i++) {
    struct im_series_value v[] = {{"kv_cache_usage", kv[i]},     {"prefix_cache_queries", queries[i]},
                                  {"prefix_cache_hits", hits[i]}, {"requests_running", running[i]},
                                  {"requests_waiting", waiting[i]}, {"preemptions", preempt[i]},
                                  {"generation_tokens", gen[i]},  {"prompt_tokens", queries[i]}};
    struct im_series_hist ttft = {.n = 4, .count = ttft_c[i][3]};
    const double le[4] = {0.1, 0.2, 0.4, INFINITY};
    for (int k = 0; k < 4; k++)
      ttft.b[k] = (struct im_series_bucket){le[k], ttft_c[i][k]};
    struct im_series_scrape sc = {.source = 0, .url = "http://127.0.0.1:8000/metrics",
                                  .t_mono = T0 + i * NS, .engines = engines, .n_engines = 2,
                                  .values = v, .n_values = 8, .ttft = &ttft, .raw = raw, .n_raw = 2,
                                  .per_series = &lab, .n_per_series = 1, .malformed_lines = 1};
    add(s, im_series_fmt_server(&line, &sc));
  }
}

/* Source 1 never answers; TCP and GPU samples at 0..5 s. */
static void add_machine(struct im_series_set *s) {
  add(s, im_series_fmt_source(&line, 1, "http://127.0.0.1:1/metrics", false));
  add(s, im_series_fmt_scrape_error(&line, 1, "http://127.0.0.1:1/metrics", T0, "HTTP 503"));
  for (int i = 0; i < 6; i++) {
    struct im_series_tcp t = {.t_mono = T0 + i * NS};
    t.state[IM_TCP_TIME_WAIT] = (uint32_t)(10 + 5 * i);
    t.state[IM_TCP_ESTABLISHED] = 4;
    t.state[IM_TCP_FIN_WAIT1] = 1;
    t.state[IM_TCP_FIN_WAIT2] = 2;
    add(s, im_series_fmt_tcp(&line, &t));
    struct im_gpu_snapshot g;
    memset(&g, 0, sizeof g);
    g.t_ns = T0 + i * NS;
    g.n_gpus = 1;
    g.gpu[0] = (struct im_gpu_sample){.name = "GPU", .has_mem = true, .mem_used_bytes = 1000,
                                      .mem_total_bytes = 4000, .util_gpu_pct = 50, .util_mem_pct = NAN,
                                      .sm_clock_mhz = NAN, .power_w = 100, .has_energy = true,
                                      .energy_mj = (uint64_t)i * 100000, .dram_bw_util = 0.5,
                                      .tensor_active = NAN, .sm_active = NAN};
    add(s, im_series_fmt_gpu(&line, &g));
  }
}

static struct im_server_ctx ctx_fixture(void) {
  return (struct im_server_ctx){.t0_mono = T0, .window_start_ns = 1200000000, .window_end_ns = 3700000000,
                                .client_ttft_p50_ms = 180, .client_ttft_p99_ms = NAN,
                                .output_tokens = 1000, .connections_opened = 10, .attempts = 30,
                                .kv_residency_ref = 0.68, .kv_bytes_per_token = 1e5,
                                .gpu_memory_bytes = 8e9, .bw_util_ref = 0.78};
}

static struct im_series_set *set_fixture(void) {
  struct im_series_set *s = NULL;
  CHECK_EQ(im_series_new(&s), IM_OK);
  add_server(s);
  add_machine(s);
  return s;
}

static const char *null_why(const struct im_server_source_figs *f, const char *key) {
  for (size_t i = 0; i < f->n_nulls; i++)
    if (!strcmp(f->nulls[i].key, key))
      return f->nulls[i].why;
  return NULL;
}

static void test_window(void) {
  struct im_series_set *s = set_fixture();
  struct im_server_ctx ctx = ctx_fixture();
  struct im_server_figures f;
  CHECK_EQ(im_server_figures_compute(s, &ctx, &f), IM_OK);
  CHECK_EQ(f.n_src, 2);
  const struct im_server_source_figs *a = &f.src[0];
  /* The window [1.2 s, 3.7 s] runs from the scrape at 1 s to the one at 4 s. */
  CHECK_STR(a->not_collected, "");
  CHECK_EQ(a->scrapes, 6);
  CHECK_EQ(a->malformed_lines, 6);
  CHECK_EQ(a->n_engines, 2);
  CHECK_NEAR(a->kv_cache_usage_mean, (0.2 + 0.4 + 0.3 + 0.5) / 4, 1e-12);
  CHECK_NEAR(a->kv_cache_usage_max, 0.5, 0);
  CHECK_NEAR(a->prefix_cache_hit_rate, (250.0 - 10) / (500 - 100), 1e-12);
  CHECK_NEAR(a->waiting_max, 5, 0);
  CHECK_NEAR(a->running_max, 4, 0);
  CHECK_NEAR(a->preemptions, 3, 0);
  CHECK_NEAR(a->prompt_tokens, 400, 0);
  CHECK_NEAR(a->generation_tokens, 150, 0);
  /* Bucket deltas 1..4 s: {10, 30, 40, 40} at le {0.1, 0.2, 0.4, +Inf}.
   * p50: rank 20 in (0.1, 0.2] holding 10..30 -> 0.15 s; p99: rank 39.6 in
   * (0.2, 0.4] holding 30..40 -> 0.392 s. */
  CHECK_NEAR(a->server_ttft_p50_ms, 150, 1e-9);
  CHECK_NEAR(a->server_ttft_p99_ms, 392, 1e-9);
  CHECK_NEAR(a->ttft_gap_p50_ms, 30, 1e-9);
  /* The same deltas kept for the report's server CDF; no ITL histogram. */
  CHECK_EQ(a->ttft_window.n, 4);
  CHECK_NEAR(a->ttft_window.b[0].count, 10, 0);
  CHECK_NEAR(a->ttft_window.b[2].count, 40, 0);
  CHECK_NEAR(a->ttft_window.b[2].le, 0.4, 0);
  CHECK_NEAR(a->ttft_window.count, 40, 0);
  CHECK_EQ(a->itl_window.n, 0);
  CHECK(isnan(a->server_itl_p50_ms));
  CHECK(null_why(a, "server_itl_p50_ms") != NULL);
  CHECK(isnan(a->client_ttft_p99_ms));
  CHECK_STR(null_why(a, "client_ttft_p99_ms"), "no successful measured request");
  /* Intervals (1,2], (2,3], (3,4]: usage {0.4, 0.3, 0.5}, hit rate
   * {40/100, 100/200, 100/100}; sxy = 0.05, sxx = 0.02, syy = 0.62/3. */
  CHECK_NEAR(a->kv_usage_hit_rate_r, 0.05 / sqrt(0.02 * 0.62 / 3), 1e-9);
  /* 1000 blocks of 16 tokens, 1e5 bytes each, over 8e9 bytes: 0.2 of memory
   * at full usage. */
  CHECK_NEAR(a->kv_cache_capacity_tokens, 16000, 0);
  CHECK_NEAR(a->kv_residency, 0.35 * 0.2, 1e-12);
  CHECK_NEAR(a->kv_residency_max, 0.5 * 0.2, 1e-12);
  CHECK(a->kv_residency_reason == NULL);
  /* Queries, hits and prompt tokens went down at 5 s: three counter resets. */
  CHECK_EQ(a->counter_resets, 3);
  CHECK_EQ(a->n_per_series, 1);
  CHECK_EQ(a->n_series, 6);
  CHECK(isnan(a->series[0].prefix_cache_hit_rate));
  CHECK_NEAR(a->series[1].prefix_cache_hit_rate, 0.1, 1e-12);
  CHECK(isnan(a->series[5].prefix_cache_hit_rate)); /* across the reset */
  CHECK_NEAR(a->series[2].generation_tokens_per_s, 50, 1e-9);
  CHECK_NEAR(a->series[4].preemptions, 3, 0);
  CHECK_STR(f.src[1].not_collected, "no scrape succeeded: HTTP 503");
  CHECK_EQ(f.src[1].failed_scrapes, 1);
  /* TCP: TIME_WAIT = 10 + 5 t. */
  CHECK_STR(f.tcp.not_collected, "");
  CHECK_NEAR(f.tcp.time_wait_growth_per_s, 5, 1e-9);
  CHECK_EQ(f.tcp.time_wait_max, 35);
  CHECK(f.tcp.time_wait_growing && f.tcp.warning != NULL);
  CHECK_NEAR(f.tcp.requests_per_connection, 3, 0);
  CHECK_EQ(f.tcp.series[0].fin_wait, 3);
  /* GPU: 100 W by the energy counter over 2.5 s is 250 J; 1000 tokens. */
  CHECK_STR(f.gpu.not_available, "");
  CHECK_NEAR(f.gpu.energy_j, 250, 1e-9);
  CHECK_NEAR(f.gpu.tokens_per_joule, 4, 1e-12);
  CHECK_EQ(f.gpu.energy_source, IM_GPU_ENERGY_COUNTER);
  CHECK_NEAR(f.gpu.dram_bw_util_mean, 0.5, 0);
  CHECK(f.gpu.sampled);
  im_server_figures_cleanup(&f);
  im_series_free(s);
}

/* The same samples, a stage's cut of the series, and undeclared KV bytes. */
static void test_stage_cut(void) {
  struct im_series_set *s = set_fixture();
  struct im_server_ctx ctx = ctx_fixture();
  struct im_server_figures f;
  /* A stage's series: 1 s to 3 s. */
  ctx.series_from_ns = NS;
  ctx.series_to_ns = 3 * NS;
  CHECK_EQ(im_server_figures_compute(s, &ctx, &f), IM_OK);
  CHECK_EQ(f.src[0].n_series, 3);
  CHECK_NEAR(f.src[0].series[0].t_s, 1, 0);
  CHECK_EQ(f.tcp.n_series, 3);
  CHECK_EQ(f.gpu.n_series, 3);
  CHECK_NEAR(f.gpu.series[2].power_w, 100, 0);
  im_server_figures_cleanup(&f);

  /* Undeclared KV bytes: residency null, and why. */
  ctx.kv_bytes_per_token = 0;
  CHECK_EQ(im_server_figures_compute(s, &ctx, &f), IM_OK);
  CHECK(isnan(f.src[0].kv_residency));
  CHECK(strstr(f.src[0].kv_residency_reason, "--kv-bytes-per-token") != NULL);
  im_server_figures_cleanup(&f);
  im_series_free(s);
}

static void test_nothing_sampled(void) {
  struct im_series_set *s = NULL;
  CHECK_EQ(im_series_new(&s), IM_OK);
  add(s, im_series_fmt_not_collected(&line, "tcp", "not requested"));
  add(s, im_series_fmt_not_collected(&line, "gpu", "libnvidia-ml.so.1 not found"));
  struct im_server_ctx ctx = ctx_fixture();
  ctx.connections_opened = 0;
  struct im_server_figures f;
  CHECK_EQ(im_server_figures_compute(s, &ctx, &f), IM_OK);
  CHECK_EQ(f.n_src, 0);
  CHECK_STR(f.tcp.not_collected, "not requested");
  CHECK(isnan(f.tcp.requests_per_connection));
  CHECK_STR(f.gpu.not_available, "libnvidia-ml.so.1 not found");
  CHECK(!f.gpu.sampled);
  im_server_figures_cleanup(&f);
  im_server_figures_cleanup(NULL);
  CHECK_EQ(im_server_figures_compute(NULL, &ctx, &f), IM_INVAL);
  im_series_free(s);
}

static void test_quantile(void) {
  struct im_series_hist b = {.n = 3, .b = {{0.5, 4}, {1, 8}, {INFINITY, 8}}};
  CHECK_NEAR(im_server_hist_quantile(NULL, &b, 0.5), 0.5, 1e-12); /* rank 4: top of bucket 1 */
  CHECK_NEAR(im_server_hist_quantile(NULL, &b, 0.75), 0.75, 1e-12);
  struct im_series_hist none = {.n = 0};
  CHECK(isnan(im_server_hist_quantile(NULL, &none, 0.5)));
  struct im_series_hist no_inf = {.n = 2, .b = {{0.5, 4}, {1, 8}}};
  CHECK(isnan(im_server_hist_quantile(NULL, &no_inf, 0.5)));
  CHECK(isnan(im_server_hist_quantile(&b, &b, 0.5))); /* nothing observed in between */
}

int main(void) {
  im_buf_init(&line, IM_SERIES_LINE_MAX + 1);
  test_window();
  test_stage_cut();
  test_nothing_sampled();
  test_quantile();
  im_buf_cleanup(&line);
  return CHECK_DONE();
}
