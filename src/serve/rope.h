/* Contexts beyond a model's trained window (docs/agents.md "Long contexts
 * beyond the native window"). Models trained at a short context and
 * extended by a RoPE scaling method (DeepSeek-V3 and R1: 4,096 tokens
 * trained, YaRN with factor 40 to 163,840; the DeepSeek-V3 model card and
 * technical report describe the two YaRN stages 4K -> 32K -> 128K, its
 * config.json rope_scaling {"type": "yarn", "factor": 40,
 * "original_max_position_embeddings": 4096}) are simulated to attend more
 * slowly past the native window: the attention part of a step grows by
 * (slowdown - 1) times the share of the step's attention pairs whose
 * context position lies beyond the window.
 * This is a planted phenomenon of the simulator (the default slowdown 1.5
 * is an assumption, not a measurement), so that per-bucket figures and the
 * long-context robustness check have something to find. Pure. */
#ifndef IM_SERVE_ROPE_H
#define IM_SERVE_ROPE_H

#include <stdint.h>

#include "model/perf.h"

struct im_rope_window {
  uint32_t native; /* trained window in tokens; 0: none known */
  double factor;   /* RoPE scaling factor declared by the model (YaRN) */
  const char *method;
};

/* The declared window of a profile (by its model id), {0} when unknown. */
struct im_rope_window im_rope_window_of(const struct im_profile *p);

/* Seconds to add to a step of shape sh and cost c (profile p) whose
 * attention pairs beyond the window number `beyond` (compute tokens x
 * context past the window), for a slowdown factor s >= 1. The attention
 * part of the step: the KV-read share of the memory time when the step is
 * memory-bound, else the attention share of its FLOPs (perf.h's model). */
double im_rope_extra_s(const struct im_profile *p, const struct im_step_shape *sh,
                       const struct im_step_cost *c, double beyond, double s);

#endif
