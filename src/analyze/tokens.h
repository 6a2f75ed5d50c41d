/* Token-level latency (docs/metrics.md §4): segmented sampling and stalls.
 *
 * Pooled per-gap percentiles are dominated by the few longest requests. Here
 * each request's gaps between token-bearing chunks (the first token
 * excluded) are cut into windows of w gaps, moved by s gaps (w = 8, s = 4:
 * half overlap; only whole windows), and each window gives its mean and its
 * largest gap: two distributions in which every stretch of every request
 * weighs the same.
 *
 * A stall is a gap longer than k times its own request's median gap
 * (k = 5). Each stall is placed by its token index (tokens received before
 * the gap ends), the context length there (prompt tokens + that index) and
 * its time (the arrival that ends it). Localisation: the exact index the
 * stalls cluster at (peak_position: the median index of the densest
 * +-IM_TOKENS_PEAK_TOL window of indices), how many lie within that window
 * of it and their spread; a histogram by index whose width follows the
 * longest output (a power of two, at most IM_TOKENS_HIST_BINS bins), beside
 * the 64-token buckets of results.json v1. A stall is time-aligned when stalls
 * of at least two other requests end within +-tol of it, tol = max(2 ms,
 * 10 % of the median gap over all requests): a server-wide hiccup stalls
 * every stream at once, a per-request stall (a KV block boundary, a
 * preemption) does not.
 *
 * Host noise: with the host probe's stalls (core/hostlat.h, the client's
 * process), a gap past k times the median that overlaps a host stall and
 * would not be one without it (the gap less the host's lateness is within
 * k times the median) is the host's: counted in host_stalls, not as a
 * stall, so a loaded machine's pauses are not read as the server's.
 *
 * Population (analyze/population.h): the final attempts of completed
 * requests. Pure: no I/O, no global state. */
#ifndef IM_ANALYZE_TOKENS_H
#define IM_ANALYZE_TOKENS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/breakdown.h"
#include "analyze/population.h"
#include "core/hist.h"
#include "core/hostlat.h"

#define IM_TOKENS_DEFAULT_WINDOW 8
#define IM_TOKENS_DEFAULT_STRIDE 4
#define IM_TOKENS_DEFAULT_STALL_K 5.0
#define IM_TOKENS_ALIGN_FLOOR_NS INT64_C(2000000) /* 2 ms */
#define IM_TOKENS_ALIGN_GAP_SHARE 0.1
#define IM_TOKENS_ALIGN_OTHERS 2                  /* other requests stalled at once */
/* Stall positions: buckets of this many tokens; the last bucket takes
 * every index beyond. */
#define IM_TOKENS_POS_WIDTH 64
#define IM_TOKENS_POS_BUCKETS 512
/* Localisation: stalls within +-this many tokens of an index cluster at it. */
#define IM_TOKENS_PEAK_TOL 2
/* The histogram by index: its width is the smallest power of two that
 * covers the longest output in this many bins. */
#define IM_TOKENS_HIST_BINS 64

struct im_tokens_config {
  uint32_t window;   /* w >= 1 */
  uint32_t stride;   /* s >= 1 */
  double stall_k;    /* > 1 */
  const struct im_hostlat *host; /* the host probe's stalls (NULL: none); kept by the caller */
};

struct im_tokens {
  struct im_tokens_config cfg;
  struct im_hist win_mean, win_max; /* ns, one value per window (owned) */
  uint64_t windows;                 /* whole windows over all requests */
  uint64_t requests;                /* completed requests with >= 2 chunks */
  uint64_t gaps;
  int64_t median_gap_ns;            /* over every gap; 0 without gaps */
  uint64_t stalls, stalled_requests;
  uint64_t host_stalls;             /* gaps past k x median a host stall explains (not in stalls) */
  uint64_t by_position[IM_TOKENS_POS_BUCKETS]; /* bucket i: [i*W, (i+1)*W) tokens */
  int64_t peak_position;            /* the index the stalls cluster at; -1 without stalls */
  uint64_t peak_stalls;             /* stalls within +-IM_TOKENS_PEAK_TOL of peak_position */
  uint32_t peak_spread;             /* the largest |index - peak_position| among them */
  uint32_t hist_width;              /* tokens per bin of by_index (>= 1) */
  uint64_t by_index[IM_TOKENS_HIST_BINS + 1]; /* bin i: [i*width, (i+1)*width); the last: beyond */
  uint64_t by_context[IM_CTX_BUCKETS];
  int64_t align_tol_ns;
  uint64_t aligned;                 /* stalls aligned with >= 2 other requests' */
  double aligned_share;             /* aligned / stalls; NaN without stalls */
};

void im_tokens_config_default(struct im_tokens_config *cfg);
/* Computes t over pop. IM_INVAL for a bad config, IM_NOMEM; on failure t is
 * empty (cleanup is safe). */
enum im_err im_tokens_compute(const struct im_population *pop, const struct im_tokens_config *cfg,
                              struct im_tokens *t) IM_WUR;
/* Where the stalls cluster, one phrase for every renderer: "52 of 60
 * stalls at token 50 +- 1" ("no stall" without any). */
void im_tokens_peak_text(const struct im_tokens *t, char *buf, size_t len);
/* Frees the histograms; NULL-safe. */
void im_tokens_cleanup(struct im_tokens *t);

#endif
