/* The model and hardware table (contract in desc.h). Sources of every
 * constant, with the hand calculations: docs/deepseek.md "Presets". */
#include "model/desc.h"

#include <stdio.h>
#include <strings.h>
#include <string.h>

#include "model/shapes.h"

/* DeepSeek-V3 and R1 share one architecture (config.json of both repos). */
#define DSV3_SHAPE                                                                          \
  .layers = IM_DSV3_LAYERS, .dense_layers = IM_DSV3_DENSE_LAYERS, .hidden = IM_DSV3_HIDDEN, \
  .attn = IM_ATTN_MLA, .kv_lora_rank = IM_DSV3_KV_LORA_RANK,                                \
  .qk_rope_head_dim = IM_DSV3_QK_ROPE_HEAD_DIM, .heads = IM_DSV3_HEADS,                     \
  .kv_heads = IM_DSV3_HEADS, .head_dim = 128, .routed_experts = IM_DSV3_ROUTED_EXPERTS,     \
  .shared_experts = 1, .top_k = IM_DSV3_TOP_K,                                              \
  .expert_intermediate = IM_DSV3_MOE_INTERMEDIATE, .weight_bytes = 1.0, .kv_bytes = 2.0,    \
  .total_params = IM_DSV3_TOTAL_PARAMS, .active_params = IM_DSV3_ACTIVE_PARAMS

static const struct im_model_desc models[] = {
    {.name = "deepseek-ai/DeepSeek-V3", DSV3_SHAPE},
    {.name = "deepseek-ai/DeepSeek-R1", DSV3_SHAPE},
    {.name = "deepseek-ai/DeepSeek-V2-Lite",
     .layers = IM_DSV2L_LAYERS, .dense_layers = IM_DSV2L_DENSE_LAYERS, .hidden = IM_DSV2L_HIDDEN,
     .attn = IM_ATTN_MLA, .kv_lora_rank = 512, .qk_rope_head_dim = 64, .heads = IM_DSV2L_HEADS,
     .kv_heads = IM_DSV2L_HEADS, .head_dim = 128, .routed_experts = IM_DSV2L_ROUTED_EXPERTS,
     .shared_experts = 2, .top_k = IM_DSV2L_TOP_K,
     .expert_intermediate = IM_DSV2L_MOE_INTERMEDIATE, .weight_bytes = 2.0, .kv_bytes = 2.0,
     .total_params = 15.7e9, .active_params = 2.4e9},
    /* Qwen2.5-32B architecture (config.json of the distill). */
    {.name = "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
     .layers = 64, .dense_layers = 64, .hidden = 5120, .attn = IM_ATTN_GQA, .heads = 40,
     .kv_heads = 8, .head_dim = 128, .weight_bytes = 2.0, .kv_bytes = 2.0,
     .total_params = 32.8e9, .active_params = 32.8e9},
    /* Llama-3.3-70B architecture. */
    {.name = "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
     .layers = 80, .dense_layers = 80, .hidden = 8192, .attn = IM_ATTN_GQA, .heads = 64,
     .kv_heads = 8, .head_dim = 128, .weight_bytes = 2.0, .kv_bytes = 2.0,
     .total_params = 70.6e9, .active_params = 70.6e9},
    {.name = "meta-llama/Llama-3.1-8B-Instruct",
     .layers = IM_LLAMA8B_LAYERS, .dense_layers = IM_LLAMA8B_LAYERS, .hidden = 4096,
     .attn = IM_ATTN_GQA, .heads = IM_LLAMA8B_HEADS, .kv_heads = IM_LLAMA8B_KV_HEADS,
     .head_dim = IM_LLAMA8B_HEAD_DIM, .weight_bytes = 2.0, .kv_bytes = 2.0,
     .total_params = IM_LLAMA8B_PARAMS, .active_params = IM_LLAMA8B_PARAMS},
};

static const struct im_hw_desc hws[] = {
    /* A100 SXM4 80GB datasheet: 2,039 GB/s, BF16 312 TFLOP/s dense, no FP8. */
    {.name = "A100-SXM", .hbm_bw = 2.039e12, .flops_bf16 = 312e12, .flops_fp8 = 0.0,
     .mem_bytes = 80e9},
    {.name = "H100-SXM", .hbm_bw = IM_H100_HBM_BW, .flops_bf16 = IM_H100_BF16,
     .flops_fp8 = IM_H100_FP8, .mem_bytes = IM_H100_MEM},
    {.name = "H200", .hbm_bw = IM_H200_HBM_BW, .flops_bf16 = IM_H200_BF16,
     .flops_fp8 = IM_H200_FP8, .mem_bytes = IM_H200_MEM},
    /* HGX B200, per GPU: 180 GB HBM3e, 7.7 TB/s, FP8 4.5 PFLOP/s dense (9
     * with sparsity), BF16 2.25 PFLOP/s dense. */
    {.name = "B200", .hbm_bw = 7.7e12, .flops_bf16 = 2250e12, .flops_fp8 = 4500e12,
     .mem_bytes = 180e9},
    /* AMD Instinct MI300X datasheet: 192 GB HBM3, 5.3 TB/s, BF16 1,307.4
     * TFLOP/s dense, FP8 2,614.9 dense. */
    {.name = "MI300X", .hbm_bw = 5.3e12, .flops_bf16 = 1307.4e12, .flops_fp8 = 2614.9e12,
     .mem_bytes = 192e9},
};

#define N_MODELS (sizeof models / sizeof models[0])
#define N_HWS (sizeof hws / sizeof hws[0])

/* "org/Name" matches "org/Name" and "Name"; case ignored. */
static int name_matches(const char *preset, const char *name) {
  if (!strcasecmp(preset, name))
    return 1;
  const char *slash = strchr(preset, '/');
  return slash && !strchr(name, '/') && !strcasecmp(slash + 1, name);
}

const struct im_model_desc *im_model_preset(const char *name) {
  for (size_t i = 0; name && i < N_MODELS; i++)
    if (name_matches(models[i].name, name))
      return &models[i];
  return NULL;
}

size_t im_model_preset_count(void) { return N_MODELS; }
const struct im_model_desc *im_model_preset_at(size_t i) { return i < N_MODELS ? &models[i] : NULL; }

/* Hardware names: "H100-SXM", "h100_sxm" and "H100 SXM" are one. */
static int hw_matches(const char *preset, const char *name) {
  for (; *preset && *name; preset++, name++) {
    char a = *preset, b = *name;
    if (b == '_' || b == ' ')
      b = '-';
    if ((a | 0x20) != (b | 0x20))
      return 0;
  }
  return !*preset && !*name;
}

const struct im_hw_desc *im_hw_preset(const char *name) {
  for (size_t i = 0; name && i < N_HWS; i++)
    if (hw_matches(hws[i].name, name))
      return &hws[i];
  return NULL;
}

size_t im_hw_preset_count(void) { return N_HWS; }
const struct im_hw_desc *im_hw_preset_at(size_t i) { return i < N_HWS ? &hws[i] : NULL; }

double im_model_kv_bytes_per_token(const struct im_model_desc *m) {
  if (m->attn == IM_ATTN_MLA)
    return (double)m->layers * ((double)m->kv_lora_rank + (double)m->qk_rope_head_dim) *
           m->kv_bytes;
  return 2.0 * (double)m->layers * (double)m->kv_heads * (double)m->head_dim * m->kv_bytes;
}

double im_model_kv_bytes_per_token_per_gpu(const struct im_model_desc *m, uint32_t tp,
                                           uint32_t dp) {
  double whole = im_model_kv_bytes_per_token(m);
  if (m->attn == IM_ATTN_MLA)
    return whole;
  double split = (double)(tp ? tp : 1) / (double)(dp ? dp : 1);
  if (split > (double)m->kv_heads && m->kv_heads)
    split = (double)m->kv_heads; /* a KV head is replicated, never split */
  return split > 1.0 ? whole / split : whole;
}

double im_model_expert_params(const struct im_model_desc *m) {
  return m->routed_experts ? 3.0 * (double)m->hidden * (double)m->expert_intermediate : 0.0;
}

uint32_t im_model_moe_layers(const struct im_model_desc *m) {
  return m->routed_experts && m->layers > m->dense_layers ? m->layers - m->dense_layers : 0;
}

double im_model_attn_flops_per_ctx(const struct im_model_desc *m) {
  if (m->attn == IM_ATTN_MLA)
    return (double)m->layers * (double)m->heads * 2.0 *
           (2.0 * (double)m->kv_lora_rank + (double)m->qk_rope_head_dim);
  return (double)m->layers * (double)m->heads * 4.0 * (double)m->head_dim;
}

double im_hw_peak_flops(const struct im_hw_desc *hw, const struct im_model_desc *m) {
  return m->weight_bytes <= 1.0 && hw->flops_fp8 > 0.0 ? hw->flops_fp8 : hw->flops_bf16;
}

bool im_model_desc_valid(const struct im_model_desc *m, char *why, size_t whylen) {
  const char *bad = !m->layers                                  ? "layers must be > 0"
                    : m->dense_layers > m->layers               ? "dense layers exceed layers"
                    : !(m->kv_bytes > 0) || m->kv_bytes > 16    ? "KV dtype bytes must be in (0, 16]"
                    : !(m->weight_bytes > 0) || m->weight_bytes > 16
                        ? "weight dtype bytes must be in (0, 16]"
                    : !(m->total_params > 0) ? "total parameters must be > 0"
                    : !(m->active_params > 0) || m->active_params > m->total_params
                        ? "active parameters must be in (0, total]"
                    : m->attn == IM_ATTN_MLA && !m->kv_lora_rank ? "MLA needs kv_lora_rank"
                    : m->attn == IM_ATTN_GQA && (!m->kv_heads || !m->head_dim)
                        ? "GQA needs KV heads and head dim"
                    : m->routed_experts && (!m->top_k || m->top_k > m->routed_experts)
                        ? "top-k must be in [1, routed experts]"
                    : m->routed_experts && !m->expert_intermediate
                        ? "a MoE model needs its expert size (moe_intermediate_size)"
                        : NULL;
  if (bad && why && whylen)
    snprintf(why, whylen, "%s", bad);
  return !bad;
}

bool im_hw_desc_valid(const struct im_hw_desc *hw, char *why, size_t whylen) {
  const char *bad = !(hw->hbm_bw > 0)       ? "HBM bandwidth must be > 0"
                    : !(hw->flops_bf16 > 0) ? "BF16 FLOP/s must be > 0"
                    : !(hw->flops_fp8 >= 0) ? "FP8 FLOP/s must be >= 0"
                    : !(hw->mem_bytes > 0)  ? "memory must be > 0"
                                            : NULL;
  if (bad && why && whylen)
    snprintf(why, whylen, "%s", bad);
  return !bad;
}
