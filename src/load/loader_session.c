/* Multi-turn sessions in the load engine (see loader.h, struct
 * im_session_ops): when a turn ends, the session's next turn goes to the
 * loader's builder thread (building a long context costs milliseconds the
 * loop must spend reading sockets), comes back through an eventfd and waits
 * its think time in the pending list; a cap on requests is shared out as
 * whole sessions. */
#include <curl/curl.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/log.h"
#include "core/thread.h"
#include "load/loader_int.h"

/* Builds a turn's request (prompt from the workload, body, handle):
 * touches only the attempt, the workload (whose tokenizer the workload
 * locks) and read-only loader state, so it runs on either thread. */
static enum im_err build_turn(struct loader *L, struct attempt *n) {
  const struct im_load_config *c = L->cfg;
  enum im_err err = c->session->turn(c->workload_ctx, n->sid, n->turn, &n->sstate, n->answer.data,
                                     n->answer.len, &n->spec);
  im_buf_reset(&n->answer); /* from now on it holds this turn's answer */
  if (err)
    return err;
  im__load_fill_record(n);
  if (im__load_build_http(L, n) != IM_OK && n->easy) {
    curl_easy_cleanup(n->easy); /* start_http builds it again and reports */
    n->easy = NULL;
  }
  return IM_OK;
}

/* A built turn joins the pending list, due after its think time. */
static void turn_ready(struct loader *L, struct attempt *n) {
  const struct im_load_config *c = L->cfg;
  struct im_record *r = &n->rec;
  int64_t due = r->t_sched;
  r->kind = c->warmup_ns > 0 ? (due < c->warmup_ns ? IM_KIND_WARMUP : IM_KIND_MEASURED)
                             : (n->index <= c->warmup_requests ? IM_KIND_WARMUP : IM_KIND_MEASURED);
  n->pending_turn = true;
  im__load_insert_pending(L, n);
}

/* After a session's turn ended (not to be retried): its next turn, due
 * after the think time, handed to the builder thread (or built here when
 * there is none). False when the session is over (last turn, a failure,
 * dispatching stopped, or its share of the request cap used). */
bool im__load_session_next(struct loader *L, struct attempt *a, int64_t now) {
  const struct im_load_config *c = L->cfg;
  const struct im_session_ops *so = c->session;
  if (a->rec.error != IM_EC_NONE || a->turn + 1 >= a->budget || L->stop_dispatch || L->aborting)
    return false;
  if (a->rec.kind == IM_KIND_CANCELLED)
    return false; /* the user left: the session ends */
  if (so->agent && strcmp(a->rec.finish_reason, "tool_calls") != 0)
    return false; /* an agent chain ends at its final answer */
  int64_t due = now + so->think_ns;
  if (c->duration_ns && due >= c->duration_ns)
    return false;
  struct attempt *n = im__load_attempt_new(L);
  if (!n) {
    L->fatal = IM_NOMEM;
    return false;
  }
  n->sstate = a->sstate;
  a->sstate = NULL;
  n->sid = a->sid;
  n->slot = a->slot;
  n->turn = a->turn + 1;
  n->budget = a->budget;
  /* The answer moves over: the builder reads it, then the buffer takes
   * this turn's answer. */
  struct im_buf answer = n->answer;
  n->answer = a->answer;
  a->answer = answer;
  L->turns_started++;
  n->index = L->turns_started; /* the turn's rank, for --warmup N */
  n->rec.t_sched = n->rec.t_sched_first = due;
  if (!L->builder.on) {
    enum im_err err = build_turn(L, n);
    if (err != IM_OK) {
      if (err != IM_LIMIT)
        L->fatal = IM_INVAL;
      else
        L->turns_started--; /* ends here: the caller gives its turns back */
      im__load_attempt_free(n);
      return false;
    }
    turn_ready(L, n);
    return true;
  }
  im__load_builder_push(L, n);
  return true;
}

void im__load_builder_push(struct loader *L, struct attempt *n) {
  pthread_mutex_lock(&L->builder.mu);
  n->next = NULL;
  if (L->builder.in_tail)
    L->builder.in_tail->next = n;
  else
    L->builder.in_head = n;
  L->builder.in_tail = n;
  pthread_cond_signal(&L->builder.cv);
  pthread_mutex_unlock(&L->builder.mu);
  L->builder.away++;
}

/* Whether the ring wants another prepared request (builder.mu held). */
static bool want_prepare(const struct loader *L) {
  return L->pre_n < L->builder.pre_target && L->pre_n < L->pre_cap && !L->builder.prep_err &&
         L->pre_local_next < im__load_local_total(L);
}

/* The most requests the builder prepares between two takes of its lock. */
#define BUILD_BATCH 16
/* ... and the longest it builds before it publishes what it has: about
 * ten requests of the synthetic workload. */
#define BUILD_BATCH_NS 50000

/* Jobs first (a turn is due after its think time, a record waits for its
 * count), then the ring of new requests. */
static void *builder_main(void *arg) {
  struct loader *L = arg;
  pthread_mutex_lock(&L->builder.mu);
  for (;;) {
    while (!L->builder.in_head && !L->builder.stop && !want_prepare(L))
      pthread_cond_wait(&L->builder.cv, &L->builder.mu);
    if (L->builder.stop)
      break;
    if (!L->builder.in_head) {
      /* The ring's free places are built in one batch and published under
       * one lock: taking the lock per request made the loop, which takes
       * a request under the same lock, wait for it (a futex call on each
       * side, about 0.15 per request with 100 connections). An empty ring
       * gets one request first (the loop may be waiting for it), and a batch is
       * never larger than what the ring holds while it is built. */
      uint64_t local = L->pre_local_next, total = im__load_local_total(L);
      size_t want = L->builder.pre_target - L->pre_n, room = L->pre_cap - L->pre_n;
      if (want > room)
        want = room;
      if (want > BUILD_BATCH)
        want = BUILD_BATCH;
      if (want > total - local)
        want = (size_t)(total - local);
      if (want > L->pre_n) /* no more than the loop has ready meanwhile */
        want = L->pre_n;
      if (!want)
        want = 1;
      pthread_mutex_unlock(&L->builder.mu);
      struct attempt *built[BUILD_BATCH];
      size_t n = 0;
      enum im_err err = IM_OK;
      int64_t t0 = im_now_ns();
      while (n < want && (built[n] = im__load_prepare(L, local + n, &err)) != NULL) {
        n++;
        /* Slow builds (a tokenizer) are published as they come: the loop
         * may run out of ready requests while a long batch is built, and
         * would then wait for all of it rather than for one. */
        if (im_now_ns() - t0 > BUILD_BATCH_NS)
          break;
      }
      pthread_mutex_lock(&L->builder.mu);
      for (size_t i = 0; i < n; i++) {
        L->pre[(L->pre_head + L->pre_n) % L->pre_cap] = built[i];
        if (!L->pre_n)
          L->pre_first = built[i]->index;
        L->pre_n++;
      }
      L->pre_local_next = local + n;
      if (n < want && err != IM_OK)
        L->builder.prep_err = err;
      pthread_cond_signal(&L->builder.ring_cv);
      continue;
    }
    struct attempt *n = L->builder.in_head;
    L->builder.in_head = n->next;
    if (!L->builder.in_head)
      L->builder.in_tail = NULL;
    n->next = NULL;
    pthread_mutex_unlock(&L->builder.mu);
    if (n->count_job)
      im__load_count_output(L, n);
    else
      n->build_err = build_turn(L, n);
    pthread_mutex_lock(&L->builder.mu);
    if (L->builder.out_tail)
      L->builder.out_tail->next = n;
    else
      L->builder.out_head = n;
    L->builder.out_tail = n;
    uint64_t one = 1;
    ssize_t w = write(L->builder.fd, &one, sizeof one);
    (void)w; /* an eventfd write fails only on overflow, which cannot happen here */
  }
  pthread_mutex_unlock(&L->builder.mu);
  return NULL;
}

enum im_err im__load_builder_start(struct loader *L) {
  L->builder.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (L->builder.fd < 0)
    return IM_SYS;
  if (pthread_mutex_init(&L->builder.mu, NULL) || pthread_cond_init(&L->builder.cv, NULL) ||
      pthread_cond_init(&L->builder.ring_cv, NULL)) {
    close(L->builder.fd);
    L->builder.fd = -1;
    return IM_SYS;
  }
  int e = im_thread_start(&L->builder.thread, builder_main, L);
  if (e != 0) {
    im_error("load engine: cannot start the builder thread: %s", strerror(e));
    pthread_mutex_destroy(&L->builder.mu);
    pthread_cond_destroy(&L->builder.cv);
    pthread_cond_destroy(&L->builder.ring_cv);
    close(L->builder.fd);
    L->builder.fd = -1;
    return IM_SYS;
  }
  L->builder.on = true;
  return IM_OK;
}

/* Frees a list of jobs, storing the records of count jobs (uncounted:
 * their chunks' count) so that no finished attempt is lost. */
static void free_list(struct loader *L, struct attempt *a) {
  while (a) {
    struct attempt *next = a->next;
    if (a->count_job) {
      uint64_t sum = 0;
      for (uint32_t i = 0; i < a->rec.n_chunks; i++)
        sum += im_record_chunk_tokens(&a->rec, i);
      if (a->rec.output_source != IM_COUNT_TOKENIZER) {
        a->rec.output_tokens = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
        a->rec.output_source = IM_COUNT_CHUNKS;
      }
      im__load_store_record(L, &a->rec);
    }
    im__load_attempt_free(a);
    a = next;
  }
}

void im__load_builder_stop(struct loader *L) {
  if (!L->builder.on)
    return;
  pthread_mutex_lock(&L->builder.mu);
  L->builder.stop = true;
  pthread_cond_signal(&L->builder.cv);
  pthread_mutex_unlock(&L->builder.mu);
  pthread_join(L->builder.thread, NULL);
  free_list(L, L->builder.out_head);
  free_list(L, L->builder.in_head);
  L->builder.in_head = L->builder.in_tail = L->builder.out_head = L->builder.out_tail = NULL;
  L->builder.away = 0;
  pthread_mutex_destroy(&L->builder.mu);
  pthread_cond_destroy(&L->builder.cv);
  pthread_cond_destroy(&L->builder.ring_cv);
  close(L->builder.fd);
  L->builder.fd = -1;
  L->builder.on = false;
}

void im__load_builder_collect(struct loader *L) {
  uint64_t v;
  ssize_t r = read(L->builder.fd, &v, sizeof v);
  (void)r;
  pthread_mutex_lock(&L->builder.mu);
  struct attempt *a = L->builder.out_head;
  L->builder.out_head = L->builder.out_tail = NULL;
  pthread_mutex_unlock(&L->builder.mu);
  while (a) {
    struct attempt *next = a->next;
    a->next = NULL;
    L->builder.away--;
    if (a->count_job) {
      im__load_store_record(L, &a->rec);
      im__load_attempt_free(a);
    } else if (a->build_err == IM_LIMIT) {
      im__load_session_abandon(L, a);
      im__load_attempt_free(a);
    } else if (a->build_err) {
      L->fatal = IM_INVAL;
      im__load_attempt_free(a);
    } else {
      turn_ready(L, a); /* dropped at once if dispatching has stopped */
    }
    a = next;
  }
}

/* Dispatching stopped: sessions' next turns are never sent. */
void im__load_drop_pending_turns(struct loader *L) {
  for (struct attempt **pp = &L->retries; *pp;) {
    struct attempt *a = *pp;
    if (a->pending_turn) {
      *pp = a->next;
      im__load_attempt_free(a);
    } else {
      pp = &a->next;
    }
  }
}


/* Turns a new session may send: whole sessions while max_requests allows,
 * then what is left (0: no new session). */
uint32_t im__load_session_budget(struct loader *L) {
  const struct im_load_config *c = L->cfg;
  uint32_t turns = c->session->turns;
  if (!c->max_requests)
    return turns;
  uint64_t left = c->max_requests > L->turns_reserved ? c->max_requests - L->turns_reserved : 0;
  uint32_t b = left < turns ? (uint32_t)left : turns;
  L->turns_reserved += b;
  return b;
}
