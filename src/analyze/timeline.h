/* The per-request timeline of the slowest requests (docs/metrics.md §4,
 * "Timeline of the slowest requests"): the completed requests with the
 * longest E2EL (final attempt, t_last - t_start), each cut into its phases
 * and with its stalls placed, for the HTML report's Gantt-like strip.
 *
 * Phases of a request, from its attempt's t_sched: waiting on the client
 * (t_sched -> t_start: dispatch lag and --max-concurrency queue),
 * connecting (t_start -> t_send), waiting for the first token (t_send ->
 * t_first), decoding (t_first -> t_last). A stall is a gap between two
 * token-bearing chunks longer than k times the request's own median gap
 * (the rule of analyze/tokens.h, same k); each is kept as the gap's start
 * and end and the tokens received before it ended.
 *
 * Population (analyze/population.h): the final attempts of completed
 * requests. Ties in E2EL go to the lower logical id. Pure: no I/O, no
 * global state. */
#ifndef IM_ANALYZE_TIMELINE_H
#define IM_ANALYZE_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/population.h"
#include "core/err.h"

#define IM_TIMELINE_REQUESTS 20    /* requests kept */
#define IM_TIMELINE_STALLS 32      /* stalls listed per request (all are counted) */

struct im_timeline_stall {
  int64_t from_ns, to_ns; /* run-relative: the chunks before and after the gap */
  uint64_t tokens;        /* tokens received when the gap ended */
};

struct im_timeline_req {
  const struct im_record *r;  /* the final attempt (points into the population) */
  int64_t e2el_ns;
  uint32_t n_stalls;          /* every stall of the request */
  uint32_t n_listed;          /* the first n_listed are in stalls[] */
  struct im_timeline_stall stalls[IM_TIMELINE_STALLS];
};

struct im_timeline {
  double stall_k;
  uint64_t completed;         /* completed requests ranked */
  size_t n;                   /* kept, slowest first */
  struct im_timeline_req req[IM_TIMELINE_REQUESTS];
};

/* The `want` (<= IM_TIMELINE_REQUESTS) slowest completed requests of pop.
 * IM_INVAL for stall_k <= 1, IM_NOMEM. */
enum im_err im_timeline_compute(const struct im_population *pop, size_t want, double stall_k,
                                struct im_timeline *tl) IM_WUR;

#endif
