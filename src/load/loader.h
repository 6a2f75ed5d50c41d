/* The load engine: dispatches requests at their scheduled times and records
 * every attempt (docs/metrics.md §1), on one event loop per thread: epoll, a
 * timerfd for the schedule, a timerfd for libcurl's timeouts, libcurl multi
 * driven by socket callbacks (curl_multi_socket_action).
 *
 * Open loop: arrival i is dispatched at t0 + times[i] whatever happened
 * before; a late dispatch is measured (dispatch_lag) and never shifts later
 * ones. Closed loop (concurrency C): each of C slots sends its next request
 * when its previous one ends. --max-concurrency queues on the client; the
 * wait is queue_wait.
 *
 * Threads of one loader (im_load_run): the calling thread runs the event
 * loop and only measures (reads sockets, stamps chunks, dispatches); a
 * builder thread prepares requests ahead (prompts, bodies, handles: first
 * turns of sessions included), builds sessions' next turns and counts the
 * output of streams without usage (cfg->count_output: it and the workload
 * are called on the builder, or on the loop only before t0 and when the
 * builder cannot start); a writer thread serialises records and appends
 * each to requests.jsonl with one write(2) (a line is whole or cut back),
 * fed by a bounded queue: the loop waits when it is full and the wait is
 * counted (writer_wait_ns), a record is never dropped. A crash or kill -9
 * loses only the attempts in flight and those queued. Every thread a
 * loader starts blocks all signals.
 *
 * Several loaders (shards) of a stage run on threads of the caller's and
 * share one start instant (struct im_load_start) and an interrupt flag;
 * they share nothing else (workload contexts, tokenizers and counters are
 * per loader).
 *
 * Bounds against the server: every buffer a response grows is capped (SSE
 * line 1 MiB, event 4 MiB, error body 4 KiB, captured answer 4 MiB); usage
 * counts above 2^24 tokens, or 4096 tokens in one chunk, are the class
 * malformed; retries wait at most retry_backoff_max_ns. */
#ifndef IM_LOAD_LOADER_H
#define IM_LOAD_LOADER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/hist.h"
#include "core/hostlat.h"
#include "record/record.h"
#include "workload/spec.h"

struct im_net;
/* The client transport (im_load_transport_pick below). */
enum im_load_transport { IM_TRANSPORT_AUTO, IM_TRANSPORT_CURL, IM_TRANSPORT_H1 };

/* One start instant for the shards (threads) of a stage. Each shard
 * prepares its first requests, then waits here; the shard that arrives last
 * reads CLOCK_MONOTONIC once (t0_mono, with the wall clock for labels),
 * calls on_start (when set) exactly once, before any shard dispatches, and
 * releases all. Every shard's records are then run-relative to the same t0.
 * A shard that fails its setup still arrives (marking the start failed):
 * the others then return IM_SYS without dispatching, so none waits forever.
 *
 * Ownership: the caller embeds it, initialises it for n_shards before the
 * shards start and cleans it up after every shard has returned; shards
 * only use it through their config. Thread-safety: shared by the shards
 * (internally locked). on_start runs on one shard's thread while the others
 * wait: it must be short (a line to disk) and must not call into the
 * loader. Read t0_mono/wall_ns only after the shards have returned. */
struct im_load_start {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint32_t n, arrived;
  bool released, failed, inited;
  int64_t t0_mono, wall_ns;
  void (*on_start)(void *ctx, int64_t t0_mono, int64_t wall_ns);
  void *on_start_ctx;
  /* An agreed start (cli/shard.h), set after init: when at_mono > 0 the
   * releasing shard sleeps until CLOCK_MONOTONIC at_mono (at once when it
   * has passed) and t0_mono = at_mono, wall_ns = at_wall exactly, so the
   * processes of one plan share an origin. */
  int64_t at_mono, at_wall;
};

/* IM_OK; IM_INVAL for n_shards 0; IM_SYS when the lock cannot be made. */
enum im_err im_load_start_init(struct im_load_start *s, uint32_t n_shards,
                               void (*on_start)(void *ctx, int64_t t0_mono, int64_t wall_ns),
                               void *ctx) IM_WUR;
/* For n shards that will never run (their thread could not be created):
 * arrives for them, failing the start, so the running shards return
 * instead of waiting. */
void im_load_start_abandon(struct im_load_start *s, uint32_t n);
/* NULL or never initialised: no-op. */
void im_load_start_cleanup(struct im_load_start *s);

/* Live counters of one loader, for a progress display on another thread.
 * Written by that loader's loop only, with relaxed atomic stores once per
 * loop turn (one struct per loader: no shared counter on the hot path);
 * read by any thread at any time (each value is current within a loop
 * turn; values are not a consistent snapshot of each other). The caller
 * owns it, zero-fills it before the run, and keeps it until the loader has
 * returned. */
struct im_load_progress {
  atomic_uint_fast64_t scheduled, dispatched, completed, failed;
  atomic_uint_fast64_t tokens;     /* output tokens of finished attempts */
  atomic_uint_fast32_t in_flight, queued;
  atomic_int_fast64_t ttft_p50_ns; /* successes so far, once a second; 0: none */
  /* Worst dispatch / receive lag of the last whole second, ns. */
  atomic_int_fast64_t lag_max_ns, receive_lag_max_ns;
};

struct im_load_config {
  const char *base_url;          /* "http://127.0.0.1:8000" (no trailing slash) */
  /* Several targets (replicas behind no balancer, docs/tls.md): n_urls > 1
   * base URLs (at most IM_RECORD_MAX_TARGETS); request (or session) i goes
   * to base_urls[i % n_urls], with its retries, recorded as its target.
   * n_urls 0 or 1: base_url only. */
  const char *const *base_urls;
  uint32_t n_urls;
  enum im_backend backend;
  const char *model;
  const char *api_key;           /* sent as Bearer; never logged or recorded */
  const char *const *headers;    /* extra "K: V" lines, NULL-terminated */
  bool insecure;                 /* skip TLS verification */
  const struct im_net *net;      /* TLS trust, client certificate, proxy, unix
                                    socket (net/net.h; NULL: none) */
  bool keepalive;                /* reuse connections (default true) */
  enum im_load_transport transport; /* --transport (default auto) */
  uint32_t max_connections;      /* 0: unlimited */
  bool http2;
  bool continuous_usage;         /* ask for stream_options.continuous_usage_stats */
  const char *cache_salt;        /* sent as vLLM's cache_salt when non-NULL */
  const char *run_salt;          /* request ids: im-<run_salt>-<id> */
  /* Reasoning controls and the run's extra request fields (proto/oai_request.h):
   * reasoning_effort NULL or a name, thinking 0/1/-1; recorded per attempt. */
  const char *reasoning_effort;
  int thinking;
  const char *run_json;
  /* Cancellation (--cancel-after, docs/agents.md): a share cancel_share of
   * the logical requests (chosen by a hash of the request's index and
   * cancel_seed) is abandoned, its connection closed, once it has run
   * cancel_after_ns since t_start (curl's total timeout) or received
   * cancel_after_tokens tokens, whichever is set; recorded with kind
   * cancelled and no error. 0 / 0: none. */
  int64_t cancel_after_ns;
  uint32_t cancel_after_tokens;
  double cancel_share;
  uint64_t cancel_seed;
  /* Structured output (--response-format, sent through run_json): each
   * answer that ends in text is checked (proto/json_check.h: an object, or
   * json_schema when non-NULL) on the loop after its t_end; a failure is
   * the error class invalid_json. */
  bool check_json;
  const char *json_schema;
  /* --model-mix: the model each request (each session) asks for, drawn by
   * weight from a hash of its index and mix_seed; a NULL name is `model`.
   * mix_cum: cumulative weights, the last 1. n_mix 0: every request asks
   * for `model`. Recorded per attempt. */
  const char *const *mix_names;
  const double *mix_cum;
  size_t n_mix;
  uint64_t mix_seed;

  /* Schedule: open loop when times != NULL, else closed loop. */
  const int64_t *times;          /* arrival ns since start, sorted */
  size_t n_times;
  uint32_t concurrency;          /* closed loop slots */
  int64_t duration_ns;           /* closed loop: no new request after this */
  uint64_t max_requests;         /* closed loop cap (0: none) */
  uint32_t max_concurrency;      /* client-side cap on in-flight (0: none) */
  int64_t warmup_ns;             /* requests scheduled before this are warm-up */
  uint64_t warmup_requests;      /* ... or the first N (when warmup_ns is 0) */
  int64_t grace_ns;              /* after the last arrival */

  uint32_t retries;              /* extra attempts for retryable failures */
  int64_t retry_backoff_max_ns;  /* longest wait before a retry (backoff or
                                    Retry-After); default 30 s */
  int64_t timeout_connect_ns, timeout_ttft_ns, timeout_idle_ns, timeout_total_ns;

  im_workload_fn workload;
  void *workload_ctx;            /* also the session ops' ctx */
  /* Output tokens of a stream without usage (docs/metrics.md §1: usage, else a
   * tokenizer count of the text, else one per chunk): when set, answers are
   * kept and counted with it at the end, on the builder thread (NULL: chunk
   * counts). Called from one thread at a time per loader, never
   * concurrently with this loader's workload unless their own lock allows. */
  uint32_t (*count_output)(void *ctx, const char *text, size_t len);
  void *count_ctx;
  const struct im_session_ops *session; /* NULL: single requests (workload) */
  /* --keep-text: 4-grams of each answer's streamed pieces kept (as hashes)
   * for its repetition rate, at most this many per request (0: off). */
  uint32_t keep_ngrams;
  /* --logprobs N: ask for the top N log-probabilities of each token and
   * record each answer's mean entropy (0: not asked). */
  uint32_t logprobs;

  /* Several loaders (threads) share one run: this one is shard `shard` of
   * `n_shards`; its k-th arrival is global request shard + k * n_shards, and
   * its attempt ids are unique the same way. */
  uint32_t shard, n_shards;
  /* This process is shard proc_shard of proc_shards of a larger plan
   * (cli/shard.h; 0 of 1: alone): every id v of the rule above (attempt,
   * connection, a closed loop's request index) becomes proc_shard +
   * proc_shards * v, unique over the processes whatever their threads. */
  uint32_t proc_shard, proc_shards;
  /* Open loop of a process that sends a share of a larger plan (cli/shard.h):
   * the plan's index of each of this loader's arrivals (sorted, n_times of
   * them), used instead of shard + k * n_shards for the workload, the
   * warm-up count and the session ids. NULL: the rule above. */
  const uint64_t *indices;
  uint32_t stage;                /* recorded in every attempt */
  /* The stage's start barrier, shared by its n_shards shards (required when
   * n_shards > 1; NULL: this loader takes its own t0 after preparing). */
  struct im_load_start *start;

  int jsonl_fd;                  /* requests.jsonl (O_APPEND), -1 = none */
  /* The host probe (load/hostprobe.h) runs beside shard 0's loop from t0
   * to the end of the run unless this is set. */
  bool no_host_probe;
  /* >0: stop dispatching; >1: abort in flight. Written by a signal handler
   * (lock-free atomic_int: async-signal-safe), read by every loader. */
  const atomic_int *interrupt;
  int wake_fd;                   /* eventfd written by the signal handler, or -1 */
  /* Called on the loop's thread when the last attempt has ended, before the
   * connection pool is closed (observers take their final sample then). */
  void (*on_drained)(void *ctx);
  void *on_drained_ctx;
  struct im_load_progress *progress; /* live counters (NULL: none) */
  /* Called with every finished attempt on the record writer's thread (never
   * on the loop), after its line is written (--metrics-listen). The writers
   * of several loaders call it concurrently: it must be thread-safe. */
  void (*on_record)(void *ctx, const struct im_record *r);
  void *on_record_ctx;
};

void im_load_config_default(struct im_load_config *cfg);

/* The client transport (--transport, docs/architecture.md "Transports"):
 * libcurl, or the engine's own HTTP/1.1 client (h1) for plain http://
 * targets; auto picks h1 whenever nothing needs libcurl. */
struct im_load_transport_in {
  enum im_load_transport mode;
  const char *url;               /* when n_urls is 0 */
  const char *const *urls;
  uint32_t n_urls;
  bool http2;
  const struct im_net *net;
  const char *const *headers;    /* NULL-terminated, or NULL */
};
/* The transport a run uses: IM_TRANSPORT_CURL or IM_TRANSPORT_H1; -1 when
 * h1 was asked for and cannot serve the target (why: a sentence). Pure but
 * for reading the proxy environment variables. */
int im_load_transport_pick(const struct im_load_transport_in *in, char *why, size_t cap);
/* "curl", "h1" or "auto". */
const char *im_load_transport_name(int t);

/* The wait before retry number `attempt` (the attempt that failed, from 1):
 * 0.25 s x 2^(attempt-1) x (0.5 + u), u uniform in [0, 1), never above
 * cap_ns (cap_ns <= 0: no wait). Exact for any attempt: no overflow. */
int64_t im_load_backoff_ns(uint32_t attempt, double u, int64_t cap_ns);

/* The generator watching itself, once a second (docs/metrics.md §10). */
struct im_load_sample {
  int64_t t;                     /* run-relative ns */
  double cpu_share;              /* this thread's CPU over the interval / wall */
  double lag_max_ms;             /* largest dispatch lag in the interval */
  double receive_lag_max_ms;     /* largest receive lag in the interval */
  uint32_t in_flight;
};

struct im_load_result {
  struct im_record *records;     /* every attempt, in completion order; owned */
  size_t n_records;
  int64_t t0_mono;               /* CLOCK_MONOTONIC of the run's start */
  int64_t wall_start_ns;         /* for labels */
  int64_t elapsed_ns;
  uint64_t scheduled;            /* arrivals due before the run stopped */
  uint64_t dispatched;
  bool interrupted;
  double cpu_s;                  /* this thread's CPU time during the run */
  uint64_t fd_exhausted, port_exhausted; /* EMFILE / EADDRNOTAVAIL seen */
  uint64_t connections_opened;
  char first_error[256];         /* a human description of the first failure */
  /* The record writer: time the loop waited for room in its queue, and how
   * often; records not written to requests.jsonl (a failed or short write
   * stops the run, IM_IO; the records after it are kept here, not written)
   * and the first failure's reason. */
  int64_t writer_wait_ns;
  uint64_t writer_waits;
  uint64_t record_write_failures;
  char record_write_error[160];
  struct im_load_sample *samples; /* owned */
  /* receive_lag: per received buffer, its read callback's clock read minus
   * the return of the epoll_wait that reported it readable, ns (how late
   * the loop serviced a readable socket; docs/metrics.md §10). Owned. */
  struct im_hist receive_lag;
  size_t n_samples;
  /* The host probe's wake-up lateness through the run (shard 0 only;
   * host.period_ns 0: no probe ran). Owned. */
  struct im_hostlat host;
};

/* Runs the load to the end (or an interrupt) on the calling thread, which
 * it blocks; out is filled (zeroed first) and owned by the caller, to be
 * freed with im_load_result_cleanup whatever is returned. Returns IM_OK;
 * IM_INVAL for a bad config; IM_SYS / IM_NOMEM on a setup failure (the
 * reason logged; with a start barrier, the other shards then return IM_SYS
 * too); IM_IO when requests.jsonl could not be written (the run stopped at
 * the first failed write: record_write_error says why; the records are all
 * in out). Thread-safety: one call per config; concurrent calls with
 * different configs are safe (the shards of a stage). */
enum im_err im_load_run(const struct im_load_config *cfg, struct im_load_result *out) IM_WUR;
/* Frees what out owns; NULL ok. */
void im_load_result_cleanup(struct im_load_result *r);


#endif
