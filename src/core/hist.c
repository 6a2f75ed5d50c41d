/* Log-linear histogram; the layout and its error bound are derived in
 * src/core/hist.h. */
#include "core/hist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bit length of x (0 for 0). The callers never pass 0: they OR in a mask. */
static inline int bitlen64(uint64_t x) {
  return 64 - __builtin_clzll(x);
}

/* ---- 128-bit unsigned arithmetic for the exact sum (C17 has no int128) */

static inline void u128_add(uint64_t *hi, uint64_t *lo, uint64_t add_hi, uint64_t add_lo) {
  uint64_t l = *lo + add_lo;
  *hi += add_hi + (l < add_lo);
  *lo = l;
}

/* a * b as a 128-bit number, by 32-bit halves. */
static void u128_mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo) {
  uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
  *lo = (mid << 32) | (p00 & 0xffffffffu);
  *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

static double u128_to_double(uint64_t hi, uint64_t lo) {
  return (double)hi * 18446744073709551616.0 + (double)lo;
}

/* Decimal digits of a 128-bit number into buf (at least 40 bytes). */
void im_u128_to_dec(uint64_t hi, uint64_t lo, char *buf) {
  uint32_t limb[4] = {(uint32_t)(hi >> 32), (uint32_t)hi, (uint32_t)(lo >> 32), (uint32_t)lo};
  char tmp[40];
  int n = 0;
  do {
    uint64_t rem = 0;
    for (int i = 0; i < 4; i++) {
      uint64_t cur = (rem << 32) | limb[i];
      limb[i] = (uint32_t)(cur / 10);
      rem = cur % 10;
    }
    tmp[n++] = (char)('0' + rem);
  } while (limb[0] | limb[1] | limb[2] | limb[3]);
  for (int i = 0; i < n; i++)
    buf[i] = tmp[n - 1 - i];
  buf[n] = '\0';
}

/* Parses decimal digits into a 128-bit number; false on anything else or on
 * overflow. */
bool im_u128_from_dec(const char *s, uint64_t *hi, uint64_t *lo) {
  uint64_t h = 0, l = 0;
  if (!*s)
    return false;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return false;
    /* (h, l) * 10 + digit */
    uint64_t lh, ll, hh, hl;
    u128_mul64(l, 10, &lh, &ll);
    u128_mul64(h, 10, &hh, &hl);
    if (hh != 0)
      return false;
    uint64_t nh = hl + lh;
    if (nh < hl)
      return false;
    uint64_t nl = ll;
    uint64_t before = nh;
    u128_add(&nh, &nl, 0, (uint64_t)(*s - '0'));
    if (nh < before)
      return false;
    h = nh;
    l = nl;
  }
  *hi = h;
  *lo = l;
  return true;
}

/* ---- layout */

static inline int32_t index_of_q(const struct im_hist *h, uint64_t q) {
  int k = bitlen64(q | (((uint64_t)1 << h->sub_bits) - 1)) - h->sub_bits;
  return (int32_t)(((uint64_t)k << (h->sub_bits - 1)) + (q >> k));
}

int32_t im_hist_index_of(const struct im_hist *h, int64_t value) {
  if (value < 0 || value > h->highest)
    return -1;
  return index_of_q(h, (uint64_t)value >> h->unit_shift);
}

int64_t im_hist_bucket_lowest(const struct im_hist *h, int32_t index) {
  int32_t half = (int32_t)1 << (h->sub_bits - 1);
  int k = index / half - 1;
  if (k < 0)
    k = 0;
  uint64_t sub = (uint64_t)index - ((uint64_t)k << (h->sub_bits - 1));
  return (int64_t)(sub << (k + h->unit_shift));
}

int64_t im_hist_bucket_highest(const struct im_hist *h, int32_t index) {
  int32_t half = (int32_t)1 << (h->sub_bits - 1);
  int k = index / half - 1;
  if (k < 0)
    k = 0;
  uint64_t sub = (uint64_t)index - ((uint64_t)k << (h->sub_bits - 1));
  return (int64_t)(((sub + 1) << (k + h->unit_shift)) - 1);
}

/* Midpoint of the part of bucket index that can hold values, given the
 * exact min and max. */
static double bucket_mid(const struct im_hist *h, int32_t index) {
  int64_t lo = im_hist_bucket_lowest(h, index), hi = im_hist_bucket_highest(h, index);
  if (lo < h->min)
    lo = h->min;
  if (hi > h->max)
    hi = h->max;
  return (double)lo + (double)(hi - lo) / 2.0;
}

static void set_empty(struct im_hist *h) {
  memset(h, 0, sizeof *h);
  h->min = INT64_MAX;
}

/* Fills the layout fields from the parameters; false if they are invalid. */
static bool compute_layout(struct im_hist *h, int64_t lowest, int64_t highest, int digits) {
  if (lowest < 1 || digits < 1 || digits > 5 || highest > IM_HIST_MAX_HIGHEST ||
      highest / 2 < lowest)
    return false;
  int64_t need = 2;
  for (int i = 0; i < digits; i++)
    need *= 10;
  int s = 0;
  while (((int64_t)1 << s) < need)
    s++;
  h->lowest = lowest;
  h->highest = highest;
  h->digits = digits;
  h->unit_shift = bitlen64((uint64_t)lowest) - 1;
  h->sub_bits = s;
  h->bucket_count = index_of_q(h, (uint64_t)highest >> h->unit_shift) + 1;
  return true;
}

enum im_err im_hist_init(struct im_hist *h, int64_t lowest, int64_t highest, int digits) {
  set_empty(h);
  if (!compute_layout(h, lowest, highest, digits)) {
    set_empty(h);
    return IM_INVAL;
  }
  h->counts = calloc((size_t)h->bucket_count, sizeof *h->counts);
  if (!h->counts) {
    set_empty(h);
    return IM_NOMEM;
  }
  return IM_OK;
}

enum im_err im_hist_init_default(struct im_hist *h) {
  return im_hist_init(h, IM_HIST_DEFAULT_LOWEST, IM_HIST_DEFAULT_HIGHEST, IM_HIST_DEFAULT_DIGITS);
}

void im_hist_cleanup(struct im_hist *h) {
  if (!h)
    return;
  free(h->counts);
  set_empty(h);
}

void im_hist_reset(struct im_hist *h) {
  if (h->counts)
    memset(h->counts, 0, (size_t)h->bucket_count * sizeof *h->counts);
  h->total = h->below = h->above = 0;
  h->min = INT64_MAX;
  h->max = 0;
  h->sum_lo = h->sum_hi = 0;
}

/* ---- recording */

bool im_hist_record(struct im_hist *h, int64_t value) {
  if (value < 0) {
    h->below++;
    return false;
  }
  if (value > h->highest) {
    h->above++;
    return false;
  }
  h->counts[index_of_q(h, (uint64_t)value >> h->unit_shift)]++;
  h->total++;
  if (value < h->min)
    h->min = value;
  if (value > h->max)
    h->max = value;
  u128_add(&h->sum_hi, &h->sum_lo, 0, (uint64_t)value);
  return true;
}

bool im_hist_record_n(struct im_hist *h, int64_t value, int64_t count) {
  if (count <= 0)
    return false;
  if (value < 0) {
    h->below += count;
    return false;
  }
  if (value > h->highest) {
    h->above += count;
    return false;
  }
  h->counts[index_of_q(h, (uint64_t)value >> h->unit_shift)] += count;
  h->total += count;
  if (value < h->min)
    h->min = value;
  if (value > h->max)
    h->max = value;
  uint64_t hi, lo;
  u128_mul64((uint64_t)value, (uint64_t)count, &hi, &lo);
  u128_add(&h->sum_hi, &h->sum_lo, hi, lo);
  return true;
}

enum im_err im_hist_merge(struct im_hist *dst, const struct im_hist *src) {
  if (!dst || !src || !dst->counts || !src->counts || dst->unit_shift != src->unit_shift ||
      dst->sub_bits != src->sub_bits || dst->bucket_count != src->bucket_count)
    return IM_INVAL;
  for (int32_t i = 0; i < src->bucket_count; i++)
    dst->counts[i] += src->counts[i];
  dst->total += src->total;
  dst->below += src->below;
  dst->above += src->above;
  if (src->total > 0) {
    if (src->min < dst->min)
      dst->min = src->min;
    if (src->max > dst->max)
      dst->max = src->max;
  }
  u128_add(&dst->sum_hi, &dst->sum_lo, src->sum_hi, src->sum_lo);
  return IM_OK;
}

/* ---- queries */

int64_t im_hist_count(const struct im_hist *h) {
  return h->total;
}
int64_t im_hist_min(const struct im_hist *h) {
  return h->total ? h->min : 0;
}
int64_t im_hist_max(const struct im_hist *h) {
  return h->total ? h->max : 0;
}

double im_hist_mean(const struct im_hist *h) {
  if (!h->total)
    return 0.0;
  return u128_to_double(h->sum_hi, h->sum_lo) / (double)h->total;
}

double im_hist_stddev(const struct im_hist *h) {
  if (!h->total)
    return 0.0;
  double mean = im_hist_mean(h), acc = 0.0;
  int32_t imin = im_hist_index_of(h, h->min), imax = im_hist_index_of(h, h->max);
  for (int32_t i = 0; i < h->bucket_count; i++) {
    if (!h->counts[i])
      continue;
    /* The exact min and max are better than their buckets' midpoints. */
    double v = bucket_mid(h, i);
    if (i == imin && h->counts[i] == 1)
      v = (double)h->min;
    else if (i == imax && h->counts[i] == 1)
      v = (double)h->max;
    double d = v - mean;
    acc += d * d * (double)h->counts[i];
  }
  return sqrt(acc / (double)h->total);
}

/* Nearest rank max(1, ceil(p * n)) in 1..n. Products within a few ulps of
 * an integer count as that integer, so that 0.99 * 100 (which may round a
 * hair above 99) is rank 99, as the definition intends. */
static int64_t nearest_rank(double p, int64_t n) {
  if (!(p > 0.0)) /* also NaN */
    return 1;
  if (p >= 1.0)
    return n;
  double x = p * (double)n;
  double f = floor(x);
  int64_t rank = (int64_t)f;
  if (x - f > 8.0 * x * 2.220446049250313e-16)
    rank++;
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return rank;
}

static int64_t value_for_rank(const struct im_hist *h, int32_t index, int64_t rank) {
  if (rank <= 1)
    return h->min;
  if (rank >= h->total)
    return h->max;
  int64_t v = im_hist_bucket_highest(h, index);
  if (v > h->max)
    v = h->max;
  if (v < h->min)
    v = h->min;
  return v;
}

int64_t im_hist_percentile(const struct im_hist *h, double p) {
  if (isnan(p))
    p = 0.0;
  if (h->total == 0)
    return 0;
  int64_t rank = nearest_rank(p, h->total);
  if (rank <= h->total / 2) {
    int64_t out = 0;
    return im_hist_percentiles(h, &p, &out, 1) == IM_OK ? out : 0;
  }
  /* Upper ranks (p99, p99.9) are found faster from the top: rank r is the
   * (total - r + 1)-th value counted from the largest. */
  int64_t need = h->total - rank + 1, cum = 0;
  int32_t i = im_hist_index_of(h, h->max) + 1; /* no counts above max */
  while (cum < need && i > 0)
    cum += h->counts[--i];
  return value_for_rank(h, i, rank);
}

enum im_err im_hist_percentiles(const struct im_hist *h, const double *ps, int64_t *out, size_t n) {
  for (size_t j = 1; j < n; j++)
    if (!(ps[j] >= ps[j - 1]))
      return IM_INVAL;
  if (h->total == 0) {
    for (size_t j = 0; j < n; j++)
      out[j] = 0;
    return IM_OK;
  }
  int64_t cum = 0;
  int32_t i = im_hist_index_of(h, h->min); /* no counts below min */
  for (size_t j = 0; j < n; j++) {
    int64_t rank = nearest_rank(ps[j], h->total);
    /* Advance to the first bucket whose cumulative count reaches rank; the
     * ranks ascend, so the scan continues where the last one stopped. */
    while (cum < rank && i < h->bucket_count)
      cum += h->counts[i++];
    out[j] = value_for_rank(h, i - 1, rank);
  }
  return IM_OK;
}

/* ---- iteration */

void im_hist_iter_init(struct im_hist_iter *it, const struct im_hist *h) {
  memset(it, 0, sizeof *it);
  it->h = h;
  it->index = -1;
}

bool im_hist_iter_next(struct im_hist_iter *it) {
  const struct im_hist *h = it->h;
  for (int32_t i = it->index + 1; i < h->bucket_count; i++) {
    if (h->counts[i]) {
      it->index = i;
      it->count = h->counts[i];
      it->cumulative += it->count;
      it->lowest = im_hist_bucket_lowest(h, i);
      it->highest = im_hist_bucket_highest(h, i);
      return true;
    }
  }
  it->index = h->bucket_count;
  return false;
}
