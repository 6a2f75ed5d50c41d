/* `run --metrics-listen`: the run's live page (report/live.h) fed by the
 * loaders' record writers, its gauges refreshed at each scrape from the
 * loaders' progress counters and the observer's latest samples, served by
 * cli/metrics_listen.h for the whole run (every stage).
 *
 * Ownership: im__run_live_start puts a new object in env->live; the caller
 * stops it with im__run_live_stop after the last stage. Thread-safety:
 * attach from the stage's thread; on_record from any loader's writer. */
#ifndef IM_CLI_RUN_LIVE_H
#define IM_CLI_RUN_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/run_int.h"
#include "record/record.h"

/* For --metrics-listen and/or --pushgateway (the listener only with the
 * former). 0, or -1 after saying why (bad --metrics-listen, cannot listen). */
int im__run_live_start(struct run_env *env);
/* The stage's loaders' counters (NULL: between stages) and its start. */
void im__run_live_attach(struct im__run_live *l, const struct im_load_progress *p, uint32_t n);
/* The health poller's and the prober's records too (either may be NULL);
 * they must be stopped before the live page. */
void im__run_live_hook(struct im__run_live *l, struct im_health *health, struct im_health *probe);
/* A loader config's on_record. */
void im__run_live_on_record(void *ctx, const struct im_record *r);
/* --pushgateway URL: PUTs the final page to URL/metrics/job/infermeter/run/
 * RUN_ID (Pushgateway's push API; PUT replaces the group). 0, or -1 after
 * saying why (a warning: the run's figures are on disk regardless). */
int im__run_live_push(struct im__run_live *l, const char *url, const char *run_id, bool insecure);
/* Keeps serving until the final page has been scraped once or linger_ns
 * has passed, then stops and frees; *l NULL afterwards. NULL ok. */
void im__run_live_stop(struct im__run_live **l, int64_t linger_ns);

#endif
