/* Step-time model; the derivation of every term and the calibration are in
 * docs/perf-model.md. */
#include "model/perf.h"

#include <math.h>

static double deg(uint32_t v) { return v ? (double)v : 1.0; }

/* DP attention splits the TP group into dp ranks that each run attention
 * for their own sequences with tp/dp-way head sharding (tp == dp: none). */
static double attn_tp(const struct im_profile *p) {
  double a = deg(p->tp) / deg(p->dp_attention);
  return a < 1.0 ? 1.0 : a;
}

static double expert_params_all(const struct im_profile *p) {
  return (double)p->n_moe_layers * (double)p->n_experts * p->expert_params;
}

/* Non-expert weight bytes per GPU: attention sharded over tp/dp, the rest
 * (embeddings, dense FFNs, shared experts, norms, head) over tp. */
static double non_expert_bytes_per_gpu(const struct im_profile *p) {
  double non_expert = p->total_params - expert_params_all(p);
  double attn = p->attn_params < non_expert ? p->attn_params : non_expert;
  if (attn < 0.0)
    attn = 0.0;
  return ((non_expert - attn) / deg(p->tp) + attn / attn_tp(p)) * p->weight_bytes;
}

double im_perf_weight_bytes_per_gpu(const struct im_profile *p) {
  return non_expert_bytes_per_gpu(p) + expert_params_all(p) * p->weight_bytes / deg(p->tp);
}

double im_perf_kv_bytes_per_token_per_gpu(const struct im_profile *p) {
  return p->kv_replicated_tp ? p->kv_bytes_per_token : p->kv_bytes_per_token / attn_tp(p);
}

double im_perf_expected_distinct(const struct im_profile *p, uint32_t n_tokens) {
  if (!p->n_moe_layers || !p->n_experts || !p->top_k)
    return 0.0;
  double e = (double)p->n_experts, k = (double)p->top_k;
  if (k >= e)
    return e;
  return e * (1.0 - pow(1.0 - k / e, (double)n_tokens));
}

void im_perf_step(const struct im_profile *p, const struct im_step_shape *shape,
                  struct im_step_cost *out) {
  double tp = deg(p->tp), dp = deg(p->dp_attention);

  double experts_read = 0.0; /* sum over MoE layers of distinct experts */
  if (shape->experts_per_layer) {
    for (uint32_t l = 0; l < p->n_moe_layers; l++) {
      uint32_t d = shape->experts_per_layer[l];
      experts_read += d < p->n_experts ? d : p->n_experts;
    }
  } else {
    experts_read = (double)p->n_moe_layers * (p->top_k < p->n_experts ? p->top_k : p->n_experts);
  }
  out->weight_bytes_per_gpu =
      non_expert_bytes_per_gpu(p) + experts_read * p->expert_params * p->weight_bytes / tp;

  /* Under DP attention each rank reads only its 1/dp share of the batch's
   * contexts (the scheduler balances sequences across ranks). */
  out->kv_bytes_per_gpu =
      (double)shape->kv_read_tokens * im_perf_kv_bytes_per_token_per_gpu(p) / dp;

  double bytes = out->weight_bytes_per_gpu + out->kv_bytes_per_gpu;
  out->mem_s = bytes / (p->mem_eff * p->hbm_bw);

  out->flops_per_gpu =
      (2.0 * p->active_params * (double)shape->n_tokens + p->attn_flops_per_ctx * shape->attn_pairs) /
      tp;
  out->compute_s = out->flops_per_gpu / (p->mfu * p->peak_flops);

  out->overhead_s = p->step_overhead_s + p->per_token_s * (double)shape->n_tokens;
  out->total_s = out->overhead_s + (out->mem_s > out->compute_s ? out->mem_s : out->compute_s);
  out->hbm_util = out->total_s > 0.0 ? bytes / (out->total_s * p->hbm_bw) : 0.0;
}

uint64_t im_perf_kv_capacity_tokens(const struct im_profile *p, double gpu_mem_util) {
  if (!(gpu_mem_util > 0.0) || gpu_mem_util > 1.0)
    return 0;
  double free_bytes = p->gpu_mem_bytes * gpu_mem_util - im_perf_weight_bytes_per_gpu(p) -
                      p->activation_reserve_bytes;
  double per_token = im_perf_kv_bytes_per_token_per_gpu(p);
  if (!(free_bytes > 0.0) || !(per_token > 0.0))
    return 0;
  /* One GPU's pool serves the sequences of its DP rank; ranks do not share.
   * Under plain TP all GPUs hold slices of the same sequences: one pool. */
  uint64_t per_rank = (uint64_t)floor(free_bytes / per_token);
  return per_rank * (uint64_t)deg(p->dp_attention);
}
