/* Cancelled requests (--cancel-after, docs/agents.md "Cancellation"): the
 * client abandoned them on purpose, as users do. They are neither completed
 * nor failed (analyze/population.h: outcome CANCELLED), so they are in no
 * latency figure and no error rate; this reports how many there were and
 * when they were left.
 *
 * Over the non-warm-up logical requests: requests, cancelled, share =
 * cancelled / requests; per cancelled request (final attempt): after_ms =
 * t_end - t_start (when the client let go), tokens = the tokens it had
 * received, and whether it had its first token. warmup = warm-up logical
 * requests whose final attempt the client cancelled (record.h `cancelled`;
 * in no other figure of this struct). Pure: no I/O. */
#ifndef IM_ANALYZE_CANCEL_H
#define IM_ANALYZE_CANCEL_H

#include <stdint.h>

#include "analyze/breakdown.h"
#include "analyze/population.h"

struct im_cancel_figs {
  uint64_t requests, cancelled, before_first_token, warmup;
  double share; /* NaN without requests */
  struct im_bd_dist after_ms, tokens;
};

/* Fills c. IM_NOMEM. */
enum im_err im_cancel_compute(const struct im_population *pop, const struct im_summary_config *sc,
                              struct im_cancel_figs *c) IM_WUR;

#endif
