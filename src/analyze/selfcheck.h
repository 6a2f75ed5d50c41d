/* The client self-check (docs/metrics.md §10): whether a run's figures
 * describe the server or the client. It decides exit status 3 (INVALID).
 *
 * Dispatch lag is judged statistically, not by its maximum or p99: with
 * L = max(1 ms, 1 % of the TTFT SLO), the check fails only when the share
 * of dispatches later than L is significantly above 1 % (one-sided exact
 * binomial test, 95 % confidence: P(B >= late | n, 0.01) < 0.05). A single
 * scheduler hiccup among a few dozen requests on a shared machine does not
 * fail a run; a client that falls behind does. Its p99 is reported too,
 * read from the same histogram as the summary's (one figure, one rule).
 * A hard cap stands beside the test: any single dispatch later than
 * max(10 ms, 10 % of the median TTFT) fails the check whatever the sample
 * size (a 2 s stall is never excused by a large run).
 * Also: dispatched >= 99.9 % of scheduled, generator CPU <= 80 % per
 * thread, no file-descriptor or ephemeral-port exhaustion.
 *
 * Pure: no I/O, no global state. */
#ifndef IM_ANALYZE_SELFCHECK_H
#define IM_ANALYZE_SELFCHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "analyze/population.h"
#include "analyze/summary.h"
#include "record/rundir.h"

/* Thresholds (docs/metrics.md §10). */
#define IM_CHECK_LAG_FLOOR_MS 1.0     /* L is at least this */
#define IM_CHECK_LAG_SLO_SHARE 0.01   /* ... or this share of the TTFT SLO */
#define IM_CHECK_LATE_SHARE 0.01      /* tolerated share of dispatches later than L */
#define IM_CHECK_CONFIDENCE 0.95
#define IM_CHECK_LAG_CAP_FLOOR_MS 10.0  /* the hard cap is at least this ... */
#define IM_CHECK_LAG_CAP_TTFT_SHARE 0.1 /* ... or this share of the median TTFT */
#define IM_CHECK_DISPATCHED_MIN 0.999
#define IM_CHECK_CPU_MAX 0.8

struct im_client_check {
  double dispatch_lag_p99_ms;       /* nearest rank, from the summary's histogram */
  double dispatch_lag_limit_ms;     /* L */
  uint64_t lag_n, lag_late;         /* dispatches judged, and those later than L */
  double lag_p_value;               /* P(B >= lag_late | lag_n, 0.01) */
  double dispatch_lag_max_ms;       /* the largest dispatch lag (exact) */
  double dispatch_lag_cap_ms;       /* the hard cap */
  bool pass_lag_test, pass_lag_cap; /* pass_lag = both */
  /* Receive lag (how late the loop read a readable socket), by the same
   * rule as dispatch lag; counted from its histogram, so "later than L"
   * is decided per bucket (within the histogram's 0.1 %). */
  bool receive_measured;
  uint64_t recv_n, recv_late;
  double recv_p_value, receive_lag_p99_ms, receive_lag_max_ms;
  bool pass_recv;                   /* true when not measured */
  double dispatched_share;          /* dispatched / scheduled (1 when nothing was scheduled) */
  double cpu_share;
  uint64_t fd_exhausted, port_exhausted;
  bool pass_lag, pass_dispatched, pass_cpu, pass_fd, pass_port;
  bool valid;
  /* Set by the caller, never computed: a run imported from another tool's
   * file without a schedule (docs/import.md), whose verdict is NOT_JUDGED
   * (valid stays what the few figures there are say). */
  bool not_judged;
};

/* Fills c from the population and summary of a stage (the summary computed
 * over that population with cfg), the engine's counters, and the engine's
 * receive-lag histogram (ns; NULL when the engine did not measure it). */
void im_client_check_compute(const struct im_population *pop, const struct im_summary *s,
                             const struct im_summary_config *cfg,
                             const struct im_client_counters *k,
                             const struct im_hist *receive_lag, struct im_client_check *c);

#endif
