/* Probe requests (--probe-rate, docs/metrics.md §3): the latency of a
 * minimal request (1 output token, not streamed) sent at Poisson instants
 * beside the load, over the measured window. A probe later than k times the
 * median probe latency (k: the token stall factor, docs/metrics.md §4) is a
 * probe stall: the server took that long to admit, prefill and decode one
 * token at that instant, whatever the load's own requests were doing.
 *
 * Pure: reads the population's other attempts (health and probes). */
#ifndef IM_ANALYZE_PROBES_H
#define IM_ANALYZE_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/population.h"

#define IM_PROBES_MAX_STALLS 32 /* stall instants listed (the count is exact) */

struct im_probes {
  uint64_t sent;      /* probes dispatched in the window */
  uint64_t failed;    /* of them, without a 2xx answer */
  double p50_ms, p99_ms, max_ms; /* latency (t_end - t_start) of the answered; NaN: none */
  double stall_k;
  uint64_t stalls;    /* answered probes above stall_k x p50 */
  double stall_share; /* stalls / answered; NaN: none answered */
  double stall_at_s[IM_PROBES_MAX_STALLS]; /* their start, s from the stage's t0 */
  double stall_ms[IM_PROBES_MAX_STALLS];   /* and their latency */
  size_t n_listed;
};

/* The probes of pop's window; stall_k > 1. IM_NOMEM, else IM_OK (all
 * figures NaN or 0 without probes). */
enum im_err im_probes_compute(const struct im_population *pop, double stall_k,
                              struct im_probes *out);

#endif
