/* Model and hardware descriptions: the one table of model shapes and GPU
 * figures that the simulated server's profiles (model/perf.h) and the
 * roofline analysis (analyze/roofline.h) both read.
 *
 * Presets are named like Hugging Face ids ("deepseek-ai/DeepSeek-V3"); a
 * lookup also accepts the part after the slash and ignores case. Sources
 * of every constant: docs/deepseek.md "Presets".
 *
 * Pure data and arithmetic: no I/O, no JSON (the readers of --model-config
 * files and of Hugging Face config.json live in src/record/sysdesc.c). */
#ifndef IM_MODEL_DESC_H
#define IM_MODEL_DESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum im_attn_kind { IM_ATTN_GQA, IM_ATTN_MLA };

#define IM_DESC_NAME_LEN 96

struct im_model_desc {
  char name[IM_DESC_NAME_LEN];
  uint32_t layers;            /* num_hidden_layers */
  uint32_t dense_layers;      /* first_k_dense_replace (all layers for a dense model) */
  uint32_t hidden;            /* hidden_size */
  enum im_attn_kind attn;
  uint32_t kv_lora_rank;      /* MLA latent width */
  uint32_t qk_rope_head_dim;  /* MLA decoupled RoPE key width */
  uint32_t heads;             /* num_attention_heads */
  uint32_t kv_heads;          /* num_key_value_heads (GQA) */
  uint32_t head_dim;          /* GQA head dimension */
  uint32_t routed_experts;    /* n_routed_experts per MoE layer (0: dense) */
  uint32_t shared_experts;    /* n_shared_experts */
  uint32_t top_k;             /* num_experts_per_tok */
  uint32_t expert_intermediate; /* moe_intermediate_size */
  double weight_bytes;        /* bytes per weight as served (FP8 1, BF16 2) */
  double kv_bytes;            /* bytes per KV element (BF16 2) */
  double total_params;        /* absolute, e.g. 671e9 */
  double active_params;       /* per token */
};

struct im_hw_desc {
  char name[IM_DESC_NAME_LEN];
  double hbm_bw;              /* bytes/s per GPU */
  double flops_bf16;          /* dense BF16 FLOP/s per GPU */
  double flops_fp8;           /* dense FP8 FLOP/s per GPU (0: no FP8 tensor cores) */
  double mem_bytes;           /* HBM per GPU */
};

/* Built-in presets; NULL when unknown. */
const struct im_model_desc *im_model_preset(const char *name);
size_t im_model_preset_count(void);
const struct im_model_desc *im_model_preset_at(size_t i);
const struct im_hw_desc *im_hw_preset(const char *name);
size_t im_hw_preset_count(void);
const struct im_hw_desc *im_hw_preset_at(size_t i);

/* KV-cache bytes of one token, whole model, one copy:
 *   MLA: layers * (kv_lora_rank + qk_rope_head_dim) * kv_bytes
 *   GQA: 2 * layers * kv_heads * head_dim * kv_bytes
 * (docs/metrics.md §9). 0 when the shape is incomplete. */
double im_model_kv_bytes_per_token(const struct im_model_desc *m);

/* KV bytes one GPU holds per token under tensor parallelism tp and
 * data-parallel attention dp: the MLA latent cache is replicated on every
 * attention rank (the whole entry); GQA KV heads are split over tp/dp
 * ranks (at most kv_heads ways). */
double im_model_kv_bytes_per_token_per_gpu(const struct im_model_desc *m, uint32_t tp,
                                           uint32_t dp);

/* Parameters of one routed expert: 3 (gate, up, down) * hidden *
 * expert_intermediate; 0 for a dense model. */
double im_model_expert_params(const struct im_model_desc *m);
/* MoE layers: layers - dense_layers for a MoE model, 0 for a dense one. */
uint32_t im_model_moe_layers(const struct im_model_desc *m);

/* Attention FLOPs per (new token x context token), whole model, for decode:
 * MLA (weights absorbed, DeepSeek-V2 §2.1.2): layers * heads * 2 *
 * (kv_lora_rank + qk_rope_head_dim + kv_lora_rank); GQA: layers * heads *
 * 4 * head_dim (q.k and p.v). */
double im_model_attn_flops_per_ctx(const struct im_model_desc *m);

/* Dense peak FLOP/s of hw at the model's weight precision: FP8 when the
 * weights are 1 byte and the GPU has FP8 tensor cores, BF16 otherwise. */
double im_hw_peak_flops(const struct im_hw_desc *hw, const struct im_model_desc *m);

/* Checks that m is usable for the formulas above (layers, attention shape,
 * bytes and parameters set, experts consistent); on failure writes which
 * field is wrong into why and returns false. */
bool im_model_desc_valid(const struct im_model_desc *m, char *why, size_t whylen);
bool im_hw_desc_valid(const struct im_hw_desc *hw, char *why, size_t whylen);

#endif
