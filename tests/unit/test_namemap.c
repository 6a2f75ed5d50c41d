/* Tests of the engine name maps (src/observe/namemap.c) on the example pages
 * in tests/fixtures/metrics/ (one per engine, each citing where its names
 * come from; infermeter.prom is a real capture of `infermeter serve`). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "observe/namemap.h"

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    IM__FAIL("cannot open %s (run from the repository root)", path);
    *len = 0;
    return calloc(1, 1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc((size_t)n + 1);
  *len = fread(p, 1, (size_t)n, f);
  p[*len] = '\0';
  fclose(f);
  return p;
}

static struct im_nm_snapshot *load(const char *file) {
  char path[256];
  snprintf(path, sizeof path, "tests/fixtures/metrics/%s", file);
  size_t len;
  char *page = slurp(path, &len);
  struct im_nm_snapshot *s;
  if (im_nm_snapshot_new(&s, NULL) != IM_OK)
    abort();
  CHECK_OK(im_nm_extract(s, page, len));
  CHECK_EQ(s->parse.errors, 0);
  free(page);
  return s;
}

static struct im_nm_snapshot *from_text(const char *page) {
  struct im_nm_snapshot *s;
  if (im_nm_snapshot_new(&s, NULL) != IM_OK)
    abort();
  CHECK_OK(im_nm_extract(s, page, strlen(page)));
  return s;
}

#define V(s, c) ((s)->v[IM_NM_##c].value)
#define BIT(e) (1u << IM_NM_##e)

static const struct im_nm_series *find_series(const struct im_nm_snapshot *s, enum im_nm_concept c,
                                              const char *key) {
  for (size_t i = 0; i < s->n_series; i++)
    if (s->series[i].concept == c && strcmp(s->series[i].key, key) == 0)
      return &s->series[i];
  return NULL;
}

static const struct im_nm_raw *find_raw(const struct im_nm_snapshot *s, const char *name) {
  for (size_t i = 0; i < s->n_raw; i++)
    if (strcmp(s->raw[i].name, name) == 0)
      return &s->raw[i];
  return NULL;
}

static void test_vllm_v1_dp(void) {
  struct im_nm_snapshot *s = load("vllm_v1.prom");
  CHECK_EQ(s->engines, BIT(VLLM_V1));
  CHECK_EQ(s->primary, IM_NM_VLLM_V1);
  /* usage: max and mean over the two engines */
  CHECK_NEAR(V(s, KV_USAGE), 0.8, 1e-12);
  CHECK_NEAR(s->v[IM_NM_KV_USAGE].mean, 0.6, 1e-12);
  CHECK_EQ(s->v[IM_NM_KV_USAGE].n, 2);
  /* counters and running/waiting: sums */
  CHECK_NEAR(V(s, REQUESTS_RUNNING), 21, 0);
  CHECK_NEAR(V(s, REQUESTS_WAITING), 3, 0);
  CHECK_NEAR(V(s, PREFIX_QUERIES), 160000, 0);
  CHECK_NEAR(V(s, PREFIX_HITS), 60000, 0);
  CHECK_NEAR(V(s, PREEMPTIONS), 3, 0);
  CHECK_NEAR(V(s, PROMPT_TOKENS), 160000, 0);
  CHECK_NEAR(V(s, GENERATION_TOKENS), 8000, 0);
  CHECK(!s->v[IM_NM_PREFIX_HIT_RATE].present);
  /* per-series values keyed by engine */
  const struct im_nm_series *e1 = find_series(s, IM_NM_KV_USAGE, "engine=1");
  CHECK(e1 != NULL);
  if (e1)
    CHECK_NEAR(e1->value, 0.4, 1e-12);
  CHECK(find_series(s, IM_NM_REQUESTS_RUNNING, "engine=0") != NULL);
  /* TTFT buckets summed across engines with equal le */
  const struct im_nm_hist *h = &s->h[IM_NM_TTFT];
  CHECK(h->present);
  CHECK_EQ(h->n, 3);
  CHECK_EQ(h->series, 2);
  CHECK_NEAR(h->b[0].le, 0.1, 0);
  CHECK_NEAR(h->b[0].count, 20, 0);
  CHECK_NEAR(h->b[1].count, 40, 0);
  CHECK(h->b[2].le == INFINITY);
  CHECK_NEAR(h->b[2].count, 60, 0);
  CHECK_NEAR(h->sum, 27.5, 1e-12);
  CHECK_NEAR(h->count, 60, 0);
  CHECK(s->h[IM_NM_ITL].present);
  CHECK(s->h[IM_NM_E2E].present);
  CHECK(s->h[IM_NM_QUEUE_TIME].present);
  CHECK(!s->h[IM_NM_TPOT].present);
  /* median TTFT since start: rank 30 in (0.1, 0.5]: 0.1 + 0.4 * 10/20 */
  double q;
  CHECK_OK(im_nm_hist_quantile(NULL, s, IM_NM_TTFT, 0.5, &q));
  CHECK_NEAR(q, 0.3, 1e-12);
  CHECK_EQ(im_nm_hist_quantile(NULL, s, IM_NM_TPOT, 0.5, &q), IM_NOTFOUND);
  /* cumulative hit rate with no earlier snapshot */
  CHECK_NEAR(im_nm_hit_rate(NULL, s), 60000.0 / 160000.0, 1e-12);
  /* unknown kept raw, with its labels re-escaped */
  const struct im_nm_raw *r = find_raw(s, "vllm:cache_config_info");
  CHECK(r != NULL);
  if (r) {
    CHECK_STR(r->labels, "block_size=\"16\",enable_prefix_caching=\"True\",engine=\"0\","
                         "num_gpu_blocks=\"30000\"");
    CHECK_NEAR(r->value, 1, 0);
  }
  im_nm_snapshot_free(s);
}

static void test_vllm_v0(void) {
  struct im_nm_snapshot *s = load("vllm_v0.prom");
  CHECK_EQ(s->engines, BIT(VLLM_V0));
  CHECK_EQ(s->primary, IM_NM_VLLM_V0);
  CHECK_NEAR(V(s, KV_USAGE), 0.55, 1e-12);
  CHECK_NEAR(V(s, PREFIX_HIT_RATE), 0.25, 1e-12);
  CHECK(!s->v[IM_NM_PREFIX_QUERIES].present);
  /* only the gauge: the hit rate is the engine's own */
  CHECK_NEAR(im_nm_hit_rate(s, s), 0.25, 1e-12);
  CHECK(s->h[IM_NM_ITL].present); /* time_per_output_token */
  CHECK_NEAR(s->h[IM_NM_ITL].count, 7500, 0);
  CHECK(find_raw(s, "vllm:num_requests_swapped") != NULL);
  im_nm_snapshot_free(s);
}

static void test_sglang(void) {
  struct im_nm_snapshot *s = load("sglang.prom");
  CHECK_EQ(s->engines, BIT(SGLANG));
  CHECK_NEAR(V(s, KV_USAGE), 0.5, 1e-12);
  CHECK_NEAR(s->v[IM_NM_KV_USAGE].mean, 0.4, 1e-12);
  CHECK_NEAR(V(s, REQUESTS_RUNNING), 11, 0);
  CHECK_NEAR(V(s, REQUESTS_WAITING), 3, 0);
  CHECK_NEAR(V(s, PREEMPTIONS), 7, 0);
  CHECK_NEAR(V(s, PREFIX_HIT_RATE), 0.3, 1e-12);
  /* one name, two concepts */
  CHECK_NEAR(V(s, PROMPT_TOKENS), 8128902, 0);
  CHECK_NEAR(V(s, PREFIX_QUERIES), 8128902, 0);
  CHECK_NEAR(V(s, PREFIX_HITS), 2032225, 0);
  CHECK(find_series(s, IM_NM_REQUESTS_RUNNING, "dp_rank=1") != NULL);
  CHECK(find_raw(s, "sglang:num_retracted_reqs") != NULL);
  CHECK(s->h[IM_NM_TTFT].present && s->h[IM_NM_ITL].present && s->h[IM_NM_E2E].present &&
        s->h[IM_NM_QUEUE_TIME].present);
  /* queue time's first bucket is le=0: a quantile there returns 0 */
  double q;
  CHECK_OK(im_nm_hist_quantile(NULL, s, IM_NM_QUEUE_TIME, 0.3, &q));
  CHECK_NEAR(q, 0, 0);
  im_nm_snapshot_free(s);
}

static void test_llamacpp_tgi_trtllm(void) {
  struct im_nm_snapshot *s = load("llamacpp.prom");
  CHECK_EQ(s->engines, BIT(LLAMACPP));
  CHECK_NEAR(V(s, KV_USAGE), 0.125, 0);
  CHECK_NEAR(V(s, REQUESTS_RUNNING), 2, 0);
  CHECK_NEAR(V(s, REQUESTS_WAITING), 1, 0);
  CHECK_NEAR(V(s, PROMPT_TOKENS), 6886, 0);
  CHECK_NEAR(V(s, GENERATION_TOKENS), 3469, 0);
  CHECK(find_series(s, IM_NM_KV_USAGE, "") != NULL);
  CHECK(isnan(im_nm_hit_rate(NULL, s)));
  im_nm_snapshot_free(s);

  /* Build b10587: prompt_tokens_total uncached only, the cached counter
   * beside it: prompt tokens and queries are the sum, hits the cached. */
  s = load("llamacpp_b10587.prom");
  CHECK_EQ(s->engines, BIT(LLAMACPP));
  CHECK(!s->v[IM_NM_KV_USAGE].present);
  CHECK_NEAR(V(s, PROMPT_TOKENS), 73800, 0);
  CHECK_NEAR(V(s, PREFIX_QUERIES), 73800, 0);
  CHECK_NEAR(V(s, PREFIX_HITS), 32909, 0);
  CHECK_NEAR(im_nm_hit_rate(NULL, s), 32909.0 / 73800.0, 1e-12);
  /* The tokens/s gauges are mapped to nothing: kept raw. */
  int raw_tps = 0;
  for (size_t i = 0; i < s->n_raw; i++)
    raw_tps += !strcmp(s->raw[i].name, "llamacpp:prompt_tokens_seconds") ||
               !strcmp(s->raw[i].name, "llamacpp:predicted_tokens_seconds");
  CHECK_EQ(raw_tps, 2);
  im_nm_snapshot_free(s);

  s = load("tgi.prom");
  CHECK_EQ(s->engines, BIT(TGI));
  CHECK_NEAR(V(s, REQUESTS_RUNNING), 16, 0);
  CHECK_NEAR(V(s, REQUESTS_WAITING), 4, 0);
  CHECK_NEAR(V(s, PROMPT_TOKENS), 12000, 0);
  CHECK_NEAR(V(s, GENERATION_TOKENS), 4000, 0);
  CHECK(s->h[IM_NM_E2E].present && s->h[IM_NM_TPOT].present && s->h[IM_NM_QUEUE_TIME].present);
  CHECK(!s->h[IM_NM_TTFT].present);
  CHECK(!s->v[IM_NM_KV_USAGE].present);
  im_nm_snapshot_free(s);

  s = load("trtllm.prom");
  CHECK_EQ(s->engines, BIT(TRTLLM));
  CHECK_NEAR(V(s, KV_USAGE), 0.6, 1e-12);
  CHECK_NEAR(V(s, PREFIX_HIT_RATE), 0.35, 1e-12);
  CHECK_NEAR(im_nm_hit_rate(NULL, s), 0.3, 1e-12);
  CHECK_NEAR(V(s, REQUESTS_RUNNING), 8, 0);
  CHECK(s->h[IM_NM_TTFT].present && s->h[IM_NM_TPOT].present);
  im_nm_snapshot_free(s);
}

static void test_dcgm(void) {
  struct im_nm_snapshot *s = load("dcgm.prom");
  CHECK_EQ(s->engines, BIT(DCGM));
  CHECK_EQ(s->primary, IM_NM_DCGM);
  CHECK_NEAR(V(s, GPU_DRAM_ACTIVE), 0.7, 1e-12);
  CHECK_NEAR(s->v[IM_NM_GPU_DRAM_ACTIVE].max, 0.8, 1e-12);
  CHECK_NEAR(V(s, GPU_TENSOR_ACTIVE), 0.2, 1e-12);
  CHECK_NEAR(V(s, GPU_SM_ACTIVE), 0.8, 1e-12);
  CHECK_NEAR(V(s, GPU_FB_USED), 250000.0 * 1048576, 0);
  CHECK_NEAR(V(s, GPU_FB_FREE), 30720.0 * 1048576, 0);
  CHECK_NEAR(V(s, GPU_POWER), 1250.75, 1e-9);
  const struct im_nm_series *g1 = find_series(s, IM_NM_GPU_POWER, "gpu=1");
  CHECK(g1 != NULL);
  if (g1)
    CHECK_NEAR(g1->value, 600.25, 0);
  CHECK(find_raw(s, "DCGM_FI_DEV_GPU_TEMP") != NULL);
  im_nm_snapshot_free(s);
}

/* The real page of `infermeter serve` after one request. */
static void test_infermeter_capture(void) {
  struct im_nm_snapshot *s = load("infermeter.prom");
  CHECK_EQ(s->engines, BIT(VLLM_V1) | BIT(INFERMETER));
  CHECK_EQ(s->primary, IM_NM_INFERMETER);
  CHECK(s->v[IM_NM_KV_USAGE].present);
  CHECK_EQ(s->v[IM_NM_REQUESTS_RUNNING].n, 1);
  CHECK(V(s, PROMPT_TOKENS) > 0);
  CHECK_NEAR(V(s, PREFIX_QUERIES), V(s, PROMPT_TOKENS), 0);
  CHECK(V(s, GENERATION_TOKENS) >= 1);
  CHECK(find_series(s, IM_NM_REQUESTS_RUNNING, "engine=0") != NULL);
  for (int c = IM_NM_TTFT; c <= IM_NM_QUEUE_TIME; c++)
    if (c != IM_NM_TPOT) {
      CHECK(s->h[c].present);
      CHECK(s->h[c].n > 10);
      CHECK(s->h[c].b[s->h[c].n - 1].le == INFINITY);
      CHECK_NEAR(s->h[c].b[s->h[c].n - 1].count, s->h[c].count, 0);
    }
  CHECK_NEAR(s->h[IM_NM_TTFT].count, 1, 0);
  double q;
  CHECK_OK(im_nm_hist_quantile(NULL, s, IM_NM_TTFT, 0.5, &q));
  CHECK(q > 0 && q < 10);
  CHECK(find_raw(s, "infermeter_sim_steps_total") != NULL);
  CHECK(find_raw(s, "vllm:request_success_total") != NULL);
  CHECK(find_raw(s, "vllm:request_prefill_time_seconds_bucket") != NULL);
  CHECK_EQ(s->raw_dropped, 0);
  im_nm_snapshot_free(s);
}

/* Several engines on one page; deprecated names next to their renames. */
static void test_mixed_and_aliases(void) {
  const char *page = "vllm:kv_cache_usage_perc{engine=\"0\"} 0.5\n"
                     "vllm:gpu_cache_usage_perc{engine=\"0\"} 0.5\n"
                     "vllm:num_requests_running{engine=\"0\"} 4\n"
                     "vllm:prefix_cache_queries_total{engine=\"0\"} 100\n"
                     "vllm:gpu_prefix_cache_queries_total{engine=\"0\"} 100\n"
                     "sglang:num_running_reqs 3\n"
                     "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 500\n";
  struct im_nm_snapshot *s = from_text(page);
  CHECK_EQ(s->engines, BIT(VLLM_V1) | BIT(SGLANG) | BIT(DCGM));
  CHECK_EQ(s->primary, IM_NM_VLLM_V1);
  /* the alias is not counted twice */
  CHECK_EQ(s->v[IM_NM_KV_USAGE].n, 1);
  CHECK_NEAR(V(s, PREFIX_QUERIES), 100, 0);
  /* engines add up */
  CHECK_NEAR(V(s, REQUESTS_RUNNING), 7, 0);
  CHECK_EQ(s->v[IM_NM_REQUESTS_RUNNING].n, 2);
  size_t nkv = 0;
  for (size_t i = 0; i < s->n_series; i++)
  nkv += s->series[i].concept == IM_NM_KV_USAGE;
  CHECK_EQ(nkv, 1);
  im_nm_snapshot_free(s);

  /* Only the old name: used. */
  s = from_text("vllm:gpu_cache_usage_perc{engine=\"0\"} 0.7\n"
                "vllm:gpu_prefix_cache_queries_total 5\n");
  CHECK_EQ(s->engines, BIT(VLLM_V1));
  CHECK_NEAR(V(s, KV_USAGE), 0.7, 1e-12);
  im_nm_snapshot_free(s);
}

/* Interval quantities from two scrapes. */
static void test_deltas(void) {
  struct im_nm_snapshot *a = from_text("vllm:prefix_cache_queries_total{engine=\"0\"} 1000\n"
                                       "vllm:prefix_cache_hits_total{engine=\"0\"} 100\n"
                                       "vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 10\n"
                                       "vllm:time_to_first_token_seconds_bucket{le=\"1\"} 10\n"
                                       "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 10\n");
  struct im_nm_snapshot *b = from_text("vllm:prefix_cache_queries_total{engine=\"0\"} 1400\n"
                                       "vllm:prefix_cache_hits_total{engine=\"0\"} 400\n"
                                       "vllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 10\n"
                                       "vllm:time_to_first_token_seconds_bucket{le=\"1\"} 20\n"
                                       "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 20\n");
  CHECK_NEAR(im_nm_hit_rate(a, b), 0.75, 1e-12);
  CHECK_NEAR(im_nm_delta(a, b, IM_NM_PREFIX_QUERIES), 400, 0);
  /* restart: counters went down */
  CHECK(isnan(im_nm_hit_rate(b, a)));
  CHECK(isnan(im_nm_delta(b, a, IM_NM_PREFIX_HITS)));
  /* all 10 new TTFTs in (0.1, 1]: median 0.1 + 0.9 * 5/10 */
  double q;
  CHECK_OK(im_nm_hist_quantile(a, b, IM_NM_TTFT, 0.5, &q));
  CHECK_NEAR(q, 0.55, 1e-12);
  /* no new observations */
  CHECK_OK(im_nm_hist_quantile(a, a, IM_NM_TTFT, 0.5, &q));
  CHECK(isnan(q));
  im_nm_snapshot_free(a);
  im_nm_snapshot_free(b);
}

static void test_bounds_and_reuse(void) {
  struct im_nm_limits lim = {.max_series = 2, .max_raw = 2};
  struct im_nm_snapshot *s;
  CHECK_OK(im_nm_snapshot_new(&s, &lim));
  const char *page = "vllm:num_requests_running{engine=\"0\"} 1\n"
                     "vllm:num_requests_running{engine=\"1\"} 2\n"
                     "vllm:num_requests_running{engine=\"2\"} 3\n"
                     "u1 1\nu2 2\nu3{a=\"q\\\"\"} 3\n"
                     "broken{ 1\n";
  CHECK_OK(im_nm_extract(s, page, strlen(page)));
  CHECK_NEAR(V(s, REQUESTS_RUNNING), 6, 0); /* aggregates see every series */
  CHECK_EQ(s->n_series, 2);
  CHECK_EQ(s->series_dropped, 1);
  CHECK_EQ(s->n_raw, 2);
  CHECK_EQ(s->raw_dropped, 1);
  CHECK_EQ(s->parse.errors, 1);
  /* the same snapshot, another page: nothing left over */
  {
    const char *p2 = "u3{a=\"q\\\"\"} 3\n";
    CHECK_OK(im_nm_extract(s, p2, strlen(p2)));
    CHECK_EQ(s->parse.errors, 0);
  }
  CHECK_EQ(s->engines, 0);
  CHECK_EQ(s->primary, -1);
  CHECK(!s->v[IM_NM_REQUESTS_RUNNING].present);
  CHECK_EQ(s->n_raw, 1);
  CHECK_STR(s->raw[0].labels, "a=\"q\\\"\"");
  CHECK_OK(im_nm_extract(s, "", 0));
  CHECK_EQ(s->n_raw, 0);
  im_nm_snapshot_free(s);
  im_nm_snapshot_free(NULL);

  /* Table sanity: every row names a known engine and concept, and a name
   * appears in one engine only. */
  size_t n;
  const struct im_nm_row *t = im_nm_table(&n);
  CHECK(n > 40);
  for (size_t i = 0; i < n; i++) {
    CHECK(strcmp(im_nm_engine_name(t[i].engine), "unknown") != 0);
    CHECK(strcmp(im_nm_concept_name(t[i].concept), "unknown") != 0);
    for (size_t k = 0; k < i; k++)
      if (strcmp(t[i].name, t[k].name) == 0) {
        CHECK_EQ(t[i].engine, t[k].engine);
        CHECK(t[i].concept != t[k].concept);
      }
    /* An added row adds to an earlier row of its concept and engine. */
    if (t[i].add) {
      int base = 0;
      for (size_t k = 0; k < i; k++)
        base |= !t[k].add && t[k].engine == t[i].engine && t[k].concept == t[i].concept;
      CHECK(base);
    }
  }
  CHECK_STR(im_nm_concept_name(IM_NM_KV_USAGE), "kv_cache_usage");
  CHECK_EQ(im_nm_concept_agg(IM_NM_KV_USAGE), IM_NM_AGG_MAX);
  CHECK(im_nm_concept_is_hist(IM_NM_E2E));
}

int main(void) {
  test_vllm_v1_dp();
  test_vllm_v0();
  test_sglang();
  test_llamacpp_tgi_trtllm();
  test_dcgm();
  test_infermeter_capture();
  test_mixed_and_aliases();
  test_deltas();
  test_bounds_and_reuse();
  return CHECK_DONE();
}
