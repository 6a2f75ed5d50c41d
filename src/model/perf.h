/* Performance model of a served model on its GPUs, and the built-in profiles.
 *
 * One engine step computes n_tokens new tokens (prefill chunks + one decode
 * token per running sequence, more with speculative decoding) for n_seqs
 * sequences. Its time, per docs/perf-model.md:
 *
 *   t = step_overhead + max(mem_time, compute_time) + per_token * n_tokens
 *   mem_time     = bytes read per GPU / (mem_eff * hbm_bw)
 *   bytes/GPU    = non-expert weights / tp (attention weights / (tp/dp)
 *                  under DP attention: each DP rank holds them whole)
 *                + sum over MoE layers of expert_bytes * distinct experts / tp
 *                + KV bytes read by this GPU (replicated MLA: all contexts;
 *                  GQA under TP: 1/tp of them; DP attention: 1/dp of them)
 *   compute_time = (2 * active_params * n_tokens + attention FLOPs) / tp
 *                  / (mfu * peak_flops)
 *
 * Noise (log-normal, sigma = noise_sigma) is applied by the caller with its
 * own RNG so that this module stays a pure function. */
#ifndef IM_SERVE_PERF_H
#define IM_SERVE_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct im_profile {
  const char *name;        /* CLI name, e.g. "deepseek-v3-8xh200" */
  const char *model;       /* served model id, e.g. "deepseek-v3" */
  const char *description; /* one line for --help and /version */
  const char *model_preset; /* its entry in model/desc.h's table (declared by /version) */
  const char *hw_preset;    /* its GPU in model/desc.h's table */
  bool reasoning;          /* streams reasoning tokens before the answer (R1) */
  double reasoning_share;  /* mean fraction of output tokens that are reasoning */

  /* Model. Parameter counts are absolute (e.g. 671e9). */
  double total_params;
  double active_params;    /* per token */
  double expert_params;    /* one routed expert of one MoE layer */
  uint32_t n_layers;
  uint32_t n_moe_layers;   /* 0 for a dense model */
  uint32_t n_experts;      /* routed experts per MoE layer */
  uint32_t top_k;
  uint32_t n_expert_groups;   /* group-limited routing (DeepSeek-V3: 8) */
  uint32_t topk_groups;       /* groups a token may use (DeepSeek-V3: 4) */
  double weight_bytes;        /* bytes per parameter as served (FP8 = 1) */
  double kv_bytes_per_token;  /* whole model, one copy */
  bool kv_replicated_tp;      /* MLA latent cache: every TP rank holds all of it */
  double attn_flops_per_ctx;  /* FLOPs per (new token x context token), whole model */
  double attn_params;         /* attention weights (part of the non-expert ones);
                                 replicated across DP-attention ranks */
  uint32_t max_model_len;
  uint32_t vocab_size;

  /* Hardware and parallelism. */
  uint32_t n_gpus;
  uint32_t tp;             /* tensor-parallel degree */
  uint32_t dp_attention;   /* data-parallel attention degree (1 = off) */
  double gpu_mem_bytes;    /* per GPU */
  double hbm_bw;           /* bytes/s per GPU */
  double peak_flops;       /* dense FLOP/s per GPU at the weight precision */
  double mem_eff;          /* achievable fraction of hbm_bw */
  double mfu;              /* achievable fraction of peak_flops */
  double activation_reserve_bytes; /* per GPU, kept out of the KV cache */

  /* Engine overheads. */
  double step_overhead_s;  /* launch, collectives, scheduling per step */
  double per_token_s;      /* sampling and bookkeeping per token in step */
  double noise_sigma;      /* log-normal sigma of step time */

  /* Output length without ignore_eos: log-normal around this mean at
   * temperature 1 (see textgen.h). */
  double out_len_mean;
};

/* Built-in profiles, looked up by name. NULL when unknown. */
const struct im_profile *im_profile_find(const char *name);
size_t im_profile_count(void);
const struct im_profile *im_profile_at(size_t i);
/* The default profile ("deepseek-v3-8xh200"). */
const struct im_profile *im_profile_default(void);

struct im_step_shape {
  uint32_t n_seqs;            /* sequences in the step */
  uint32_t n_tokens;          /* new tokens computed in the step */
  uint64_t kv_read_tokens;    /* sum over seqs of context tokens whose KV is read */
  double attn_pairs;          /* sum over seqs of new_tokens * mean context length seen */
  const uint16_t *experts_per_layer; /* distinct experts per MoE layer, n_moe_layers
                                        entries; NULL = top_k each (batch-1 bound) */
};

struct im_step_cost {
  double weight_bytes_per_gpu;
  double kv_bytes_per_gpu;
  double mem_s;
  double flops_per_gpu;
  double compute_s;
  double overhead_s;          /* step_overhead + per_token * n_tokens */
  double total_s;             /* without noise */
  double hbm_util;            /* bytes per GPU / (total_s * hbm_bw) */
};

/* Computes the cost of one step. Pure; no allocation. */
void im_perf_step(const struct im_profile *p, const struct im_step_shape *shape,
                  struct im_step_cost *out);

/* KV-cache capacity in tokens at the given gpu_memory_utilization (0..1]:
 * per GPU memory * util - weights/tp - activation reserve, divided by the
 * KV bytes per token one GPU holds, times dp_attention (each DP rank has
 * its own pool); 0 if nothing is left. */
uint64_t im_perf_kv_capacity_tokens(const struct im_profile *p, double gpu_mem_util);

/* Weight bytes resident on one GPU (every expert included). */
double im_perf_weight_bytes_per_gpu(const struct im_profile *p);

/* KV bytes one GPU holds per token of a sequence it serves: the whole entry
 * for a replicated MLA cache, 1/(tp/dp) of it for GQA heads split by TP. */
double im_perf_kv_bytes_per_token_per_gpu(const struct im_profile *p);

/* Expected distinct experts per MoE layer when n_tokens tokens each pick
 * top_k of n_experts uniformly: n_experts * (1 - (1 - top_k/n_experts)^n).
 * An estimate for callers that do not simulate routing; 0 for dense models. */
double im_perf_expected_distinct(const struct im_profile *p, uint32_t n_tokens);

#endif
