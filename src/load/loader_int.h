/* Internals of the load engine shared by loader.c (the loop, the schedule,
 * completions) and loader_http.c (building requests, reading responses).
 * Names carry the im__load_ prefix. */
#ifndef IM_LOAD_LOADER_INT_H
#define IM_LOAD_LOADER_INT_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/hist.h"
#include "proto/oai_chunk.h"
#include "core/rng.h"
#include "proto/sse.h"
#include "load/loader.h"
#include "proto/oai_request.h"

#define ERRBODY_MAX 4096
/* A request body: the longest prompt (text/promptgen.h), JSON-escaped at
 * worst 6 bytes per byte of control characters, is far below in practice;
 * a body over it fails to build (the request is recorded as failed). */
#define IM_LOAD_BODY_MAX ((size_t)128 << 20)
/* An answer kept for a session's next turn or a tokenizer count: past it
 * the history keeps what fitted (the count is then a lower bound). */
#define IM_LOAD_ANSWER_MAX ((size_t)4 << 20)
/* Bounds on what a server may claim (more is the class malformed, never an
 * allocation): 2^24 tokens in any usage count (above the largest context
 * window offered, 10M tokens), and 4096 tokens in one chunk's growth of
 * continuous usage (speculative decoding adds a few per step; the summary
 * expands each chunk's count into per-token gaps). */
#define IM_LOAD_MAX_USAGE_TOKENS ((int64_t)1 << 24)
#define IM_LOAD_MAX_CHUNK_TOKENS 4096

struct loader;

/* The record writer (loader_write.c): its own thread serialises records
 * and appends them to requests.jsonl, fed by a bounded queue; the result's
 * records array is the writer's until it is stopped. mu guards the queue;
 * failed is set (and the reason kept in the result) when a write fails. */
struct im__load_writer {
  bool on, stop;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t not_empty, not_full;
  struct im_record *q;
  size_t head, n;
  bool idle;                     /* the writer waits with nothing queued */
  struct im_record *batch;       /* the writer's: records taken from q */
  int fd;
  struct im_load_result *res;
  size_t cap_records;
  struct im_buf line;
  atomic_bool failed;
  enum im_err err;               /* IM_NOMEM keeping a record */
  void (*on_record)(void *ctx, const struct im_record *r); /* cfg's, or NULL */
  void *on_record_ctx;
};

struct attempt {
  struct im_record rec;
  struct loader *L;
  struct attempt *prev, *next;   /* active list, or a queue */
  CURL *easy;
  struct curl_slist *hdrs;
  struct im_req_spec spec;       /* owned; kept for retries */
  uint64_t index;                /* workload index of the logical request */
  struct im_sse sse;
  struct im_buf body;
  size_t body_off;
  struct im_buf errbody;
  int64_t last_chunk;            /* run-relative ns */
  int64_t usage_completion;      /* last continuous usage count, -1 none */
  int64_t retry_after_s;         /* Retry-After in seconds; -1 none */
  long local_port;               /* seen at the status line; 0 unknown */
  bool saw_done, error_event, malformed, usage_seen;
  bool usage_reasoning;          /* usage gave reasoning_tokens */
  uint32_t stream_reasoning;     /* tokens of chunks that carried reasoning only */
  char reason[160];              /* why it failed, in words (the server's message
                                    of an error event, truncated); "" none */
  /* What the answer was, for an error that is not an OpenAI answer (an
   * HTML page, a proxy's JSON): its Content-Type and first bytes, reset at
   * each status line. */
  char ctype[48];
  char head[49];
  uint8_t head_len;
  bool in_multi;
  uint32_t slot;                 /* closed loop */
  /* Sessions: the workload's state (owned while non-NULL), the turn, and
   * the answer text kept for the next turn. */
  void *sstate;
  uint64_t sid;
  uint32_t turn;
  uint32_t budget;               /* turns this session may send */
  bool pending_turn;             /* a next turn waiting for its think time */
  enum im_err build_err;         /* the builder thread's verdict */
  bool count_job;                /* only a record whose output the builder counts */
  bool capture;                  /* keep content/text in answer */
  bool tool_seen;                /* agents: a tool_calls delta was captured */
  bool cancel;                   /* --cancel-after applies to this request */
  bool cancelled;                /* ... and the client has abandoned it */
  uint64_t cancel_tokens;        /* tokens received so far (token-based cancel) */
  bool capture_reasoning;        /* keep reasoning too (for counting) */
  struct im_buf answer;
  struct im_buf reasoning;
  /* --keep-text: hashes of the 4-grams of the streamed pieces, for the
   * repetition rate (docs/metrics.md §7); at most cfg->keep_ngrams. */
  uint64_t *grams;
  uint32_t n_grams, cap_grams;
  uint32_t n_pieces;             /* pieces seen (the first 3 make no 4-gram) */
  uint64_t last_pieces[3];
  /* --logprobs: the entropy of the tokens with alternatives, summed. */
  double entropy_sum;
  uint32_t entropy_tokens;
  /* The h1 transport (loader_h1.c): the request head, the connection, the
   * deadline list it is on (dl_*), the --max-connections queue (wnext),
   * and what ended it. */
  struct im_buf h1_head;
  struct h1_conn *conn;
  struct attempt *dl_prev, *dl_next, *wnext;
  uint8_t dl_list;
  bool in_h1, h1_opened, h1_resent, h1_waiting;
  CURLcode h1_res;
  int os_errno;                  /* the socket error that failed it; 0 none */
};

struct loader {
  const struct im_load_config *cfg;
  struct im__load_h1 *h1;        /* the h1 transport (loader_h1.c); NULL: libcurl */
  int ep, tfd_sched, tfd_curl;
  /* libcurl asked for an action now (timeout 0, e.g. a handle was just
   * added): done by kick_curl in the same loop turn, not after an
   * epoll_wait on a 1 ns timer, so a request is written right after its
   * t_start. */
  bool curl_now;
  CURLM *multi;
  int64_t t0;                    /* the stage's start (CLOCK_MONOTONIC ns) */
  uint64_t trace_run;            /* traceparent's per-run half */
  struct im_rng rng;
  atomic_uint_fast64_t next_id;  /* attempts are made on the loop and the builder */
  size_t next_arrival;           /* open loop */
  uint64_t closed_started;
  struct attempt *active;        /* in the multi handle */
  uint32_t inflight;
  struct attempt *queue_head, *queue_tail; /* waiting for --max-concurrency */
  uint32_t queued;
  struct attempt *retries;       /* pending retries, sorted by t_sched */
  struct attempt *due_head, *due_tail; /* closed-loop arrivals to dispatch now */
  bool stop_dispatch;
  bool arrivals_done;            /* sessions: every session start dispatched */
  uint64_t turns_started;        /* sessions: requests created */
  uint64_t turns_reserved;       /* sessions under max_requests: turns promised to
                                    the sessions started (whole sessions first) */
  /* Nothing that builds or tokenizes runs on the loop once it measures: a
   * 32K-token turn costs milliseconds, a prompt tens of µs, a tokenizer
   * count of a long answer as much, during which the loop would stamp no
   * chunk. The builder thread keeps the ring of prepared requests (pre,
   * below) full, builds sessions' next turns and counts the output of
   * streams without usage (count jobs). The loop hands attempts over (in)
   * and takes them back (out, with fd written); `away` counts those it
   * waits for. mu guards the queues, the ring and prep_err; ring_cv wakes
   * a loop waiting for a request not yet prepared. */
  struct {
    bool on, stop;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv, ring_cv;
    struct attempt *in_head, *in_tail, *out_head, *out_tail;
    int fd;
    uint32_t away;
    enum im_err prep_err;        /* preparing failed: the loop stops */
    size_t pre_target;           /* the ring is kept this full */
  } builder;
  uint64_t abandoned;            /* sessions ended by their history's bound */
  int64_t stop_t;                /* run-relative time dispatching stopped */
  int64_t grace_deadline;        /* run-relative; INT64_MAX until known */
  bool aborting;
  struct im_oai_chunk chunk;
  struct im__load_writer writer;
  uint64_t *port_conn;           /* local port -> connection id */
  uint64_t next_conn;
  struct im_load_result *res;
  uint64_t done, errors, tokens;
  int64_t sched_armed;           /* absolute due time the timer holds; -1 off,
                                    INT64_MIN unknown (expired) */
  int64_t t_wake;                /* run-relative: the last epoll_wait's return
                                    with events; -1 none */
  int64_t recv_lag_max_ns;       /* this second's largest receive lag */
  /* Who is late, the client or the host (docs/metrics.md §10): marks of the
   * loop's turns on the run-relative clock and on the client clock
   * (im__load_client_clock). A turn runs from its wake (turn_t) to the start
   * of the next epoll_wait. */
  int64_t sleep_t;               /* the current turn's epoll_wait began */
  int64_t turn_t, turn_cpu;      /* ... and returned */
  int64_t prev_turn_t, prev_turn_cpu;
  int64_t tail_t, tail_cpu;      /* the last turn's work ended (its last dispatch
                                    check): the loop worked only on its own
                                    housekeeping from there to sleep_t */
  int64_t own_wait_ns;           /* the loop's waits for its builder */
  int32_t read_lag_us, read_client_us; /* the buffer being read */
  struct im_hist ttft_hist;
  int64_t next_sample_t;         /* self-monitoring, every second */
  double sample_cpu_s;
  double lag_max_ns;
  size_t cap_samples;
  enum im_err fatal;
  /* Requests prepared ahead, for consecutive global indexes starting at
   * pre_first: building a prompt costs tens of µs and must never sit
   * between an arrival's due time and its send. Filled on the loop before
   * t0, then by the builder (under builder.mu); pre_local_next is the
   * builder's once it runs. */
  struct attempt **pre;
  size_t pre_cap, pre_head, pre_n;
  uint64_t pre_first;            /* global index of the ring's head */
  uint64_t pre_local_next;       /* local index of the next one to prepare */
};

static inline int64_t rel_now(const struct loader *L) { return im_now_ns() - L->t0; }

/* An id of this process's rule as an id unique over the processes. */
static inline uint64_t im__load_spread(const struct loader *L, uint64_t v) {
  return L->cfg->proc_shard + (uint64_t)L->cfg->proc_shards * v;
}

/* The global request index of this loader's local index. */
static inline uint64_t im__load_global_index(const struct loader *L, uint64_t local) {
  if (L->cfg->indices && L->cfg->times)
    return local < L->cfg->n_times ? L->cfg->indices[local] : UINT64_MAX;
  return im__load_spread(L, L->cfg->shard + (uint64_t)L->cfg->n_shards * local);
}

/* Its inverse: the local index of a global one (indices: a binary search). */
static inline uint64_t im__load_local_index(const struct loader *L, uint64_t index) {
  if (L->cfg->indices && L->cfg->times) {
    size_t lo = 0, hi = L->cfg->n_times;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (L->cfg->indices[mid] < index)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
  return ((index - L->cfg->proc_shard) / L->cfg->proc_shards - L->cfg->shard) / L->cfg->n_shards;
}

/* loader_write.c */
/* Starts the writer thread for fd (-1: keep records, write none) into res
 * (IM_SYS/IM_NOMEM: not started; push then writes on the caller's thread). */
enum im_err im__load_writer_start(struct im__load_writer *w, int fd, struct im_load_result *res);
/* Queues a finished record, moving its chunk arrays; waits while the queue
 * is full (the wait is counted in the result). Never drops it. */
void im__load_writer_push(struct im__load_writer *w, struct im_record *r);
/* Drains the queue and joins; IM_NOMEM when a record could not be kept. */
enum im_err im__load_writer_stop(struct im__load_writer *w);

/* loader_start.c */
/* Arrives at the stage's start barrier (ok false: this shard failed its
 * setup) and waits for the others; t0 and wall are the stage's start.
 * False when a shard failed: do not dispatch. */
bool im__load_start_wait(struct im_load_start *s, bool ok, int64_t *t0, int64_t *wall);

/* loader_prep.c */
struct attempt *im__load_attempt_new(struct loader *L);
/* Frees an attempt (ending its session's state when it holds it); NULL ok. */
void im__load_attempt_free(struct attempt *a);
/* The record's copy of what the workload asked for. */
void im__load_fill_record(struct attempt *a);
/* Fills the ring on the loop until `until` (run-relative ns) or until it
 * is full: before t0, and when there is no builder. */
void im__load_prepare_until(struct loader *L, int64_t until);
/* Prepares requests until the ring holds n (or is full, or all are). */
void im__load_prepare_n(struct loader *L, size_t n);
/* The prepared attempt for global `index` (taken in order); NULL with
 * L->fatal set on failure. With the builder, waits for a late one. */
struct attempt *im__load_take_request(struct loader *L, uint64_t index);

/* loader.c */
/* Into the pending list (retries and sessions' next turns), sorted by
 * t_sched. */
void im__load_insert_pending(struct loader *L, struct attempt *a);

/* loader_session.c */
/* After a session's turn ended (not to be retried): its next turn, built now
 * and due after the think time. False when the session is over (last turn,
 * a failure, dispatching stopped). */
bool im__load_session_next(struct loader *L, struct attempt *a, int64_t now);
/* A session's next turn could not be built because its history hit its
 * bound (IM_LIMIT): the session ends there, a closed loop's slot starting
 * a new one; n is not freed. */
void im__load_session_abandon(struct loader *L, struct attempt *n);
/* Dispatching stopped: sessions' next turns are never sent. */
void im__load_drop_pending_turns(struct loader *L);
/* Turns a new session may send, reserved now: whole sessions while
 * max_requests allows, then what is left (0: no new session). */
uint32_t im__load_session_budget(struct loader *L);
/* The builder thread: started once t0 is set (IM_SYS when it cannot be:
 * everything is then built and counted on the loop, as a fallback);
 * stopped and joined on the loop's thread, storing the records of count
 * jobs it still holds (uncounted) and freeing the rest. */
enum im_err im__load_builder_start(struct loader *L);
void im__load_builder_stop(struct loader *L);
/* Takes built turns into the pending list and stores counted records
 * (fd was readable). */
void im__load_builder_collect(struct loader *L);
/* Hands a job (a next turn or a count job) to the builder. */
void im__load_builder_push(struct loader *L, struct attempt *a);

/* loader_prep.c, for the builder */
/* Local requests this loader will ever send (UINT64_MAX: unbounded). */
uint64_t im__load_local_total(const struct loader *L);
/* Prepares the request of local index `local` (workload, body, handle);
 * NULL with *err set on failure. Any thread; touches only the attempt. */
struct attempt *im__load_prepare(struct loader *L, uint64_t local, enum im_err *err);
/* loader.c, for the builder */
/* Counts a finished stream's output with cfg->count_output (any thread). */
void im__load_count_output(struct loader *L, struct attempt *a);
/* Appends a finished attempt's record to requests.jsonl and the result
 * (the loop's thread). */
void im__load_store_record(struct loader *L, struct im_record *r);

/* Ends an attempt: its record, a retry or the next request (loader.c). */
void im__load_finish(struct loader *L, struct attempt *a, CURLcode res);

/* loader_h1.c: the h1 transport (see there). setup: L->h1 for the
 * config's targets (IM_INVAL: a URL it cannot reach). build: the request
 * head of an attempt whose body is built (lines: the headers every request
 * carries, NULL-terminated). start: the attempt goes out (t_start set). event: an fd of the
 * loop is the transport's (handled) or not (false). collect: ends the
 * attempts that failed or finished, and re-arms the timer. release: from
 * im__load_finish, the attempt leaves its connection. */
enum im_err im__load_h1_setup(struct loader *L);
void im__load_h1_teardown(struct loader *L);
enum im_err im__load_h1_build(struct loader *L, struct attempt *a, const char *path,
                              const char *const *lines);
void im__load_h1_start(struct loader *L, struct attempt *a);
bool im__load_h1_event(struct loader *L, int fd, uint32_t events);
void im__load_h1_collect(struct loader *L);
void im__load_h1_release(struct loader *L, struct attempt *a);

/* loader_cancel.c (--cancel-after) */
/* Decides whether the request is to be cancelled (at preparation). */
void im__load_cancel_plan(const struct loader *L, struct attempt *a);
/* curl's total timeout for the attempt: the run's, or the time to cancel. */
long im__load_cancel_timeout_ms(const struct loader *L, const struct attempt *a);
/* After a chunk of n tokens: marks the attempt cancelled once it has
 * received its cancel_after_tokens. */
void im__load_cancel_count(const struct loader *L, struct attempt *a, uint32_t n);
/* At the end: when the attempt was cancelled (by tokens, or by its timer),
 * marks its record cancelled (no error) and returns true. */
bool im__load_cancel_finish(const struct loader *L, struct attempt *a, CURLcode res);

/* loader_http.c */
/* Builds an attempt's request (body, headers, easy handle) without sending. */
enum im_err im__load_build_http(struct loader *L, struct attempt *a);
/* What both transports feed (loader_http.c): a received buffer's receive
 * lag (once per buffer, at its clock read now); a piece of the body
 * (false: stop the transfer); a status line (its arrival now, the local
 * port); a Retry-After value. */
void im__load_recv_lag(struct loader *L, struct attempt *a, int64_t now, bool stamped);
/* The kernel's receive time of the last byte of m's data (TCP software
 * receive timestamps, Linux 4.14 and later: an SCM_TIMESTAMPNS control
 * message on CLOCK_REALTIME) moved to the monotonic clock relative to t0
 * through the two clocks' offset now (the monotonic one read after the
 * realtime one: never early); never later than now (the read's time,
 * relative to t0). -1 without a stamp. */
struct msghdr;
int64_t im__load_rx_stamp(struct msghdr *m, int64_t t0, int64_t now);
/* A response header: keeps the Content-Type (value v of n bytes). */
void im__load_on_ctype(struct attempt *a, const char *v, size_t n);
/* Lateness below this is the client's without a look (a clock read costs
 * more than it could matter). */
#define IM__LOAD_ATTR_MIN_NS 20000
/* The client clock: the loop thread's CPU time plus its waits on its own
 * builder and writer, ns. It advances only while the client works. */
int64_t im__load_client_clock(const struct loader *L);
/* The client's part of a lateness from `due` to `now` (run-relative ns),
 * in [0, now - due]: the client clock's advance since the loop's wake that
 * preceded `due` (an upper bound: the work of the turn before `due` is
 * counted too); all of it when `due` is older than the previous turn (the
 * loop is turns behind). The rest is the host's: the loop slept past its
 * wake-up or was runnable and not running. */
int64_t im__load_client_part(const struct loader *L, int64_t due, int64_t now);
/* ns -> µs for the record's lag fields, saturating. */
int32_t im__load_us(int64_t ns);
bool im__load_body(struct attempt *a, const char *data, size_t len, int64_t now);
void im__load_on_status(struct attempt *a, int code, int64_t now, long port);
void im__load_on_retry_after(struct attempt *a, const char *v, size_t n);
/* The error class of an ended attempt (IM_EC_NONE: success). */
enum im_errclass im__load_classify(struct attempt *a, CURLcode res);
/* The SSE parser's callback: one event of an attempt's stream (ud). */
enum im_err im__load_on_sse_event(void *ud, const struct im_sse_event *ev);
/* Whether a failure of this class may be retried (before any token). */
bool im__load_retryable(enum im_errclass e);

#endif
