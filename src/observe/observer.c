/* The observer thread (see observer.h). */
#include "observe/observer.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
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
#include "core/stats.h"
#include "observe/gpu.h"
#include "observe/namemap.h"
#include "observe/sockstat.h"

#define PAGE_MAX ((size_t)32 << 20)

/* One scrape of one source, reduced to what the figures need. */
struct point {
  int64_t t;                              /* CLOCK_MONOTONIC */
  double v[IM_NM_CONCEPT_COUNT_];         /* canonical values, NaN absent */
  struct im_nm_hist ttft, itl;            /* cumulative buckets */
};

struct source {
  const char *url;
  bool dcgm;
  CURL *easy;
  struct im_buf page;
  struct im_nm_snapshot *snap;
  struct point *pts;
  size_t n_pts, cap_pts;
  unsigned engines;
  int primary;
  uint64_t failures, parse_errors, counter_resets;
  char last_error[160];
};

struct im_observer {
  struct im_observer_config cfg;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop, started, joined;
  struct source src[IM_OBS_MAX_SCRAPE + 1];
  size_t n_src;
  struct im_sockstat *ss;
  char ss_why[128];
  struct im_sockstat_point *tcp;
  size_t n_tcp, cap_tcp;
  struct im_gpu *gpu;
  char gpu_why[256];
  struct im_gpu_snapshot *gsnap;
  size_t n_gpu, cap_gpu;
};

void im_observer_config_default(struct im_observer_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->interval_ns = 1000000000;
  cfg->raw_fd = -1;
}

/* ---- sampling ------------------------------------------------------------ */

static size_t on_page(char *d, size_t s, size_t n, void *ud) {
  return im_buf_append(ud, d, s * n) == IM_OK ? s * n : 0;
}

static void write_all(int fd, const char *p, size_t len) {
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    p += w;
    len -= (size_t)w;
  }
}

static void *grow(void *p, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return p;
  size_t c = *cap ? *cap * 2 : 64;
  void *q = realloc(p, c * size);
  if (q)
    *cap = c;
  return q;
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
  if (rc != CURLE_OK || status != 200) {
    s->failures++;
    snprintf(s->last_error, sizeof s->last_error, "%s",
             rc != CURLE_OK ? curl_easy_strerror(rc) : "HTTP status other than 200");
    if (rc == CURLE_OK)
      snprintf(s->last_error, sizeof s->last_error, "HTTP %ld", status);
    return;
  }
  if (im_nm_extract(s->snap, s->page.data ? s->page.data : "", s->page.len) != IM_OK) {
    s->failures++;
    snprintf(s->last_error, sizeof s->last_error, "out of memory parsing the page");
    return;
  }
  s->parse_errors += s->snap->parse.errors;
  s->engines |= s->snap->engines;
  s->primary = s->snap->primary;
  struct point *p = grow(s->pts, &s->cap_pts, s->n_pts, sizeof *p);
  if (!p)
    return;
  s->pts = p;
  p = &s->pts[s->n_pts];
  p->t = t;
  for (int c = 0; c < IM_NM_CONCEPT_COUNT_; c++)
    p->v[c] = s->snap->v[c].present ? s->snap->v[c].value : NAN;
  memset(&p->ttft, 0, sizeof p->ttft);
  memset(&p->itl, 0, sizeof p->itl);
  if (s->snap->h) {
    p->ttft = s->snap->h[IM_NM_TTFT];
    p->itl = s->snap->h[IM_NM_ITL];
  }
  /* A counter that went down is a server restart: counted, and the
   * deltas across it are not used. */
  if (s->n_pts) {
    static const enum im_nm_concept counters[] = {IM_NM_PREFIX_QUERIES, IM_NM_PREFIX_HITS,
                                                  IM_NM_PREEMPTIONS, IM_NM_PROMPT_TOKENS,
                                                  IM_NM_GENERATION_TOKENS};
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
      if (p->v[counters[i]] < s->pts[s->n_pts - 1].v[counters[i]])
        s->counter_resets++;
  }
  s->n_pts++;
}

static void sample_all(struct im_observer *o) {
  for (size_t i = 0; i < o->n_src; i++)
    scrape(o, &o->src[i]);
  if (o->ss) {
    struct im_sockstat_point *p = grow(o->tcp, &o->cap_tcp, o->n_tcp, sizeof *p);
    if (p) {
      o->tcp = p;
      p = &o->tcp[o->n_tcp];
      p->t_ns = im_now_ns();
      if (im_sockstat_sample(o->ss, &p->counts) == IM_OK)
        o->n_tcp++;
    }
  }
  if (o->gpu) {
    struct im_gpu_snapshot *g = grow(o->gsnap, &o->cap_gpu, o->n_gpu, sizeof *g);
    if (g) {
      o->gsnap = g;
      if (im_gpu_sample(o->gpu, im_now_ns(), &o->gsnap[o->n_gpu]) == IM_OK)
        o->n_gpu++;
    }
  }
}

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
  return NULL;
}

/* ---- lifecycle ----------------------------------------------------------- */

static enum im_err source_init(struct im_observer *o, struct source *s, const char *url, bool dcgm) {
  s->url = url;
  s->dcgm = dcgm;
  s->primary = -1;
  im_buf_init(&s->page, PAGE_MAX);
  if (im_nm_snapshot_new(&s->snap, NULL))
    return IM_NOMEM;
  s->easy = curl_easy_init();
  if (!s->easy)
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
  if (o->cfg.insecure) {
    curl_easy_setopt(s->easy, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(s->easy, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  snprintf(s->last_error, sizeof s->last_error, "no scrape yet");
  return IM_OK;
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
  enum im_err err = IM_OK;
  for (size_t i = 0; i < cfg->n_scrape && i < IM_OBS_MAX_SCRAPE && !err; i++)
    err = source_init(o, &o->src[o->n_src++], cfg->scrape_urls[i], false);
  if (!err && cfg->dcgm_url)
    err = source_init(o, &o->src[o->n_src++], cfg->dcgm_url, true);
  if (!err && cfg->sockstat) {
    if (im_sockstat_open(&o->ss, (const struct sockaddr *)&cfg->target, cfg->target_len,
                         IM_SOCKSTAT_AUTO) != IM_OK) {
      snprintf(o->ss_why, sizeof o->ss_why, "socket states unavailable (%s)",
               strerror(im_sockstat_errno(o->ss)));
      im_sockstat_close(o->ss);
      o->ss = NULL;
    }
  } else if (!cfg->sockstat) {
    snprintf(o->ss_why, sizeof o->ss_why, "not requested");
  }
  if (!err && cfg->gpu) {
    if (im_gpu_open(cfg->nvml_path, &o->gpu, o->gpu_why, sizeof o->gpu_why) != IM_OK)
      o->gpu = NULL;
  } else if (!cfg->gpu) {
    snprintf(o->gpu_why, sizeof o->gpu_why, "not requested");
  }
  /* The baseline, on the caller's thread: it is taken before the load. */
  if (!err)
    sample_all(o);
  if (!err && pthread_create(&o->thread, NULL, observer_main, o) != 0)
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
    free(s->pts);
  }
  im_sockstat_close(o->ss);
  im_gpu_close(o->gpu);
  free(o->tcp);
  free(o->gsnap);
  pthread_mutex_destroy(&o->mu);
  pthread_cond_destroy(&o->cv);
  free(o);
}

/* ---- figures ------------------------------------------------------------- */

static json_t *num(double v) { return isnan(v) || isinf(v) ? json_null() : json_real(v); }

/* Index of the last point at or before t, else the first point. */
static size_t point_at_or_before(const struct source *s, int64_t t) {
  size_t k = 0;
  for (size_t i = 0; i < s->n_pts; i++)
    if (s->pts[i].t <= t)
      k = i;
  return k;
}

/* Index of the first point at or after t, else the last point. */
static size_t point_at_or_after(const struct source *s, int64_t t) {
  for (size_t i = 0; i < s->n_pts; i++)
    if (s->pts[i].t >= t)
      return i;
  return s->n_pts ? s->n_pts - 1 : 0;
}

static double delta(const struct point *a, const struct point *b, enum im_nm_concept c) {
  double d = b->v[c] - a->v[c];
  return isnan(d) || d < 0 ? NAN : d;
}

/* Prefix-cache hit rate over (a, b]: Δhits/Δqueries, else the engine's own
 * rate gauge at b (docs/metrics.md §5). */
static double hit_rate(const struct point *a, const struct point *b) {
  double q = delta(a, b, IM_NM_PREFIX_QUERIES), h = delta(a, b, IM_NM_PREFIX_HITS);
  if (!isnan(q) && !isnan(h) && q > 0)
    return h / q;
  return b->v[IM_NM_PREFIX_HIT_RATE];
}

/* Server-side latency quantile over (a, b] from bucket deltas, in ms. */
static double hist_q_ms(const struct im_nm_hist *a, const struct im_nm_hist *b, double q) {
  if (!b->present || !b->n)
    return NAN;
  struct im_prom_bucket d[IM_NM_MAX_BUCKETS];
  size_t n = 0;
  for (size_t i = 0; i < b->n; i++) {
    double prev = 0;
    for (size_t j = 0; a->present && j < a->n; j++)
      if (a->b[j].le == b->b[i].le)
        prev = a->b[j].count;
    d[n] = b->b[i];
    d[n].count = b->b[i].count - prev;
    n++;
  }
  double out = NAN;
  if (im_prom_histogram_quantile(q, d, n, &out) != IM_OK)
    return NAN;
  return out * 1e3;
}

/* A numeric label of an unmapped metric on the last page, e.g.
 * vllm:cache_config_info{num_gpu_blocks="8677"}; NaN when absent. */
static double raw_label_number(const struct source *s, const char *metric, const char *label) {
  if (!s->snap)
    return NAN;
  char key[64];
  snprintf(key, sizeof key, "%s=\"", label);
  for (size_t i = 0; i < s->snap->n_raw; i++) {
    const struct im_nm_raw *r = &s->snap->raw[i];
    if (strcmp(r->name, metric))
      continue;
    const char *p = strstr(r->labels, key);
    if (p && (p == r->labels || p[-1] == ','))
      return strtod(p + strlen(key), NULL);
  }
  return NAN;
}

/* Memory of one GPU from the last NVML sample, 0 when none. */
static double gpu_memory_total(const struct im_observer *o) {
  if (!o->n_gpu || !o->gsnap[o->n_gpu - 1].n_gpus || !o->gsnap[o->n_gpu - 1].gpu[0].has_mem)
    return 0;
  return (double)o->gsnap[o->n_gpu - 1].gpu[0].mem_total_bytes;
}

static json_t *server_json(const struct im_observer *obs, const struct source *s,
                           const struct im_observer_context *ctx) {
  json_t *o = json_object();
  json_object_set_new(o, "url", json_string(s->url));
  json_object_set_new(o, "scrapes", json_integer((json_int_t)s->n_pts));
  json_object_set_new(o, "failed_scrapes", json_integer((json_int_t)s->failures));
  json_object_set_new(o, "malformed_lines", json_integer((json_int_t)s->parse_errors));
  json_object_set_new(o, "counter_resets", json_integer((json_int_t)s->counter_resets));
  json_t *eng = json_array();
  for (int e = 0; e < IM_NM_ENGINE_COUNT_; e++)
    if (s->engines & (1u << e))
      json_array_append_new(eng, json_string(im_nm_engine_name((enum im_nm_engine)e)));
  json_object_set_new(o, "engines", eng);
  if (s->n_pts < 2) {
    json_object_set_new(o, "not_collected",
                        json_sprintf("%s: %s", s->n_pts ? "one scrape only" : "no scrape succeeded",
                                     s->last_error));
    return o;
  }
  int64_t ws = ctx->t0_mono + ctx->window_start_ns, we = ctx->t0_mono + ctx->window_end_ns;
  size_t a = point_at_or_before(s, ws), b = point_at_or_after(s, we);
  if (b <= a)
    b = s->n_pts - 1;
  const struct point *pa = &s->pts[a], *pb = &s->pts[b];
  /* Gauges over the scrapes inside the window. */
  double usage_sum = 0, usage_max = NAN, wait_max = NAN, run_max = NAN;
  size_t usage_n = 0;
  for (size_t i = a; i <= b; i++) {
    const double *v = s->pts[i].v;
    if (!isnan(v[IM_NM_KV_USAGE])) {
      usage_sum += v[IM_NM_KV_USAGE];
      usage_n++;
      usage_max = isnan(usage_max) || v[IM_NM_KV_USAGE] > usage_max ? v[IM_NM_KV_USAGE] : usage_max;
    }
    if (!isnan(v[IM_NM_REQUESTS_WAITING]))
      wait_max = isnan(wait_max) || v[IM_NM_REQUESTS_WAITING] > wait_max ? v[IM_NM_REQUESTS_WAITING] : wait_max;
    if (!isnan(v[IM_NM_REQUESTS_RUNNING]))
      run_max = isnan(run_max) || v[IM_NM_REQUESTS_RUNNING] > run_max ? v[IM_NM_REQUESTS_RUNNING] : run_max;
  }
  json_object_set_new(o, "kv_cache_usage_mean", num(usage_n ? usage_sum / (double)usage_n : NAN));
  json_object_set_new(o, "kv_cache_usage_max", num(usage_max));
  json_object_set_new(o, "prefix_cache_hit_rate", num(hit_rate(pa, pb)));
  json_object_set_new(o, "waiting_max", num(wait_max));
  json_object_set_new(o, "running_max", num(run_max));
  json_object_set_new(o, "preemptions", num(delta(pa, pb, IM_NM_PREEMPTIONS)));
  json_object_set_new(o, "prompt_tokens", num(delta(pa, pb, IM_NM_PROMPT_TOKENS)));
  json_object_set_new(o, "generation_tokens", num(delta(pa, pb, IM_NM_GENERATION_TOKENS)));
  double sp50 = hist_q_ms(&pa->ttft, &pb->ttft, 0.5), sp99 = hist_q_ms(&pa->ttft, &pb->ttft, 0.99);
  json_object_set_new(o, "server_ttft_p50_ms", num(sp50));
  json_object_set_new(o, "server_ttft_p99_ms", num(sp99));
  json_object_set_new(o, "client_ttft_p50_ms", num(ctx->client_ttft_p50_ms));
  json_object_set_new(o, "client_ttft_p99_ms", num(ctx->client_ttft_p99_ms));
  /* What the server does not see: the network and the client. Bucket
   * interpolation limits its precision to the histogram's buckets. */
  json_object_set_new(o, "ttft_gap_p50_ms", num(ctx->client_ttft_p50_ms - sp50));
  json_object_set_new(o, "server_itl_p50_ms", num(hist_q_ms(&pa->itl, &pb->itl, 0.5)));
  json_object_set_new(o, "server_itl_p99_ms", num(hist_q_ms(&pa->itl, &pb->itl, 0.99)));
  /* KV usage against the hit rate of each interval (Pearson r). */
  double *x = malloc((s->n_pts + 1) * sizeof *x), *y = malloc((s->n_pts + 1) * sizeof *y);
  size_t k = 0;
  for (size_t i = a + 1; x && y && i <= b; i++) {
    double h = hit_rate(&s->pts[i - 1], &s->pts[i]), u = s->pts[i].v[IM_NM_KV_USAGE];
    if (!isnan(h) && !isnan(u)) {
      x[k] = u;
      y[k] = h;
      k++;
    }
  }
  json_object_set_new(o, "kv_usage_hit_rate_r", num(k >= 3 ? im_stats_pearson(x, y, k) : NAN));
  free(x);
  free(y);
  /* KV residency = KV-cache bytes in use / GPU memory (docs/metrics.md §5). The
   * capacity in tokens comes from vLLM's cache_config_info; the bytes per
   * token must be declared (no engine exports them); the GPU memory is
   * declared or read through NVML. */
  double blocks = raw_label_number(s, "vllm:cache_config_info", "num_gpu_blocks");
  double bsize = raw_label_number(s, "vllm:cache_config_info", "block_size");
  double mem = ctx->gpu_memory_bytes > 0 ? ctx->gpu_memory_bytes : gpu_memory_total(obs);
  const char *why = NULL;
  if (isnan(blocks) || isnan(bsize))
    why = "the server exports no KV-cache geometry (vllm:cache_config_info)";
  else if (!(ctx->kv_bytes_per_token > 0))
    why = "KV bytes per token not declared (--kv-bytes-per-token)";
  else if (!(mem > 0))
    why = "GPU memory unknown (no NVML; --gpu-memory)";
  double usage_mean = usage_n ? usage_sum / (double)usage_n : NAN;
  json_object_set_new(o, "kv_cache_capacity_tokens", num(blocks * bsize));
  json_object_set_new(o, "kv_residency",
                      why ? json_null() : num(usage_mean * blocks * bsize * ctx->kv_bytes_per_token / mem));
  json_object_set_new(o, "kv_residency_max",
                      why ? json_null() : num(usage_max * blocks * bsize * ctx->kv_bytes_per_token / mem));
  if (why)
    json_object_set_new(o, "kv_residency_reason", json_string(why));
  json_object_set_new(o, "kv_residency_ref", num(ctx->kv_residency_ref));
  /* Engines and data-parallel ranks kept apart (the last page's values). */
  json_t *per = json_array();
  for (size_t i = 0; s->snap && i < s->snap->n_series; i++) {
    const struct im_nm_series *ser = &s->snap->series[i];
    json_array_append_new(per, json_pack("{s:s, s:s, s:s, s:o}", "concept",
                                         im_nm_concept_name(ser->concept), "engine",
                                         im_nm_engine_name(ser->engine), "key", ser->key, "value",
                                         num(ser->value)));
  }
  json_object_set_new(o, "per_series", per);
  return o;
}

static json_t *tcp_json(const struct im_observer *o, const struct im_observer_context *ctx) {
  json_t *t = json_object();
  json_object_set_new(t, "connections_opened", json_integer((json_int_t)ctx->connections_opened));
  json_object_set_new(t, "requests_per_connection",
                      num(ctx->connections_opened ? (double)ctx->attempts / (double)ctx->connections_opened : NAN));
  if (!o->ss || o->n_tcp < 1) {
    json_object_set_new(t, "not_collected", json_string(o->ss_why[0] ? o->ss_why : "no sample"));
    return t;
  }
  struct im_sockstat_summary sum;
  im_sockstat_summarize(o->tcp, o->n_tcp, &sum);
  json_object_set_new(t, "samples", json_integer((json_int_t)sum.n));
  json_object_set_new(t, "path", json_string(im_sockstat_path(o->ss) == IM_SOCKSTAT_NETLINK ? "netlink" : "procfs"));
  json_object_set_new(t, "time_wait_max", json_integer(sum.time_wait_max));
  json_object_set_new(t, "time_wait_growth_per_s", num(sum.time_wait_growth_per_s));
  json_object_set_new(t, "established_max", json_integer(sum.established_max));
  json_object_set_new(t, "time_wait_growing", json_boolean(sum.growing));
  if (sum.growing)
    json_object_set_new(t, "warning",
                        json_string("TIME_WAIT grows through the run: connections are being "
                                    "closed and reopened (keep-alive off, or the server closes "
                                    "them); connect time enters TTFT"));
  return t;
}

static json_t *gpu_json(const struct im_observer *o, const struct im_observer_context *ctx) {
  json_t *g = json_object();
  if (!o->gpu || !o->n_gpu) {
    json_object_set_new(g, "not_available", json_string(o->gpu_why[0] ? o->gpu_why : "no sample"));
    return g;
  }
  struct im_gpu_summary s;
  if (im_gpu_summarize(o->gsnap, o->n_gpu, ctx->t0_mono + ctx->window_start_ns,
                       ctx->t0_mono + ctx->window_end_ns, &s) != IM_OK) {
    json_object_set_new(g, "not_available", json_string("no sample inside the window"));
    return g;
  }
  json_object_set_new(g, "gpus", json_integer(s.n_gpus));
  json_object_set_new(g, "memory_used_max_bytes", s.has_mem ? json_integer((json_int_t)s.mem_used_max_bytes) : json_null());
  json_object_set_new(g, "memory_total_bytes", s.has_mem ? json_integer((json_int_t)s.mem_total_bytes) : json_null());
  json_object_set_new(g, "dram_bw_util_mean", num(s.dram_bw_util_mean));
  json_object_set_new(g, "dram_bw_util_max", num(s.dram_bw_util_max));
  json_object_set_new(g, "dram_bw_util_ref", num(ctx->bw_util_ref));
  json_object_set_new(g, "tensor_active_mean", num(s.tensor_active_mean));
  json_object_set_new(g, "sm_active_mean", num(s.sm_active_mean));
  json_object_set_new(g, "power_w_mean", num(s.power_w_mean));
  json_object_set_new(g, "energy_j", num(s.energy_j));
  json_object_set_new(g, "energy_source", json_string(im_gpu_energy_source_name(s.energy_source)));
  json_object_set_new(g, "tokens_per_joule", num(im_gpu_tokens_per_joule(ctx->output_tokens, s.energy_j)));
  return g;
}

static json_t *arr(void) { return json_array(); }

/* Whether a sample at absolute t belongs in the series. */
static bool in_series(const struct im_observer_context *ctx, int64_t t) {
  if (!ctx->series_from_ns && !ctx->series_to_ns)
    return true;
  int64_t rel = t - ctx->t0_mono;
  return rel >= ctx->series_from_ns && rel <= ctx->series_to_ns;
}

static json_t *server_series(const struct source *s, const struct im_observer_context *ctx) {
  int64_t t0 = ctx->t0_mono;
  json_t *o = json_object(), *t = arr(), *usage = arr(), *run = arr(), *wait = arr(), *hit = arr(),
         *pre = arr(), *gen = arr();
  for (size_t i = 0; i < s->n_pts; i++) {
    const struct point *p = &s->pts[i];
    if (!in_series(ctx, p->t))
      continue;
    json_array_append_new(t, json_real((double)(p->t - t0) / 1e9));
    json_array_append_new(usage, num(p->v[IM_NM_KV_USAGE]));
    json_array_append_new(run, num(p->v[IM_NM_REQUESTS_RUNNING]));
    json_array_append_new(wait, num(p->v[IM_NM_REQUESTS_WAITING]));
    json_array_append_new(hit, i ? num(hit_rate(&s->pts[i - 1], p)) : json_null());
    json_array_append_new(pre, num(delta(&s->pts[0], p, IM_NM_PREEMPTIONS)));
    double dt = i ? (double)(p->t - s->pts[i - 1].t) / 1e9 : 0;
    json_array_append_new(gen, i && dt > 0 ? num(delta(&s->pts[i - 1], p, IM_NM_GENERATION_TOKENS) / dt)
                                           : json_null());
  }
  json_object_set_new(o, "url", json_string(s->url));
  json_object_set_new(o, "t_s", t);
  json_object_set_new(o, "kv_cache_usage", usage);
  json_object_set_new(o, "requests_running", run);
  json_object_set_new(o, "requests_waiting", wait);
  json_object_set_new(o, "prefix_cache_hit_rate", hit);
  json_object_set_new(o, "preemptions", pre);
  json_object_set_new(o, "generation_tokens_per_s", gen);
  return o;
}

static json_t *tcp_series(const struct im_observer *o, const struct im_observer_context *ctx) {
  int64_t t0 = ctx->t0_mono;
  json_t *s = json_object(), *t = arr(), *est = arr(), *tw = arr(), *cw = arr(), *syn = arr(), *fin = arr();
  for (size_t i = 0; i < o->n_tcp; i++) {
    const struct im_sockstat_counts *c = &o->tcp[i].counts;
    if (!in_series(ctx, o->tcp[i].t_ns))
      continue;
    json_array_append_new(t, json_real((double)(o->tcp[i].t_ns - t0) / 1e9));
    json_array_append_new(est, json_integer(c->state[IM_TCP_ESTABLISHED]));
    json_array_append_new(tw, json_integer(c->state[IM_TCP_TIME_WAIT]));
    json_array_append_new(cw, json_integer(c->state[IM_TCP_CLOSE_WAIT]));
    json_array_append_new(syn, json_integer(c->state[IM_TCP_SYN_SENT]));
    json_array_append_new(fin, json_integer(c->state[IM_TCP_FIN_WAIT1] + c->state[IM_TCP_FIN_WAIT2]));
  }
  json_object_set_new(s, "t_s", t);
  json_object_set_new(s, "established", est);
  json_object_set_new(s, "time_wait", tw);
  json_object_set_new(s, "close_wait", cw);
  json_object_set_new(s, "syn_sent", syn);
  json_object_set_new(s, "fin_wait", fin);
  return s;
}

static json_t *gpu_series(const struct im_observer *o, const struct im_observer_context *ctx) {
  int64_t t0 = ctx->t0_mono;
  json_t *s = json_object(), *t = arr(), *mem = arr(), *pw = arr(), *bw = arr(), *util = arr();
  for (size_t i = 0; i < o->n_gpu; i++) {
    const struct im_gpu_snapshot *g = &o->gsnap[i];
    if (!in_series(ctx, g->t_ns))
      continue;
    double m = 0, p = 0, b = 0, u = 0;
    unsigned nb = 0;
    for (unsigned k = 0; k < g->n_gpus; k++) {
      m += g->gpu[k].has_mem ? (double)g->gpu[k].mem_used_bytes : 0;
      p += isnan(g->gpu[k].power_w) ? 0 : g->gpu[k].power_w;
      u += isnan(g->gpu[k].util_gpu_pct) ? 0 : g->gpu[k].util_gpu_pct;
      if (!isnan(g->gpu[k].dram_bw_util)) {
        b += g->gpu[k].dram_bw_util;
        nb++;
      }
    }
    json_array_append_new(t, json_real((double)(g->t_ns - t0) / 1e9));
    json_array_append_new(mem, json_real(m));
    json_array_append_new(pw, json_real(p));
    json_array_append_new(bw, nb ? json_real(b / nb) : json_null());
    json_array_append_new(util, g->n_gpus ? json_real(u / g->n_gpus) : json_null());
  }
  json_object_set_new(s, "t_s", t);
  json_object_set_new(s, "memory_used_bytes", mem);
  json_object_set_new(s, "power_w", pw);
  json_object_set_new(s, "dram_bw_util", bw);
  json_object_set_new(s, "gpu_util_percent", util);
  return s;
}

enum im_err im_observer_json(const struct im_observer *o, const struct im_observer_context *ctx,
                             json_t *metrics, json_t *series) {
  json_t *servers = json_array(), *sseries = json_array();
  if (!servers || !sseries) {
    json_decref(servers);
    json_decref(sseries);
    return IM_NOMEM;
  }
  for (size_t i = 0; i < o->n_src; i++) {
    json_array_append_new(servers, server_json(o, &o->src[i], ctx));
    json_array_append_new(sseries, server_series(&o->src[i], ctx));
  }
  /* metrics.server is the target's page; every page is under servers. */
  json_t *first = json_array_get(servers, 0);
  if (first)
    json_object_set(metrics, "server", first);
  else
    json_object_set_new(metrics, "server", json_pack("{s:s}", "not_collected", "no --scrape URL"));
  json_object_set_new(metrics, "servers", servers);
  json_object_set_new(metrics, "tcp", tcp_json(o, ctx));
  json_object_set_new(metrics, "gpu", gpu_json(o, ctx));
  json_object_set_new(series, "server", sseries);
  json_object_set_new(series, "tcp", tcp_series(o, ctx));
  if (o->n_gpu)
    json_object_set_new(series, "gpu", gpu_series(o, ctx));
  return IM_OK;
}
