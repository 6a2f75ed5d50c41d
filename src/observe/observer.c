/* The observer thread (see observer.h). */
#include "observe/observer.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/thread.h"
#include "observe/gpu.h"
#include "observe/namemap.h"
#include "observe/sockstat.h"
#include "net/net.h"
#include "record/series.h"

#define PAGE_MAX ((size_t)32 << 20)

struct source {
  size_t index;
  const char *url;
  bool dcgm;
  CURL *easy;
  struct im_buf page;
  struct im_nm_snapshot *snap;
  struct im_series_labelled *per_series; /* IM_SERIES_MAX_PER_SERIES, for the line */
};

struct im_observer {
  struct im_observer_config cfg;
  pthread_t thread;
  pthread_mutex_t mu; /* stop, and the set */
  pthread_cond_t cv;
  bool stop, started, joined;
  struct source src[IM_OBS_MAX_SCRAPE + 1];
  size_t n_src;
  struct im_sockstat *ss;
  struct im_gpu *gpu;
  struct im_gpu_snapshot gsnap; /* the sample being taken */
  struct im_buf line;           /* the line being written; the sampling thread's */
  struct im_series_set *set;    /* every line written, read back; under mu */
  bool warned;                  /* a line could not be kept or written */
};

void im_observer_config_default(struct im_observer_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->interval_ns = 1000000000;
  cfg->raw_fd = -1;
  cfg->series_fd = -1;
}

/* ---- sampling ------------------------------------------------------------ */

static size_t on_page(char *d, size_t s, size_t n, void *ud) {
  return im_buf_append(ud, d, s * n) == IM_OK ? s * n : 0;
}

/* false when the file refused the bytes (disk full, ...). */
static bool write_all(int fd, const char *p, size_t len) {
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    p += w;
    len -= (size_t)w;
  }
  return true;
}

/* Writes the line in o->line to series.jsonl (one write(2): O_APPEND keeps
 * it whole) and keeps it, read back, in the set. Sampling thread only. */
static void emit(struct im_observer *o, enum im_err fmt_err) {
  if (fmt_err) {
    if (!o->warned)
      im_warn("observer: a sample could not be formatted (%s); series.jsonl lacks it",
              im_strerror(fmt_err));
    o->warned = true;
    im_buf_reset(&o->line);
    return;
  }
  if (o->cfg.series_fd >= 0 && !write_all(o->cfg.series_fd, o->line.data, o->line.len) && !o->warned) {
    im_warn("observer: cannot append to series.jsonl (%s); samples kept in memory only",
            strerror(errno));
    o->warned = true;
  }
  pthread_mutex_lock(&o->mu);
  enum im_err err = im_series_add_line(o->set, o->line.data, o->line.len - 1);
  pthread_mutex_unlock(&o->mu);
  if (err && !o->warned) {
    im_warn("observer: out of memory keeping samples; series.jsonl still has them");
    o->warned = true;
  }
  im_buf_reset(&o->line);
}

/* Numbers carried by labels of unmapped metrics that the figures read:
 * vLLM's KV-cache geometry (docs/server-metrics.md, KV residency). */
static const struct {
  const char *metric, *label;
} raw_wanted[] = {{"vllm:cache_config_info", "num_gpu_blocks"},
                  {"vllm:cache_config_info", "block_size"}};

/* An engine's sample no concept maps (llama.cpp's tokens/s gauges, vLLM's
 * and SGLang's other gauges and counters), kept raw under its own name
 * (with its labels, when they fit) in the line's raw list with label "":
 * histogram parts, info gauges and the simulator's own extras are left to
 * the raw page (--scrape-raw). */
static bool keep_unmapped(const struct im_nm_raw *r) {
  static const char *const skip_sfx[] = {"_bucket", "_sum", "_count", "_info", "_created"};
  static const char *const prefixes[] = {"vllm:", "sglang:", "llamacpp:", "tgi_", "trtllm_"};
  bool engine = false;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    engine |= !strncmp(r->name, prefixes[i], strlen(prefixes[i]));
  size_t n = strlen(r->name);
  for (size_t i = 0; engine && i < sizeof skip_sfx / sizeof skip_sfx[0]; i++) {
    size_t k = strlen(skip_sfx[i]);
    engine = !(n >= k && !strcmp(r->name + n - k, skip_sfx[i]));
  }
  return engine && !isnan(r->value);
}

static size_t raw_labels(const struct im_nm_snapshot *snap, struct im_series_raw *out) {
  size_t n = 0;
  for (size_t w = 0; w < sizeof raw_wanted / sizeof raw_wanted[0]; w++) {
    char key[64];
    snprintf(key, sizeof key, "%s=\"", raw_wanted[w].label);
    for (size_t i = 0; i < snap->n_raw; i++) {
      const struct im_nm_raw *r = &snap->raw[i];
      const char *p = strcmp(r->name, raw_wanted[w].metric) ? NULL : strstr(r->labels, key);
      if (p && (p == r->labels || p[-1] == ',')) {
        snprintf(out[n].metric, sizeof out[n].metric, "%s", raw_wanted[w].metric);
        snprintf(out[n].label, sizeof out[n].label, "%s", raw_wanted[w].label);
        out[n++].value = strtod(p + strlen(key), NULL);
        break;
      }
    }
  }
  /* The unmapped ones, in page order, while room is left. */
  for (size_t i = 0; i < snap->n_raw && n < IM_SERIES_MAX_RAW; i++) {
    const struct im_nm_raw *r = &snap->raw[i];
    if (!keep_unmapped(r))
      continue;
    int len = r->labels[0] ? snprintf(out[n].metric, sizeof out[n].metric, "%s{%s}", r->name,
                                      r->labels)
                           : snprintf(out[n].metric, sizeof out[n].metric, "%s", r->name);
    if (len < 0 || (size_t)len >= sizeof out[n].metric)
      continue; /* too long to name exactly */
    out[n].label[0] = '\0';
    out[n++].value = r->value;
  }
  return n;
}

static void hist_copy(const struct im_nm_hist *h, struct im_series_hist *out) {
  memset(out, 0, sizeof *out);
  if (!h->present)
    return;
  out->n = h->n < IM_SERIES_MAX_BUCKETS ? h->n : IM_SERIES_MAX_BUCKETS;
  for (size_t i = 0; i < out->n; i++)
    out->b[i] = (struct im_series_bucket){h->b[i].le, h->b[i].count};
  out->sum = h->sum;
  out->count = h->count;
}

/* The line of one successful scrape, from s->snap. */
static enum im_err fmt_scrape(struct im_observer *o, struct source *s, int64_t t) {
  const struct im_nm_snapshot *snap = s->snap;
  const char *engines[IM_NM_ENGINE_COUNT_];
  struct im_series_value values[IM_NM_CONCEPT_COUNT_];
  struct im_series_raw raw[IM_SERIES_MAX_RAW];
  struct im_series_hist ttft, itl;
  size_t ne = 0, nv = 0, nl = 0;
  for (int e = 0; e < IM_NM_ENGINE_COUNT_; e++)
    if (snap->engines & (1u << e))
      engines[ne++] = im_nm_engine_name((enum im_nm_engine)e);
  for (int c = 0; c < IM_NM_CONCEPT_COUNT_; c++)
    if (!im_nm_concept_is_hist((enum im_nm_concept)c) && snap->v[c].present)
      values[nv++] = (struct im_series_value){im_nm_concept_name((enum im_nm_concept)c), snap->v[c].value};
  memset(&ttft, 0, sizeof ttft);
  memset(&itl, 0, sizeof itl);
  if (snap->h) {
    hist_copy(&snap->h[IM_NM_TTFT], &ttft);
    hist_copy(&snap->h[IM_NM_ITL], &itl);
  }
  for (size_t i = 0; i < snap->n_series && nl < IM_SERIES_MAX_PER_SERIES; i++, nl++) {
    const struct im_nm_series *ser = &snap->series[i];
    struct im_series_labelled *l = &s->per_series[nl];
    snprintf(l->concept, sizeof l->concept, "%s", im_nm_concept_name(ser->concept));
    snprintf(l->engine, sizeof l->engine, "%s", im_nm_engine_name(ser->engine));
    snprintf(l->key, sizeof l->key, "%s", ser->key);
    l->value = ser->value;
  }
  struct im_series_scrape sc = {.source = s->index, .url = s->url, .dcgm = s->dcgm, .t_mono = t,
                                .engines = engines, .n_engines = ne, .values = values, .n_values = nv,
                                .ttft = &ttft, .itl = &itl, .per_series = s->per_series,
                                .n_per_series = nl, .raw = raw, .n_raw = raw_labels(snap, raw),
                                .malformed_lines = snap->parse.errors};
  return im_series_fmt_server(&o->line, &sc);
}

static void scrape(struct im_observer *o, struct source *s) {
  im_buf_reset(&s->page);
  int64_t t = im_now_ns();
  CURLcode rc = curl_easy_perform(s->easy);
  long status = 0;
  curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
  if (o->cfg.raw_fd >= 0) {
    char head[512];
    int n = snprintf(head, sizeof head, "# infermeter scrape url=%s t_mono_ns=%" PRId64 " status=%ld\n",
                     s->url, t, status);
    write_all(o->cfg.raw_fd, head, (size_t)n);
    if (s->page.len)
      write_all(o->cfg.raw_fd, s->page.data, s->page.len);
    write_all(o->cfg.raw_fd, "\n", 1);
  }
  char why[160];
  if (rc != CURLE_OK || status != 200) {
    if (rc == CURLE_OK)
      snprintf(why, sizeof why, "HTTP %ld", status);
    else
      snprintf(why, sizeof why, "%s", curl_easy_strerror(rc));
    emit(o, im_series_fmt_scrape_error(&o->line, s->index, s->url, t, why));
    return;
  }
  if (im_nm_extract(s->snap, s->page.data ? s->page.data : "", s->page.len) != IM_OK) {
    emit(o, im_series_fmt_scrape_error(&o->line, s->index, s->url, t,
                                       "out of memory parsing the page"));
    return;
  }
  emit(o, fmt_scrape(o, s, t));
}

static void sample_tcp(struct im_observer *o) {
  struct im_sockstat_counts c;
  struct im_series_tcp p = {.t_mono = im_now_ns()};
  if (im_sockstat_sample(o->ss, &c) != IM_OK)
    return;
  memcpy(p.state, c.state, sizeof p.state);
  p.total = c.total;
  p.skipped = c.skipped;
  p.procfs = c.path == IM_SOCKSTAT_PROCFS;
  emit(o, im_series_fmt_tcp(&o->line, &p));
}

static void sample_all(struct im_observer *o) {
  for (size_t i = 0; i < o->n_src; i++)
    scrape(o, &o->src[i]);
  if (o->ss)
    sample_tcp(o);
  if (o->gpu && im_gpu_sample(o->gpu, im_now_ns(), &o->gsnap) == IM_OK)
    emit(o, im_series_fmt_gpu(&o->line, &o->gsnap));
}

#define SETTLE_NS 120000000L

static void *observer_main(void *arg) {
  struct im_observer *o = arg;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  pthread_mutex_lock(&o->mu);
  while (!o->stop) {
    int64_t ns = (int64_t)next.tv_sec * 1000000000 + next.tv_nsec + o->cfg.interval_ns;
    int64_t now = im_now_ns();
    if (ns < now) /* fell behind (a slow scrape): the next one starts now */
      ns = now;
    next.tv_sec = ns / 1000000000;
    next.tv_nsec = ns % 1000000000;
    while (!o->stop && pthread_cond_timedwait(&o->cv, &o->mu, &next) != ETIMEDOUT)
      ;
    if (o->stop)
      break;
    pthread_mutex_unlock(&o->mu);
    sample_all(o);
    pthread_mutex_lock(&o->mu);
  }
  pthread_mutex_unlock(&o->mu);
  sample_all(o); /* the final sample, after the last request */
  /* And one settled page of each server: its running count once it has
   * handled the last disconnects, which the audit's cancelled_freed check
   * judges (a scrape 0.15 ms after the last cancel races them; the check
   * wants 0.1 s, analyze/validity.h IM_VALID_CANCEL_SETTLE_S). */
  bool servers = false;
  for (size_t i = 0; i < o->n_src; i++)
    servers |= !o->src[i].dcgm;
  if (servers) {
    struct timespec ts = {0, SETTLE_NS};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
      ;
    for (size_t i = 0; i < o->n_src; i++)
      if (!o->src[i].dcgm)
        scrape(o, &o->src[i]);
  }
  return NULL;
}

/* ---- lifecycle ----------------------------------------------------------- */

static enum im_err source_init(struct im_observer *o, struct source *s, const char *url, bool dcgm) {
  s->index = (size_t)(s - o->src);
  s->url = url;
  s->dcgm = dcgm;
  im_buf_init(&s->page, PAGE_MAX);
  if (im_nm_snapshot_new(&s->snap, NULL))
    return IM_NOMEM;
  s->per_series = calloc(IM_SERIES_MAX_PER_SERIES, sizeof *s->per_series);
  s->easy = curl_easy_init();
  if (!s->easy || !s->per_series)
    return IM_NOMEM;
  int64_t timeout_ms = o->cfg.interval_ns / 1000000;
  if (timeout_ms < 100)
    timeout_ms = 100;
  if (timeout_ms > 5000)
    timeout_ms = 5000;
  curl_easy_setopt(s->easy, CURLOPT_URL, url);
  curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, on_page);
  curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, &s->page);
  curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
  curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(s->easy, CURLOPT_ACCEPT_ENCODING, ""); /* gzip pages */
  im_net_apply(s->easy, o->cfg.net, !dcgm);
  emit(o, im_series_fmt_source(&o->line, s->index, url, dcgm));
  return IM_OK;
}

/* The TCP and GPU samplers; what cannot be sampled is a not_collected line. */
static void open_machine(struct im_observer *o, const struct im_observer_config *cfg) {
  char why[256] = "not requested";
  if (cfg->sockstat && im_sockstat_open(&o->ss, (const struct sockaddr *)&cfg->target,
                                        cfg->target_len, IM_SOCKSTAT_AUTO) != IM_OK) {
    snprintf(why, sizeof why, "socket states unavailable (%s)", strerror(im_sockstat_errno(o->ss)));
    im_sockstat_close(o->ss);
    o->ss = NULL;
  }
  if (!o->ss)
    emit(o, im_series_fmt_not_collected(&o->line, "tcp", why));
  snprintf(why, sizeof why, "not requested");
  if (cfg->gpu && im_gpu_open(cfg->nvml_path, &o->gpu, why, sizeof why) != IM_OK)
    o->gpu = NULL;
  if (!o->gpu)
    emit(o, im_series_fmt_not_collected(&o->line, "gpu", why));
}

enum im_err im_observer_start(struct im_observer **out, const struct im_observer_config *cfg) {
  struct im_observer *o = calloc(1, sizeof *o);
  if (!o)
    return IM_NOMEM;
  o->cfg = *cfg;
  if (o->cfg.interval_ns < 100000000)
    o->cfg.interval_ns = 100000000;
  pthread_mutex_init(&o->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&o->cv, &ca);
  pthread_condattr_destroy(&ca);
  im_buf_init(&o->line, IM_SERIES_LINE_MAX + 1);
  enum im_err err = im_series_new(&o->set);
  for (size_t i = 0; i < cfg->n_scrape && i < IM_OBS_MAX_SCRAPE && !err; i++)
    err = source_init(o, &o->src[o->n_src++], cfg->scrape_urls[i], false);
  if (!err && cfg->dcgm_url)
    err = source_init(o, &o->src[o->n_src++], cfg->dcgm_url, true);
  if (!err)
    open_machine(o, cfg);
  /* The baseline, on the caller's thread: it is taken before the load. */
  if (!err)
    sample_all(o);
  /* Every signal blocked in the observer's thread: the run's main thread
   * handles them. */
  if (!err && im_thread_start_background(&o->thread, observer_main, o) != 0)
    err = IM_SYS;
  if (err) {
    im_observer_free(o);
    return err;
  }
  o->started = true;
  *out = o;
  return IM_OK;
}

void im_observer_stop(struct im_observer *o) {
  if (!o || !o->started || o->joined)
    return;
  pthread_mutex_lock(&o->mu);
  o->stop = true;
  pthread_cond_signal(&o->cv);
  pthread_mutex_unlock(&o->mu);
  pthread_join(o->thread, NULL);
  o->joined = true;
}

void im_observer_free(struct im_observer *o) {
  if (!o)
    return;
  im_observer_stop(o);
  for (size_t i = 0; i < o->n_src; i++) {
    struct source *s = &o->src[i];
    if (s->easy)
      curl_easy_cleanup(s->easy);
    im_buf_cleanup(&s->page);
    im_nm_snapshot_free(s->snap);
    free(s->per_series);
  }
  im_sockstat_close(o->ss);
  im_gpu_close(o->gpu);
  im_buf_cleanup(&o->line);
  im_series_free(o->set);
  pthread_mutex_destroy(&o->mu);
  pthread_cond_destroy(&o->cv);
  free(o);
}

enum im_err im_observer_snapshot(const struct im_observer *o, struct im_series_set **out) {
  *out = NULL;
  if (!o)
    return IM_INVAL;
  /* The lock is the observer's state, not its contents: locking it does not
   * change what a const observer says. */
  pthread_mutex_t *mu = (pthread_mutex_t *)&o->mu;
  pthread_mutex_lock(mu);
  enum im_err err = im_series_copy(o->set, out);
  pthread_mutex_unlock(mu);
  return err;
}

_Static_assert(sizeof((struct im_observer_latest *)0)->names[0] == IM_SERIES_NAME_LEN,
               "a concept name fits");

enum im_err im_observer_latest(const struct im_observer *o, struct im_observer_latest *out) {
  memset(out, 0, sizeof *out);
  if (!o)
    return IM_INVAL;
  pthread_mutex_t *mu = (pthread_mutex_t *)&o->mu; /* as im_observer_snapshot */
  pthread_mutex_lock(mu);
  const struct im_series_set *s = o->set;
  for (size_t i = 0; s && i < s->n_src; i++) {
    const struct im_series_source *src = &s->src[i];
    if (!src->seen || src->dcgm || !src->n_pts)
      continue;
    const struct im_series_server *pt = &src->pts[src->n_pts - 1];
    for (size_t k = 0; k < s->n_names && out->n < IM_OBS_LATEST_MAX; k++) {
      if (isnan(pt->v[k]))
        continue;
      snprintf(out->names[out->n], sizeof out->names[0], "%s", s->names[k]);
      out->values[out->n++] = pt->v[k];
    }
    break; /* the first server source: the target's own page */
  }
  if (s && s->n_tcp) {
    out->has_tcp = true;
    out->time_wait = s->tcp[s->n_tcp - 1].state[IM_TCP_TIME_WAIT];
    out->established = s->tcp[s->n_tcp - 1].state[IM_TCP_ESTABLISHED];
  }
  pthread_mutex_unlock(mu);
  return IM_OK;
}
