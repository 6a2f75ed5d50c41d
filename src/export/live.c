/* The run's live page (export/live.h). The gauges are read at scrape time on
 * the listener's thread: the loaders publish their counters anyway (the
 * progress line reads them), and the observer's latest values are copied
 * under its own lock; nothing here runs on a measuring loop. */
#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/selfcheck.h"
#include "observe/health.h"
#include "export/metrics_listen.h"
#include "export/live.h"
#include "net/http_json.h"
#include "core/clock.h"
#include "core/stats.h"
#include "observe/observer.h"
#include "report/live.h"

struct im_live_export {
  struct im_live *live;
  struct im_metrics_listen ml;
  pthread_mutex_t mu;      /* guards prog, n, t0 */
  pthread_mutex_t page_mu; /* one page at a time: names, the gauges */
  const struct im_load_progress *prog;
  uint32_t n;
  int64_t t0;
  struct im_observer *obs;
  double late_limit_s;
  struct im_observer_latest latest; /* under page_mu */
  struct im_record_hook hook;       /* for the health poller and prober */
  bool frozen;                      /* obs gone: latest holds its last values (page_mu) */
};

/* The server's concepts and the TCP states, latest samples. */
static void observed(struct im_live_export *l, struct im_live_gauges *g) {
  if (l->obs ? im_observer_latest(l->obs, &l->latest) != IM_OK : !l->frozen)
    return;
  for (size_t i = 0; i < l->latest.n && g->n_server < IM_LIVE_MAX_SERVER; i++) {
    g->server_name[g->n_server] = l->latest.names[i];
    g->server_value[g->n_server++] = l->latest.values[i];
  }
  if (l->latest.has_tcp) {
    g->time_wait = l->latest.time_wait;
    g->established = l->latest.established;
  }
}

static void refresh(struct im_live_export *l, struct im_live *live) {
  struct im_live_gauges g = {.in_flight = NAN,
                             .queued = NAN,
                             .scheduled = NAN,
                             .dispatched = NAN,
                             .dispatch_lag_max_s = NAN,
                             .receive_lag_max_s = NAN,
                             .time_wait = NAN,
                             .established = NAN,
                             .run_elapsed_s = NAN,
                             .dispatch_late_limit_s = l->late_limit_s};
  pthread_mutex_lock(&l->mu);
  if (l->prog) {
    g.in_flight = g.queued = g.scheduled = g.dispatched = 0;
    g.dispatch_lag_max_s = g.receive_lag_max_s = 0;
    for (uint32_t k = 0; k < l->n; k++) {
      const struct im_load_progress *p = &l->prog[k];
      g.in_flight += (double)atomic_load_explicit(&p->in_flight, memory_order_relaxed);
      g.queued += (double)atomic_load_explicit(&p->queued, memory_order_relaxed);
      g.scheduled += (double)atomic_load_explicit(&p->scheduled, memory_order_relaxed);
      g.dispatched += (double)atomic_load_explicit(&p->dispatched, memory_order_relaxed);
      g.dispatch_lag_max_s =
          fmax(g.dispatch_lag_max_s,
               (double)atomic_load_explicit(&p->lag_max_ns, memory_order_relaxed) * 1e-9);
      g.receive_lag_max_s =
          fmax(g.receive_lag_max_s,
               (double)atomic_load_explicit(&p->receive_lag_max_ns, memory_order_relaxed) * 1e-9);
    }
    g.run_elapsed_s = (double)(im_now_ns() - l->t0) * 1e-9;
  }
  pthread_mutex_unlock(&l->mu);
  observed(l, &g);
  /* The self-check's dispatch rule so far (analyze/selfcheck.h): fail when the
   * share of first attempts later than L is significantly above 1 %. */
  uint64_t total, late = im_live_late(live, &total);
  double p = im_stats_binom_sf((int64_t)late, (int64_t)total, IM_CHECK_LATE_SHARE);
  g.client_valid = total && p < 1.0 - IM_CHECK_CONFIDENCE ? 0 : 1;
  im_live_set_gauges(live, &g);
}

/* The page: gauges refreshed, then rendered, under page_mu (the listener
 * and the final push may ask at once). */
static enum im_err page(void *ctx, struct im_buf *out) {
  struct im_live_export *l = ctx;
  pthread_mutex_lock(&l->page_mu);
  refresh(l, l->live);
  enum im_err err = im_live_render(l->live, out);
  pthread_mutex_unlock(&l->page_mu);
  return err;
}

enum im_err im_live_export_start(const struct im_live_export_opts *o,
                                 struct im_live_export **out, char *err, size_t err_len) {
  struct im_live_export *l = calloc(1, sizeof *l);
  *out = NULL;
  if (!l || im_live_new(&l->live) != IM_OK) {
    free(l);
    return im_errf(err, err_len, IM_NOMEM, "out of memory");
  }
  pthread_mutex_init(&l->mu, NULL);
  pthread_mutex_init(&l->page_mu, NULL);
  l->obs = o->obs;
  /* L as the audit sets it (analyze/selfcheck.c). */
  double lim_ms = IM_CHECK_LAG_FLOOR_MS;
  if (o->slo_ttft_ms * IM_CHECK_LAG_SLO_SHARE > lim_ms)
    lim_ms = o->slo_ttft_ms * IM_CHECK_LAG_SLO_SHARE;
  l->late_limit_s = lim_ms * 1e-3;
  im_live_set_late_limit(l->live, (int64_t)llround(lim_ms * 1e6));
  enum im_err e = o->listen ? im_metrics_listen_start(&l->ml, o->listen, page, l, err, err_len)
                            : IM_OK;
  if (e) {
    pthread_mutex_destroy(&l->mu);
    pthread_mutex_destroy(&l->page_mu);
    im_live_free(l->live);
    free(l);
    return e;
  }
  *out = l;
  return IM_OK;
}

bool im_live_export_address(const struct im_live_export *l, const char **host, uint16_t *port) {
  if (!l || !l->ml.on)
    return false;
  *host = l->ml.host;
  *port = l->ml.port;
  return true;
}

void im_live_export_attach(struct im_live_export *l, const struct im_load_progress *p, uint32_t n) {
  if (!l)
    return;
  pthread_mutex_lock(&l->mu);
  l->prog = p;
  l->n = p ? n : 0;
  if (p)
    l->t0 = im_now_ns();
  pthread_mutex_unlock(&l->mu);
}

void im_live_export_on_record(void *ctx, const struct im_record *r) {
  struct im_live_export *l = ctx;
  im_live_observe(l->live, r);
}

void im_live_export_hook(struct im_live_export *l, struct im_health *health,
                       struct im_health *probe) {
  if (!l)
    return;
  l->hook = (struct im_record_hook){.fn = im_live_export_on_record, .ctx = l};
  im_health_hook(health, &l->hook);
  im_health_hook(probe, &l->hook);
}

/* libcurl's read callback over the page. */
struct upload {
  const char *p;
  size_t left;
};

static size_t read_page(char *dst, size_t size, size_t n, void *ctx) {
  struct upload *u = ctx;
  size_t k = size * n < u->left ? size * n : u->left;
  memcpy(dst, u->p, k);
  u->p += k;
  u->left -= k;
  return k;
}

static size_t discard(char *p, size_t size, size_t n, void *ctx) {
  (void)p;
  (void)ctx;
  return size * n;
}

enum im_err im_live_export_push(struct im_live_export *l, const char *url, const char *run_id,
                                bool insecure, char *err, size_t err_len) {
  if (!l || !url)
    return IM_OK;
  struct im_buf body;
  im_buf_init(&body, (size_t)16 << 20);
  enum im_err rc = IM_IO;
  char target[2400];
  size_t ul = strlen(url);
  while (ul && url[ul - 1] == '/')
    ul--;
  snprintf(target, sizeof target, "%.*s/metrics/job/infermeter/run/%s", (int)ul, url, run_id);
  CURL *c = curl_easy_init();
  struct curl_slist *h = curl_slist_append(NULL, "Content-Type: text/plain; version=0.0.4");
  if (!c || !h || page(l, &body) != IM_OK) {
    rc = im_errf(err, err_len, IM_NOMEM, "--pushgateway: out of memory");
    goto out;
  }
  struct upload u = {body.data, body.len};
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_easy_setopt(c, CURLOPT_URL, target);
  curl_easy_setopt(c, CURLOPT_UPLOAD, 1L); /* PUT: replaces the run's group */
  curl_easy_setopt(c, CURLOPT_READFUNCTION, read_page);
  curl_easy_setopt(c, CURLOPT_READDATA, &u);
  curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body.len);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (insecure) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  CURLcode cr = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  char shown[2400];
  im_url_redact(target, shown, sizeof shown);
  if (cr != CURLE_OK)
    im_errf(err, err_len, rc, "--pushgateway %s: %s", shown,
            errbuf[0] ? errbuf : curl_easy_strerror(cr));
  else if (status / 100 != 2)
    im_errf(err, err_len, rc, "--pushgateway %s: HTTP %ld", shown, status);
  else
    rc = IM_OK;
out:
  curl_slist_free_all(h);
  if (c)
    curl_easy_cleanup(c);
  im_buf_cleanup(&body);
  return rc;
}

void im_live_export_stop(struct im_live_export **lp, int64_t linger_ns) {
  struct im_live_export *l = *lp;
  if (!l)
    return;
  /* The final page once: wait for one more scrape to complete. */
  uint64_t seen = im_metrics_listen_served(&l->ml);
  int64_t until = im_now_ns() + linger_ns;
  while (l->ml.on && linger_ns > 0 && im_metrics_listen_served(&l->ml) == seen &&
         im_now_ns() < until) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  im_metrics_listen_stop(&l->ml);
  pthread_mutex_destroy(&l->mu);
  pthread_mutex_destroy(&l->page_mu);
  im_live_free(l->live);
  free(l);
  *lp = NULL;
}

void im_live_export_freeze(struct im_live_export *l) {
  if (!l)
    return;
  pthread_mutex_lock(&l->page_mu);
  if (l->obs && im_observer_latest(l->obs, &l->latest) == IM_OK)
    l->frozen = true;
  l->obs = NULL;
  pthread_mutex_unlock(&l->page_mu);
}
