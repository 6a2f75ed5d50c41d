/* Built-in profiles. Sources of the constants (docs/perf-model.md has the
 * full list and the hand calculations):
 *   DeepSeek-V3/R1 config.json, https://huggingface.co/deepseek-ai/DeepSeek-V3
 *     (hidden_size 7168, moe_intermediate_size 2048, num_hidden_layers 61,
 *     first_k_dense_replace 3, n_routed_experts 256, num_experts_per_tok 8,
 *     n_shared_experts 1, n_group 8, topk_group 4, kv_lora_rank 512,
 *     qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128,
 *     q_lora_rank 1536, num_attention_heads 128, vocab_size 129280,
 *     max_position_embeddings 163840); 671B total / 37B activated from the
 *     DeepSeek-V3 Technical Report, arXiv:2412.19437.
 *   DeepSeek-V2-Lite config.json, https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite
 *     (hidden_size 2048, moe_intermediate_size 1408, 27 layers,
 *     first_k_dense_replace 1, 64 routed experts, top-6, 2 shared,
 *     16 heads, no q_lora, vocab 102400); 15.7B / 2.4B from arXiv:2405.04434.
 *   Llama-3.1-8B config.json, https://huggingface.co/meta-llama/Llama-3.1-8B
 *     (32 layers, 32 heads, 8 KV heads, head_dim 128, vocab 128256).
 *   H200 SXM: 141 GB HBM3e, 4.8 TB/s, FP8 1,979 TFLOP/s dense (3,958 with
 *     sparsity), BF16 989 TFLOP/s dense, NVIDIA H200 datasheet.
 *   H100 SXM: 80 GB HBM3, 3.35 TB/s, BF16 989 TFLOP/s dense, NVIDIA H100
 *     datasheet.
 * Overheads (step_overhead_s, per_token_s, mem_eff, mfu) are calibrations,
 * not measurements; see docs/perf-model.md for the anchors they hit. */
#include <string.h>

#include "model/perf.h"
#include "model/shapes.h"

/* One routed expert of DeepSeek-V3: gate, up and down projections,
 * 3 x hidden 7168 x moe_intermediate 2048. */
#define DSV3_EXPERT (3.0 * IM_DSV3_HIDDEN * IM_DSV3_MOE_INTERMEDIATE)
/* MLA latent cache per token: 61 layers x (kv_lora_rank 512 + rope 64) x 2 B. */
#define DSV3_KV (IM_DSV3_LAYERS * (IM_DSV3_KV_LORA_RANK + IM_DSV3_QK_ROPE_HEAD_DIM) * 2.0)
/* Absorbed MLA decode, per layer and head: q.k over the 576-wide latent+rope
 * key (2 x 576 FLOPs) and p.v over the 512-wide latent (2 x 512 FLOPs);
 * 128 heads, 61 layers. */
#define DSV3_ATTN_FLOPS (61.0 * 128.0 * 2.0 * (576.0 + 512.0))
/* Attention weights per layer: q_a 7168x1536, q_a_norm 1536, q_b
 * 1536x(128x192), kv_a 7168x576, kv_a_norm 512, kv_b 512x(128x256),
 * o 16384x7168 = 187,107,328; x 61 layers. */
#define DSV3_ATTN_PARAMS (61.0 * 187107328.0)

#define DSV3_COMMON                                                                  \
  .total_params = IM_DSV3_TOTAL_PARAMS, .active_params = IM_DSV3_ACTIVE_PARAMS,     \
  .expert_params = DSV3_EXPERT, .n_layers = IM_DSV3_LAYERS,                         \
  .n_moe_layers = IM_DSV3_LAYERS - IM_DSV3_DENSE_LAYERS,                            \
  .n_experts = IM_DSV3_ROUTED_EXPERTS, .top_k = IM_DSV3_TOP_K,                      \
  .n_expert_groups = 8, .topk_groups = 4, .weight_bytes = 1.0,                     \
  .kv_bytes_per_token = DSV3_KV, .kv_replicated_tp = true,                         \
  .attn_flops_per_ctx = DSV3_ATTN_FLOPS, .attn_params = DSV3_ATTN_PARAMS,          \
  .max_model_len = 163840, .vocab_size = 129280, .n_gpus = 8, .tp = 8,             \
  .gpu_mem_bytes = IM_H200_MEM, .hbm_bw = IM_H200_HBM_BW, .peak_flops = IM_H200_FP8, \
  .mem_eff = 0.7, .hw_preset = "H200",                                              \
  .mfu = 0.4, .activation_reserve_bytes = 4e9, .step_overhead_s = 0.017,           \
  .per_token_s = 25e-6, .noise_sigma = 0.05

static const struct im_profile profiles[] = {
    {
        .name = "deepseek-v3-8xh200",
        .model = "deepseek-v3",
        .description = "DeepSeek-V3 671B (FP8) on 8x H200, TP8",
        .model_preset = "deepseek-ai/DeepSeek-V3",
        .reasoning = false,
        .reasoning_share = 0.0,
        DSV3_COMMON,
        .dp_attention = 1,
        .out_len_mean = 600.0,
    },
    {
        .name = "deepseek-r1-8xh200",
        .model = "deepseek-r1",
        .description = "DeepSeek-R1 671B (FP8) on 8x H200, TP8, reasoning output",
        .model_preset = "deepseek-ai/DeepSeek-R1",
        .reasoning = true,
        .reasoning_share = 0.7,
        DSV3_COMMON,
        .dp_attention = 1,
        .out_len_mean = 3000.0,
    },
    {
        .name = "deepseek-v3-8xh200-dp8",
        .model = "deepseek-v3",
        .description = "DeepSeek-V3 671B (FP8) on 8x H200, TP8 MoE + data-parallel attention x8",
        .model_preset = "deepseek-ai/DeepSeek-V3",
        .reasoning = false,
        .reasoning_share = 0.0,
        DSV3_COMMON,
        .dp_attention = 8,
        .out_len_mean = 600.0,
    },
    {
        .name = "deepseek-v2-lite-1xh200",
        .model = "deepseek-v2-lite",
        .description = "DeepSeek-V2-Lite 15.7B (BF16) on 1x H200",
        .model_preset = "deepseek-ai/DeepSeek-V2-Lite",
        .hw_preset = "H200",
        .reasoning = false,
        .reasoning_share = 0.0,
        .total_params = 15.7e9,
        .active_params = 2.4e9,
        .expert_params = 3.0 * IM_DSV2L_HIDDEN * IM_DSV2L_MOE_INTERMEDIATE,
        .n_layers = IM_DSV2L_LAYERS,
        .n_moe_layers = IM_DSV2L_LAYERS - IM_DSV2L_DENSE_LAYERS,
        .n_experts = IM_DSV2L_ROUTED_EXPERTS,
        .top_k = IM_DSV2L_TOP_K,
        .n_expert_groups = 1,
        .topk_groups = 1,
        .weight_bytes = 2.0,
        .kv_bytes_per_token = IM_DSV2L_LAYERS * (512.0 + 64.0) * 2.0,
        .kv_replicated_tp = true,
        .attn_flops_per_ctx = 27.0 * 16.0 * 2.0 * (576.0 + 512.0),
        /* q 2048x3072, kv_a 2048x576, kv_a_norm 512, kv_b 512x4096,
         * o 2048x2048 = 13,763,072 per layer. */
        .attn_params = 27.0 * 13763072.0,
        .max_model_len = 163840,
        .vocab_size = 102400,
        .n_gpus = 1,
        .tp = 1,
        .dp_attention = 1,
        .gpu_mem_bytes = IM_H200_MEM,
        .hbm_bw = IM_H200_HBM_BW,
        .peak_flops = IM_H200_BF16,
        .mem_eff = 0.7,
        .mfu = 0.4,
        .activation_reserve_bytes = 2e9,
        .step_overhead_s = 0.005,
        .per_token_s = 10e-6,
        .noise_sigma = 0.05,
        .out_len_mean = 400.0,
    },
    {
        .name = "llama-3.1-8b-1xh100",
        .model = "llama-3.1-8b",
        .description = "Llama-3.1-8B (BF16) on 1x H100 SXM 80GB",
        .model_preset = "meta-llama/Llama-3.1-8B-Instruct",
        .hw_preset = "H100-SXM",
        .reasoning = false,
        .reasoning_share = 0.0,
        .total_params = IM_LLAMA8B_PARAMS,
        .active_params = IM_LLAMA8B_PARAMS,
        .expert_params = 0.0,
        .n_layers = 32,
        .n_moe_layers = 0,
        .n_experts = 0,
        .top_k = 0,
        .n_expert_groups = 1,
        .topk_groups = 1,
        .weight_bytes = 2.0,
        /* GQA: K and V x 32 layers x 8 KV heads x 128 x 2 B. */
        .kv_bytes_per_token = 2.0 * IM_LLAMA8B_LAYERS * IM_LLAMA8B_KV_HEADS * IM_LLAMA8B_HEAD_DIM * 2.0,
        .kv_replicated_tp = false,
        /* q.k and p.v, 2 x 128 FLOPs each, per head (32) and layer (32). */
        .attn_flops_per_ctx = 4.0 * 32.0 * 32.0 * 128.0,
        /* q 4096x4096, k and v 4096x1024, o 4096x4096 per layer. */
        .attn_params = 32.0 * (2.0 * 4096.0 * 4096.0 + 2.0 * 4096.0 * 1024.0),
        .max_model_len = 131072,
        .vocab_size = 128256,
        .n_gpus = 1,
        .tp = 1,
        .dp_attention = 1,
        .gpu_mem_bytes = IM_H100_MEM,
        .hbm_bw = IM_H100_HBM_BW,
        .peak_flops = IM_H100_BF16,
        .mem_eff = 0.8,
        .mfu = 0.45,
        .activation_reserve_bytes = 2e9,
        .step_overhead_s = 0.001,
        .per_token_s = 5e-6,
        .noise_sigma = 0.05,
        .out_len_mean = 400.0,
    },
};

#define N_PROFILES (sizeof profiles / sizeof profiles[0])

const struct im_profile *im_profile_find(const char *name) {
  if (!name)
    return NULL;
  for (size_t i = 0; i < N_PROFILES; i++)
    if (strcmp(profiles[i].name, name) == 0)
      return &profiles[i];
  return NULL;
}

size_t im_profile_count(void) { return N_PROFILES; }

const struct im_profile *im_profile_at(size_t i) { return i < N_PROFILES ? &profiles[i] : NULL; }

const struct im_profile *im_profile_default(void) { return &profiles[0]; }
