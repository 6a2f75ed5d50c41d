/* Time-sliced figures (--timeslice DUR, docs/metrics.md §2 "Time slices"):
 * the measured window cut into consecutive slices of DUR (the last one
 * shorter when the window does not divide), and in each slice:
 * Slices are half-open [start, end) but for the last, which holds the
 * window's end.
 *   - requests completed (final attempt's t_end in the slice) and their
 *     rate over the slice's length;
 *   - output tokens that arrived in the slice (each chunk's tokens at its
 *     arrival, over completed requests) and their rate;
 *   - TTFT of the requests whose first token arrived in the slice, E2EL of
 *     those that completed in it, ITL of the gaps that ended in it: p50,
 *     p90, p99 by linear interpolation between order statistics (the rule
 *     of the vLLM-compatible block, docs/metrics.md §2), NaN when empty.
 * Times are those of the population's completed logical requests (their
 * final attempt); retries, probes and health checks are not in a slice.
 *
 * Pure: reads the population, allocates the slices. */
#ifndef IM_ANALYZE_TIMESLICE_H
#define IM_ANALYZE_TIMESLICE_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/population.h"

#define IM_TIMESLICE_MAX 100000 /* slices; a longer window is cut coarser */

enum { IM_TS_TTFT, IM_TS_ITL, IM_TS_E2EL, IM_TS_METRICS_ };

struct im_timeslice {
  double start_s, end_s;          /* from the stage's t0 */
  uint64_t completed;
  double request_throughput;      /* completed / (end_s - start_s) */
  uint64_t output_tokens;
  double output_throughput;
  double p50_ms[IM_TS_METRICS_], p90_ms[IM_TS_METRICS_], p99_ms[IM_TS_METRICS_];
  uint64_t n[IM_TS_METRICS_];     /* values behind each percentile */
};

struct im_timeslices {
  double slice_s;                 /* the duration used (>= the one asked) */
  struct im_timeslice *v;         /* owned */
  size_t n;
};

/* The slice width for a window of len_ns when none was asked: about
 * IM_TIMESLICE_AUTO_N slices, rounded up to 1, 2 or 5 x 10^k ms, at least
 * 100 ms and at most max_ns (so that a 10 s run draws 10 points, not one). */
#define IM_TIMESLICE_AUTO_N 12
int64_t im_timeslice_auto_ns(int64_t len_ns, int64_t max_ns);

/* Slices of pop's window of slice_ns each (> 0). IM_INVAL for slice_ns <= 0,
 * IM_NOMEM; on failure *out is empty. A window of no length gives none. */
enum im_err im_timeslices_compute(const struct im_population *pop, int64_t slice_ns,
                                  struct im_timeslices *out) IM_WUR;
void im_timeslices_cleanup(struct im_timeslices *t);
/* "ttft", "itl", "e2el". */
const char *im_timeslice_metric_name(int m);

#endif
