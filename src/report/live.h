/* The live Prometheus page of a run (`run --metrics-listen`, docs/live.md):
 * counters and fixed-bucket histograms fed one finished attempt at a time,
 * plus gauges set just before each page is rendered, written as Prometheus
 * text exposition 0.0.4 (proto/promexp.h). Every name starts with
 * "infermeter_" and has no colon (colons are for recording rules).
 *
 * Histogram buckets (seconds): 100 µs x 2^(k/4) for k = 0..92 (4 per
 * doubling, up to about 840 s), each rounded to 3 significant digits
 * (relative error <= 0.5 %, finer than a doubling's quarter), plus every
 * threshold the alert rules of deploy/prometheus/ use on these histograms
 * (IM_LIVE_THRESHOLDS), so `histogram_quantile` and `le` filters land on
 * them exactly.
 *
 * Thread-safety: im_live_observe may be called from any number of threads
 * at once (every update is one relaxed atomic add; no lock); the gauges are
 * set and the page rendered by one thread at a time (the caller's scrape
 * handler), concurrently with observe. A page is not a consistent snapshot:
 * each value is current when read. Ownership: im_live_new / im_live_free. */
#ifndef IM_REPORT_LIVE_H
#define IM_REPORT_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "record/record.h"

/* The alert thresholds placed exactly on a bucket bound, seconds: 1.2 s is
 * the seed's token-latency p99 limit (alerts.yml, InfermeterTokenLatencyP99High). */
#define IM_LIVE_THRESHOLDS                                                                         \
  { 1.2 }

/* Histograms of the page. */
enum im_live_hist {
  IM_LIVE_TTFT,         /* t_first - t_start of successful user attempts */
  IM_LIVE_TPOT,         /* (e2el - ttft) / (n_out - 1), n_out >= 2 */
  IM_LIVE_ITL,          /* each gap between token-bearing chunks */
  IM_LIVE_E2EL,         /* t_last - t_start */
  IM_LIVE_DISPATCH_LAG, /* t_dispatch - t_sched of every dispatched attempt */
  IM_LIVE_WINDOW_MEAN,  /* segmented sampling (docs/metrics.md section 4): mean gap of
                           each window of 8 gaps, stride 4, per request */
  IM_LIVE_HIST_COUNT_
};

#define IM_LIVE_MAX_SERVER 64

/* What the caller knows at scrape time (set with im_live_set_gauges). NaN
 * (or a negative count) leaves a value out of the page. */
struct im_live_gauges {
  double in_flight, queued;
  double scheduled, dispatched; /* arrivals due / acted on so far */
  double dispatch_lag_max_s;    /* worst in the last second, all loaders */
  double receive_lag_max_s;
  double time_wait, established; /* TCP sockets toward the target (latest) */
  double client_valid;           /* self-check so far: 1 pass, 0 fail */
  double dispatch_late_limit_s;  /* the self-check's lag limit L */
  /* The server's own concepts (observe/namemap), latest scrape of source 0:
   * exported as infermeter_server_<name>. */
  size_t n_server; /* at most IM_LIVE_MAX_SERVER */
  const char *server_name[IM_LIVE_MAX_SERVER];
  double server_value[IM_LIVE_MAX_SERVER];
  double run_elapsed_s;
};

struct im_live;

/* IM_OK or IM_NOMEM (*out NULL). */
enum im_err im_live_new(struct im_live **out) IM_WUR;
void im_live_free(struct im_live *l);

/* Counts one finished attempt (any kind): requests by kind, status class
 * and error class; tokens; dispatch lag; and, for successful measured and
 * retry attempts, the latency histograms and the E2EL and output tokens by
 * temperature band and by top_p band (0-0.5, 0.5-1, 1-1.5, 1.5+; top_p
 * 0-0.5, 0.5-0.9, 0.9-1; "unset" when not sent). Lock-free (see above). */
void im_live_observe(struct im_live *l, const struct im_record *r);

/* Copies g (its strings must live until the next render). One thread. */
void im_live_set_gauges(struct im_live *l, const struct im_live_gauges *g);

/* Appends the page to out (IM_LIMIT when out's cap is too small). */
enum im_err im_live_render(struct im_live *l, struct im_buf *out) IM_WUR;

/* The histogram bucket bounds, seconds, ascending (static storage). */
const double *im_live_bounds(size_t *n);

/* The self-check's dispatch lag limit L, ns (default 0): set it before the
 * first im_live_observe (it is read without synchronisation). */
void im_live_set_late_limit(struct im_live *l, int64_t limit_ns);
/* First attempts counted so far whose dispatch lag exceeded L; *total: the
 * first attempts counted. Any thread. */
uint64_t im_live_late(struct im_live *l, uint64_t *total);

#endif
