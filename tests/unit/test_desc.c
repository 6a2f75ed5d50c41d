/* The model and hardware table (model/desc.h): KV bytes per token against
 * hand computations (docs/deepseek.md), lookups, validation, and the
 * simulated server's profiles agreeing with the table. */
#include "check.h"
#include "model/desc.h"
#include "model/perf.h"

static const struct im_model_desc *model(const char *name) {
  const struct im_model_desc *m = im_model_preset(name);
  if (!m) {
    fprintf(stderr, "model preset %s missing\n", name);
    exit(1);
  }
  return m;
}

static void test_kv_bytes(void) {
  /* MLA: 61 x (512 + 64) x 2 B = 70,272 B (docs/metrics.md §9). */
  CHECK_NEAR(im_model_kv_bytes_per_token(model("deepseek-ai/DeepSeek-V3")), 70272.0, 0);
  CHECK_NEAR(im_model_kv_bytes_per_token(model("DeepSeek-R1")), 70272.0, 0);
  /* 27 x 576 x 2 = 31,104. */
  CHECK_NEAR(im_model_kv_bytes_per_token(model("DeepSeek-V2-Lite")), 31104.0, 0);
  /* GQA: 2 x 80 x 8 x 128 x 2 = 327,680 (Llama-3-70B shape). */
  CHECK_NEAR(im_model_kv_bytes_per_token(model("DeepSeek-R1-Distill-Llama-70B")), 327680.0, 0);
  /* 2 x 64 x 8 x 128 x 2 = 262,144. */
  CHECK_NEAR(im_model_kv_bytes_per_token(model("DeepSeek-R1-Distill-Qwen-32B")), 262144.0, 0);
  /* 2 x 32 x 8 x 128 x 2 = 131,072. */
  const struct im_model_desc *l8 = model("meta-llama/Llama-3.1-8B-Instruct");
  CHECK_NEAR(im_model_kv_bytes_per_token(l8), 131072.0, 0);
  /* Per GPU: GQA split over TP, never beyond the KV heads; MLA replicated. */
  CHECK_NEAR(im_model_kv_bytes_per_token_per_gpu(l8, 4, 1), 32768.0, 0);
  CHECK_NEAR(im_model_kv_bytes_per_token_per_gpu(l8, 16, 1), 16384.0, 0);
  CHECK_NEAR(im_model_kv_bytes_per_token_per_gpu(model("DeepSeek-V3"), 8, 1), 70272.0, 0);
}

static void test_shapes(void) {
  const struct im_model_desc *v3 = model("deepseek-v3");
  CHECK_EQ(im_model_moe_layers(v3), 58);
  CHECK_NEAR(im_model_expert_params(v3), 44040192.0, 0);
  /* 61 x 128 x 2 x (512 + 64 + 512) = 16,990,208 (docs/perf-model.md). */
  CHECK_NEAR(im_model_attn_flops_per_ctx(v3), 16990208.0, 0);
  CHECK_EQ(im_model_moe_layers(model("Llama-3.1-8B-Instruct")), 0);
  CHECK(im_model_preset("deepseek-ai/NoSuchModel") == NULL);
  CHECK(im_model_preset("other-org/DeepSeek-V3") == NULL);
  CHECK(im_model_preset(NULL) == NULL);
}

static void test_hardware(void) {
  const struct im_hw_desc *a100 = im_hw_preset("a100_sxm");
  CHECK(a100 != NULL);
  if (a100) {
    CHECK_NEAR(a100->hbm_bw, 2.039e12, 0);
    /* No FP8: an FP8 model is measured against BF16 peak. */
    CHECK_NEAR(im_hw_peak_flops(a100, model("DeepSeek-V3")), 312e12, 0);
  }
  const struct im_hw_desc *h200 = im_hw_preset("H200");
  CHECK(h200 != NULL);
  if (h200) {
    CHECK_NEAR(im_hw_peak_flops(h200, model("DeepSeek-V3")), 1979e12, 0);
    CHECK_NEAR(im_hw_peak_flops(h200, model("Llama-3.1-8B-Instruct")), 989e12, 0);
  }
  CHECK(im_hw_preset("H100 SXM") != NULL);
  CHECK(im_hw_preset("B200") != NULL);
  CHECK(im_hw_preset("mi300x") != NULL);
  CHECK(im_hw_preset("H20") == NULL);
  CHECK_EQ(im_hw_preset_count(), 5);
  CHECK_EQ(im_model_preset_count(), 6);
  for (size_t i = 0; i < im_hw_preset_count(); i++)
    CHECK(im_hw_desc_valid(im_hw_preset_at(i), NULL, 0));
}

static void test_valid(void) {
  char why[128];
  for (size_t i = 0; i < im_model_preset_count(); i++)
    CHECK(im_model_desc_valid(im_model_preset_at(i), why, sizeof why));
  struct im_model_desc m = *model("DeepSeek-V3");
  m.top_k = 300;
  CHECK(!im_model_desc_valid(&m, why, sizeof why));
  CHECK(strstr(why, "top-k") != NULL);
  m = *model("DeepSeek-V3");
  m.kv_lora_rank = 0;
  CHECK(!im_model_desc_valid(&m, why, sizeof why));
  m = *model("DeepSeek-V3");
  m.active_params = 1e12;
  CHECK(!im_model_desc_valid(&m, why, sizeof why));
  struct im_hw_desc h = *im_hw_preset("H200");
  h.hbm_bw = 0;
  CHECK(!im_hw_desc_valid(&h, why, sizeof why));
}

/* One source of truth: every built-in serve profile names its table
 * entries, and its shape and GPU figures are the table's. */
static void test_profiles_agree(void) {
  for (size_t i = 0; i < im_profile_count(); i++) {
    const struct im_profile *p = im_profile_at(i);
    const struct im_model_desc *m = im_model_preset(p->model_preset);
    const struct im_hw_desc *h = im_hw_preset(p->hw_preset);
    CHECK(m != NULL);
    CHECK(h != NULL);
    if (!m || !h)
      continue;
    CHECK_NEAR(p->kv_bytes_per_token, im_model_kv_bytes_per_token(m), 0);
    CHECK_EQ(p->n_layers, m->layers);
    CHECK_EQ(p->n_moe_layers, im_model_moe_layers(m));
    CHECK_EQ(p->n_experts, m->routed_experts);
    CHECK_EQ(p->top_k, m->top_k);
    CHECK_NEAR(p->expert_params, im_model_expert_params(m), 0);
    CHECK_NEAR(p->total_params, m->total_params, 0);
    CHECK_NEAR(p->active_params, m->active_params, 0);
    CHECK_NEAR(p->weight_bytes, m->weight_bytes, 0);
    CHECK_NEAR(p->hbm_bw, h->hbm_bw, 0);
    CHECK_NEAR(p->gpu_mem_bytes, h->mem_bytes, 0);
    CHECK_NEAR(p->peak_flops, im_hw_peak_flops(h, m), 0);
  }
}

int main(void) {
  test_kv_bytes();
  test_shapes();
  test_hardware();
  test_valid();
  test_profiles_agree();
  return CHECK_DONE();
}
