/* Log-linear ("HDR-style") histogram of non-negative 64-bit integers.
 *
 * We record nanoseconds. The idea (fixed relative precision, buckets that
 * merge by adding counts) follows Gil Tene's HdrHistogram; the layout below
 * and the code are our own.
 *
 * Layout. Three parameters: `lowest` (the resolution: the smallest value
 * told apart from 0, >= 1), `highest` (the largest value counted in a
 * bucket) and `digits` d in 1..5 (significant decimal digits). From them:
 *
 *   u = floor(log2(lowest))          values are quantised to q = v >> u
 *   S = ceil(log2(2 * 10^d))         2^S sub-buckets; H = 2^(S-1) >= 10^d
 *   k(q) = bitlength(q | (2^S - 1)) - S     (0 while q < 2^S, else
 *                                            floor(log2 q) - S + 1)
 *   index(q) = k * H + (q >> k)
 *
 * For k = 0 this is the linear region index = q (0 <= q < 2^S, bucket width
 * one unit 2^u). For k >= 1, q >> k lies in [H, 2H), so each power-of-two
 * range [2^(S-1+k), 2^(S+k)) of q gets H buckets of width 2^k units, and the
 * index ranges of consecutive k abut: k = 1 takes [2H, 3H), k = 2 [3H, 4H),
 * and so on. The bucket of index i (k = max(0, i/H - 1), sub = i - k*H)
 * holds the values [sub << (k+u), ((sub+1) << (k+u)) - 1].
 *
 * Error bound (proof). Let v be recorded in bucket [lo, hi] and r = hi be
 * the value reported for it. Then 0 <= r - v <= hi - lo = 2^(k+u) - 1.
 *   - k >= 1: v >= lo = sub * 2^(k+u) >= H * 2^(k+u), so
 *     (r - v) / v < 2^(k+u) / (H * 2^(k+u)) = 1/H <= 10^-d.
 *   - k = 0: r - v <= 2^u - 1 < lowest; with lowest = 1 (the default) the
 *     linear region is exact. With lowest > 1, values v >= H * 2^u still get
 *     relative error < 1/H; smaller ones get absolute error < lowest.
 * So |r - v| <= max(v / H, 2^u - 1), in particular < 10^-d * v whenever
 * lowest == 1. For d = 3: S = 11, H = 1024, relative error < 0.098 %.
 *
 * Memory: (index(highest >> u) + 1) 64-bit counters. Default layout (1 ns
 * .. 1 hour, 3 digits): 33,421 buckets, 261 KiB. Each extra digit multiplies
 * that by about 10 (2^S grows by 8 or 16).
 *
 * Values outside [0, highest] are not clamped: they are counted in `below`
 * (negative values) or `above` (values > highest) and take no part in the
 * count, min, max, mean, stddev or percentiles, which describe the in-range
 * values only. Report below/above next to the percentiles.
 *
 * Thread safety: none per instance. Give each thread its own histogram and
 * merge them at the end (im_hist_merge). Recording is O(1), allocation-free
 * and uses no floating point. */
#ifndef INFERMETER_HIST_H
#define INFERMETER_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"


/* Default range: 1 ns .. 1 hour, 3 significant digits (docs/metrics.md §2). */
#define IM_HIST_DEFAULT_LOWEST 1
#define IM_HIST_DEFAULT_HIGHEST INT64_C(3600000000000)
#define IM_HIST_DEFAULT_DIGITS 3
/* Upper limit for `highest`, so that every bucket's bounds fit in int64. */
#define IM_HIST_MAX_HIGHEST (INT64_MAX / 2)

/* Caller-embedded. The fields are readable; change them only through the
 * functions below. */
struct im_hist {
  /* Layout (see the top of this file). */
  int64_t lowest;
  int64_t highest;
  int digits;
  int unit_shift; /* u */
  int sub_bits;   /* S */
  int32_t bucket_count;
  int64_t *counts; /* bucket_count counters, owned */
  /* Totals over in-range values. */
  int64_t total;
  int64_t min;             /* exact; INT64_MAX while total == 0 */
  int64_t max;             /* exact; 0 while total == 0 */
  uint64_t sum_lo, sum_hi; /* exact 128-bit sum of the recorded values */
  /* Out-of-range values, counted here instead of in a bucket. */
  int64_t below; /* value < 0 */
  int64_t above; /* value > highest */
};

/* Initialises an empty histogram. lowest >= 1, highest >= 2 * lowest,
 * highest <= IM_HIST_MAX_HIGHEST, 1 <= digits <= 5, else IM_INVAL.
 * IM_NOMEM if the counters cannot be allocated. On failure *h is left
 * empty and im_hist_cleanup(h) is still safe. */
enum im_err im_hist_init(struct im_hist *h, int64_t lowest, int64_t highest, int digits) IM_WUR;
/* im_hist_init with the IM_HIST_DEFAULT_* layout. */
enum im_err im_hist_init_default(struct im_hist *h) IM_WUR;
/* Frees the counters; NULL and an already cleaned-up histogram are fine. */
void im_hist_cleanup(struct im_hist *h);
/* Zeroes every count, keeping the layout and the storage. */
void im_hist_reset(struct im_hist *h);

/* Records one value into an initialised histogram. Returns true when it
 * went into a bucket, false when it was out of range and counted in
 * below/above instead. O(1), no allocation, no floating point. */
bool im_hist_record(struct im_hist *h, int64_t value);
/* Records `count` occurrences of value (as many im_hist_record calls).
 * count <= 0 records nothing and returns false. */
bool im_hist_record_n(struct im_hist *h, int64_t value, int64_t count);

/* Adds src's counts (and below/above, min/max, sum) into dst. The layouts
 * must be identical (same unit_shift, sub_bits and bucket_count), else
 * IM_INVAL and dst is unchanged. Merging is exact: recording into
 * per-thread histograms and merging equals recording into one. */
enum im_err im_hist_merge(struct im_hist *dst, const struct im_hist *src) IM_WUR;

/* Number of in-range values (below/above excluded). */
int64_t im_hist_count(const struct im_hist *h);
/* Exact smallest / largest in-range value; 0 when empty. */
int64_t im_hist_min(const struct im_hist *h);
int64_t im_hist_max(const struct im_hist *h);
/* Exact mean (from the 128-bit sum), 0.0 when empty. */
double im_hist_mean(const struct im_hist *h);
/* Population standard deviation (N in the denominator) around the exact
 * mean, taking each value at the midpoint of its bucket (narrowed to
 * [min, max]): every value enters with an error of at most half a bucket
 * width, so the result is within about 10^-d relative of the exact one
 * (exact in the linear region). 0.0 when empty. */
double im_hist_stddev(const struct im_hist *h);

/* Value at percentile p in [0, 1] by nearest rank (docs/metrics.md §2): the
 * value at rank max(1, ceil(p * N)) in ascending order (p * N within a few
 * ulps of an integer counts as that integer, so 0.99 * 100 is rank 99).
 * Reports the highest value of that rank's bucket (HdrHistogram's
 * "highest equivalent value"), clamped to [min, max]: it is >= the true
 * value and within the error bound above; rank 1 gives the exact min and
 * rank N the exact max. p outside [0, 1] is clamped; 0 when empty.
 * O(buckets): a scan from the bottom, or from the top for ranks above N/2
 * (some microseconds for the default layout). */
int64_t im_hist_percentile(const struct im_hist *h, double p);
/* Several percentiles in one pass over the buckets. ps must be ascending
 * (else IM_INVAL); out[i] = im_hist_percentile(h, ps[i]). */
enum im_err im_hist_percentiles(const struct im_hist *h, const double *ps, int64_t *out,
                                size_t n) IM_WUR;

/* Bucket arithmetic, exposed for exporters and tests. Index of the bucket
 * that holds value (which must be in [0, highest]); -1 otherwise. */
int32_t im_hist_index_of(const struct im_hist *h, int64_t value);
/* Smallest and largest value of bucket index (0 <= index < bucket_count). */
int64_t im_hist_bucket_lowest(const struct im_hist *h, int32_t index);
int64_t im_hist_bucket_highest(const struct im_hist *h, int32_t index);

/* Iterates the non-empty buckets in ascending order:
 *   struct im_hist_iter it;
 *   im_hist_iter_init(&it, h);
 *   while (im_hist_iter_next(&it)) use(it.lowest, it.highest, it.count, it.cumulative);
 * For Prometheus buckets use le = it.highest and it.cumulative. The
 * histogram must not change during the iteration. */
struct im_hist_iter {
  const struct im_hist *h;
  int32_t index;      /* bucket index of the current bucket */
  int64_t count;      /* its count (> 0) */
  int64_t cumulative; /* counts of this and every lower bucket */
  int64_t lowest;     /* its smallest value */
  int64_t highest;    /* its largest value */
};
void im_hist_iter_init(struct im_hist_iter *it, const struct im_hist *h);
/* Moves to the next non-empty bucket; false when there is none. */
bool im_hist_iter_next(struct im_hist_iter *it);

/* Decimal digits of the 128-bit number hi:lo into buf (at least 40
 * bytes), NUL-terminated; the exact sum of a histogram in text. */
void im_u128_to_dec(uint64_t hi, uint64_t lo, char *buf);
/* Parses decimal digits (nothing else, at least one) into hi:lo; false on
 * anything else or on overflow (hi and lo then unchanged). */
bool im_u128_from_dec(const char *s, uint64_t *hi, uint64_t *lo);

#endif
