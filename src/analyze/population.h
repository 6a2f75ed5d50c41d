/* Which attempts count for which figure: the one population rule of
 * infermeter (docs/metrics.md "Population rule", docs/results-schema.md).
 * Every figure of src/analyze/ is computed over a population built here, so
 * no two figures can disagree about what they count.
 *
 * The rule:
 *   - Attempts of kind measured, retry, aborted, cancelled and warmup are the user's
 *     requests. They are grouped into logical requests by logical_id (id
 *     when logical_id is 0), attempts ordered by attempt number.
 *   - A logical request holding a warmup attempt is a warm-up request: it
 *     takes part in no figure but the census of kinds and errors.
 *   - The final attempt (the highest attempt number) decides the outcome,
 *     once per logical request: kind aborted -> ABORTED; kind cancelled,
 *     or any other kind marked cancelled by the client -> CANCELLED (neither
 *     completed nor failed: in no latency figure, its share reported by
 *     analyze/cancel.h); no error and at least one token-bearing chunk with
 *     its times -> COMPLETED; anything else -> FAILED.
 *   - Latency figures, their histograms, the vLLM block, breakdowns, cache
 *     figures and goodput use the final attempt of COMPLETED requests (so a
 *     request that succeeded on a retry counts, with that attempt's
 *     latencies); user-visible ttft_sched/e2el_sched count from the first
 *     attempt's schedule (im_logical_sched_base).
 *   - Client-side delays (dispatch lag, queue wait, connect) use every
 *     attempt of every non-warm-up logical request: the client's own speed
 *     is judged on all the work it dispatched.
 *   - Window figures (infermeter's throughputs, goodput, scheduled and
 *     dispatched rates) count what falls inside [window_start, window_end]
 *     (run-relative ns, both ends included).
 *   - Health and probe attempts never join a logical request: they appear
 *     only in the census and in the effective rate.
 *
 * Pure: no I/O, records are not modified, no global state; a population
 * points into the records it was built from, which must outlive it. */
#ifndef IM_ANALYZE_POPULATION_H
#define IM_ANALYZE_POPULATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "record/record.h"

enum im_outcome {
  IM_OUTCOME_WARMUP, IM_OUTCOME_COMPLETED, IM_OUTCOME_FAILED, IM_OUTCOME_ABORTED,
  IM_OUTCOME_CANCELLED /* the client abandoned it on purpose (--cancel-after) */
};

/* One logical request. */
struct im_logical {
  const struct im_record *first, *final;
  enum im_outcome outcome;
  size_t begin, end; /* its attempts: pop->attempts[begin, end), by attempt number */
};

struct im_population {
  int64_t window_start_ns, window_end_ns;
  struct im_logical *req; /* ordered by logical id; owned */
  size_t n_req;
  const struct im_record **attempts; /* every attempt of a logical request; owned array */
  size_t n_attempts;
  const struct im_record **other;    /* health and probe attempts; owned array */
  size_t n_other;
  const struct im_record *recs;      /* what it was built from (not owned) */
  size_t n_recs;
};

/* Builds the population of n records (recs may be NULL when n == 0) for
 * the measured window [window_start_ns, window_end_ns]. IM_INVAL when the
 * window ends before it starts, IM_NOMEM. On failure *pop is empty
 * (cleanup is safe). */
enum im_err im_population_build(const struct im_record *recs, size_t n, int64_t window_start_ns,
                                int64_t window_end_ns, struct im_population *pop) IM_WUR;
/* Frees what build allocated (not the records); NULL-safe; *pop is empty after. */
void im_population_cleanup(struct im_population *pop);

/* Whether an attempt succeeded: not cancelled by the client, no error class,
 * at least one token-bearing chunk, and its start, first and last token
 * times. A cancelled attempt neither succeeded nor failed (its stream was
 * not waited for): callers that look for failures skip r->cancelled. */
bool im_attempt_succeeded(const struct im_record *r);
/* Whether run-relative t falls in the population's window (t >= 0). */
bool im_population_in_window(const struct im_population *pop, int64_t t);
/* The schedule instant user-visible latency counts from: attempt 1's
 * t_sched (as the final attempt remembers it in t_sched_first, else the
 * first attempt's t_sched, else the final's); -1 when none is known. */
int64_t im_logical_sched_base(const struct im_logical *g);

#endif
