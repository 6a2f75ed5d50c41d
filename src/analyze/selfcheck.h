/* The client self-check (docs/metrics.md §10, docs/audit.md): whether a
 * run's figures describe the server or the client. It decides exit status
 * 3 (INVALID).
 *
 * Lateness is charged to whoever caused it. Every late dispatch and read
 * carries the client's part of its lag (record/record.h: the CPU time the
 * engine's loop worked through it, and its waits on its own builder and
 * writer); the rest is the host's (the loop slept past its wake-up, or
 * was runnable and not running). A host probe beside the loop measures the
 * host's own wake-up lateness through the run (load/hostprobe.h).
 *
 * INVALID only for the client, when it is systematically behind:
 *  - the client's share of late dispatches (its part above L = max(1 ms,
 *    1 % of the TTFT SLO)) is significantly above 1 % (one-sided exact
 *    binomial test, 95 %: P(B >= late | n, 0.01) < 0.05); reads the same;
 *  - its lag grows over the run (median client lag of the last quarter of
 *    the dispatches exceeds the first quarter's by more than L);
 *  - one client stall: a dispatch or read whose client part alone is past
 *    the cap max(10 ms, 10 % of the median TTFT);
 *  - dispatched < 99.9 % of scheduled; generator CPU > 80 %; fd or port
 *    exhaustion;
 *  - or the client's delay moves a headline figure (TTFT from schedule
 *    p50/p90/p99, E2E latency from schedule p50/p99) by more than
 *    max(1 % of the figure, its 95 % CI half-width): the figure against
 *    the same figure with each request's client-caused dispatch and read
 *    lag taken out. A host stall past the cap is a WARN (host_warn), unless
 *    taking its lag out too moves a figure past that tolerance.
 * Records that do not say who was late (older files, other tools) charge
 * every lag to the client: the rule is then the earlier one.
 * A burst (every request due at once: --rate inf) has no schedule to be
 * late for: dispatch lag is not judged (latency counts from dispatch).
 *
 * Pure: no I/O, no global state. */
#ifndef IM_ANALYZE_SELFCHECK_H
#define IM_ANALYZE_SELFCHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "analyze/population.h"
#include "analyze/summary.h"
#include "core/hostlat.h"
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
#define IM_CHECK_FIGURE_SHARE 0.01      /* a figure may move by 1 % (or its CI half-width) */
#define IM_CHECK_FIGURE_CONF 0.95       /* ... that CI's confidence */
#define IM_CHECK_GROWTH_MIN_N 8         /* lag growth is judged from this many dispatches */
#define IM_CHECK_MAX_FIGURES 5

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
  /* Who was late. lag_late (above) counts every dispatch later than L;
   * of those, lag_late_client had a client part above L. lag_p_value and
   * pass_lag_test judge lag_late_client; pass_lag_cap fails on a client
   * stall only. */
  bool attributed;                  /* the records say who caused each lag */
  bool burst;                       /* every request due at once: lag not judged */
  uint64_t lag_late_client, lag_late_host;
  double host_lag_min_ms, host_lag_max_ms;  /* range of the host's late dispatches */
  double client_lag_max_ms;         /* the largest client part of a dispatch lag */
  uint64_t stalls_client, stalls_host, stalls_host_seen; /* past the cap; seen by the probe */
  double lag_growth_ms;             /* median client lag, last quarter - first quarter */
  bool pass_growth;
  uint64_t recv_late_client;        /* reads whose client part was above 1 ms */
  double recv_client_max_ms;        /* the largest client part of a token read (first/last) */
  /* Headline figures from the schedule, and their move when the delays are
   * taken out: the client's (judged), the client's and the host stalls'
   * (judged), and every dispatch and read lag (reported). */
  struct im_check_figure {
    const char *name;               /* "TTFT p50", ... (static) */
    double value_ms, client_free_ms, stall_free_ms, all_free_ms;
    double tolerance_ms;            /* max(1 % of value, CI half-width) */
    bool pass;
  } fig[IM_CHECK_MAX_FIGURES];
  size_t n_fig;
  bool pass_figures;
  /* The host probe (not measured: host_wakes 0). */
  uint64_t host_wakes, host_late;
  double host_max_ms;
  bool host_warn;                   /* a host stall past the cap: WARN */
  /* One line saying who was late, by how much and what it did to the
   * figures, and advice that fits the cause ("" when none is needed). */
  char summary[400];
  char advice[240];
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
/* The same, with the host probe's lateness of the run (NULL: not measured). */
void im_client_check_compute_host(const struct im_population *pop, const struct im_summary *s,
                                  const struct im_summary_config *cfg,
                                  const struct im_client_counters *k,
                                  const struct im_hist *receive_lag, const struct im_hostlat *host,
                                  struct im_client_check *c);

#endif
