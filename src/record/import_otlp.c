/* An OpenTelemetry trace export (OTLP JSON: resourceSpans[].scopeSpans[].
 * spans[], the encoding of the OTLP specification's ExportTraceServiceRequest)
 * as records of real traffic (record/import.h, docs/import.md).
 *
 * Which spans are requests: those that carry an HTTP status or path
 * attribute and are not INTERNAL; when the file holds SERVER spans, only
 * those (a CLIENT span of the same request, from the caller, would count it
 * twice). Each becomes one attempt, classified for the effective request
 * rate (docs/metrics.md §3): a path of health checks or model polling
 * (/health*, /ready*, /live*, /ping, /metrics, /v1/models, /version) is
 * `health`; `retry.attempt` > 0 (or the semantic conventions'
 * `http.request.resend_count` > 0) is a `retry` of the first attempt of its
 * trace; an HTTP status >= 400 (`http.response.status_code`, or the older
 * `http.status_code`) or a span status ERROR is an error. Attribute names
 * are those of the OpenTelemetry semantic conventions (HTTP, GenAI usage:
 * gen_ai.usage.input_tokens / output_tokens). */
#include "record/import.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A span on its way to a record. */
struct span {
  struct im_record r;
  uint64_t trace; /* FNV-1a of traceId */
  int kind;       /* OTLP SpanKind: 1 internal, 2 server, 3 client */
  bool retry;
};

struct otlp {
  struct span *v;
  size_t n, cap;
  uint64_t skipped;
};

static uint64_t fnv(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; s && *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* An attribute's value as text (string, or an integer/double/bool value)
 * and as a number. */
static const json_t *attr(const json_t *attrs, const char *key) {
  for (size_t i = 0; i < json_array_size(attrs); i++) {
    const json_t *a = json_array_get(attrs, i);
    const char *k = json_string_value(json_object_get(a, "key"));
    if (k && !strcmp(k, key))
      return json_object_get(a, "value");
  }
  return NULL;
}

static const char *attr_str(const json_t *attrs, const char *key) {
  return json_string_value(json_object_get(attr(attrs, key), "stringValue"));
}

/* intValue is a string in OTLP JSON (a 64-bit integer); a number is
 * accepted too, and a stringValue of digits. */
static long long attr_int(const json_t *attrs, const char *key, long long dflt) {
  const json_t *v = attr(attrs, key);
  if (!v)
    return dflt;
  const json_t *x = json_object_get(v, "intValue");
  if (!x)
    x = json_object_get(v, "doubleValue");
  if (!x)
    x = json_object_get(v, "stringValue");
  if (json_is_number(x))
    return (long long)json_number_value(x);
  const char *s = json_string_value(x);
  char *end;
  long long n = s ? strtoll(s, &end, 10) : 0;
  return s && *s && !*end ? n : dflt;
}

/* Unix nanoseconds: a decimal string (the OTLP JSON encoding of fixed64)
 * or a number. -1 when absent or not one. */
static int64_t nanos(const json_t *v) {
  if (json_is_integer(v))
    return json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : -1;
  const char *s = json_string_value(v);
  if (!s || !*s)
    return -1;
  char *end;
  unsigned long long n = strtoull(s, &end, 10);
  return *end || s[0] == '-' || n > (unsigned long long)INT64_MAX ? -1 : (int64_t)n;
}

static int span_kind(const json_t *k) {
  if (json_is_integer(k))
    return (int)json_integer_value(k);
  const char *s = json_string_value(k);
  static const char *const names[] = {"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL",
                                      "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT"};
  for (int i = 0; s && i < 4; i++)
    if (!strcmp(s, names[i]))
      return i;
  return 0;
}

static bool health_path(const char *p) {
  static const char *const prefixes[] = {"/health",  "/ready",     "/live",   "/ping",
                                         "/metrics", "/v1/models", "/version"};
  if (!p)
    return false;
  /* A full URL: its path. */
  const char *s = strstr(p, "://");
  if (s && (s = strchr(s + 3, '/')))
    p = s;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (!strncmp(p, prefixes[i], strlen(prefixes[i])))
      return true;
  return false;
}

static enum im_err add_span(struct otlp *o, const json_t *sp) {
  const json_t *at = json_object_get(sp, "attributes");
  long long status = attr_int(at, "http.response.status_code", -1);
  if (status < 0)
    status = attr_int(at, "http.status_code", -1);
  const char *path = attr_str(at, "url.path");
  static const char *const path_keys[] = {"http.target", "http.route", "url.full", "http.url"};
  for (size_t i = 0; !path && i < sizeof path_keys / sizeof path_keys[0]; i++)
    path = attr_str(at, path_keys[i]);
  int kind = span_kind(json_object_get(sp, "kind"));
  int64_t start = nanos(json_object_get(sp, "startTimeUnixNano")),
          end = nanos(json_object_get(sp, "endTimeUnixNano"));
  if ((status < 0 && !path) || kind == 1 || start < 0 || end < start) {
    o->skipped++;
    return IM_OK;
  }
  if (o->n >= IM_IMPORT_MAX_RECORDS)
    return IM_LIMIT;
  if (o->n == o->cap) {
    size_t cap = o->cap ? 2 * o->cap : 256;
    struct span *v = realloc(o->v, cap * sizeof *v);
    if (!v)
      return IM_NOMEM;
    memset(v + o->cap, 0, (cap - o->cap) * sizeof *v);
    o->v = v;
    o->cap = cap;
  }
  struct span *s = &o->v[o->n++];
  im_record_reset(&s->r);
  s->kind = kind;
  s->trace = fnv(json_string_value(json_object_get(sp, "traceId")));
  struct im_record *r = &s->r;
  const char *sid = json_string_value(json_object_get(sp, "spanId"));
  snprintf(r->request_id, sizeof r->request_id, "%s", sid ? sid : "");
  /* Two spans are never "the same request" for dup_fail: a trace does not
   * say what was asked (docs/import.md). */
  r->content_hash = fnv(sid) | 1;
  r->t_start = r->t_send = r->t_dispatch = start;
  r->t_end = end;
  long long att = attr_int(at, "retry.attempt", 0),
            resend = attr_int(at, "http.request.resend_count", 0);
  s->retry = att > 0 || resend > 0;
  long long again = att > 0 ? att : resend > 0 ? resend : 0; /* attempts before this one */
  r->attempt = again < (long long)UINT32_MAX ? (uint32_t)again + 1 : UINT32_MAX;
  if (health_path(path))
    r->kind = IM_KIND_HEALTH;
  else if (s->retry)
    r->kind = IM_KIND_RETRY;
  long long in = attr_int(at, "gen_ai.usage.input_tokens", -1),
            out = attr_int(at, "gen_ai.usage.output_tokens", -1);
  r->prompt_tokens = r->context_tokens = in > 0 && in < 4294967295ll ? (uint32_t)in : 0;
  r->output_tokens = out > 0 && out < 4294967295ll ? (uint32_t)out : 0;
  r->output_source = out > 0 ? IM_COUNT_USAGE : IM_COUNT_NONE;
  r->http_status = status > 0 && status < 1000 ? (int)status : 0;
  long long sc = 0;
  const json_t *st = json_object_get(json_object_get(sp, "status"), "code");
  if (json_is_integer(st))
    sc = json_integer_value(st);
  else if (json_is_string(st) && !strcmp(json_string_value(st), "STATUS_CODE_ERROR"))
    sc = 2;
  if (status >= 400 || sc == 2) {
    r->error = im__import_errclass(NULL, (int)status);
    return IM_OK;
  }
  /* The response: one chunk at the span's end (a span has no token times). */
  r->t_answer = end;
  return im__import_chunk(
      r, end, r->output_tokens ? r->output_tokens > 65535 ? 65535 : r->output_tokens : 1);
}

static enum im_err add_request(struct otlp *o, const json_t *root, char *err, size_t errlen) {
  const json_t *rs = json_object_get(root, "resourceSpans");
  if (!json_is_array(rs))
    return im_errf(err, errlen, IM_PARSE, "\"resourceSpans\" must be an array");
  for (size_t i = 0; i < json_array_size(rs); i++) {
    const json_t *r = json_array_get(rs, i), *ss = json_object_get(r, "scopeSpans");
    if (!ss) /* before OTLP 0.15: instrumentationLibrarySpans */
      ss = json_object_get(r, "instrumentationLibrarySpans");
    for (size_t j = 0; j < json_array_size(ss); j++) {
      const json_t *spans = json_object_get(json_array_get(ss, j), "spans");
      for (size_t k = 0; k < json_array_size(spans); k++) {
        enum im_err e = add_span(o, json_array_get(spans, k));
        if (e)
          return e == IM_LIMIT
                     ? im_errf(err, errlen, IM_LIMIT, "more than %u spans", IM_IMPORT_MAX_RECORDS)
                     : e;
      }
    }
  }
  return IM_OK;
}

static int cmp_span(const void *a, const void *b) {
  const struct span *x = a, *y = b;
  if (x->r.t_start != y->r.t_start)
    return x->r.t_start < y->r.t_start ? -1 : 1;
  return strcmp(x->r.request_id, y->r.request_id);
}

/* By trace, then first attempts before retries, then time. */
static int cmp_trace(const void *a, const void *b) {
  const struct span *x = *(const struct span *const *)a, *y = *(const struct span *const *)b;
  if (x->trace != y->trace)
    return x->trace < y->trace ? -1 : 1;
  if (x->retry != y->retry)
    return x->retry ? 1 : -1;
  return x->r.id < y->r.id ? -1 : x->r.id > y->r.id;
}

/* The spans as im's records: SERVER spans only when there are any, in time
 * order; a retry joins the first non-retry span of its trace. */
static enum im_err finish(struct otlp *o, struct im_import *im, char *err, size_t errlen) {
  bool servers = false;
  for (size_t i = 0; i < o->n && !servers; i++)
    servers = o->v[i].kind == 2;
  size_t m = 0;
  for (size_t i = 0; i < o->n; i++) {
    if (servers && o->v[i].kind != 2) {
      o->skipped++;
      im_record_cleanup(&o->v[i].r);
      continue;
    }
    o->v[m++] = o->v[i];
  }
  o->n = m;
  if (o->n) /* o->v is NULL without spans */
    qsort(o->v, o->n, sizeof *o->v, cmp_span);
  struct span **by = malloc((o->n ? o->n : 1) * sizeof *by);
  if (!by)
    return IM_NOMEM;
  for (size_t i = 0; i < o->n; i++) {
    o->v[i].r.id = o->v[i].r.logical_id = i + 1;
    by[i] = &o->v[i];
  }
  qsort(by, o->n, sizeof *by, cmp_trace);
  for (size_t i = 0; i < o->n;) {
    size_t j = i;
    while (j < o->n && by[j]->trace == by[i]->trace)
      j++;
    uint64_t head = by[i]->retry ? 0 : by[i]->r.id;
    for (size_t k = i; k < j && head; k++)
      if (by[k]->retry)
        by[k]->r.logical_id = head;
    i = j;
  }
  free(by);
  im->tool = IM_IMPORT_OTLP;
  im->epoch_times = true;
  im->spans = o->n + o->skipped;
  im->spans_skipped = o->skipped;
  im->recs = malloc((o->n ? o->n : 1) * sizeof *im->recs);
  if (!im->recs)
    return IM_NOMEM;
  bool tokens = false;
  for (size_t i = 0; i < o->n; i++) {
    im->recs[i] = o->v[i].r;
    tokens |= o->v[i].r.prompt_tokens > 0;
  }
  im->n = im->cap = o->n;
  o->n = 0;
  im->missing = IM_MISS_SCHEDULE | IM_MISS_FIRST_TOKEN | IM_MISS_TOKEN_TIMES | IM_MISS_SERVER |
                IM_MISS_CLIENT | (tokens ? 0 : IM_MISS_TOKENS);
  if (!im->n)
    return im_errf(err, errlen, IM_PARSE,
                   "OTLP traces: none of %llu spans is an HTTP request (no "
                   "http.response.status_code, http.status_code, url.path or http.target)",
                   (unsigned long long)o->skipped);
  return im__import_stage(im, 0, "traces", NAN);
}

static void otlp_free(struct otlp *o) {
  for (size_t i = 0; i < o->n; i++)
    im_record_cleanup(&o->v[i].r);
  free(o->v);
}

enum im_err im__import_otlp(const json_t *root, struct im_import *im, char *err, size_t errlen) {
  struct otlp o = {0};
  char why[256] = "";
  enum im_err e = add_request(&o, root, why, sizeof why);
  if (e)
    im_errf(err, errlen, e, "OTLP traces: %s", why);
  if (e == IM_OK)
    e = finish(&o, im, err, errlen);
  otlp_free(&o);
  return e;
}

static enum im_err otlp_line(const json_t *doc, void *ctx, char *why, size_t whylen) {
  return add_request(ctx, doc, why, whylen);
}

enum im_err im__import_otlp_lines(const char *data, size_t len, struct im_import *im, char *err,
                                  size_t errlen) {
  struct otlp o = {0};
  enum im_err e = im__import_lines(data, len, "OTLP traces", otlp_line, &o, err, errlen);
  if (e == IM_OK)
    e = finish(&o, im, err, errlen);
  otlp_free(&o);
  return e;
}
