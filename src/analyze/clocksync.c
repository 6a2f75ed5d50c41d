/* The clock alignment check of a merged run: see clocksync.h. */
#include "analyze/clocksync.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void im_clock_check(const struct im_clock_shard *s, size_t n, double itl_mean_ms,
                    struct im_valid_check *c) {
  memset(c, 0, sizeof *c);
  c->id = "clock_sync";
  double limit_ms = (isfinite(itl_mean_ms) && itl_mean_ms > 0 ? itl_mean_ms : 1.0) *
                    IM_CLOCK_ITL_SHARE;
  size_t unmeasured = 0, worst = n;
  double worst_ms = 0, max_off_ms = 0;
  for (size_t i = 0; i < n; i++) {
    if (!s[i].measured) {
      unmeasured++;
      continue;
    }
    double err = (double)s[i].rtt_ns / 2e6, off = fabs((double)s[i].offset_ns) / 1e6;
    max_off_ms = off > max_off_ms ? off : max_off_ms;
    if (worst == n || err > worst_ms) {
      worst = i;
      worst_ms = err;
    }
  }
  if (unmeasured && unmeasured == n) {
    c->status = IM_CHECK_WARN;
    snprintf(c->evidence, sizeof c->evidence,
             "%zu shards agreed on a wall-clock start by their own clocks: their offsets were not "
             "measured (the arrivals and time series of different machines align only as well "
             "as their clocks do; the limit is %.3f ms, %.0f%% of the mean ITL)",
             n, limit_ms, 100 * IM_CLOCK_ITL_SHARE);
    snprintf(c->fix, sizeof c->fix,
             "run under mpirun (offsets measured and corrected), or check each machine's clock "
             "sync (chronyc tracking: offset well under %.3f ms)", limit_ms);
    return;
  }
  bool bad = worst < n && worst_ms > limit_ms;
  c->status = bad || unmeasured ? IM_CHECK_WARN : IM_CHECK_PASS;
  snprintf(c->evidence, sizeof c->evidence,
           "clock offsets to rank 0 measured and corrected on %zu of %zu shards (largest %.3f ms); "
           "the largest error bound (half the round trip) is %.3f ms on shard %" PRIu32
           ", %s the limit %.3f ms (%.0f%% of the mean ITL)",
           n - unmeasured, n, max_off_ms, worst_ms, worst < n ? s[worst].index : 0,
           bad ? "above" : "within", limit_ms, 100 * IM_CLOCK_ITL_SHARE);
  if (c->status != IM_CHECK_PASS)
    snprintf(c->fix, sizeof c->fix,
             "the ranks' clocks align less well than the token gaps measured: run the ranks on "
             "a faster interconnect, fewer ranks per node, or an idle machine; the latencies of "
             "each rank are not affected, only the alignment of arrivals and series");
}
