/* What the server and the machine say during a run (docs/metrics.md §5): one
 * thread samples, on the run's CLOCK_MONOTONIC, the server's /metrics (and
 * a DCGM exporter's), the TCP sockets toward the target, and the GPUs when
 * NVML is present. Each sample becomes one line of series.jsonl
 * (record/series.h), written by the observer thread as soon as it is taken
 * (never by a load thread), and is kept in memory as the same line read
 * back. The observer computes no figure: src/analyze/scraped.c does, from
 * the lines.
 *
 * Lifecycle: im_observer_start() writes the sources' lines and the reasons
 * for what cannot be sampled, takes a baseline sample at once (before the
 * load starts), then one every interval; im_observer_stop() takes a final
 * sample and joins the thread. A missing or unreachable endpoint never
 * fails the run: its failures are lines with their reasons.
 *
 * Thread safety: start, stop and free from one thread; im_observer_snapshot
 * from any thread, at any time, concurrently with the sampling. */
#ifndef IM_OBSERVE_OBSERVER_H
#define IM_OBSERVE_OBSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/err.h"

struct im_net;

#define IM_OBS_MAX_SCRAPE 8
#define IM_OBS_LATEST_MAX 64

struct im_observer_config {
  const char *scrape_urls[IM_OBS_MAX_SCRAPE]; /* full URLs of /metrics pages */
  size_t n_scrape;
  const char *dcgm_url;         /* a DCGM exporter's /metrics, or NULL */
  int64_t interval_ns;          /* 1 s by default; at least 100 ms */
  const char *api_key;          /* sent as Bearer to the scrape URLs; never logged */
  const struct im_net *net;     /* TLS trust, client certificate, proxy, unix socket
                                   (net/net.h; NULL: none); the unix socket is not
                                   used for the DCGM exporter */
  bool sockstat;                /* sample TCP states toward `target` */
  struct sockaddr_storage target;
  socklen_t target_len;
  bool gpu;                     /* try NVML */
  const char *nvml_path;        /* NULL: default search */
  int raw_fd;                   /* every scraped page appended here, -1: not kept */
  int series_fd;                /* series.jsonl lines appended here (O_APPEND), -1: none */
};

void im_observer_config_default(struct im_observer_config *cfg);

struct im_observer;

/* Starts sampling (baseline now). cfg's strings must outlive the observer.
 * IM_NOMEM / IM_SYS on failure (nothing is left running). */
enum im_err im_observer_start(struct im_observer **out, const struct im_observer_config *cfg) IM_WUR;
/* Final sample, then the thread ends. Safe to call once. */
void im_observer_stop(struct im_observer *o);
void im_observer_free(struct im_observer *o);

struct im_series_set;
/* A copy of every sample taken so far (the lines written to series_fd, read
 * back), taken under the observer's lock: the sampling thread never grows
 * an array a reader holds. *out is the caller's (im_series_free). IM_NOMEM
 * (*out NULL), IM_INVAL for a NULL observer. */
enum im_err im_observer_snapshot(const struct im_observer *o, struct im_series_set **out) IM_WUR;

/* The latest values only, for a live page (export/live.c): the concepts of
 * the last sample of the first non-DCGM source (names[i] = values[i]; NaN
 * values left out), and the last TCP sample. Copied under the observer's
 * lock in time independent of the run's length (im_observer_snapshot copies
 * every sample). IM_INVAL for a NULL observer. */
struct im_observer_latest {
  size_t n;
  char names[IM_OBS_LATEST_MAX][48]; /* = IM_SERIES_NAME_LEN (checked in observer.c) */
  double values[IM_OBS_LATEST_MAX];
  bool has_tcp;
  uint32_t time_wait, established;
};
enum im_err im_observer_latest(const struct im_observer *o, struct im_observer_latest *out) IM_WUR;

#endif
