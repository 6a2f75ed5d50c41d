/* Latency per model name (--model-mix, docs/agents.md "Model mixes"):
 * the final attempts of completed non-warm-up requests, grouped by the
 * model they asked for (record key `model`; requests without one are not
 * grouped). Per model: n, TTFT, TPOT (n_out >= 2) and every ITL gap,
 * nearest rank over the per-request values. Pure: no I/O. */
#ifndef IM_ANALYZE_MODELS_H
#define IM_ANALYZE_MODELS_H

#include <stdint.h>

#include "analyze/breakdown.h"
#include "analyze/population.h"

#define IM_MODELS_MAX 16

struct im_model_group {
  char name[64];
  uint64_t n;
  struct im_bd_dist ttft, tpot, itl;
};

struct im_models {
  size_t n;       /* groups in use (first-seen order) */
  uint64_t other; /* completed requests of names past the cap */
  struct im_model_group g[IM_MODELS_MAX];
};

/* Fills m. IM_NOMEM. */
enum im_err im_models_compute(const struct im_population *pop, const struct im_summary_config *sc,
                              struct im_models *m) IM_WUR;

#endif
