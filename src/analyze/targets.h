/* Figures per target of a run with several --url (docs/tls.md "Several
 * targets"): the requests of the stage grouped by the target their final
 * attempt went to (record key `target`). Per target: requests completed and
 * failed (final outcomes, warm-up aside), output tokens of the completed
 * ones, TTFT, TPOT (n_out >= 2) and every ITL gap, nearest rank over the
 * per-request values, as the summary's. Pure: no I/O. */
#ifndef IM_ANALYZE_TARGETS_H
#define IM_ANALYZE_TARGETS_H

#include <stdint.h>

#include "analyze/breakdown.h"
#include "analyze/population.h"
#include "record/record.h"

struct im_target_group {
  uint32_t index;        /* into manifest.target.urls */
  uint64_t completed, failed, output_tokens;
  struct im_bd_dist ttft, tpot, itl;
};

struct im_targets {
  size_t n;              /* targets seen (index order); 0: one target */
  struct im_target_group g[IM_RECORD_MAX_TARGETS];
};

/* Fills t. IM_NOMEM. */
enum im_err im_targets_compute(const struct im_population *pop, const struct im_summary_config *sc,
                               struct im_targets *t) IM_WUR;

#endif
