/* `run --metrics-listen [ADDR:]PORT`: a small HTTP/1.1 server on a thread of
 * its own (never the measuring loops') answering GET /metrics with the live
 * page (report/live.h, through export/live.c). One connection at a time,
 * one request per connection (Connection: close), request heads at most
 * 8 KiB, a client that sends nothing for 2 s is dropped: a slow scraper
 * cannot hold the run. The page comes from a callback (the caller's: it
 * sets the gauges and renders).
 *
 * Ownership: the caller keeps the page context until
 * im_metrics_listen_stop has returned. Thread-safety: start and stop from
 * one thread; the page callback runs on the listener's thread. */
#ifndef IM_EXPORT_METRICS_LISTEN_H
#define IM_EXPORT_METRICS_LISTEN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct im_metrics_listen {
  bool on;
  int fd, stop_fd;
  pthread_t thread;
  /* Appends the page to out (IM_OK), or fails (answered 500). */
  enum im_err (*page)(void *ctx, struct im_buf *out);
  void *ctx;
  char host[64];
  uint16_t port;               /* bound (useful with port 0) */
  atomic_uint_fast64_t served; /* pages served in full */
};

/* Parses "PORT", "ADDR:PORT" or "[V6ADDR]:PORT" (ADDR numeric; default
 * 127.0.0.1): host (NUL-terminated, at most hostcap bytes) and port. IM_INVAL
 * with msg filled for anything else. */
enum im_err im_metrics_listen_parse(const char *spec, char *host, size_t hostcap, uint16_t *port,
                                     char *msg, size_t msgcap) IM_WUR;

/* Binds and starts the thread. IM_INVAL (bad spec), IM_SYS (bind, listen or
 * thread failed; msg says why). */
enum im_err im_metrics_listen_start(struct im_metrics_listen *m, const char *spec,
                                     enum im_err (*page)(void *ctx, struct im_buf *out), void *ctx,
                                     char *msg, size_t msgcap) IM_WUR;
/* Pages served so far (any thread). */
uint64_t im_metrics_listen_served(struct im_metrics_listen *m);
/* Joins the thread and closes the socket; no-op when not started. */
void im_metrics_listen_stop(struct im_metrics_listen *m);

#endif
