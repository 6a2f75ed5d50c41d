/* `run --metrics-listen` and `--pushgateway` (docs/live.md): the run's
 * live Prometheus page (report/live.h) fed by the loaders' records, its
 * gauges refreshed at each scrape from the loaders' progress counters and
 * the observer's latest samples; served by export/metrics_listen.h for the
 * whole run (every stage) and, at the end, PUT to a Pushgateway.
 *
 * Ownership: im_live_export_start allocates; im_live_export_stop frees.
 * Errors: enum im_err with a message; nothing here prints.
 * Threads: the listener answers on its own thread (the page is built
 * there, under a lock); attach is called from the stage's thread;
 * on_record from any loader's record writer, the health poller's and the
 * prober's threads. Nothing here runs on a measuring loop. */
#ifndef IM_EXPORT_LIVE_H
#define IM_EXPORT_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "load/loader.h"
#include "observe/health.h"
#include "observe/observer.h"
#include "record/record.h"

struct im_live_export;

struct im_live_export_opts {
  const char *listen;           /* --metrics-listen [ADDR:]PORT (NULL: no listener) */
  struct im_observer *obs;      /* the run's observer for the server gauges (NULL: none) */
  double slo_ttft_ms;           /* the TTFT SLO (0: none), for the dispatch-lag limit L */
};

/* For --metrics-listen and/or --pushgateway (the listener only with the
 * former). IM_OK with *out set, or an error (cannot listen, out of memory). */
enum im_err im_live_export_start(const struct im_live_export_opts *o,
                                 struct im_live_export **out, char *err, size_t err_len) IM_WUR;
/* Where the listener listens (false: no listener); host is l's. */
bool im_live_export_address(const struct im_live_export *l, const char **host, uint16_t *port);
/* The stage's loaders' counters (NULL: between stages) and its start. */
void im_live_export_attach(struct im_live_export *l, const struct im_load_progress *p, uint32_t n);
/* The health poller's and the prober's records too (either may be NULL);
 * they must be stopped before the live page. */
void im_live_export_hook(struct im_live_export *l, struct im_health *health,
                         struct im_health *probe);
/* A loader config's on_record (ctx: the im_live_export). */
void im_live_export_on_record(void *ctx, const struct im_record *r);
/* The observer is about to go: its latest values are kept for the pages
 * still to come (the final page, the linger, the push); l stops reading
 * it. Any thread; NULL and a second call are no-ops. */
void im_live_export_freeze(struct im_live_export *l);
/* --pushgateway URL: PUTs the final page to URL/metrics/job/infermeter/run/
 * RUN_ID (Pushgateway's push API; PUT replaces the group). IM_OK, or an
 * error (the run's figures are on disk regardless). */
enum im_err im_live_export_push(struct im_live_export *l, const char *url, const char *run_id,
                                bool insecure, char *err, size_t err_len) IM_WUR;
/* Keeps serving until the final page has been scraped once or linger_ns
 * has passed, then stops and frees; *l NULL afterwards. NULL ok. */
void im_live_export_stop(struct im_live_export **l, int64_t linger_ns);

#endif
