/* Performance model and built-in profiles: step time against hand
 * computations written out from the profile fields, monotonicity, KV
 * capacity, profile sanity. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "model/perf.h"

static const struct im_profile *find(const char *name) {
  const struct im_profile *p = im_profile_find(name);
  if (!p) {
    fprintf(stderr, "profile %s missing\n", name);
    exit(1);
  }
  return p;
}

static double step_s(const struct im_profile *p, uint32_t batch, uint32_t ctx, const uint16_t *ex) {
  struct im_step_shape s = {batch, batch, (uint64_t)batch * ctx, (double)batch * ctx, ex};
  struct im_step_cost c;
  im_perf_step(p, &s, &c);
  return c.total_s;
}

/* DeepSeek-V3, TP8, batch 1, 2K context, experts NULL (top_k each). */
static void test_hand_dsv3_batch1(void) {
  const struct im_profile *p = find("deepseek-v3-8xh200");
  double expert = p->expert_params; /* 3 * 7168 * 2048 = 44,040,192 */
  CHECK_NEAR(expert, 44040192.0, 0.5);
  double non_expert = p->total_params - 58.0 * 256.0 * expert; /* 17.06e9 */
  double w = non_expert / 8.0 + 58.0 * 8.0 * expert / 8.0;      /* 1 B/param */
  double kv = 2048.0 * 70272.0;                                 /* replicated MLA */
  double mem = (w + kv) / (0.7 * 4.8e12);
  double flops = (2.0 * 37e9 * 1.0 + p->attn_flops_per_ctx * 2048.0) / 8.0;
  double comp = flops / (0.4 * 1979e12);
  double t = 0.017 + 25e-6 * 1.0 + (mem > comp ? mem : comp);
  struct im_step_shape s = {1, 1, 2048, 2048.0, NULL};
  struct im_step_cost c;
  im_perf_step(p, &s, &c);
  CHECK_REL(c.weight_bytes_per_gpu, w, 1e-9);
  CHECK_REL(c.kv_bytes_per_gpu, kv, 1e-9);
  CHECK_REL(c.total_s, t, 0.01);
  CHECK_REL(c.overhead_s, 0.017025, 1e-9);
  /* Anchor: ~20 ms at batch 1. */
  CHECK(c.total_s > 0.017 && c.total_s < 0.022);
}

/* DeepSeek-V3, TP8, batch 256, 2K context, all 256 experts in every layer. */
static void test_hand_dsv3_batch256(void) {
  const struct im_profile *p = find("deepseek-v3-8xh200");
  uint16_t ex[58];
  for (int i = 0; i < 58; i++)
    ex[i] = 256;
  double w = 671e9 / 8.0; /* every weight, 1 B/param, / tp */
  double kv = 256.0 * 2048.0 * 70272.0;
  double mem = (w + kv) / (0.7 * 4.8e12);
  double attn = 61.0 * 128.0 * 2.0 * (576.0 + 512.0); /* absorbed MLA per (token, ctx) */
  CHECK_REL(p->attn_flops_per_ctx, attn, 1e-12);
  double comp = (2.0 * 37e9 * 256.0 + attn * 256.0 * 2048.0) / 8.0 / (0.4 * 1979e12);
  double t = 0.017 + 25e-6 * 256.0 + (mem > comp ? mem : comp);
  double got = step_s(p, 256, 2048, ex);
  CHECK_REL(got, t, 0.01);
  /* Anchor: 50-60 ms at batch 256, 2K contexts. */
  CHECK(got >= 0.050 && got <= 0.060);
  CHECK(mem > comp);
}

/* Llama-3.1-8B on one H100, batch 16, 1K context: dense, GQA. */
static void test_hand_llama(void) {
  const struct im_profile *p = find("llama-3.1-8b-1xh100");
  double w = 8.03e9 * 2.0;
  double kv = 16.0 * 1024.0 * (2.0 * 32.0 * 8.0 * 128.0 * 2.0);
  double mem = (w + kv) / (0.8 * 3.35e12);
  double comp = (2.0 * 8.03e9 * 16.0 + 4.0 * 32.0 * 32.0 * 128.0 * 16.0 * 1024.0) / (0.45 * 989e12);
  double t = 0.001 + 5e-6 * 16.0 + (mem > comp ? mem : comp);
  CHECK_REL(step_s(p, 16, 1024, NULL), t, 0.01);
}

/* DP-attention x8, batch 1024 at 2K: each rank reads 1/8 of the KV, every
 * GPU holds the attention weights whole. */
static void test_hand_dp8(void) {
  const struct im_profile *p = find("deepseek-v3-8xh200-dp8");
  uint16_t ex[58];
  for (int i = 0; i < 58; i++)
    ex[i] = 256;
  double expert_all = 58.0 * 256.0 * p->expert_params;
  double non_expert = 671e9 - expert_all;
  double attn = p->attn_params; /* 61 x 187,107,328 */
  CHECK_NEAR(attn, 61.0 * 187107328.0, 1.0);
  double w = (non_expert - attn) / 8.0 + attn + expert_all / 8.0;
  double kv = 1024.0 * 2048.0 * 70272.0 / 8.0;
  double mem = (w + kv) / (0.7 * 4.8e12);
  double comp = (2.0 * 37e9 * 1024.0 + p->attn_flops_per_ctx * 1024.0 * 2048.0) / 8.0 /
                (0.4 * 1979e12);
  double t = 0.017 + 25e-6 * 1024.0 + (mem > comp ? mem : comp);
  struct im_step_shape s = {1024, 1024, 1024ull * 2048, 1024.0 * 2048, ex};
  struct im_step_cost c;
  im_perf_step(p, &s, &c);
  CHECK_REL(c.weight_bytes_per_gpu, w, 1e-9);
  CHECK_REL(c.kv_bytes_per_gpu, kv, 1e-9);
  CHECK_REL(c.total_s, t, 0.01);
  CHECK(c.hbm_util > 0.0 && c.hbm_util < 1.0);
}

static void test_monotone(void) {
  for (size_t i = 0; i < im_profile_count(); i++) {
    const struct im_profile *p = im_profile_at(i);
    double last = 0.0;
    for (uint32_t b = 1; b <= 512; b *= 2) {
      uint16_t ex[64];
      double d = im_perf_expected_distinct(p, b);
      for (int l = 0; l < 64; l++)
        ex[l] = (uint16_t)(d + 0.5);
      double t = step_s(p, b, 2048, p->n_moe_layers ? ex : NULL);
      CHECK(t > last);
      last = t;
    }
    last = 0.0;
    for (uint32_t ctx = 128; ctx <= 65536; ctx *= 2) {
      double t = step_s(p, 32, ctx, NULL);
      CHECK(t > last);
      last = t;
    }
  }
  /* More distinct experts read, more time. */
  const struct im_profile *p = im_profile_default();
  uint16_t lo[58], hi[58];
  for (int l = 0; l < 58; l++) {
    lo[l] = 100;
    hi[l] = 200;
  }
  CHECK(step_s(p, 64, 2048, hi) > step_s(p, 64, 2048, lo));
}

static void test_kv_capacity(void) {
  const struct im_profile *p = im_profile_default();
  uint64_t cap = im_perf_kv_capacity_tokens(p, 0.9);
  /* (141e9 * 0.9 - 671e9/8 - 4e9) / 70272 = 555,342 */
  CHECK_INT(cap, >=, 500000);
  CHECK_INT(cap, <=, 600000);
  CHECK_EQ(cap, (uint64_t)((141e9 * 0.9 - 671e9 / 8.0 - 4e9) / 70272.0));
  CHECK_EQ(im_perf_kv_capacity_tokens(p, 0.0), 0);
  CHECK_EQ(im_perf_kv_capacity_tokens(p, 1.5), 0);
  CHECK_EQ(im_perf_kv_capacity_tokens(p, 0.5), 0); /* weights do not fit */
  CHECK(im_perf_kv_capacity_tokens(p, 0.95) > cap);

  /* DP attention: dp pools, each the per-GPU free memory over the whole
   * 70,272 B/token. With the attention weights replicated per rank: */
  const struct im_profile *dp = find("deepseek-v3-8xh200-dp8");
  double w_dp = im_perf_weight_bytes_per_gpu(dp);
  uint64_t per_rank = (uint64_t)((141e9 * 0.9 - w_dp - 4e9) / 70272.0);
  CHECK_EQ(im_perf_kv_capacity_tokens(dp, 0.9), 8 * per_rank);
  /* Same per-GPU weights as TP (attention weights not counted apart):
   * exactly 8x the TP capacity. */
  struct im_profile dp_same = *dp;
  dp_same.attn_params = 0.0;
  CHECK_REL(im_perf_weight_bytes_per_gpu(&dp_same), im_perf_weight_bytes_per_gpu(p), 1e-12);
  CHECK_EQ(im_perf_kv_capacity_tokens(&dp_same, 0.9), 8 * cap);

  /* GQA under TP: each GPU holds 1/tp of a token's KV. */
  const struct im_profile *ll = find("llama-3.1-8b-1xh100");
  struct im_profile ll2 = *ll;
  ll2.tp = 2;
  ll2.n_gpus = 2;
  CHECK_REL(im_perf_kv_bytes_per_token_per_gpu(&ll2), 131072.0 / 2.0, 1e-12);
  uint64_t c1 = im_perf_kv_capacity_tokens(ll, 0.9);
  CHECK_EQ(c1, (uint64_t)((80e9 * 0.9 - 8.03e9 * 2.0 - 2e9) / 131072.0));
  CHECK_EQ(im_perf_kv_capacity_tokens(&ll2, 0.9),
           (uint64_t)((80e9 * 0.9 - 8.03e9 * 2.0 / 2.0 - 2e9) / 65536.0));
  struct im_step_shape s = {4, 4, 4096, 4096.0, NULL};
  struct im_step_cost a, b;
  im_perf_step(ll, &s, &a);
  im_perf_step(&ll2, &s, &b);
  CHECK_REL(b.kv_bytes_per_gpu, a.kv_bytes_per_gpu / 2.0, 1e-12);
  /* MLA under TP is replicated: the whole entry on every GPU. */
  CHECK_REL(im_perf_kv_bytes_per_token_per_gpu(p), 70272.0, 1e-12);
}

static void test_profiles_sane(void) {
  CHECK_INT(im_profile_count(), >=, 5);
  CHECK_STR(im_profile_default()->name, "deepseek-v3-8xh200");
  CHECK_STR(im_profile_default()->model, "deepseek-v3");
  CHECK(im_profile_find("no-such-profile") == NULL);
  CHECK(im_profile_find(NULL) == NULL);
  CHECK(im_profile_at(im_profile_count()) == NULL);
  const char *names[] = {"deepseek-v3-8xh200", "deepseek-r1-8xh200", "deepseek-v3-8xh200-dp8",
                         "deepseek-v2-lite-1xh200", "llama-3.1-8b-1xh100"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    CHECK(im_profile_find(names[i]) != NULL);
  CHECK(find("deepseek-r1-8xh200")->reasoning);
  CHECK(find("deepseek-r1-8xh200")->out_len_mean > im_profile_default()->out_len_mean);

  for (size_t i = 0; i < im_profile_count(); i++) {
    const struct im_profile *p = im_profile_at(i);
    CHECK(p->name && p->model && p->description);
    CHECK(im_profile_find(p->name) == p);
    for (size_t j = 0; j < i; j++)
      CHECK(strcmp(p->name, im_profile_at(j)->name) != 0);
    CHECK(p->total_params > 0 && p->active_params > 0 && p->active_params <= p->total_params);
    CHECK(p->n_layers > 0 && p->n_moe_layers <= p->n_layers);
    if (p->n_moe_layers) {
      CHECK(p->n_experts > 0 && p->top_k > 0 && p->top_k <= p->n_experts);
      CHECK(p->n_expert_groups >= 1 && p->n_experts % p->n_expert_groups == 0);
      CHECK(p->topk_groups >= 1 && p->topk_groups <= p->n_expert_groups);
      double experts = (double)p->n_moe_layers * p->n_experts * p->expert_params;
      CHECK(experts < p->total_params);
      /* active = non-expert + top_k experts per layer, within 15 % (the
       * published active counts leave out embeddings). */
      double active = p->total_params - experts + (double)p->n_moe_layers * p->top_k * p->expert_params;
      CHECK_REL(active, p->active_params, 0.15);
    }
    CHECK(p->attn_params > 0 && p->attn_params < p->total_params);
    CHECK(p->weight_bytes >= 1.0 && p->kv_bytes_per_token > 0 && p->attn_flops_per_ctx > 0);
    CHECK(p->max_model_len >= 32768 && p->vocab_size > 1000);
    CHECK(p->n_gpus >= 1 && p->tp >= 1 && p->tp <= p->n_gpus && p->dp_attention >= 1);
    CHECK(p->tp % p->dp_attention == 0);
    CHECK(p->gpu_mem_bytes > 1e10 && p->hbm_bw > 1e12 && p->peak_flops > 1e14);
    CHECK(p->mem_eff > 0.3 && p->mem_eff <= 1.0 && p->mfu > 0.1 && p->mfu <= 1.0);
    CHECK(p->step_overhead_s > 0 && p->step_overhead_s < 0.1 && p->per_token_s >= 0);
    CHECK(p->noise_sigma >= 0 && p->noise_sigma < 0.5 && p->out_len_mean > 0);
    CHECK(!p->reasoning || (p->reasoning_share > 0 && p->reasoning_share < 1));
    /* A whole max_model_len sequence fits in the KV cache. */
    CHECK_INT(im_perf_kv_capacity_tokens(p, 0.9), >=, p->max_model_len);
  }
}

int main(void) {
  test_hand_dsv3_batch1();
  test_hand_dsv3_batch256();
  test_hand_llama();
  test_hand_dp8();
  test_monotone();
  test_kv_capacity();
  test_profiles_sane();
  return CHECK_DONE();
}
