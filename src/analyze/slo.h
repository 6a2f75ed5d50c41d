/* SLO verdicts by early stopping (docs/metrics.md §11, MLPerf LoadGen's
 * rule): an SLO "metric <= L for a share `target` of the requests" is a
 * bound on the target-quantile of the metric. With n requests of which
 * `over` missed it (failed and aborted requests count as missing), the
 * one-sided exact binomial test at confidence 0.99 says PASS (the 99 %
 * upper bound of the quantile is within L), FAIL (the point estimate is
 * beyond L) or INCONCLUSIVE, and then how many more requests would decide
 * it (core/stats.h im_stats_early_stop). Pure. */
#ifndef IM_ANALYZE_SLO_H
#define IM_ANALYZE_SLO_H

#include <stdbool.h>
#include <stdint.h>

#include "analyze/summary.h"
#include "core/stats.h"

#define IM_SLO_CONFIDENCE 0.99 /* MLPerf LoadGen's early-stopping confidence */

enum im_slo_kind { IM_SLO_TTFT, IM_SLO_TPOT, IM_SLO_E2EL, IM_SLO_ALL, IM_SLO_COUNT_ };

struct im_slo_verdicts {
  double target;                     /* the share that must meet the SLO */
  bool given[IM_SLO_COUNT_];         /* ALL: any SLO given */
  uint64_t n, over[IM_SLO_COUNT_];
  struct im_stats_early_stop es[IM_SLO_COUNT_];
};

/* The fewest requests that can give a PASS at share `target` (all of them
 * within the limit): the smallest n with target^n <= 1 - IM_SLO_CONFIDENCE
 * (MLPerf's minimum query count: 44 for 0.9, 459 for 0.99). 0 when target
 * is outside (0, 1): no verdict is possible. */
int64_t im_slo_min_requests(double target);

/* "ttft", "tpot", "e2el", "all". */
const char *im_slo_name(enum im_slo_kind k);
/* Verdicts of the summary's SLOs (those cfg gives) at share target. */
void im_slo_verdicts(const struct im_summary *s, const struct im_summary_config *cfg,
                     double target, struct im_slo_verdicts *v);

#endif
