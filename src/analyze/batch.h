/* Batch means within one run (docs/statistics.md "Batch means"; docs/metrics.md
 * §11): the requests of a run are not independent (under queueing one slow
 * request delays the next), so a confidence interval computed as if they
 * were is too narrow, and a test of two halves of the window finds "drift"
 * in ordinary autocorrelation. Cutting the window into b contiguous batches
 * (20-30) and treating the b batch values as independent fixes both,
 * because batches long beside the correlation time are nearly
 * independent (Law & Kelton, Simulation Modeling and Analysis, §9.5.3).
 *
 * Figures: request throughput (completions per s in b equal time slices of
 * the measured window) and the median TTFT, TPOT and E2EL (the median of
 * each batch of completed requests taken in order of their scheduled time:
 * the batched-median estimator). Each gets the Student-t 95 % interval over
 * its batch values, and the latencies a drift test: Welch's t on the log
 * batch medians of the first against the second half of the batches.
 *
 * Pure: no I/O, no global state. */
#ifndef IM_ANALYZE_BATCH_H
#define IM_ANALYZE_BATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "analyze/population.h"
#include "core/err.h"

#define IM_BATCH_TARGET 25  /* batches when there are enough requests */
#define IM_BATCH_MIN 20     /* fewer batches than this: not computed */
#define IM_BATCH_MIN_SIZE 2 /* requests per batch at least */

enum im_batch_fig { IM_BF_THROUGHPUT, IM_BF_TTFT_P50, IM_BF_TPOT_P50, IM_BF_E2EL_P50, IM_BF_COUNT_ };

struct im_batch_ci {
  bool ok;               /* computed (enough batches) */
  size_t batches;        /* b */
  double mean;           /* of the batch values */
  double lo, hi, half;   /* mean -+ t(0.975, b-1) s / sqrt(b) */
  double rel_half;       /* half / |mean| */
  /* Latencies only: the second half of the batches against the first. */
  bool drift_judged;
  double drift_ratio;    /* geometric mean of the second half's batch medians over the first's */
  double drift_p;        /* Welch's two-sided p on their logs */
};

struct im_batch_means {
  size_t requests;       /* completed requests in the window (the latency batches' input) */
  struct im_batch_ci fig[IM_BF_COUNT_];
};

/* "request_throughput", "ttft_p50_ms", "tpot_p50_ms", "e2el_p50_ms". */
const char *im_batch_fig_name(enum im_batch_fig f);
/* The batch count for n values: min(IM_BATCH_TARGET, n / IM_BATCH_MIN_SIZE);
 * below IM_BATCH_MIN the figure is not computed. */
size_t im_batch_count(size_t n);
/* Batch means of the population's completed requests in its window.
 * IM_NOMEM. */
enum im_err im_batch_means_compute(const struct im_population *pop, struct im_batch_means *out) IM_WUR;
/* The interval (and with drift, the halves' test) over b batch values in
 * time order; out->ok false when b < 2. Exposed for the tests. */
void im_batch_ci_of(const double *values, size_t b, bool drift, struct im_batch_ci *out);

#endif
