/* Host wake-up lateness, as the host probe measures it (load/hostprobe.h,
 * docs/metrics.md §10): how late the host woke a thread that asked to be
 * woken, counted over a run, with the long ones kept one by one so that a
 * late dispatch can be matched with what the host did at the time.
 *
 * Pure data and arithmetic: no I/O, no threads. The caller embeds it,
 * zero-fills it (or calls im_hostlat_init), and frees it with
 * im_hostlat_cleanup. */
#ifndef IM_CORE_HOSTLAT_H
#define IM_CORE_HOSTLAT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"

/* Wake-ups counted above each of these lateness bounds (ns). */
#define IM_HOSTLAT_NBOUNDS 8
extern const int64_t im_hostlat_bounds_ns[IM_HOSTLAT_NBOUNDS];
#define IM_HOSTLAT_LATE_NS 1000000     /* "late": above 1 ms (the self-check's floor) */
#define IM_HOSTLAT_STALL_NS 2000000    /* wake-ups kept one by one: above 2 ms */
#define IM_HOSTLAT_MAX_STALLS 1024     /* ... the first this many (counted beyond) */

/* One wake-up later than IM_HOSTLAT_STALL_NS: the host held the probe off
 * the CPU from t - late_ns to t (run-relative ns). */
struct im_host_stall {
  int64_t t;
  int64_t late_ns;
};

struct im_hostlat {
  int64_t period_ns;               /* the probe's period (0: no probe ran) */
  uint64_t wakes;                  /* wake-ups measured */
  uint64_t over[IM_HOSTLAT_NBOUNDS]; /* wake-ups later than each bound */
  int64_t max_ns;                  /* the latest wake-up's lateness */
  struct im_host_stall *stalls;    /* owned; in time order */
  uint32_t n_stalls, cap_stalls;
  uint64_t stalls_total;           /* including those not kept */
};

void im_hostlat_init(struct im_hostlat *h, int64_t period_ns);
/* NULL ok. */
void im_hostlat_cleanup(struct im_hostlat *h);
/* One wake-up at t (run-relative) late by late_ns (negative: early, counted
 * as 0). A stall that cannot be kept (no memory, or past the cap) is only
 * counted. */
void im_hostlat_add(struct im_hostlat *h, int64_t t, int64_t late_ns);
/* Wake-ups later than IM_HOSTLAT_LATE_NS. */
uint64_t im_hostlat_late(const struct im_hostlat *h);
/* Adds src to dst (the probes of several processes of one run): counts
 * summed, stalls merged in time order (capped). IM_OK or IM_NOMEM (dst's
 * counts are merged, its stalls unchanged). */
enum im_err im_hostlat_merge(struct im_hostlat *dst, const struct im_hostlat *src) IM_WUR;
/* The longest stall overlapping [from, to] (run-relative ns): its lateness,
 * 0 when none (or no probe). */
int64_t im_hostlat_stall_within(const struct im_hostlat *h, int64_t from, int64_t to);

#endif
