/* OTLP export: see export/otlp.h. OTLP/JSON rules followed (the protocol's
 * JSON mapping): trace and span ids as lowercase hex, enums as integers,
 * 64-bit integers (times, counts, intValue) as decimal strings. */
#include "export/otlp.h"
#include "export/otlp_pb.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "record/reader.h"
#include "record/record.h"
#include "core/thread.h"
#include "record/rundir.h"

#define SCHEMA_URL "https://opentelemetry.io/schemas/1.41.0"
#define BATCH 512
#define TRIES 5

/* Bucket boundaries of the GenAI client metrics (semantic conventions
 * v1.41.0, docs/gen-ai/gen-ai-metrics.md): operation duration in s, token
 * usage in tokens; the chunk metrics use the duration's (as .NET's
 * Microsoft.Extensions.AI does, dotnet/extensions#7325). */
static const double dur_bounds[] = {0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64,
                                    1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
static const double tok_bounds[] = {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144,
                                    1048576, 4194304, 16777216, 67108864};
#define NB 14

struct ctx {
  const struct im_otlp_opts *o;
  struct im_otlp_stats *st;
  CURL *c;
  struct curl_slist *hdr;
  const struct im_rundir *rd;
  const char *op, *provider, *model;
  char host[256];
  int64_t port;
  uint64_t trace_run;
};

/* ---- attributes -------------------------------------------------------- */

static void attr(json_t *a, const char *key, json_t *value) {
  json_array_append_new(a, json_pack("{s:s, s:o}", "key", key, "value", value));
}
static void attr_s(json_t *a, const char *key, const char *v) {
  attr(a, key, json_pack("{s:s}", "stringValue", v));
}
static void attr_i(json_t *a, const char *key, int64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%" PRId64, v);
  attr(a, key, json_pack("{s:s}", "intValue", b));
}
static void attr_d(json_t *a, const char *key, double v) {
  if (isfinite(v))
    attr(a, key, json_pack("{s:f}", "doubleValue", v));
}

static json_t *u64s(uint64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%" PRIu64, v);
  return json_string(b);
}

static json_t *hex(uint64_t hi, uint64_t lo, bool two) {
  char b[40];
  if (two)
    snprintf(b, sizeof b, "%016" PRIx64 "%016" PRIx64, hi, lo);
  else
    snprintf(b, sizeof b, "%016" PRIx64, lo);
  return json_string(b);
}

/* The attributes every span and data point carries. */
static json_t *common_attrs(const struct ctx *x) {
  json_t *a = json_array();
  attr_s(a, "gen_ai.operation.name", x->op);
  attr_s(a, "gen_ai.provider.name", x->provider);
  attr_s(a, "gen_ai.request.model", x->model);
  if (x->host[0]) {
    attr_s(a, "server.address", x->host);
    attr_i(a, "server.port", x->port);
  }
  return a;
}

/* ---- sending ----------------------------------------------------------- */

/* A problem that does not stop the export, to the caller's callback. */
static void note(const struct im_otlp_opts *o, const char *line) {
  if (o->note)
    o->note(o->data, line);
}

static size_t sink(char *d, size_t s, size_t n, void *ud) {
  (void)d;
  (void)ud;
  return s * n;
}

/* body as the request's bytes: OTLP/JSON, or its protobuf encoding
 * (export/otlp_pb.h) under --otlp-protocol http/protobuf. NULL when it cannot
 * be had (said for protobuf: a field without its number is a bug). */
static char *encode(const struct ctx *x, json_t *body, size_t *len) {
  if (!x->o->protobuf) {
    char *s = json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(17));
    *len = s ? strlen(s) : 0;
    return s;
  }
  struct im_buf b;
  im_buf_init(&b, (size_t)1 << 30);
  if (im_otlp_pb_encode(body, &b)) {
    note(x->o, "--otlp-protocol http/protobuf: cannot encode the request");
    im_buf_cleanup(&b);
    return NULL;
  }
  *len = b.len;
  char *d = b.len ? (char *)b.data : malloc(1); /* the buffer's memory is the caller's now */
  if (!b.len)
    im_buf_cleanup(&b);
  return d;
}

/* POSTs body to base + path with retries. 0 sent, -1 given up. */
static int post(struct ctx *x, const char *path, json_t *body) {
  size_t len = 0;
  char *s = encode(x, body, &len);
  if (!s)
    return -1;
  char url[2300];
  snprintf(url, sizeof url, "%s%s", x->o->url, path);
  curl_easy_setopt(x->c, CURLOPT_URL, url);
  curl_easy_setopt(x->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  curl_easy_setopt(x->c, CURLOPT_POSTFIELDS, s);
  int rc = -1;
  for (int t = 0; t < TRIES; t++) {
    x->st->requests++;
    CURLcode e = curl_easy_perform(x->c);
    long code = 0;
    curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &code);
    if (e == CURLE_OK && code >= 200 && code < 300) {
      rc = 0;
      break;
    }
    if (e == CURLE_OK && code != 429 && code != 502 && code != 503 && code != 504) {
      char line[2400];
      snprintf(line, sizeof line, "OTLP %s answered HTTP %ld: not retried", url, code);
      note(x->o, line);
      break;
    }
    curl_off_t ra = -1;
    curl_easy_getinfo(x->c, CURLINFO_RETRY_AFTER, &ra);
    double wait = ra > 0 ? (double)(ra < 30 ? ra : 30) : 0.2 * (double)(1 << t);
    x->st->retries++;
    struct timespec ts = {(time_t)wait, (long)((wait - floor(wait)) * 1e9)};
    nanosleep(&ts, NULL);
  }
  free(s);
  return rc;
}

/* ---- spans ------------------------------------------------------------- */

static int64_t wall_of(const struct ctx *x, const struct im_record *r, int64_t t) {
  if (t < 0 || r->stage >= x->rd->n_st || x->rd->st[r->stage].wall_start_ns < 0)
    return -1;
  return x->rd->st[r->stage].wall_start_ns + t;
}

static void event(json_t *ev, const char *name, int64_t wall) {
  if (wall >= 0)
    json_array_append_new(ev, json_pack("{s:s, s:o}", "name", name, "timeUnixNano", u64s((uint64_t)wall)));
}

static json_t *attempt_span(const struct ctx *x, const struct im_record *r, uint64_t parent) {
  int64_t t0 = wall_of(x, r, r->t_start >= 0 ? r->t_start : r->t_dispatch);
  int64_t t1 = wall_of(x, r, r->t_end);
  if (t0 < 0 || t1 < t0)
    return NULL;
  char name[300];
  snprintf(name, sizeof name, "%s %s", x->op, x->model);
  json_t *a = common_attrs(x), *ev = json_array();
  if (r->requested_tokens)
    attr_i(a, "gen_ai.request.max_tokens", r->requested_tokens);
  attr_d(a, "gen_ai.request.temperature", r->temperature);
  attr_d(a, "gen_ai.request.top_p", r->top_p);
  attr(a, "gen_ai.request.stream", json_pack("{s:b}", "boolValue", 1));
  if (r->finish_reason[0])
    attr(a, "gen_ai.response.finish_reasons",
         json_pack("{s:{s:[{s:s}]}}", "arrayValue", "values", "stringValue", r->finish_reason));
  attr_i(a, "gen_ai.usage.input_tokens", r->prompt_tokens);
  attr_i(a, "gen_ai.usage.output_tokens", r->output_tokens);
  attr_i(a, "gen_ai.usage.cache_read.input_tokens", r->cached_tokens);
  attr_i(a, "gen_ai.usage.reasoning.output_tokens", r->reasoning_tokens);
  if (r->t_first >= 0 && r->t_start >= 0)
    attr_d(a, "gen_ai.response.time_to_first_chunk", (double)(r->t_first - r->t_start) / 1e9);
  if (r->http_status)
    attr_i(a, "http.response.status_code", r->http_status);
  if (r->error != IM_EC_NONE)
    attr_s(a, "error.type", im_errclass_name(r->error));
  attr_i(a, "retry.attempt", (int64_t)r->attempt - 1);
  attr_s(a, "infermeter.kind", im_kind_name(r->kind));
  attr_s(a, "infermeter.request_id", r->request_id);
  event(ev, "scheduled", wall_of(x, r, r->t_sched));
  event(ev, "sent", wall_of(x, r, r->t_send));
  event(ev, "first_token", wall_of(x, r, r->t_first));
  event(ev, "end", t1);
  return json_pack("{s:o, s:o, s:o, s:s, s:i, s:o, s:o, s:o, s:o, s:{s:i}}", "traceId",
                   hex(x->trace_run, im_trace_request(r->logical_id), true), "spanId",
                   hex(0, im_trace_span(x->trace_run, r->id), false), "parentSpanId",
                   hex(0, parent, false), "name", name, "kind", 3, "startTimeUnixNano",
                   u64s((uint64_t)t0), "endTimeUnixNano", u64s((uint64_t)t1), "attributes", a,
                   "events", ev, "status", "code", r->error != IM_EC_NONE ? 2 : 0);
}

static int cmp_rec(const void *pa, const void *pb) {
  const struct im_record *a = *(const struct im_record *const *)pa,
                         *b = *(const struct im_record *const *)pb;
  if (a->stage != b->stage)
    return a->stage < b->stage ? -1 : 1;
  if (a->logical_id != b->logical_id)
    return a->logical_id < b->logical_id ? -1 : 1;
  return (a->attempt > b->attempt) - (a->attempt < b->attempt);
}

static json_t *envelope(const struct ctx *x, const char *list, const char *inner, json_t *items) {
  json_t *res = json_pack("{s:[{s:s, s:{s:s}}, {s:s, s:{s:s}}]}", "attributes", "key",
                          "service.name", "value", "stringValue", "infermeter", "key",
                          "service.version", "value", "stringValue",
                          json_string_value(json_object_get(x->rd->manifest, "version"))
                              ? json_string_value(json_object_get(x->rd->manifest, "version"))
                              : "?");
  return json_pack("{s:[{s:o, s:[{s:{s:s}, s:s, s:o}]}]}", list, "resource", res,
                   !strcmp(list, "resourceSpans") ? "scopeSpans" : "scopeMetrics", "scope",
                   "name", "infermeter", "schemaUrl", SCHEMA_URL, inner, items);
}

static int flush_spans(struct ctx *x, json_t **spans) {
  size_t n = json_array_size(*spans);
  if (!n)
    return 0;
  json_t *body = envelope(x, "resourceSpans", "spans", *spans);
  *spans = json_array();
  int rc = body ? post(x, "/v1/traces", body) : -1;
  json_decref(body);
  if (rc)
    x->st->spans_dropped += n;
  else
    x->st->spans_sent += n;
  return rc;
}

/* Head sampling by the trace id: all of a request's attempts or none. */
static bool sampled(const struct ctx *x, uint64_t logical_id) {
  uint64_t req = im_trace_request(logical_id);
  return (double)(im_mix64(req ^ x->trace_run) >> 11) * 0x1p-53 < x->o->sample;
}

static uint64_t request_span(const struct ctx *x, uint64_t logical_id) {
  return im_mix64(logical_id ^ x->trace_run ^ 0x72657175657374ULL) | 1; /* "request" */
}

static int export_spans(struct ctx *x, const struct im_record *recs, size_t n, bool attempts_sent) {
  const struct im_record **v = malloc((n ? n : 1) * sizeof *v);
  if (!v)
    return -1;
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (recs[i].kind != IM_KIND_HEALTH && recs[i].kind != IM_KIND_PROBE)
      v[m++] = &recs[i];
  qsort(v, m, sizeof *v, cmp_rec);
  json_t *spans = json_array();
  int rc = 0;
  for (size_t i = 0; i < m;) {
    size_t j = i;
    while (j < m && v[j]->stage == v[i]->stage && v[j]->logical_id == v[i]->logical_id)
      j++;
    uint64_t req = im_trace_request(v[i]->logical_id);
    if (sampled(x, v[i]->logical_id)) {
      uint64_t parent = request_span(x, v[i]->logical_id);
      const struct im_record *last = v[j - 1];
      int64_t t0 = wall_of(x, v[i], v[i]->t_sched_first >= 0 ? v[i]->t_sched_first : v[i]->t_sched);
      int64_t t1 = wall_of(x, last, last->t_end);
      if (t0 >= 0 && t1 >= t0) {
        char name[300];
        snprintf(name, sizeof name, "%s %s request", x->op, x->model);
        json_t *a = common_attrs(x);
        attr_i(a, "infermeter.attempts", (int64_t)(j - i));
        json_array_append_new(
            spans, json_pack("{s:o, s:o, s:s, s:i, s:o, s:o, s:o, s:{s:i}}", "traceId",
                             hex(x->trace_run, req, true), "spanId", hex(0, parent, false), "name",
                             name, "kind", 1, "startTimeUnixNano", u64s((uint64_t)t0),
                             "endTimeUnixNano", u64s((uint64_t)t1), "attributes", a, "status",
                             "code", last->error != IM_EC_NONE ? 2 : 0));
        for (size_t k = i; k < j && !attempts_sent; k++) {
          json_t *s = attempt_span(x, v[k], parent);
          if (s)
            json_array_append_new(spans, s);
        }
      }
    }
    if (json_array_size(spans) >= BATCH && flush_spans(x, &spans))
      rc = -1;
    i = j;
  }
  if (flush_spans(x, &spans))
    rc = -1;
  json_decref(spans);
  free(v);
  return rc;
}

/* ---- metrics ----------------------------------------------------------- */

struct histo {
  uint64_t count, b[NB + 1];
  double sum, min, max;
  const double *bounds;
};

static void observe(struct histo *h, double v) {
  size_t i = 0;
  while (i < NB && v > h->bounds[i])
    i++;
  h->b[i]++;
  if (!h->count || v < h->min)
    h->min = v;
  if (!h->count || v > h->max)
    h->max = v;
  h->count++;
  h->sum += v;
}

static json_t *point(const struct histo *h, json_t *attrs, int64_t t0, int64_t t1) {
  json_t *bc = json_array(), *eb = json_array();
  for (size_t i = 0; i <= NB; i++)
    json_array_append_new(bc, u64s(h->b[i]));
  for (size_t i = 0; i < NB; i++)
    json_array_append_new(eb, json_real(h->bounds[i]));
  return json_pack("{s:o, s:o, s:o, s:o, s:f, s:o, s:o, s:f, s:f}", "attributes", attrs,
                   "startTimeUnixNano", u64s((uint64_t)t0), "timeUnixNano", u64s((uint64_t)t1),
                   "count", u64s(h->count), "sum", h->sum, "bucketCounts", bc, "explicitBounds",
                   eb, "min", h->min, "max", h->max);
}

static json_t *metric(const char *name, const char *unit, const char *desc, json_t *points) {
  return json_pack("{s:s, s:s, s:s, s:{s:i, s:o}}", "name", name, "unit", unit, "description",
                   desc, "histogram", "aggregationTemporality", 2, "dataPoints", points);
}

static int export_metrics(struct ctx *x, const struct im_record *recs, size_t n) {
  struct histo dur_ok = {.bounds = dur_bounds}, ttfc = {.bounds = dur_bounds},
               tpoc = {.bounds = dur_bounds}, tin = {.bounds = tok_bounds},
               tout = {.bounds = tok_bounds};
  struct histo dur_err[IM_EC_COUNT_];
  for (int e = 0; e < IM_EC_COUNT_; e++)
    dur_err[e] = (struct histo){.bounds = dur_bounds};
  int64_t t0 = -1, t1 = -1;
  for (size_t i = 0; i < n; i++) {
    const struct im_record *r = &recs[i];
    if (r->kind != IM_KIND_MEASURED && r->kind != IM_KIND_RETRY)
      continue;
    int64_t a = wall_of(x, r, r->t_start), b = wall_of(x, r, r->t_end);
    if (a < 0 || b < a)
      continue;
    t0 = t0 < 0 || a < t0 ? a : t0;
    t1 = b > t1 ? b : t1;
    double d = (double)(b - a) / 1e9;
    if (r->error != IM_EC_NONE) {
      observe(&dur_err[r->error], d);
      continue;
    }
    observe(&dur_ok, d);
    observe(&tin, r->prompt_tokens);
    observe(&tout, r->output_tokens);
    if (r->t_first >= 0)
      observe(&ttfc, (double)(r->t_first - r->t_start) / 1e9);
    for (uint32_t k = 1; r->chunk_us && k < r->n_chunks; k++)
      observe(&tpoc, (double)((int64_t)r->chunk_us[k] - (int64_t)r->chunk_us[k - 1]) / 1e6);
  }
  if (t0 < 0)
    return 0;
  json_t *ms = json_array(), *dp = json_array(), *tp = json_array();
  if (dur_ok.count)
    json_array_append_new(dp, point(&dur_ok, common_attrs(x), t0, t1));
  for (int e = 0; e < IM_EC_COUNT_; e++)
    if (dur_err[e].count) {
      json_t *a = common_attrs(x);
      attr_s(a, "error.type", im_errclass_name((enum im_errclass)e));
      json_array_append_new(dp, point(&dur_err[e], a, t0, t1));
    }
  json_array_append_new(ms, metric("gen_ai.client.operation.duration", "s",
                                   "GenAI operation duration.", dp));
  json_t *ai = common_attrs(x), *ao = common_attrs(x);
  attr_s(ai, "gen_ai.token.type", "input");
  attr_s(ao, "gen_ai.token.type", "output");
  json_array_append_new(tp, point(&tin, ai, t0, t1));
  json_array_append_new(tp, point(&tout, ao, t0, t1));
  json_array_append_new(ms, metric("gen_ai.client.token.usage", "{token}",
                                   "Number of input and output tokens used.", tp));
  json_array_append_new(ms, metric("gen_ai.client.operation.time_to_first_chunk", "s",
                                   "Time to receive the first chunk.",
                                   json_pack("[o]", point(&ttfc, common_attrs(x), t0, t1))));
  json_array_append_new(ms, metric("gen_ai.client.operation.time_per_output_chunk", "s",
                                   "Time per output chunk after the first.",
                                   json_pack("[o]", point(&tpoc, common_attrs(x), t0, t1))));
  x->st->metric_points = json_array_size(dp) + 4;
  json_t *body = envelope(x, "resourceMetrics", "metrics", ms);
  int rc = body ? post(x, "/v1/metrics", body) : -1;
  json_decref(body);
  return rc;
}

/* ---- the export -------------------------------------------------------- */

static void target_of(struct ctx *x) {
  const json_t *t = json_object_get(x->rd->manifest, "target");
  const char *url = json_string_value(json_object_get(t, "url"));
  const char *be = json_string_value(json_object_get(t, "backend"));
  const char *model = json_string_value(json_object_get(t, "model"));
  x->op = be && strstr(be, "completions") && !strstr(be, "chat") ? "text_completion" : "chat";
  x->model = model ? model : "unknown";
  x->port = 80;
  if (url) {
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t len = strcspn(h, ":/");
    snprintf(x->host, sizeof x->host, "%.*s", (int)(len < 255 ? len : 255), h);
    x->port = !strncmp(url, "https", 5) ? 443 : 80;
    if (h[len] == ':')
      x->port = strtoll(h + len + 1, NULL, 10);
  }
  bool builtin = json_is_true(json_object_get(t, "builtin_server"));
  x->provider = x->o->provider                              ? x->o->provider
                : builtin || (url && strstr(url, "deepseek")) ? "deepseek"
                                                              : "openai";
}

/* An easy handle for the collector (NULL when out of memory). */
static CURL *collector(struct curl_slist **hdr, bool protobuf) {
  CURL *c = curl_easy_init();
  *hdr = curl_slist_append(NULL, protobuf ? "Content-Type: application/x-protobuf"
                                          : "Content-Type: application/json");
  if (!c || !*hdr) {
    if (c)
      curl_easy_cleanup(c);
    curl_slist_free_all(*hdr);
    *hdr = NULL;
    return NULL;
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdr);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  return c;
}

enum im_err im_otlp_export(const char *dir, const struct im_otlp_opts *o, bool attempts_sent,
                           struct im_otlp_stats *st, char *msg, size_t msg_len) {
  uint64_t live_sent = st->spans_sent, live_dropped = st->spans_dropped;
  memset(st, 0, sizeof *st);
  if (attempts_sent)
    st->spans_sent = live_sent, st->spans_dropped = live_dropped;
  struct im_rundir rd;
  char err[512];
  if (im_rundir_read(dir, &rd, err, sizeof err))
    return im_errf(msg, msg_len, IM_IO, "--otlp: %s", err);
  char path[4200];
  snprintf(path, sizeof path, "%s/requests.jsonl", dir);
  struct im_record *recs = NULL;
  size_t n = 0;
  struct im_read_report rr;
  memset(&rr, 0, sizeof rr);
  enum im_err e = im_records_read_path(path, &recs, &n, &rr);
  struct ctx x = {.o = o, .st = st, .rd = &rd,
                  .trace_run = im_trace_run(json_string_value(json_object_get(rd.manifest, "run_salt")))};
  enum im_err rc = IM_NOMEM;
  if (e != IM_OK) {
    rc = im_errf(msg, msg_len, e, "--otlp: cannot read %s", path);
    goto out;
  }
  target_of(&x);
  x.c = collector(&x.hdr, o->protobuf);
  if (!x.c) {
    im_errf(msg, msg_len, rc, "--otlp: out of memory");
    goto out;
  }
  int a = export_spans(&x, recs, n, attempts_sent), b = export_metrics(&x, recs, n);
  rc = a || b ? IM_IO : IM_OK;
  if (rc)
    im_errf(msg, msg_len, rc, "--otlp %s: %" PRIu64 " spans not delivered", o->url,
            st->spans_dropped);
out:
  curl_slist_free_all(x.hdr);
  if (x.c)
    curl_easy_cleanup(x.c);
  im_records_free(recs, n);
  im_rundir_free(&rd);
  return rc;
}

/* ---- live ---------------------------------------------------------------- */

#define LIVE_MAX_WAITING 8192

/* Spans of the complete lines in buf[0..*len) (the rest moved to the
 * front); rereads the directory when a record's stage has no start yet. */
static void live_lines(struct ctx *x, struct im_rundir *rd, const char *dir, char *buf, size_t *len,
                       json_t *pending) {
  size_t at = 0;
  for (char *nl; (nl = memchr(buf + at, '\n', *len - at)); at = (size_t)(nl - buf) + 1) {
    struct im_record r;
    memset(&r, 0, sizeof r);
    im_record_reset(&r);
    if (im_record_from_json(buf + at, (size_t)(nl - (buf + at)), &r, NULL, 0) == IM_OK &&
        r.kind != IM_KIND_HEALTH && r.kind != IM_KIND_PROBE && sampled(x, r.logical_id)) {
      if (r.stage >= rd->n_st || rd->st[r.stage].wall_start_ns < 0) {
        char err[256];
        struct im_rundir fresh;
        if (!im_rundir_read(dir, &fresh, err, sizeof err)) {
          im_rundir_free(rd);
          *rd = fresh;
          x->rd = rd;
          target_of(x); /* its strings pointed into the manifest just freed */
        }
      }
      json_t *sp = attempt_span(x, &r, request_span(x, r.logical_id));
      if (sp && json_array_size(pending) < LIVE_MAX_WAITING)
        json_array_append_new(pending, sp);
      else if (sp) {
        json_decref(sp);
        x->st->spans_dropped++;
      }
    }
    im_record_cleanup(&r);
  }
  memmove(buf, buf + at, *len - at);
  *len -= at;
}

static void *live_main(void *arg) {
  struct im_otlp_live *l = arg;
  struct im_rundir rd;
  char err[256], path[4200];
  if (im_rundir_read(l->dir, &rd, err, sizeof err))
    return NULL;
  struct ctx x = {.o = &l->o, .st = &l->st, .rd = &rd,
                  .trace_run = im_trace_run(json_string_value(json_object_get(rd.manifest, "run_salt")))};
  target_of(&x);
  x.c = collector(&x.hdr, l->o.protobuf);
  snprintf(path, sizeof path, "%s/requests.jsonl", l->dir);
  FILE *f = fopen(path, "r");
  size_t cap = 1 << 20, len = 0;
  char *buf = malloc(cap);
  json_t *pending = json_array();
  struct timespec last;
  clock_gettime(CLOCK_MONOTONIC, &last);
  bool stopping = false;
  while (x.c && f && buf && pending) {
    stopping = atomic_load(&l->stop);
    /* Everything written so far (a line longer than the buffer grows it). */
    for (;;) {
      if (len == cap) {
        char *nb = realloc(buf, cap * 2);
        if (!nb)
          break;
        buf = nb;
        cap *= 2;
      }
      size_t got = fread(buf + len, 1, cap - len, f);
      len += got;
      if (!got)
        break;
      live_lines(&x, &rd, l->dir, buf, &len, pending);
    }
    clearerr(f); /* EOF now; the run may write more */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    bool due = now.tv_sec - last.tv_sec >= 2 || json_array_size(pending) >= BATCH || stopping;
    while (due && json_array_size(pending)) {
      json_t *batch = json_array();
      while (json_array_size(batch) < BATCH && json_array_size(pending)) {
        json_array_append(batch, json_array_get(pending, 0));
        json_array_remove(pending, 0);
      }
      (void)flush_spans(&x, &batch);
      json_decref(batch);
      last = now;
    }
    if (stopping)
      break;
    struct timespec nap = {0, 250000000};
    nanosleep(&nap, NULL);
  }
  json_decref(pending);
  free(buf);
  if (f)
    fclose(f);
  curl_slist_free_all(x.hdr);
  if (x.c)
    curl_easy_cleanup(x.c);
  im_rundir_free(&rd);
  return NULL;
}

enum im_err im_otlp_live_start(struct im_otlp_live *l, const char *dir,
                               const struct im_otlp_opts *o, char *msg, size_t msg_len) {
  memset(l, 0, sizeof *l);
  snprintf(l->dir, sizeof l->dir, "%s", dir);
  l->o = *o;
  atomic_init(&l->stop, false);
  int e = im_thread_start_background(&l->thread, live_main, l);
  if (e)
    return im_errf(msg, msg_len, IM_SYS, "cannot start the OTLP exporter: %s", strerror(e));
  l->running = true;
  return IM_OK;
}

void im_otlp_live_stop(struct im_otlp_live *l) {
  if (!l || !l->running)
    return;
  atomic_store(&l->stop, true);
  pthread_join(l->thread, NULL);
  l->running = false;
}
