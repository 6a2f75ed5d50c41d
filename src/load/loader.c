/* The load engine (see loader.h). Reasons for the non-obvious choices are
 * given where they are made. */
#include "load/hostprobe.h"
#include "load/loader_int.h"
#include "proto/json_check.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/hist.h"
#include "core/log.h"
#include "proto/oai_chunk.h"
#include "core/rng.h"
#include "core/stats.h"
#include "proto/sse.h"


void im_load_config_default(struct im_load_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->base_url = "http://127.0.0.1:8000";
  cfg->backend = IM_BACKEND_CHAT;
  cfg->keepalive = true;
  cfg->grace_ns = 10 * 1000000000LL;
  cfg->retry_backoff_max_ns = 30 * 1000000000LL;
  cfg->timeout_connect_ns = 5 * 1000000000LL;
  cfg->timeout_ttft_ns = 60 * 1000000000LL;
  cfg->timeout_idle_ns = 30 * 1000000000LL;
  cfg->timeout_total_ns = 600 * 1000000000LL;
  cfg->jsonl_fd = -1;
  cfg->wake_fd = -1;
  cfg->n_shards = 1;
  cfg->proc_shards = 1;
}



/* ---- timers ------------------------------------------------------------- */

static void arm_abs(int fd, int64_t abs_ns) {
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  if (abs_ns >= 0) {
    if (abs_ns == 0)
      abs_ns = 1;
    its.it_value.tv_sec = abs_ns / 1000000000;
    its.it_value.tv_nsec = abs_ns % 1000000000;
  }
  timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void drain_fd(int fd) {
  uint64_t v;
  ssize_t r = read(fd, &v, sizeof v);
  (void)r;
}

/* When the schedule next wants the loop: the next open-loop arrival or the
 * earliest pending retry (run-relative ns), or -1. */
static int64_t next_due(const struct loader *L) {
  int64_t t = -1;
  if (!L->stop_dispatch && L->cfg->times && L->next_arrival < L->cfg->n_times)
    t = L->cfg->times[L->next_arrival];
  if (L->retries && (t < 0 || L->retries->rec.t_sched < t))
    t = L->retries->rec.t_sched;
  return t;
}

/* Re-arms the schedule's timer only when its due time changed (a
 * timerfd_settime per loop turn is a system call per turn). */
static void arm_sched(struct loader *L) {
  int64_t t = next_due(L);
  int64_t abs = t < 0 ? -1 : L->t0 + t;
  if (abs == L->sched_armed)
    return;
  L->sched_armed = abs;
  arm_abs(L->tfd_sched, abs);
}

/* ---- libcurl glue ------------------------------------------------------- */

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp) {
  (void)e;
  struct loader *L = userp;
  if (what == CURL_POLL_REMOVE) {
    epoll_ctl(L->ep, EPOLL_CTL_DEL, s, NULL);
    curl_multi_assign(L->multi, s, NULL);
    return 0;
  }
  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
  ev.data.fd = s;
  if (!socketp) {
    if (epoll_ctl(L->ep, EPOLL_CTL_ADD, s, &ev) < 0 && errno == EEXIST)
      epoll_ctl(L->ep, EPOLL_CTL_MOD, s, &ev);
    curl_multi_assign(L->multi, s, L);
  } else {
    epoll_ctl(L->ep, EPOLL_CTL_MOD, s, &ev);
  }
  return 0;
}

static int on_curl_timer(CURLM *m, long timeout_ms, void *userp) {
  (void)m;
  struct loader *L = userp;
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  /* 0 means "now": curl must not be re-entered from this callback, so the
   * loop does it as soon as the callback's caller returns (kick_curl); the
   * timer is disarmed meanwhile (a new timeout replaces the old one). */
  L->curl_now = timeout_ms == 0;
  if (timeout_ms > 0) {
    int64_t ns = (int64_t)timeout_ms * 1000000;
    its.it_value.tv_sec = ns / 1000000000;
    its.it_value.tv_nsec = ns % 1000000000;
  }
  timerfd_settime(L->tfd_curl, 0, &its, NULL);
  return 0;
}

/* ---- retries ------------------------------------------------------------ */

int64_t im_load_backoff_ns(uint32_t attempt, double u, int64_t cap_ns) {
  if (cap_ns <= 0)
    return 0;
  if (!(u >= 0.0 && u < 1.0))
    u = 0.5;
  /* 2^62 x 0.25 s is far above any cap: clamp the exponent first, then
   * compare in double, where nothing overflows, and convert only a value
   * at most cap_ns. */
  uint32_t k = attempt ? attempt - 1 : 0;
  if (k > 62)
    k = 62;
  double ns = ldexp(0.25e9, (int)k) * (0.5 + u);
  return ns >= (double)cap_ns ? cap_ns : (int64_t)ns;
}

static void list_push(struct attempt **head, struct attempt *a) {
  a->prev = NULL;
  a->next = *head;
  if (*head)
    (*head)->prev = a;
  *head = a;
}

static void list_unlink(struct attempt **head, struct attempt *a) {
  if (a->prev)
    a->prev->next = a->next;
  else
    *head = a->next;
  if (a->next)
    a->next->prev = a->prev;
  a->prev = a->next = NULL;
}

static void queue_push(struct attempt **h, struct attempt **t, struct attempt *a) {
  a->next = NULL;
  a->prev = *t;
  if (*t)
    (*t)->next = a;
  else
    *h = a;
  *t = a;
}

static struct attempt *queue_pop(struct attempt **h, struct attempt **t) {
  struct attempt *a = *h;
  if (!a)
    return NULL;
  *h = a->next;
  if (*h)
    (*h)->prev = NULL;
  else
    *t = NULL;
  a->next = a->prev = NULL;
  return a;
}

static enum im_err start_http(struct loader *L, struct attempt *a) {
  struct im_record *r = &a->rec;
  bool built = L->h1 ? a->h1_head.len > 0 : a->easy != NULL;
  enum im_err err = built ? IM_OK : im__load_build_http(L, a);
  if (err)
    return err;
  r->t_start = rel_now(L);
  if (L->h1) { /* written in this loop turn when a connection is open */
    a->last_chunk = r->t_start;
    list_push(&L->active, a);
    L->inflight++;
    im__load_h1_start(L, a);
    return IM_OK;
  }
  if (curl_multi_add_handle(L->multi, a->easy) != CURLM_OK)
    return IM_IO;
  a->in_multi = true;
  a->last_chunk = r->t_start;
  list_push(&L->active, a);
  L->inflight++;
  return IM_OK;
}

static void finish_attempt(struct loader *L, struct attempt *a, CURLcode res);

/* Starts now or queues for a --max-concurrency seat. */
static void launch(struct loader *L, struct attempt *a) {
  if (L->cfg->max_concurrency && L->inflight >= L->cfg->max_concurrency) {
    queue_push(&L->queue_head, &L->queue_tail, a);
    L->queued++;
    return;
  }
  enum im_err err = start_http(L, a);
  if (err) {
    if (!L->res->first_error[0])
      snprintf(L->res->first_error, sizeof L->res->first_error, "cannot start a request: %s",
               im_strerror(err));
    a->rec.error = IM_EC_CONNECT;
    finish_attempt(L, a, CURLE_FAILED_INIT);
  }
}

static bool is_warmup(const struct loader *L, const struct im_record *r, uint64_t index) {
  const struct im_load_config *c = L->cfg;
  if (c->warmup_ns > 0)
    return r->t_sched < c->warmup_ns;
  return index < c->warmup_requests;
}

int64_t im__load_client_clock(const struct loader *L) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + L->own_wait_ns + L->res->writer_wait_ns;
}

int64_t im__load_client_part(const struct loader *L, int64_t due, int64_t now) {
  int64_t lag = now - due;
  if (lag <= 0)
    return 0;
  if (lag < IM__LOAD_ATTR_MIN_NS)
    return lag;
  int64_t ref;
  if (due >= L->sleep_t)
    ref = L->turn_cpu; /* due while the loop slept, or during this turn */
  else if (due >= L->tail_t && L->tail_t >= L->prev_turn_t)
    ref = L->tail_cpu; /* due after the last turn's work (a preemption before
                          the loop slept is the host's, not that work's) */
  else if (due >= L->prev_turn_t)
    ref = L->prev_turn_cpu; /* due during the previous turn's work */
  else
    return lag; /* turns behind: the client's */
  int64_t c = im__load_client_clock(L) - ref;
  return c < 0 ? 0 : c > lag ? lag : c;
}

int32_t im__load_us(int64_t ns) {
  if (ns <= 0)
    return 0;
  int64_t us = ns / 1000;
  return us > INT32_MAX ? INT32_MAX : (int32_t)us;
}

/* How many new requests the ring keeps ready: an open loop's whole ring
 * (its arrivals are due on the schedule, whatever answers); a closed loop
 * needs a new one only when one of its slots (--concurrency, or sessions)
 * frees, so as many as it has slots, at most 16. More would be built and
 * never sent when the run ends: under --tokenizer server each costs its
 * /tokenize calls (one session with a ring of 16: 111 calls for 17 requests
 * in 2 s, issue 29 point 4). */
static size_t pre_target(const struct im_load_config *cfg, size_t cap) {
  if (cfg->times)
    return cap;
  size_t slots = cfg->concurrency ? cfg->concurrency : 1;
  return slots < 16 ? slots : 16;
}

/* A new logical request scheduled at t_sched. */
static void dispatch_new(struct loader *L, uint64_t index, int64_t t_sched, uint32_t slot,
                         uint32_t budget) {
  int64_t t_dispatch = rel_now(L);
  struct attempt *a = im__load_take_request(L, index);
  if (!a)
    return;
  a->slot = slot;
  a->budget = budget;
  struct im_record *r = &a->rec;
  r->t_sched = r->t_sched_first = t_sched;
  r->t_dispatch = t_dispatch;
  r->lag_client_us = im__load_us(im__load_client_part(L, t_sched, t_dispatch));
  if ((double)(t_dispatch - t_sched) > L->lag_max_ns)
    L->lag_max_ns = (double)(t_dispatch - t_sched);
  L->res->dispatched++;
  r->kind = is_warmup(L, r, index) ? IM_KIND_WARMUP : IM_KIND_MEASURED;
  launch(L, a);
}

/* ---- completion --------------------------------------------------------- */

void im__load_store_record(struct loader *L, struct im_record *r) {
  L->tokens += r->output_tokens;
  im__load_writer_push(&L->writer, r);
}

void im__load_insert_pending(struct loader *L, struct attempt *a) {
  struct attempt **pp = &L->retries;
  while (*pp && (*pp)->rec.t_sched <= a->rec.t_sched)
    pp = &(*pp)->next;
  a->next = *pp;
  *pp = a;
}

static void schedule_retry(struct loader *L, struct attempt *old, int64_t now) {
  struct attempt *a = im__load_attempt_new(L);
  if (!a) {
    L->fatal = IM_NOMEM;
    return;
  }
  a->spec = old->spec;
  memset(&old->spec, 0, sizeof old->spec);
  /* Same request again: the body moves over (the prompt text is gone). */
  struct im_buf body = a->body;
  a->body = old->body;
  old->body = body;
  a->index = old->index;
  a->slot = old->slot;
  a->sstate = old->sstate;
  old->sstate = NULL;
  a->sid = old->sid;
  a->turn = old->turn;
  a->budget = old->budget;
  a->cancel = old->cancel;
  struct im_record *r = &a->rec, *o = &old->rec;
  r->logical_id = o->logical_id;
  r->attempt = o->attempt + 1;
  r->kind = IM_KIND_RETRY;
  r->t_sched_first = o->t_sched_first;
  r->prompt_tokens = a->spec.prompt_tokens;
  r->requested_tokens = o->requested_tokens;
  r->ignore_eos = o->ignore_eos;
  r->temperature = o->temperature;
  r->top_p = o->top_p;
  r->context_tokens = o->context_tokens;
  r->session = o->session;
  r->turn = o->turn;
  r->content_class = o->content_class;
  memcpy(r->reasoning_effort, o->reasoning_effort, sizeof r->reasoning_effort);
  r->thinking = o->thinking;
  r->tools = o->tools;
  memcpy(r->model, o->model, sizeof r->model);
  r->target = o->target;
  /* Exponential backoff with jitter, or the server's Retry-After when it
   * sent one; both capped. */
  int64_t cap = L->cfg->retry_backoff_max_ns;
  int64_t wait = im_load_backoff_ns(o->attempt, im_rng_uniform(&L->rng), cap);
  if (old->retry_after_s >= 0)
    wait = old->retry_after_s > cap / 1000000000 ? cap : old->retry_after_s * 1000000000;
  r->t_sched = now + wait;
  im__load_insert_pending(L, a);
}

static void closed_loop_next(struct loader *L, uint32_t slot, int64_t t);

static void start_queued(struct loader *L) {
  while (L->queue_head && (!L->cfg->max_concurrency || L->inflight < L->cfg->max_concurrency)) {
    struct attempt *q = queue_pop(&L->queue_head, &L->queue_tail);
    L->queued--;
    launch(L, q);
  }
}

void im__load_count_output(struct loader *L, struct attempt *a) {
  struct im_record *r = &a->rec;
  uint64_t n = (uint64_t)L->cfg->count_output(L->cfg->count_ctx, a->answer.data, a->answer.len) +
               L->cfg->count_output(L->cfg->count_ctx, a->reasoning.data, a->reasoning.len);
  r->output_tokens = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
  r->output_source = IM_COUNT_TOKENIZER;
}

/* Hands the record and the answer (copied when the session's next turn
 * needs it) to the builder to count and store; false when that cannot be
 * (no builder, no memory): count here. */
static bool count_away(struct loader *L, struct attempt *a) {
  if (!L->builder.on)
    return false;
  struct attempt *j = calloc(1, sizeof *j);
  if (!j)
    return false;
  if (L->cfg->session) { /* the next turn sends this answer back */
    im_buf_init(&j->answer, a->answer.max);
    if (a->answer.len && im_buf_append(&j->answer, a->answer.data, a->answer.len) != IM_OK) {
      im_buf_cleanup(&j->answer);
      free(j);
      return false;
    }
  } else {
    j->answer = a->answer;
    im_buf_init(&a->answer, a->answer.max);
  }
  j->L = L;
  j->count_job = true;
  j->rec = a->rec; /* the chunk arrays move over */
  a->rec.chunk_us = NULL;
  a->rec.chunk_tokens = NULL;
  a->rec.cap_chunks = a->rec.n_chunks = 0;
  j->reasoning = a->reasoning;
  im_buf_init(&a->reasoning, a->reasoning.max);
  im__load_builder_push(L, j);
  return true;
}

static void finish_attempt(struct loader *L, struct attempt *a, CURLcode res) {
  struct im_record *r = &a->rec;
  int64_t now = rel_now(L);
  bool count = false;
  if (a->in_multi) {
    curl_multi_remove_handle(L->multi, a->easy);
    a->in_multi = false;
    list_unlink(&L->active, a);
    L->inflight--;
  } else if (a->in_h1) {
    im__load_h1_release(L, a);
    list_unlink(&L->active, a);
    L->inflight--;
  }
  if ((a->easy || L->h1) && r->t_start >= 0) {
    long nconn = a->h1_opened, port = 0, os_errno = a->os_errno; /* h1: its own (t_send too) */
    if (a->easy) {
      /* t_send: libcurl's clock starts when the handle is added (our
       * t_start) and PRETRANSFER is when the request is about to be
       * written, after connect and TLS. */
      curl_off_t pre_us = 0;
      if (curl_easy_getinfo(a->easy, CURLINFO_PRETRANSFER_TIME_T, &pre_us) == CURLE_OK &&
          pre_us > 0)
        r->t_send = r->t_start + (int64_t)pre_us * 1000;
      curl_easy_getinfo(a->easy, CURLINFO_NUM_CONNECTS, &nconn);
      curl_easy_getinfo(a->easy, CURLINFO_LOCAL_PORT, &port);
      curl_easy_getinfo(a->easy, CURLINFO_OS_ERRNO, &os_errno);
    }
    if (port <= 0)
      port = a->local_port;
    if (os_errno == EMFILE || os_errno == ENFILE)
      L->res->fd_exhausted++;
    if (os_errno == EADDRNOTAVAIL)
      L->res->port_exhausted++;
    r->conn_new = nconn > 0;
    if (port > 0 && port < 65536) {
      /* A connection's id is given when its first attempt ends. Under HTTP/2
       * the attempt that opened it (conn_new) may end after streams that
       * shared it: the top bit says the opener was seen, so only an opener
       * on a port whose opener was already seen is a new connection. */
      const uint64_t opener_seen = UINT64_C(1) << 63;
      uint64_t *pc = &L->port_conn[port];
      if (!*pc || (r->conn_new && (*pc & opener_seen))) {
        /* Unique across shards, as attempt ids are. */
        *pc = 1 + im__load_spread(L, L->cfg->shard + (uint64_t)L->cfg->n_shards * L->next_conn++);
        L->res->connections_opened++;
      }
      if (r->conn_new)
        *pc |= opener_seen;
      r->conn_id = *pc & ~opener_seen;
    }
  }
  r->t_end = now;
  if (a->n_grams) {
    r->repetition = im_stats_repetition(a->grams, a->n_grams);
    r->ngrams = a->n_grams;
  }
  if (a->entropy_tokens)
    r->entropy = a->entropy_sum / (double)a->entropy_tokens;
  r->error = im__load_classify(a, res);
  /* A refusal for the context's size is named (record.h im_errclass_refine,
   * issue 29): the body of a 4xx, else the streamed error's words. */
  /* Usage without reasoning_tokens (llama.cpp): the reasoning chunks'
   * tokens, as streamed (issue 29). */
  if (!a->usage_reasoning && a->stream_reasoning)
    r->reasoning_tokens = a->stream_reasoning;
  uint32_t ovf_prompt = 0, ovf_limit = 0;
  if (r->error == IM_EC_HTTP_4XX || r->error == IM_EC_ERROR_EVENT)
    r->error = a->errbody.len
                   ? im_errclass_refine(r->error, a->errbody.data, a->errbody.len, &ovf_prompt,
                                        &ovf_limit)
                   : im_errclass_refine(r->error, a->reason, strlen(a->reason), &ovf_prompt,
                                        &ovf_limit);
  if (!im__load_cancel_finish(L, a, res) && r->error == IM_EC_NONE && L->cfg->check_json &&
      strcmp(r->finish_reason, "tool_calls") != 0 &&
      !im_json_conforms(a->answer.data, a->answer.len, L->cfg->json_schema, a->reason,
                        sizeof a->reason))
    r->error = IM_EC_INVALID_JSON;
  if (r->n_chunks && a->usage_seen && r->output_tokens) {
    r->output_source = IM_COUNT_USAGE;
  } else if (r->n_chunks && L->cfg->count_output && a->capture && a->capture_reasoning) {
    count = true; /* below: on the builder when there is one */
  } else if (r->n_chunks) {
    /* At most 2^24 chunks of at most 2^16 tokens: a 64-bit sum cannot wrap. */
    uint64_t sum = 0;
    for (uint32_t i = 0; i < r->n_chunks; i++)
      sum += im_record_chunk_tokens(r, i);
    r->output_tokens = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
    r->output_source = IM_COUNT_CHUNKS;
  }
  if (r->error != IM_EC_NONE) {
    L->errors++;
    if (!L->res->first_error[0]) {
      const char *why = a->reason[0] ? a->reason : a->errbody.len ? a->errbody.data : "";
      if (!a->reason[0] && r->http_status == 200 && a->head_len &&
          (r->error == IM_EC_NO_OUTPUT || r->error == IM_EC_MALFORMED)) {
        /* Not an OpenAI answer at all (an HTML page, a proxy's JSON): say
         * what it was. */
        snprintf(L->res->first_error, sizeof L->res->first_error,
                 "%s (HTTP 200): not an OpenAI answer: Content-Type %s, body begins \"%s\"",
                 im_errclass_name(r->error), a->ctype[0] ? a->ctype : "(none)", a->head);
      } else if (r->error == IM_EC_CONTEXT_OVERFLOW && (ovf_prompt || ovf_limit)) {
        snprintf(L->res->first_error, sizeof L->res->first_error,
                 "context_overflow (HTTP %d): prompt %" PRIu32 " tokens, context %" PRIu32
                 " tokens (the server's counts): %.160s",
                 r->http_status, ovf_prompt, ovf_limit, why);
      } else {
        snprintf(L->res->first_error, sizeof L->res->first_error, "%s (HTTP %d)%s%.160s",
                 im_errclass_name(r->error), r->http_status, why[0] ? ": " : "", why);
      }
    }
  } else {
    L->done++;
    if (r->t_first >= 0 && r->kind == IM_KIND_MEASURED) /* the progress line's: warm-up out */
      (void)im_hist_record(&L->ttft_hist, r->t_first - r->t_start);
  }
  /* A stream that already delivered tokens is never retried (docs/metrics.md §1). */
  bool retry = im__load_retryable(r->error) && r->n_chunks == 0 && r->attempt <= L->cfg->retries &&
               !L->res->interrupted && !L->aborting;
  if (!count || !count_away(L, a)) {
    if (count)
      im__load_count_output(L, a);
    im__load_store_record(L, r);
  }
  uint32_t slot = a->slot;
  bool closed = !L->cfg->times;
  bool session_over = false;
  if (retry)
    schedule_retry(L, a, now);
  else if (L->cfg->session && (session_over = !im__load_session_next(L, a, now)) && a->turn + 1 < a->budget)
    L->turns_reserved -= a->budget - (a->turn + 1); /* ended early: its turns go back */
  im__load_attempt_free(a);
  start_queued(L);
  if (closed && !retry && !L->aborting && (!L->cfg->session || session_over))
    closed_loop_next(L, slot, now);
}

void im__load_finish(struct loader *L, struct attempt *a, CURLcode res) {
  finish_attempt(L, a, res);
}

/* ---- schedule ----------------------------------------------------------- */

void im__load_session_abandon(struct loader *L, struct attempt *n) {
  if (!L->abandoned++)
    im_warn("a session's history outgrew its bound (the server answers more than asked?): "
            "such sessions end early");
  if (n->turn < n->budget)
    L->turns_reserved -= n->budget - n->turn; /* its unsent turns go back */
  L->turns_started--;
  if (!L->cfg->times && !L->aborting)
    closed_loop_next(L, n->slot, rel_now(L));
}

static void closed_loop_next(struct loader *L, uint32_t slot, int64_t t) {
  const struct im_load_config *c = L->cfg;
  uint32_t budget = 0;
  bool over = L->stop_dispatch || (c->duration_ns && t >= c->duration_ns);
  if (!over && c->session && !(budget = im__load_session_budget(L))) {
    /* The turn cap is reserved: no new session, but the running ones go on
     * (one that ends early gives turns back and a session may start). */
    L->arrivals_done = true;
    return;
  }
  if (over || (!c->session && c->max_requests && L->closed_started >= c->max_requests)) {
    if (!L->stop_dispatch) {
      L->stop_dispatch = true;
      L->stop_t = t;
      L->grace_deadline = t + c->grace_ns;
    }
    return;
  }
  uint64_t index = im__load_global_index(L, L->closed_started++);
  L->res->scheduled++;
  if (c->session)
    L->turns_started++;
  dispatch_new(L, index, t, slot, budget);
}

static void dispatch_due(struct loader *L) {
  const struct im_load_config *c = L->cfg;
  int64_t now = rel_now(L);
  while (!L->stop_dispatch && c->times && L->next_arrival < c->n_times &&
         c->times[L->next_arrival] <= now) {
    uint32_t budget = 0;
    if (c->session && !(budget = im__load_session_budget(L))) {
      L->next_arrival = c->n_times; /* the turn cap is spent: no more sessions */
      break;
    }
    size_t i = L->next_arrival++;
    L->res->scheduled++;
    if (c->session)
      L->turns_started++;
    dispatch_new(L, im__load_global_index(L, i), c->times[i], 0, budget);
  }
  while (L->retries && L->retries->rec.t_sched <= now) {
    struct attempt *a = L->retries;
    L->retries = a->next;
    a->next = NULL;
    int64_t td = rel_now(L);
    a->rec.t_dispatch = td;
    a->rec.lag_client_us = im__load_us(im__load_client_part(L, a->rec.t_sched, td));
    if (a->pending_turn) {
      a->pending_turn = false;
      L->res->scheduled++;
      L->res->dispatched++;
      if ((double)(td - a->rec.t_sched) > L->lag_max_ns)
        L->lag_max_ns = (double)(td - a->rec.t_sched);
    }
    launch(L, a);
  }
  if (c->session && c->times && L->next_arrival >= c->n_times) {
    /* Session starts are over; started sessions go on with their turns. */
    L->arrivals_done = true;
  } else if (c->times && L->next_arrival >= c->n_times && !L->stop_dispatch) {
    L->stop_dispatch = true;
    L->stop_t = c->n_times ? c->times[c->n_times - 1] : 0;
    L->grace_deadline = (L->stop_t > now ? L->stop_t : now) + c->grace_ns;
  }
}

static void process_done(struct loader *L) {
  CURLMsg *m;
  int left;
  if (L->h1)
    im__load_h1_collect(L);
  while ((m = curl_multi_info_read(L->multi, &left))) {
    if (m->msg != CURLMSG_DONE)
      continue;
    struct attempt *a = NULL;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&a);
    if (a)
      finish_attempt(L, a, m->data.result);
  }
}

/* Runs libcurl's due actions when it asked for them "now" (on_curl_timer),
 * then collects finished transfers, until it stops asking. Called right
 * after whatever added handles or handled events, outside curl callbacks. */
static void kick_curl(struct loader *L) {
  int running;
  if (L->h1) /* the h1 transport's attempts that ended while starting */
    im__load_h1_collect(L);
  for (int i = 0; L->curl_now && i < 64; i++) {
    L->curl_now = false;
    curl_multi_socket_action(L->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    process_done(L);
  }
  if (L->curl_now) { /* still asking after 64 turns: let the loop breathe */
    L->curl_now = false;
    struct itimerspec its = {.it_value = {.tv_nsec = 1}};
    timerfd_settime(L->tfd_curl, 0, &its, NULL);
  }
}

/* Our own phase timeouts (libcurl has connect and total only). */
static void check_timeouts(struct loader *L, int64_t now) {
  const struct im_load_config *c = L->cfg;
  for (struct attempt *a = L->active, *next; a; a = next) {
    next = a->next;
    struct im_record *r = &a->rec;
    if (r->t_first < 0 && c->timeout_ttft_ns && now - r->t_start > c->timeout_ttft_ns)
      r->error = IM_EC_TIMEOUT_TTFT;
    else if (r->t_first >= 0 && c->timeout_idle_ns && now - a->last_chunk > c->timeout_idle_ns)
      r->error = IM_EC_TIMEOUT_IDLE;
    else
      continue;
    finish_attempt(L, a, CURLE_OPERATION_TIMEDOUT);
  }
}

/* An attempt the client lets go at the end (the grace ran out, or an
 * interrupt): aborted, and marked cancelled (the client let go, the server
 * did not cut it). A warm-up keeps its kind: kind aborted would count it
 * among the measured requests. */
static void abandon(struct im_record *r) {
  if (r->kind != IM_KIND_WARMUP)
    r->kind = IM_KIND_ABORTED;
  r->error = IM_EC_ABORTED;
  r->cancelled = true;
}

/* Ends everything still pending: in flight, queued, retries. */
static void abort_all(struct loader *L) {
  L->aborting = true;
  while (L->active) {
    struct attempt *a = L->active;
    abandon(&a->rec);
    finish_attempt(L, a, CURLE_ABORTED_BY_CALLBACK);
  }
  struct attempt *a;
  while ((a = queue_pop(&L->queue_head, &L->queue_tail))) {
    abandon(&a->rec);
    a->rec.t_end = rel_now(L);
    im__load_store_record(L, &a->rec);
    im__load_attempt_free(a);
  }
  while ((a = L->retries)) {
    L->retries = a->next;
    im__load_attempt_free(a); /* never dispatched: not an attempt */
  }
}

/* ---- progress ----------------------------------------------------------- */

/* The live counters (loader.h): relaxed stores, one loop turn stale at most. */
static void publish_progress(struct loader *L) {
  struct im_load_progress *p = L->cfg->progress;
  if (!p)
    return;
  atomic_store_explicit(&p->scheduled, L->res->scheduled, memory_order_relaxed);
  atomic_store_explicit(&p->dispatched, L->res->dispatched, memory_order_relaxed);
  atomic_store_explicit(&p->completed, L->done, memory_order_relaxed);
  atomic_store_explicit(&p->failed, L->errors, memory_order_relaxed);
  atomic_store_explicit(&p->tokens, L->tokens, memory_order_relaxed);
  atomic_store_explicit(&p->in_flight, L->inflight, memory_order_relaxed);
  atomic_store_explicit(&p->queued, L->queued, memory_order_relaxed);
}

/* ---- the loop ----------------------------------------------------------- */

static double thread_cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* One self-monitoring sample per second: CPU share and worst dispatch lag. */
static void self_sample(struct loader *L, int64_t now) {
  if (now < L->next_sample_t)
    return;
  double cpu = thread_cpu_s();
  struct im_load_result *res = L->res;
  if (res->n_samples == L->cap_samples) {
    size_t cap = L->cap_samples ? L->cap_samples * 2 : 64;
    struct im_load_sample *p = realloc(res->samples, cap * sizeof *p);
    if (!p)
      return;
    res->samples = p;
    L->cap_samples = cap;
  }
  double span = (double)(now - (L->next_sample_t - 1000000000)) * 1e-9;
  res->samples[res->n_samples++] = (struct im_load_sample){
      .t = now,
      .cpu_share = span > 0 ? (cpu - L->sample_cpu_s) / span : 0,
      .lag_max_ms = L->lag_max_ns / 1e6,
      .receive_lag_max_ms = (double)L->recv_lag_max_ns / 1e6,
      .in_flight = L->inflight,
  };
  L->sample_cpu_s = cpu;
  if (L->cfg->progress) {
    atomic_store_explicit(&L->cfg->progress->lag_max_ns, (int_fast64_t)L->lag_max_ns,
                          memory_order_relaxed);
    atomic_store_explicit(&L->cfg->progress->receive_lag_max_ns,
                          (int_fast64_t)L->recv_lag_max_ns, memory_order_relaxed);
  }
  L->lag_max_ns = 0;
  L->recv_lag_max_ns = 0;
  if (L->cfg->progress && im_hist_count(&L->ttft_hist))
    atomic_store_explicit(&L->cfg->progress->ttft_p50_ns, im_hist_percentile(&L->ttft_hist, 0.5),
                          memory_order_relaxed);
  L->next_sample_t = now + 1000000000;
}

static bool finished(const struct loader *L) {
  return (L->stop_dispatch || L->arrivals_done) && !L->active && !L->queue_head && !L->retries &&
         !L->builder.away;
}

static enum im_err loop(struct loader *L) {
  struct epoll_event evs[256];
  int running = 0;
  int64_t next_timeout_check = 0;
  while (!L->fatal) {
    int64_t now = rel_now(L);
    if (atomic_load(&L->writer.failed)) {
      /* Records that cannot reach the disk: stop now, keep them in memory. */
      im_error("load engine: stopping: %s", L->res->record_write_error);
      L->fatal = IM_IO;
      break;
    }
    int interrupt = L->cfg->interrupt ? atomic_load(L->cfg->interrupt) : 0;
    if (interrupt >= 1 && !L->stop_dispatch) {
      L->stop_dispatch = true;
      L->stop_t = now;
      L->grace_deadline = now + L->cfg->grace_ns;
      L->res->interrupted = true;
    }
    if (interrupt >= 1)
      L->res->interrupted = true;
    if (interrupt >= 2 || (L->stop_dispatch && now >= L->grace_deadline))
      abort_all(L);
    if (finished(L))
      break;
    if (L->stop_dispatch && L->cfg->session)
      im__load_drop_pending_turns(L);
    if ((!L->cfg->times || L->cfg->session) && !L->stop_dispatch && L->cfg->duration_ns &&
        now >= L->cfg->duration_ns) {
      /* Closed loop: the duration ends dispatching even when nothing
       * completes (a frozen server). */
      L->stop_dispatch = true;
      L->stop_t = L->cfg->duration_ns;
      L->grace_deadline = L->stop_t + L->cfg->grace_ns;
    }
    if (now >= next_timeout_check) {
      check_timeouts(L, now);
      next_timeout_check = now + 50000000;
    }
    kick_curl(L); /* handles added at the top of this turn (timeouts, relaunches) */
    publish_progress(L);
    self_sample(L, now);
    arm_sched(L);
    if (!L->builder.on) {
      /* No builder (it could not start): prepare in the slack before the
       * next arrival, stopping 300 µs before it is due (at most 2 ms of
       * work per turn). A closed loop's first round was prepared before
       * t0; afterwards a few ready requests suffice (more would only hold
       * memory: a prepared attempt owns its prompt, body and curl handle;
       * the builder keeps the same number, pre_target). */
      int64_t due = next_due(L);
      int64_t until = now + 2000000;
      if (due >= 0 && due - 300000 < until)
        until = due - 300000;
      if (!L->cfg->times)
        until = L->pre_n < L->builder.pre_target ? until : now;
      im__load_prepare_until(L, until);
    }
    kick_curl(L);
    int64_t sleep_t = rel_now(L);
    int n = epoll_wait(L->ep, evs, 256, 50);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      im_error("epoll_wait: %s", strerror(errno));
      return IM_SYS;
    }
    /* The turn's marks (who is late: im__load_client_part). */
    L->prev_turn_t = L->turn_t;
    L->prev_turn_cpu = L->turn_cpu;
    L->sleep_t = sleep_t;
    L->turn_t = rel_now(L);
    L->turn_cpu = im__load_client_clock(L);
    /* receive_lag's origin: a read callback's clock read minus this. */
    L->t_wake = n ? L->turn_t : -1;
    /* Arrivals already due go out first: the sockets that became readable
     * while the loop slept (a backlog after the host held it off) would
     * otherwise delay them by the loop's own work, charged to the client.
     * The timer's event, later in evs, then finds nothing due. */
    if (next_due(L) >= 0 && next_due(L) <= L->turn_t)
      dispatch_due(L);
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == L->tfd_sched) {
        drain_fd(fd);
        L->sched_armed = INT64_MIN; /* expired: disarmed */
        dispatch_due(L);
      } else if (fd == L->tfd_curl) {
        drain_fd(fd);
        curl_multi_socket_action(L->multi, CURL_SOCKET_TIMEOUT, 0, &running);
      } else if (fd == L->cfg->wake_fd) {
        drain_fd(fd);
      } else if (L->builder.on && fd == L->builder.fd) {
        im__load_builder_collect(L);
      } else if (!L->h1 || !im__load_h1_event(L, fd, evs[i].events)) {
        int mask = ((evs[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
                   ((evs[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
                   ((evs[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(L->multi, fd, mask, &running);
      }
      process_done(L);
      kick_curl(L);
      /* ... and those that came due while this event was handled: a long
       * turn (many readable streams) delays an arrival by one event's
       * work, not by the whole turn's. */
      if (next_due(L) >= 0 && next_due(L) <= rel_now(L))
        dispatch_due(L);
    }
    /* Arrivals that came due while events were handled. */
    if (next_due(L) >= 0 && next_due(L) <= rel_now(L))
      dispatch_due(L);
    process_done(L);
    kick_curl(L);
    L->tail_t = rel_now(L);
    L->tail_cpu = im__load_client_clock(L);
  }
  publish_progress(L);
  return L->fatal;
}

static int add_fd(int ep, int fd) {
  struct epoll_event ev;
  memset(&ev, 0, sizeof ev);
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

enum im_err im_load_run(const struct im_load_config *cfg, struct im_load_result *out) {
  memset(out, 0, sizeof *out);
  struct loader L;
  memset(&L, 0, sizeof L);
  L.cfg = cfg;
  L.res = out;
  L.ep = L.tfd_sched = L.tfd_curl = -1;
  L.grace_deadline = INT64_MAX;
  L.sched_armed = INT64_MIN;
  enum im_err err = IM_SYS;
  bool arrived = false;
  if (!cfg->workload || (!cfg->times && !cfg->concurrency) || !cfg->n_shards ||
      cfg->shard >= cfg->n_shards || (cfg->n_shards > 1 && !cfg->start) || !cfg->proc_shards ||
      cfg->proc_shard >= cfg->proc_shards || cfg->n_urls > IM_RECORD_MAX_TARGETS ||
      (cfg->n_urls > 1 && !cfg->base_urls)) {
    err = IM_INVAL;
    goto out;
  }
  im_oai_chunk_init(&L.chunk, 0);
  if (im_hist_init_default(&L.ttft_hist) || im_hist_init_default(&out->receive_lag)) {
    err = IM_NOMEM;
    goto out;
  }
  L.port_conn = calloc(65536, sizeof *L.port_conn);
  if (!L.port_conn) {
    err = IM_NOMEM;
    goto out;
  }
  L.ep = epoll_create1(EPOLL_CLOEXEC);
  L.tfd_sched = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  L.tfd_curl = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (L.ep < 0 || L.tfd_sched < 0 || L.tfd_curl < 0 || add_fd(L.ep, L.tfd_sched) ||
      add_fd(L.ep, L.tfd_curl) || (cfg->wake_fd >= 0 && add_fd(L.ep, cfg->wake_fd))) {
    im_error("event loop setup: %s", strerror(errno));
    goto out;
  }
  L.multi = curl_multi_init();
  if (!L.multi) {
    err = IM_NOMEM;
    goto out;
  }
  curl_multi_setopt(L.multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(L.multi, CURLMOPT_SOCKETDATA, &L);
  curl_multi_setopt(L.multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
  curl_multi_setopt(L.multi, CURLMOPT_TIMERDATA, &L);
  /* Keep every idle connection (the default cache holds 4 per handle added
   * at once, which churns connections under bursts). */
  curl_multi_setopt(L.multi, CURLMOPT_MAXCONNECTS, 100000L);
  if (cfg->max_connections) {
    curl_multi_setopt(L.multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)cfg->max_connections);
    curl_multi_setopt(L.multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)cfg->max_connections);
  }
  /* The client transport: the engine's own HTTP/1.1 client when nothing
   * needs libcurl (--transport). */
  char why[320];
  struct im_load_transport_in ti = {.mode = cfg->transport, .url = cfg->base_url,
                                    .urls = cfg->n_urls > 1 ? cfg->base_urls : NULL,
                                    .n_urls = cfg->n_urls > 1 ? cfg->n_urls : 0,
                                    .http2 = cfg->http2, .net = cfg->net, .headers = cfg->headers};
  int tr = im_load_transport_pick(&ti, why, sizeof why);
  if (tr < 0) {
    im_error("load engine: %s", why);
    err = IM_INVAL;
    goto out;
  }
  if (tr == IM_TRANSPORT_H1 && (err = im__load_h1_setup(&L)) != IM_OK) {
    im_error("load engine: cannot set up the h1 transport: %s", im_strerror(err));
    goto out;
  }
  im_rng_seed(&L.rng, im_mix64((uint64_t)im_now_ns() ^ cfg->shard));
  /* W3C trace ids: one 64-bit half per run (the salt), the other per
   * logical request; the same in every shard. */
  L.trace_run = im_trace_run(cfg->run_salt);

  /* The ring holds a closed loop's first round, or the first arrivals. */
  L.pre_cap = cfg->times ? 256 : (cfg->concurrency > 256 ? cfg->concurrency : 256);
  if (L.pre_cap > 16384)
    L.pre_cap = 16384;
  L.pre = calloc(L.pre_cap, sizeof *L.pre);
  if (!L.pre) {
    err = IM_NOMEM;
    goto out;
  }
  /* Records go to disk on a thread of their own. */
  if ((err = im__load_writer_start(&L.writer, cfg->jsonl_fd, out)) != IM_OK)
    goto out;
  L.writer.on_record = cfg->on_record;
  L.writer.on_record_ctx = cfg->on_record_ctx;
  err = IM_SYS;
  L.t0 = im_now_ns(); /* provisional, for prepare_until's clock */
  /* Before t0, what the start needs: the first arrivals of an open loop, a
   * closed loop's first round only (its slots: sessions or --concurrency).
   * The rest is prepared as the run goes, on the builder when there is one
   * (issue 29: 256 prompts prepared ahead cost ~2,500 /tokenize calls of
   * --tokenizer server before a one-session run). */
  if (cfg->times)
    im__load_prepare_until(&L, INT64_MAX);
  else
    im__load_prepare_n(&L, cfg->concurrency ? cfg->concurrency : 1);

  /* Every shard of the stage starts at the same instant (loader.h). */
  arrived = true;
  if (cfg->start) {
    if (!im__load_start_wait(cfg->start, true, &L.t0, &out->wall_start_ns)) {
      im_error("load engine: another loader thread failed to start");
      goto out;
    }
  } else {
    out->wall_start_ns = im_wall_ns();
    L.t0 = im_now_ns();
  }
  out->t0_mono = L.t0;
  struct im_host_probe probe;
  memset(&probe, 0, sizeof probe);
  if (cfg->shard == 0 && !cfg->no_host_probe &&
      im_host_probe_start(&probe, L.t0, IM_HOST_PROBE_PERIOD_NS) != IM_OK)
    im_warn("load engine: the host probe could not start: host lateness is not measured");

  struct rusage ru0, ru1;
  getrusage(RUSAGE_THREAD, &ru0);
  /* Requests, sessions' next turns and output counts are built on a
   * thread of their own; without one, on the loop (a fallback). */
  L.builder.pre_target = pre_target(cfg, L.pre_cap);
  if (im__load_builder_start(&L) != IM_OK || add_fd(L.ep, L.builder.fd))
    im__load_builder_stop(&L);
  L.sample_cpu_s = thread_cpu_s();
  L.next_sample_t = 1000000000;
  if (!cfg->times) {
    for (uint32_t s = 0; s < cfg->concurrency; s++)
      closed_loop_next(&L, s, 0);
  } else {
    dispatch_due(&L);
  }
  err = loop(&L);
  out->elapsed_ns = rel_now(&L);
  im_host_probe_stop(&probe);
  out->host = probe.lat; /* owned by out now */
  if (cfg->on_drained)
    cfg->on_drained(cfg->on_drained_ctx);
  getrusage(RUSAGE_THREAD, &ru1);
  out->cpu_s = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
               (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
               1e-6 * (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec +
                               ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec);
  if (cfg->times && !cfg->session) {
    /* Scheduled = arrivals due before dispatching stopped (sessions count
     * their turns as they are scheduled). */
    int64_t stop = L.stop_dispatch ? L.stop_t : out->elapsed_ns;
    uint64_t due = 0;
    for (size_t i = 0; i < cfg->n_times && cfg->times[i] <= stop; i++)
      due++;
    out->scheduled = due > out->scheduled ? due : out->scheduled;
  }
out:
  if (!arrived && cfg->start) {
    int64_t t0, wall;
    (void)im__load_start_wait(cfg->start, false, &t0, &wall);
  }
  im__load_builder_stop(&L);
  if (err)
    abort_all(&L);
  if (im__load_writer_stop(&L.writer) != IM_OK && !err)
    err = IM_NOMEM;
  if (!err && out->record_write_failures)
    err = IM_IO;
  im__load_h1_teardown(&L);
  if (L.multi)
    curl_multi_cleanup(L.multi);
  if (L.ep >= 0)
    close(L.ep);
  if (L.tfd_sched >= 0)
    close(L.tfd_sched);
  if (L.tfd_curl >= 0)
    close(L.tfd_curl);
  free(L.port_conn);
  im_hist_cleanup(&L.ttft_hist);
  im_oai_chunk_cleanup(&L.chunk);
  for (size_t i = 0; L.pre && i < L.pre_n; i++) /* the builder has stopped */
    im__load_attempt_free(L.pre[(L.pre_head + i) % L.pre_cap]);
  free(L.pre);
  return err;
}

void im_load_result_cleanup(struct im_load_result *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->n_records; i++)
    im_record_cleanup(&r->records[i]);
  free(r->records);
  r->records = NULL;
  r->n_records = 0;
  free(r->samples);
  r->samples = NULL;
  r->n_samples = 0;
  im_hist_cleanup(&r->receive_lag);
  im_hostlat_cleanup(&r->host);
}
