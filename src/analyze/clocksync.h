/* The clock alignment of a run merged from several generators
 * (docs/distributed.md, docs/audit.md "clock_sync"): each shard's latencies
 * are differences of its own clock and need no alignment, but its arrivals
 * and time series are placed on rank 0's clock. Under MPI each rank's
 * offset to rank 0 is measured (the ping-pong of least round trip) and
 * corrected, leaving an error of at most half that round trip; shards that
 * agreed on a wall-clock instant by themselves (--shard --start-at) rely on
 * their machines' clocks (NTP), which nothing here measures. */
#ifndef IM_ANALYZE_CLOCKSYNC_H
#define IM_ANALYZE_CLOCKSYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/validity.h"

/* The audit WARNs when the alignment error exceeds this share of the mean
 * inter-token latency being measured. */
#define IM_CLOCK_ITL_SHARE 0.10

struct im_clock_shard {
  uint32_t index;
  bool measured;       /* an MPI rank: offset_ns and rtt_ns hold */
  int64_t offset_ns;   /* rank 0's wall clock minus this shard's */
  int64_t rtt_ns;      /* the round trip it was measured with */
};

/* Fills c (id "clock_sync"): PASS when every shard's offset was measured
 * and its error bound (rtt/2) is within IM_CLOCK_ITL_SHARE of itl_mean_ms
 * (NaN: no ITL measured, then against 1 ms); WARN otherwise, naming the
 * worst shard, or the shards whose clocks were not measured. */
void im_clock_check(const struct im_clock_shard *s, size_t n, double itl_mean_ms,
                    struct im_valid_check *c);

#endif
