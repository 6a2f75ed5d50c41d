/* Multi-turn sessions in the load engine (see loader.h, struct
 * im_session_ops): a session's next turn is built when the previous one
 * ends and waits its think time in the pending list; a cap on requests is
 * shared out as whole sessions. */
#include <curl/curl.h>

#include "load/loader_int.h"

/* After a session's turn ended (not to be retried): its next turn, built now
 * and due after the think time. False when the session is over (last turn,
 * a failure, dispatching stopped, or its share of the request cap used). */
bool im__load_session_next(struct loader *L, struct attempt *a, int64_t now) {
  const struct im_load_config *c = L->cfg;
  const struct im_session_ops *so = c->session;
  if (a->rec.error != IM_EC_NONE || a->turn + 1 >= a->budget || L->stop_dispatch || L->aborting)
    return false;
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
  n->index = a->index;
  n->slot = a->slot;
  n->turn = a->turn + 1;
  n->budget = a->budget;
  if (so->turn(c->workload_ctx, n->sid, n->turn, &n->sstate, a->answer.data, a->answer.len,
               &n->spec) != IM_OK) {
    L->fatal = IM_INVAL;
    im__load_attempt_free(n);
    return false;
  }
  im__load_fill_record(n);
  L->turns_started++;
  struct im_record *r = &n->rec;
  r->t_sched = r->t_sched_first = due;
  r->kind = c->warmup_ns > 0 ? (due < c->warmup_ns ? IM_KIND_WARMUP : IM_KIND_MEASURED)
                             : (L->turns_started <= c->warmup_requests ? IM_KIND_WARMUP
                                                                        : IM_KIND_MEASURED);
  n->pending_turn = true;
  /* Built now, in the think time: at its due time it is stamp-and-send. */
  if (im__load_build_http(L, n) != IM_OK && n->easy) {
    curl_easy_cleanup(n->easy);
    n->easy = NULL;
  }
  im__load_insert_pending(L, n);
  return true;
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
