/* The load engine's attempts and the requests it prepares ahead (see
 * loader_int.h): an attempt's life, the workload's request for an index,
 * and the ring of prepared requests the builder thread keeps full. */
#include <stdio.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "load/loader_int.h"

/* ---- attempts ----------------------------------------------------------- */

void im__load_attempt_free(struct attempt *a) {
  if (!a)
    return;
  if (a->sstate && a->L->cfg->session)
    a->L->cfg->session->end(a->L->cfg->workload_ctx, a->sstate);
  im_buf_cleanup(&a->answer);
  im_buf_cleanup(&a->reasoning);
  free(a->grams);
  if (a->easy)
    curl_easy_cleanup(a->easy);
  curl_slist_free_all(a->hdrs);
  im_sse_cleanup(&a->sse);
  im_buf_cleanup(&a->body);
  im_buf_cleanup(&a->errbody);
  im_buf_cleanup(&a->h1_head);
  im_req_spec_cleanup(&a->spec);
  im_record_cleanup(&a->rec);
  free(a);
}

struct attempt *im__load_attempt_new(struct loader *L) {
  struct attempt *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->L = L;
  im_record_reset(&a->rec);
  a->rec.id = 1 + im__load_spread(L, L->cfg->shard + L->cfg->n_shards *
                                          atomic_fetch_add(&L->next_id, 1));
  a->rec.attempt = 1;
  a->rec.logical_id = a->rec.id;
  a->rec.stage = L->cfg->stage;
  a->usage_completion = -1;
  a->retry_after_s = -1;
  im_buf_init(&a->body, IM_LOAD_BODY_MAX);
  im_buf_init(&a->errbody, ERRBODY_MAX);
  im_buf_init(&a->h1_head, IM_LOAD_BODY_MAX);
  im_sse_init(&a->sse, NULL, im__load_on_sse_event, a);
  im_sse_report_fields(&a->sse, 1); /* llama.cpp's "error:" lines */
  im_buf_init(&a->answer, IM_LOAD_ANSWER_MAX);
  im_buf_init(&a->reasoning, IM_LOAD_ANSWER_MAX);
  a->capture = L->cfg->session != NULL || L->cfg->count_output != NULL || L->cfg->check_json;
  a->capture_reasoning = L->cfg->count_output != NULL;
  return a;
}

/* ---- requests prepared ahead -------------------------------------------- */

/* Local requests this loader will ever send (UINT64_MAX: unbounded). */
uint64_t im__load_local_total(const struct loader *L) {
  if (L->cfg->times)
    return L->cfg->n_times;
  return L->cfg->max_requests ? L->cfg->max_requests : UINT64_MAX;
}


/* A new attempt for request `index` with its workload filled in; NULL (and
 * *err set) on failure. Any thread. */
static struct attempt *new_request(struct loader *L, uint64_t index, enum im_err *err) {
  struct attempt *a = im__load_attempt_new(L);
  if (!a) {
    *err = IM_NOMEM;
    return NULL;
  }
  const struct im_session_ops *so = L->cfg->session;
  enum im_err e = so ? so->turn(L->cfg->workload_ctx, index, 0, &a->sstate, NULL, 0, &a->spec)
                     : L->cfg->workload(L->cfg->workload_ctx, index, &a->spec);
  if (e != IM_OK) {
    *err = IM_INVAL;
    im__load_attempt_free(a);
    return NULL;
  }
  a->sid = index;
  a->index = index;
  im__load_fill_record(a);
  return a;
}

/* The record's copy of what the workload asked for. */
void im__load_fill_record(struct attempt *a) {
  struct im_record *r = &a->rec;
  r->prompt_tokens = a->spec.prompt_tokens;
  r->requested_tokens = a->spec.max_tokens;
  r->ignore_eos = a->spec.ignore_eos;
  r->temperature = a->spec.temperature;
  r->top_p = a->spec.top_p;
  r->context_tokens = a->spec.prompt_tokens;
  r->session = a->spec.session;
  r->turn = a->spec.turn;
  r->content_class = a->spec.content_class;
  r->tools = a->spec.tools;
  const struct im_load_config *mc = a->L->cfg;
  if (mc->n_mix) { /* one model per session (or request): its index picks it */
    uint64_t h = im_mix64(mc->mix_seed ^ im_mix64(a->sid * 2 + 1));
    double u = (double)(h >> 11) * 0x1p-53;
    size_t k = 0;
    while (k + 1 < mc->n_mix && u >= mc->mix_cum[k])
      k++;
    const char *name = mc->mix_names[k] ? mc->mix_names[k] : mc->model;
    snprintf(r->model, sizeof r->model, "%s", name ? name : "");
  }
  /* Several targets: round robin over requests, or over sessions (a
   * session's turns share one server's prefix cache). */
  if (mc->n_urls > 1)
    r->target = (uint16_t)(1 + a->sid % mc->n_urls);
  im__load_cancel_plan(a->L, a);
  const struct im_load_config *c = a->L->cfg;
  snprintf(r->reasoning_effort, sizeof r->reasoning_effort, "%s",
           c->reasoning_effort ? c->reasoning_effort : "");
  r->thinking = (int8_t)(c->thinking > 0 ? 1 : c->thinking < 0 ? -1 : 0);
}

/* See loader_int.h. A build failure is left for start_http to report when
 * the request is due. */
struct attempt *im__load_prepare(struct loader *L, uint64_t local, enum im_err *err) {
  struct attempt *a = new_request(L, im__load_global_index(L, local), err);
  if (a && im__load_build_http(L, a) != IM_OK && a->easy) {
    curl_easy_cleanup(a->easy);
    a->easy = NULL;
  }
  return a;
}

/* Prepares one more request into the ring on the loop (before t0, or
 * always when there is no builder); false when full or done. */
static bool prepare_one(struct loader *L) {
  if (L->pre_n == L->pre_cap || L->pre_local_next >= im__load_local_total(L) || L->stop_dispatch ||
      L->fatal)
    return false;
  enum im_err err = IM_OK;
  struct attempt *a = im__load_prepare(L, L->pre_local_next, &err);
  if (!a) {
    L->fatal = err;
    return false;
  }
  L->pre[(L->pre_head + L->pre_n) % L->pre_cap] = a;
  if (!L->pre_n)
    L->pre_first = a->index;
  L->pre_n++;
  L->pre_local_next++;
  return true;
}

/* Prepares requests until the ring holds n (or is full, or all are). */
void im__load_prepare_n(struct loader *L, size_t n) {
  while (L->pre_n < n && prepare_one(L))
    ;
}

/* Fills the ring until `until` (run-relative ns) or until it is full. */
void im__load_prepare_until(struct loader *L, int64_t until) {
  while (rel_now(L) < until && prepare_one(L))
    ;
}

static struct attempt *ring_pop(struct loader *L) {
  struct attempt *a = L->pre[L->pre_head];
  L->pre[L->pre_head] = NULL;
  L->pre_head = (L->pre_head + 1) % L->pre_cap;
  L->pre_n--;
  if (L->pre_n) /* the ring holds consecutive local requests */
    L->pre_first = L->pre[L->pre_head]->index;
  return a;
}

/* The prepared attempt for `index` (requests are taken in order). With the
 * builder, waits for it when it is late (the wait shows as dispatch lag;
 * building it here would take the tokenizer on the loop); without, builds
 * it now. */
struct attempt *im__load_take_request(struct loader *L, uint64_t index) {
  if (L->builder.on) {
    struct attempt *a = NULL;
    enum im_err err = IM_OK;
    pthread_mutex_lock(&L->builder.mu);
    if (!L->pre_n && !L->builder.prep_err && L->pre_local_next < im__load_local_total(L)) {
      /* A wait for the client's own builder: the client's time (who is
       * late, im__load_client_clock). */
      int64_t t = im_now_ns();
      while (!L->pre_n && !L->builder.prep_err && L->pre_local_next < im__load_local_total(L))
        pthread_cond_wait(&L->builder.ring_cv, &L->builder.mu);
      L->own_wait_ns += im_now_ns() - t;
    }
    bool wake = false;
    if (L->pre_n && L->pre_first == index) {
      a = ring_pop(L);
      /* Room to prepare: the builder is woken when half the ring is
       * used, and then fills it, so it wakes once per half a ring rather
       * than once per request (a futex call each). */
      wake = L->pre_n <= L->builder.pre_target / 2;
    } else if (!L->pre_n) {
      err = L->builder.prep_err ? L->builder.prep_err : IM_STATE;
    } else {
      err = IM_STATE; /* out of order: a bug */
    }
    pthread_mutex_unlock(&L->builder.mu);
    /* Signalled after the unlock: woken under the lock, the builder would
     * block at once on the mutex the loop still holds (a futex wait there
     * and a futex wake here). Nothing is lost: it tests the ring under the
     * lock before it waits. */
    if (wake)
      pthread_cond_signal(&L->builder.cv);
    if (!a)
      L->fatal = err;
    return a;
  }
  if (L->pre_n && L->pre_first == index)
    return ring_pop(L);
  /* Not prepared in time: the ring restarts after this one. */
  uint64_t local = im__load_local_index(L, index);
  if (!L->pre_n && local >= L->pre_local_next)
    L->pre_local_next = local + 1;
  enum im_err err = IM_OK;
  struct attempt *a = new_request(L, index, &err);
  if (!a)
    L->fatal = err;
  return a;
}

