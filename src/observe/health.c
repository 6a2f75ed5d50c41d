/* The health poller: see observe/health.h. */
#include "observe/health.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/thread.h"
#include "record/record.h"

static size_t discard(char *d, size_t s, size_t n, void *ud) {
  (void)d;
  (void)ud;
  return s * n;
}

/* One check, recorded on the current stage's clock. */
static void check_once(struct im_health *h, CURL *c, struct im_buf *line) {
  int64_t t0 = atomic_load(&h->t0);
  if (!t0)
    return; /* before the first stage: nothing to put it on */
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.id = r.logical_id = h->next_id++;
  r.attempt = 1;
  r.kind = h->probe ? IM_KIND_PROBE : IM_KIND_HEALTH;
  if (h->probe)
    r.requested_tokens = 1;
  r.stage = atomic_load(&h->stage);
  int64_t t = im_now_ns();
  r.t_sched = r.t_sched_first = r.t_dispatch = r.t_start = r.t_send = t - t0;
  CURLcode rc = curl_easy_perform(c);
  r.t_end = im_now_ns() - t0;
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  r.http_status = (int)status;
  r.t_hdr = status ? r.t_end : -1;
  r.error = rc == CURLE_OPERATION_TIMEDOUT ? IM_EC_TIMEOUT_TOTAL
            : rc != CURLE_OK               ? IM_EC_CONNECT
            : status >= 500                ? IM_EC_HTTP_5XX
            : status == 429                ? IM_EC_HTTP_429
            : status >= 400                ? IM_EC_HTTP_4XX
                                           : IM_EC_NONE;
  im_buf_reset(line);
  if (im_record_to_jsonl(&r, line) == IM_OK) {
    ssize_t w = write(h->jsonl_fd, line->data, line->len);
    if (w != (ssize_t)line->len)
      im_warn("a health check could not be recorded");
  }
  const struct im_record_hook *hook = atomic_load_explicit(&h->hook, memory_order_acquire);
  if (hook)
    hook->fn(hook->ctx, &r);
  im_record_cleanup(&r);
}

static void *health_main(void *arg) {
  struct im_health *h = arg;
  CURL *c = curl_easy_init();
  struct curl_slist *hdr = NULL;
  char auth[600];
  struct im_buf line;
  im_buf_init(&line, IM_RECORD_LINE_MAX);
  if (!c)
    return NULL;
  curl_easy_setopt(c, CURLOPT_URL, h->url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(h->interval_ns / 1000000 > 100 ? h->interval_ns / 1000000 : 100));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  im_net_apply(c, h->net, true);
  if (h->api_key && h->api_key[0]) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %.500s", h->api_key);
    hdr = curl_slist_append(NULL, auth);
  }
  struct im_rng rng;
  im_rng_seed(&rng, h->seed);
  if (h->probe) {
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, h->body);
    /* A probe may wait behind the whole batch: its own limit, not the gap. */
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60000L);
  }
  if (hdr)
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
  int64_t next = im_now_ns();
  if (h->probe)
    next += (int64_t)(im_rng_exp(&rng) * (double)h->interval_ns);
  for (;;) {
    /* Short naps, so a stop is seen within 50 ms. */
    while (!atomic_load(&h->stop) && im_now_ns() < next) {
      int64_t left = next - im_now_ns();
      struct timespec ts = {0, left > 50000000 ? 50000000 : (left > 0 ? left : 0)};
      nanosleep(&ts, NULL);
    }
    if (atomic_load(&h->stop))
      break;
    check_once(h, c, &line);
    /* One check at a time: instants that passed while it waited are
     * skipped (a probe that waits behind a stalled server is itself the
     * evidence; the next ones are not sent in a burst after it). */
    int64_t now = im_now_ns();
    do
      next += h->probe ? 1 + (int64_t)(im_rng_exp(&rng) * (double)h->interval_ns) : h->interval_ns;
    while (next < now);
  }
  curl_slist_free_all(hdr);
  curl_easy_cleanup(c);
  im_buf_cleanup(&line);
  return NULL;
}

/* The fields both kinds share, then the thread. 0, or -1 after saying why. */
static enum im_err start(struct im_health *h, int64_t interval_ns, const struct im_net *net,
                         const char *api_key, int jsonl_fd, uint64_t first_id, const char *what,
                         char *err, size_t err_len) {
  h->interval_ns = interval_ns;
  h->net = net;
  h->api_key = api_key;
  h->jsonl_fd = jsonl_fd;
  h->next_id = first_id;
  atomic_init(&h->t0, 0);
  atomic_init(&h->stage, 0);
  atomic_init(&h->stop, false);
  int e = im_thread_start(&h->thread, health_main, h);
  if (e)
    return im_errf(err, err_len, IM_SYS, "cannot start the %s: %s", what, strerror(e));
  h->running = true;
  return IM_OK;
}

enum im_err im_health_start(struct im_health *h, const char *base, const char *path,
                             int64_t interval_ns, const struct im_net *net, const char *api_key,
                             int jsonl_fd, char *err, size_t err_len) {
  memset(h, 0, sizeof *h);
  snprintf(h->url, sizeof h->url, "%s%s", base, path ? path : "/health");
  /* Ids below 2^53: exact in JSON readers that use doubles. */
  return start(h, interval_ns, net, api_key, jsonl_fd, UINT64_C(1) << 52, "health poller", err,
               err_len);
}

enum im_err im_probe_start(struct im_health *h, const char *base, const char *path,
                            const char *model, bool chat, double rate, uint64_t seed,
                            const struct im_net *net, const char *api_key, int jsonl_fd, char *err,
                            size_t err_len) {
  memset(h, 0, sizeof *h);
  snprintf(h->url, sizeof h->url, "%s%s", base, path);
  /* The model name is the user's: escaped by jansson, never by hand. */
  json_t *m = json_string(model ? model : "");
  char *mj = m ? json_dumps(m, JSON_ENCODE_ANY) : NULL;
  json_decref(m);
  int n = mj ? snprintf(h->body, sizeof h->body,
                        chat ? "{\"model\":%s,\"messages\":[{\"role\":\"user\",\"content\":"
                               "\"ping\"}],\"max_tokens\":1,\"stream\":false}"
                             : "{\"model\":%s,\"prompt\":\"ping\",\"max_tokens\":1,"
                               "\"stream\":false}",
                        mj)
             : -1;
  free(mj);
  if (n < 0 || (size_t)n >= sizeof h->body)
    return im_errf(err, err_len, IM_INVAL, "--probe-rate: the model name is too long for a probe");
  h->probe = true;
  h->seed = seed ^ UINT64_C(0x70726f6265); /* "probe": apart from the schedule's stream */
  return start(h, (int64_t)(1e9 / rate), net, api_key, jsonl_fd,
               (UINT64_C(1) << 52) + (UINT64_C(1) << 51), "prober", err, err_len);
}

void im_health_stage(struct im_health *h, uint32_t stage, int64_t t0_mono) {
  if (!h)
    return;
  atomic_store(&h->stage, stage);
  atomic_store(&h->t0, t0_mono);
}

void im_health_stop(struct im_health *h) {
  if (!h || !h->running)
    return;
  atomic_store(&h->stop, true);
  pthread_join(h->thread, NULL);
  h->running = false;
}

void im_health_hook(struct im_health *h, const struct im_record_hook *hook) {
  if (h)
    atomic_store_explicit(&h->hook, hook, memory_order_release);
}
