/* The publishable audit (analyze/validity.h): each check on hand-built
 * records, one planted problem at a time, and a clean fixture that passes
 * every check it can. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analyze/validity.h"
#include "check.h"

#define MS INT64_C(1000000)
#define SEC INT64_C(1000000000)
#define N 40

static uint32_t chunks[4] = {0, 10000, 20000, 30000};

/* Request i: scheduled at i * 2 s (window [0, 80 s]), TTFT ttft, prompt
 * tokens `prompt`, 4 chunks 10 ms apart. */
static struct im_record rec(uint64_t i, int64_t ttft, uint32_t prompt) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.id = r.logical_id = i + 1;
  r.attempt = 1;
  r.t_sched = r.t_sched_first = r.t_dispatch = r.t_start = r.t_send = (int64_t)i * 2 * SEC;
  r.t_first = r.t_start + ttft;
  r.t_last = r.t_first + 30 * MS;
  r.t_end = r.t_last;
  r.chunk_us = chunks;
  r.n_chunks = 4;
  r.output_tokens = 4;
  r.prompt_tokens = prompt;
  r.cached_tokens = prompt / 2;
  r.content_hash = i + 1;
  return r;
}

/* Varied prompt lengths up to 40,000 tokens, steady TTFT 100-119 ms. */
static void clean(struct im_record *r) {
  for (int i = 0; i < N; i++)
    r[i] = rec((uint64_t)i, (100 + i % 20) * MS, 1000u + (uint32_t)i * 1000u);
}

static const struct im_valid_check *find(const struct im_validity *v, const char *id) {
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->checks[i].id, id))
      return &v->checks[i];
  return NULL;
}

/* Declared settings of a test: "key=value" strings, NULL-terminated; a
 * key absent is undeclared. */
static const char *lookup(const void *ctx, const char *key) {
  const char *const *kv = ctx;
  for (size_t i = 0; kv && kv[i]; i++) {
    size_t n = strlen(key);
    if (!strncmp(kv[i], key, n) && kv[i][n] == '=')
      return kv[i] + n + 1;
  }
  return NULL;
}
static const char *const all_vllm[] = {"torch_compile=on", "tp=8", "dp=1", "kv_cache_dtype=auto",
                                       "quantization=fp8", "max_num_seqs=256",
                                       "enable_prefix_caching=true", "speculative=none", NULL};

/* The status of check `id`, its evidence copied to ev (when not NULL). */
static enum im_check_status status_ev(struct im_record *r, size_t n, const char *id,
                                      void (*tweak)(struct im_validity_input *), char *ev,
                                      size_t ev_len) {
  struct im_stage_input in = {.recs = r, .n_recs = n, .slo_target = 0.99,
                              .counters = {.scheduled = n, .dispatched = n, .cpu_share = 0.1},
                              .threads = 1};
  im_summary_config_default(&in.cfg);
  in.cfg.window_end_ns = 80 * SEC;
  struct im_stage_figures f;
  CHECK_OK(im_stage_analyze(&in, &f));
  struct im_validity_input vin = {.f = &f, .cfg = &in.cfg, .repeats = 3, .engine = "vllm 0.11",
                                  .engine_id = IM_VALID_ENGINE_VLLM, .model = "deepseek-v3",
                                  .declared = lookup, .declared_ctx = all_vllm,
                                  .server_hit_rate = NAN, .time_wait_slope = NAN,
                                  .connections_opened = 2};
  if (tweak)
    tweak(&vin);
  struct im_validity v;
  CHECK_OK(im_validity_compute(&vin, &v));
  const struct im_valid_check *c = find(&v, id);
  CHECK(c != NULL);
  enum im_check_status st = c ? c->status : IM_CHECK_PASS;
  if (ev)
    snprintf(ev, ev_len, "%s", c ? c->evidence : "");
  /* The verdict follows the checks: any FAIL -> not publishable. */
  bool any_fail = false;
  for (size_t i = 0; i < v.n; i++) {
    any_fail |= v.checks[i].status == IM_CHECK_FAIL;
    CHECK(v.checks[i].evidence[0] != '\0');
    CHECK(v.checks[i].status == IM_CHECK_PASS || v.checks[i].fix[0] != '\0');
  }
  CHECK_EQ(v.publishable, !any_fail);
  im_stage_figures_cleanup(&f);
  return st;
}

static enum im_check_status status(struct im_record *r, size_t n, const char *id,
                                   void (*tweak)(struct im_validity_input *)) {
  return status_ev(r, n, id, tweak, NULL, 0);
}

static void one_run(struct im_validity_input *v) { v->repeats = 1; }
static void one_run_publish(struct im_validity_input *v) {
  v->repeats = 1;
  v->publish = true;
}
static const char *const vllm_no_compile[] = {"tp=8", "dp=1", "kv_cache_dtype=auto",
                                              "quantization=fp8", "max_num_seqs=256",
                                              "enable_prefix_caching=true", "speculative=none",
                                              NULL};
static const char *const vllm_no_tp[] = {"torch_compile=on", "dp=1", "kv_cache_dtype=auto",
                                         "quantization=fp8", "max_num_seqs=256",
                                         "enable_prefix_caching=true", "speculative=none", NULL};
static void no_compile(struct im_validity_input *v) { v->declared_ctx = vllm_no_compile; }
static void no_tp(struct im_validity_input *v) { v->declared_ctx = vllm_no_tp; }
/* llama.cpp as b10587's /props declares it (run/declare.c): slots, n_ctx,
 * weight type, build; nothing of torch.compile, which it does not have. */
static const char *const llama_props[] = {"slots=4", "n_ctx=4096", "weight_type=Q8_0",
                                          "build=b10587", NULL};
static void llamacpp(struct im_validity_input *v) {
  v->engine = "llamacpp b10587";
  v->engine_id = IM_VALID_ENGINE_LLAMACPP;
  v->declared_ctx = llama_props;
}
static void llamacpp_silent(struct im_validity_input *v) {
  llamacpp(v);
  v->declared_ctx = NULL;
}
static void unidentified(struct im_validity_input *v) {
  v->engine = "myserver";
  v->engine_id = IM_VALID_ENGINE_UNKNOWN;
  v->declared_ctx = vllm_no_compile;
}

/* cancelled_freed judges from a scrape taken after a settle (issue 29):
 * the last request (i = 39, ends at ~78.1 s, the stage's last) is
 * cancelled; running was 0 at the first scrape. */
static struct im_server_series_pt cancel_pts[3];
static size_t n_cancel_pts;
static void cancel_series(struct im_validity_input *v) {
  v->server_running_first = 0;
  v->server_running_last = cancel_pts[n_cancel_pts - 1].requests_running;
  v->server_series = cancel_pts;
  v->n_server_series = n_cancel_pts;
}

static void test_cancel_settle(void) {
  struct im_record r[N];
  clean(r);
  r[N - 1].kind = IM_KIND_CANCELLED;
  double t_cancel = (double)r[N - 1].t_end / 1e9;
  for (int i = 0; i < 3; i++)
    cancel_pts[i] = (struct im_server_series_pt){.t_s = 0, .requests_running = 0,
                                                 .kv_cache_usage = NAN, .requests_waiting = 0};
  /* The last scrape 0.15 ms after the cancel, still counting it: not judged. */
  cancel_pts[1].t_s = t_cancel + 0.00015;
  cancel_pts[1].requests_running = 1;
  n_cancel_pts = 2;
  char ev[512];
  CHECK_EQ(status_ev(r, N, "cancelled_freed", cancel_series, ev, sizeof ev), IM_CHECK_PASS);
  CHECK(strstr(ev, "not judged") != NULL);
  /* A scrape 0.5 s after: freed -> PASS, said from that scrape. */
  cancel_pts[2].t_s = t_cancel + 0.5;
  cancel_pts[2].requests_running = 0;
  n_cancel_pts = 3;
  CHECK_EQ(status_ev(r, N, "cancelled_freed", cancel_series, ev, sizeof ev), IM_CHECK_PASS);
  CHECK(strstr(ev, "after the last request ended") != NULL);
  /* ... still running then: WARN. */
  cancel_pts[2].requests_running = 1;
  CHECK_EQ(status_ev(r, N, "cancelled_freed", cancel_series, ev, sizeof ev), IM_CHECK_WARN);
}

/* server_config knows each engine's settings (issue 29). */
static void test_engines(void) {
  struct im_record r[N];
  clean(r);
  char ev[512];
  /* llama.cpp with its /props: no torch.compile asked, the batch sizes etc.
   * a WARN, never a FAIL. */
  CHECK_EQ(status_ev(r, N, "server_config", llamacpp, ev, sizeof ev), IM_CHECK_WARN);
  CHECK(strstr(ev, "torch_compile") == NULL);
  CHECK(strstr(ev, "slots 4") != NULL && strstr(ev, "n_batch") != NULL);
  /* ... silent (--declare none): its own critical settings FAIL, still no
   * torch.compile. */
  CHECK_EQ(status_ev(r, N, "server_config", llamacpp_silent, ev, sizeof ev), IM_CHECK_FAIL);
  CHECK(strstr(ev, "slots") != NULL && strstr(ev, "torch_compile") == NULL);
  /* An unidentified engine: the generic list, torch.compile FAILs. */
  CHECK_EQ(status_ev(r, N, "server_config", unidentified, ev, sizeof ev), IM_CHECK_FAIL);
  CHECK(strstr(ev, "torch_compile") != NULL);
  /* Names of engines. */
  CHECK_EQ(im_valid_engine_of("vllm-v1 (from its metric names)"), IM_VALID_ENGINE_VLLM);
  CHECK_EQ(im_valid_engine_of("llama.cpp b10587"), IM_VALID_ENGINE_LLAMACPP);
  CHECK_EQ(im_valid_engine_of("llamacpp"), IM_VALID_ENGINE_LLAMACPP);
  CHECK_EQ(im_valid_engine_of("SGLang@0.5"), IM_VALID_ENGINE_SGLANG);
  CHECK_EQ(im_valid_engine_of("tgi 3.3"), IM_VALID_ENGINE_TGI);
  CHECK_EQ(im_valid_engine_of("TensorRT-LLM"), IM_VALID_ENGINE_TRTLLM);
  CHECK_EQ(im_valid_engine_of("infermeter-sim 0.1"), IM_VALID_ENGINE_INFERMETER);
  CHECK_EQ(im_valid_engine_of("myserver"), IM_VALID_ENGINE_UNKNOWN);
  CHECK_EQ(im_valid_engine_of(NULL), IM_VALID_ENGINE_UNKNOWN);
  /* Every engine's list has a critical setting and no key twice. */
  for (int e = 0; e < IM_VALID_ENGINE_COUNT_; e++) {
    size_t n = 0;
    const struct im_valid_setting *set = im_valid_engine_settings((enum im_valid_engine)e, &n);
    bool crit = false;
    for (size_t i = 0; i < n; i++) {
      crit |= set[i].critical;
      for (size_t k = 0; k < i; k++)
        CHECK(strcmp(set[i].key, set[k].key) != 0);
    }
    CHECK(n > 0 && crit);
  }
}
static void churn(struct im_validity_input *v) { v->connections_opened = N; }

static void test_checks(void) {
  struct im_record r[N];
  clean(r);
  CHECK_EQ(status(r, N, "workload", NULL), IM_CHECK_PASS);
  CHECK_EQ(status(r, N, "repeats", NULL), IM_CHECK_PASS);
  CHECK_EQ(status(r, N, "repeats", one_run), IM_CHECK_WARN);
  CHECK_EQ(status(r, N, "repeats", one_run_publish), IM_CHECK_FAIL);
  CHECK_EQ(status(r, N, "server_config", NULL), IM_CHECK_PASS);
  CHECK_EQ(status(r, N, "server_config", no_compile), IM_CHECK_FAIL);
  CHECK_EQ(status(r, N, "server_config", no_tp), IM_CHECK_WARN);
  /* Cached tokens in the responses: the cache's effect is known. */
  CHECK_EQ(status(r, N, "cache_metrics", NULL), IM_CHECK_PASS);
  CHECK_EQ(status(r, N, "errors", NULL), IM_CHECK_PASS);
  CHECK_EQ(status(r, N, "steady_state", NULL), IM_CHECK_PASS);
  CHECK_EQ(status(r, N, "connections", NULL), IM_CHECK_PASS);
  CHECK_EQ(status(r, N, "connections", churn), IM_CHECK_WARN);
  CHECK_EQ(status(r, N, "client_check", NULL), IM_CHECK_PASS);
  /* 40 requests, 80 s: too few for p99.9 -> samples WARN. */
  CHECK_EQ(status(r, N, "samples", NULL), IM_CHECK_WARN);
  /* Every request in the warm-up: nothing measured, nothing to publish. */
  for (int i = 0; i < N; i++)
    r[i].kind = IM_KIND_WARMUP;
  char none[512];
  CHECK_EQ(status_ev(r, N, "samples", NULL, none, sizeof none), IM_CHECK_FAIL);
  CHECK(strstr(none, "no measured request completed") != NULL);
  clean(r);

  /* One prompt length: the fixed-prompt benchmark. */
  for (int i = 0; i < N; i++)
    r[i].prompt_tokens = 2048;
  CHECK_EQ(status(r, N, "workload", NULL), IM_CHECK_FAIL);
  /* Several lengths, none long: a caveat. */
  clean(r);
  for (int i = 0; i < N; i++)
    r[i].prompt_tokens = 1000u + (uint32_t)i;
  CHECK_EQ(status(r, N, "workload", NULL), IM_CHECK_WARN);

  /* No cached tokens anywhere and no server metric. */
  clean(r);
  for (int i = 0; i < N; i++)
    r[i].cached_tokens = 0;
  CHECK_EQ(status(r, N, "cache_metrics", NULL), IM_CHECK_FAIL);

  /* Failures: 2 of 40 = 5 % -> WARN (above 1 %); 3 of 40 = 7.5 % -> FAIL. */
  clean(r);
  r[0].error = r[1].error = IM_EC_HTTP_5XX;
  CHECK_EQ(status(r, N, "errors", NULL), IM_CHECK_WARN);
  r[2].error = IM_EC_HTTP_5XX;
  CHECK_EQ(status(r, N, "errors", NULL), IM_CHECK_FAIL);
  /* The DeepSeek API's overload (a 200 stream cut short) is named. */
  char ev[1024];
  CHECK(status_ev(r, N, "errors", NULL, ev, sizeof ev) == IM_CHECK_FAIL &&
        !strstr(ev, "insufficient_system_resource"));
  r[2].error = IM_EC_INSUFFICIENT;
  CHECK_EQ(status_ev(r, N, "errors", NULL, ev, sizeof ev), IM_CHECK_FAIL);
  CHECK(strstr(ev, "; 1 attempt ended with finish_reason insufficient_system_resource") != NULL);

  /* TTFT doubles in the second half of the window: no steady state. */
  clean(r);
  for (int i = N / 2; i < N; i++) {
    r[i].t_first += 110 * MS;
    r[i].t_last += 110 * MS;
    r[i].t_end += 110 * MS;
  }
  CHECK_EQ(status(r, N, "steady_state", NULL), IM_CHECK_WARN);

  /* A client that fell behind: every dispatch 20 ms late. */
  clean(r);
  for (int i = 0; i < N; i++)
    r[i].t_dispatch += 20 * MS;
  CHECK_EQ(status(r, N, "client_check", NULL), IM_CHECK_FAIL);
}

int main(void) {
  test_checks();
  test_engines();
  test_cancel_settle();
  return CHECK_DONE();
}
