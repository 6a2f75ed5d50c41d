/* --health-interval and --probe-rate: side traffic beside the load.
 *
 * --health-interval: a poller that sends GET /health (or the path given) to
 * the target during the run, as monitoring does in production, and records
 * each check in requests.jsonl as kind `health` (docs/metrics.md §3): never
 * in a latency or throughput figure, counted in the traffic classes and the
 * effective rate, so a report shows how much of the raw rate was not user
 * work.
 *
 * Threads: the poller runs on its own thread (every signal blocked); the
 * loaders tell it each stage's start through im_health_stage (any thread,
 * lock-free); its records go to requests.jsonl with one write(2) each
 * (O_APPEND: whole lines among the loaders' writer's). Ids are taken from
 * 2^52 up, apart from the loaders' attempt ids (and below 2^53, exact in
 * readers that hold numbers as doubles).
 *
 * --probe-rate R: the same thread shape sends 1-token completions (POST,
 * max_tokens 1, not streamed: the answer comes when the server has
 * admitted, prefilled and decoded it once) at Poisson instants of rate R
 * (exponential gaps from the run's seed: Poisson arrivals see the server's
 * time average, so probes neither lock onto nor miss a periodic hiccup),
 * each recorded as kind `probe` with ids from 2^52 + 2^51: the latency of
 * a minimal request over time, where a stall of the server shows as a
 * late probe (docs/metrics.md §3). Probes are never in a latency or
 * throughput figure of the load. */
#ifndef IM_OBSERVE_HEALTH_H
#define IM_OBSERVE_HEALTH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "net/net.h"

struct im_record;

/* Where each record also goes (--metrics-listen), besides requests.jsonl. */
struct im_record_hook {
  void (*fn)(void *ctx, const struct im_record *r);
  void *ctx;
};

struct im_health {
  char url[2300];              /* base + path */
  int64_t interval_ns;
  const struct im_net *net;    /* borrowed: TLS, proxy, unix socket (net/net.h) */
  const char *api_key;         /* borrowed; sent as Bearer, never recorded */
  int jsonl_fd;
  atomic_int_fast64_t t0;      /* the current stage's CLOCK_MONOTONIC start; 0: none yet */
  atomic_uint stage;
  atomic_bool stop;
  uint64_t next_id;
  bool probe;                  /* --probe-rate: POST body at Poisson instants */
  char body[600];              /* the probe's request body */
  uint64_t seed;               /* the probe gaps' seed */
  pthread_t thread;
  bool running;
  /* Set any time after start (im_health_hook); read by the thread. */
  _Atomic(const struct im_record_hook *) hook;
};

/* Every later record also goes to hook (which must outlive h's thread);
 * NULL h: no-op. */
void im_health_hook(struct im_health *h, const struct im_record_hook *hook);

/* Starts the poller (base URL, path beginning with '/'); IM_OK, or an
 * error with err saying why (the thread could not start). */
enum im_err im_health_start(struct im_health *h, const char *base, const char *path,
                             int64_t interval_ns, const struct im_net *net, const char *api_key,
                             int jsonl_fd, char *err, size_t err_len) IM_WUR;
/* Starts the prober: 1-token requests to base + path (the backend's
 * endpoint) for model, at Poisson instants of `rate` per second, gaps drawn
 * from seed. IM_OK, or an error with err saying why. */
enum im_err im_probe_start(struct im_health *h, const char *base, const char *path,
                            const char *model, bool chat, double rate, uint64_t seed,
                            const struct im_net *net, const char *api_key, int jsonl_fd, char *err,
                            size_t err_len) IM_WUR;
/* A stage began at t0_mono: later checks are on its clock. */
void im_health_stage(struct im_health *h, uint32_t stage, int64_t t0_mono);
/* Stops and joins the poller (no-op when not running). */
void im_health_stop(struct im_health *h);

#endif
