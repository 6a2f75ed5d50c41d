/* The latency samples of a group of completed requests, for figures per
 * group (per model, per target): each request's TTFT, its TPOT (with two
 * tokens or more) and every gap between its chunks (ITL), in ms, as the
 * summary defines them (docs/metrics.md §2). Buffers sized once for the
 * whole population, reused group after group. Pure: no I/O. */
#ifndef IM_ANALYZE_LATSETS_H
#define IM_ANALYZE_LATSETS_H

#include <stddef.h>

#include "analyze/breakdown.h"
#include "analyze/population.h"

struct im_latsets {
  double *ttft, *tpot, *gaps;
  size_t n, n_tpot, n_gap;
};

/* Room for every completed request of pop. IM_NOMEM (nothing to free). */
enum im_err im_latsets_init(struct im_latsets *s, const struct im_population *pop) IM_WUR;
/* Adds a completed request's samples. */
void im_latsets_add(struct im_latsets *s, const struct im_record *r);
/* The three distributions of what was added (sorting the buffers), then
 * empties the set for the next group. */
void im_latsets_flush(struct im_latsets *s, const struct im_summary_config *sc,
                      struct im_bd_dist *ttft, struct im_bd_dist *tpot, struct im_bd_dist *itl);
void im_latsets_free(struct im_latsets *s);

#endif
