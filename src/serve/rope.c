/* Contexts beyond the native window: see serve/rope.h. */
#include "serve/rope.h"

#include <string.h>

struct im_rope_window im_rope_window_of(const struct im_profile *p) {
  /* DeepSeek-V3 / R1 config.json: rope_scaling yarn, factor 40,
   * original_max_position_embeddings 4096. */
  if (p && p->model &&
      (!strncmp(p->model, "deepseek-v3", 11) || !strncmp(p->model, "deepseek-r1", 11)))
    return (struct im_rope_window){4096, 40.0, "yarn"};
  return (struct im_rope_window){0, 1.0, ""};
}

double im_rope_extra_s(const struct im_profile *p, const struct im_step_shape *sh,
                       const struct im_step_cost *c, double beyond, double s) {
  double all = sh->attn_pairs;
  if (s <= 1.0 || beyond <= 0 || all <= 0)
    return 0.0;
  double attn_s;
  if (c->mem_s >= c->compute_s) {
    double bytes = c->weight_bytes_per_gpu + c->kv_bytes_per_gpu;
    attn_s = bytes > 0 ? c->mem_s * c->kv_bytes_per_gpu / bytes : 0.0;
  } else {
    double flops = 2.0 * p->active_params * (double)sh->n_tokens + p->attn_flops_per_ctx * all;
    attn_s = flops > 0 ? c->compute_s * p->attn_flops_per_ctx * all / flops : 0.0;
  }
  double share = beyond / all;
  return (s - 1.0) * attn_s * (share > 1 ? 1 : share);
}
