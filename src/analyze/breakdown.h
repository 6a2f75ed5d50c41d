/* Latency broken down by what a request was: its context length (buckets
 * 0-4K, 4-8K, 8-16K, 16-32K, 32K+, K = 1024 tokens) and its content class,
 * plus the shape of multi-turn sessions.
 *
 * Population (analyze/population.h): the final attempts of completed
 * non-warm-up logical requests (so a request that succeeded on a retry
 * counts once, with that attempt); sessions count the final attempts of
 * every non-warm-up logical request. The context of a request is its prompt
 * tokens (the server's usage count when it sent one, else the client's).
 * Rows are small subsets of the run, so their percentiles are exact nearest
 * rank over the per-request values (not read from histograms: nothing
 * merges them). Pure: no I/O, no global state. */
#ifndef IM_ANALYZE_BREAKDOWN_H
#define IM_ANALYZE_BREAKDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/population.h"
#include "analyze/summary.h"
#include "record/record.h"

#define IM_CTX_BUCKETS 5
/* Lower bound (tokens) of context bucket i; bucket i is [lo(i), lo(i+1)). */
unsigned im_breakdown_bucket_lo(int i);
/* "0-4K", "4-8K", "8-16K", "16-32K", "32K+". */
const char *im_breakdown_bucket_name(int i);
/* The bucket of a context length. */
int im_breakdown_bucket(unsigned tokens);

/* A small distribution in ms: n == 0 -> every double NaN. pct[i] belongs to
 * the summary config's percentiles[i]; p50/p90/p99 for the terminal. */
struct im_bd_dist {
  uint64_t n;
  double mean, p50, p90, p99;
  double pct[IM_MAX_PERCENTILES];
};

/* Fills d from the n values x (sorted in place; x may be NULL when n is 0). */
void im_bd_dist_fill(struct im_bd_dist *d, double *x, size_t n, const struct im_summary_config *sc);

struct im_bd_group {
  uint64_t n;                    /* completed requests in the group */
  struct im_bd_dist ttft, tpot;  /* tpot over those with >= 2 output tokens */
  struct im_bd_dist itl;         /* every gap between token-bearing chunks, pooled */
  struct im_bd_dist ttft_per_uncached_token; /* docs/metrics.md §9 long-context input */
};

struct im_breakdown {
  struct im_bd_group ctx[IM_CTX_BUCKETS];
  struct im_bd_group cls[IM_CLASS_COUNT_]; /* by enum im_req_class; [IM_CLASS_NONE] unused */
  bool any_session;              /* a completed request belongs to a session */
  bool several_buckets;          /* completed requests span more than one bucket */
  struct {
    uint64_t sessions, turns_completed, turns_failed, max_turn, context_tokens_max;
    double turns_per_session_mean; /* NaN without sessions */
  } sess;
  /* Long-context robustness (docs/metrics.md §9): the median TTFT per
   * uncached prompt token in the longest non-empty context bucket over the
   * shortest, minus 1; flagged above IM_LONG_CONTEXT_GROWTH_REF. NaN (and
   * buckets -1) with fewer than two non-empty buckets. */
  int lc_short_bucket, lc_long_bucket;
  double lc_growth;
  bool lc_flag;
};

/* The reference line of long-context robustness: +210 % (docs/metrics.md §9). */
#define IM_LONG_CONTEXT_GROWTH_REF 2.10

/* Fills b. IM_NOMEM on allocation failure (b then undefined). */
enum im_err im_breakdown_compute(const struct im_population *pop,
                                 const struct im_summary_config *sc,
                                 struct im_breakdown *b) IM_WUR;

#endif
