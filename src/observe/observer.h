/* What the server and the machine say during a run (docs/metrics.md §5): one
 * thread samples, on the run's CLOCK_MONOTONIC, the server's /metrics (and
 * a DCGM exporter's), the TCP sockets toward the target, and the GPUs when
 * NVML is present; at the end it reduces them to figures for results.json.
 *
 * Lifecycle: im_observer_start() takes a baseline sample at once (before
 * the load starts), then one every interval; im_observer_stop() takes a
 * final sample and joins the thread; im_observer_json() writes
 * metrics.server, metrics.tcp, metrics.gpu and the time series. A missing
 * or unreachable endpoint never fails the run: its figures are null with a
 * reason under not_collected. */
#ifndef IM_OBSERVE_OBSERVER_H
#define IM_OBSERVE_OBSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/err.h"

#define IM_OBS_MAX_SCRAPE 8

struct im_observer_config {
  const char *scrape_urls[IM_OBS_MAX_SCRAPE]; /* full URLs of /metrics pages */
  size_t n_scrape;
  const char *dcgm_url;         /* a DCGM exporter's /metrics, or NULL */
  int64_t interval_ns;          /* 1 s by default; at least 100 ms */
  const char *api_key;          /* sent as Bearer to the scrape URLs; never logged */
  bool insecure;
  bool sockstat;                /* sample TCP states toward `target` */
  struct sockaddr_storage target;
  socklen_t target_len;
  bool gpu;                     /* try NVML */
  const char *nvml_path;        /* NULL: default search */
  int raw_fd;                   /* every scraped page appended here, -1: not kept */
};

void im_observer_config_default(struct im_observer_config *cfg);

struct im_observer;

/* Starts sampling (baseline now). IM_NOMEM / IM_SYS on failure. */
enum im_err im_observer_start(struct im_observer **out, const struct im_observer_config *cfg) IM_WUR;
/* Final sample, then the thread ends. Safe to call once. */
void im_observer_stop(struct im_observer *o);
void im_observer_free(struct im_observer *o);

/* Figures the observer needs from the client side. */
struct im_observer_context {
  int64_t t0_mono;              /* the run's start: series times are relative to it */
  int64_t window_start_ns, window_end_ns; /* run-relative measured window */
  double client_ttft_p50_ms, client_ttft_p99_ms; /* NaN when unknown */
  double output_tokens;         /* in the window, for tokens per joule */
  uint64_t connections_opened;  /* by the load engine */
  uint64_t attempts;            /* requests sent, for requests per connection */
  double kv_residency_ref;      /* reference line (0.68) */
  double kv_bytes_per_token;    /* KV bytes one GPU holds per token (declared), 0 unknown */
  double gpu_memory_bytes;      /* per GPU (declared), 0: from NVML when present */
  double bw_util_ref;           /* reference line (0.78) */
  /* Series: only samples with run-relative t in [series_from_ns,
   * series_to_ns] (a stage of a multi-stage run); both 0: every sample. */
  int64_t series_from_ns, series_to_ns;
};

struct json_t;
/* Adds "server", "tcp", "gpu" objects to metrics and the time series to
 * series. */
enum im_err im_observer_json(const struct im_observer *o, const struct im_observer_context *ctx,
                             struct json_t *metrics, struct json_t *series) IM_WUR;

#endif
