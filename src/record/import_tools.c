/* GuideLLM's benchmarks.json and AIPerf's profile_export.jsonl as records
 * (record/import.h). Field names are facts of those formats, from their
 * documentation and source: GuideLLM's GenerativeRequestStats / RequestInfo
 * / RequestTimings (src/guidellm/schemas/, Unix seconds), AIPerf's
 * MetricRecordInfo (docs/tutorials/working-with-profile-exports.md,
 * epoch nanoseconds and {"value", "unit"} metrics). */
#include "record/import.h"
#include "record/json_get.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- GuideLLM */

/* The first of keys present as a number in o (seconds -> ns), or -1. */
static int64_t secs_of(const json_t *o, const char *const *keys) {
  for (; *keys; keys++) {
    double v = im_json_num(json_object_get(o, *keys), NAN);
    if (v >= 0 && v < 9.2e9)
      return llround(v * 1e9);
  }
  return -1;
}

static const json_t *path2(const json_t *o, const char *a, const char *b) {
  return json_object_get(json_object_get(o, a), b);
}

/* One request of a benchmark: outcome 0 successful, 1 errored, 2 incomplete. */
static enum im_err guidellm_request(struct im_import *im, uint32_t stage, const json_t *q,
                                    int outcome, bool *has_sched) {
  static const char *const k_sched[] = {"targeted_start", NULL};
  /* The worker taking the request up: when its backend call began. */
  static const char *const k_disp[] = {"resolve_start", NULL};
  static const char *const k_start[] = {"request_start", "resolve_start", NULL};
  static const char *const k_first[] = {"first_token_iteration", NULL};
  static const char *const k_answer[] = {"first_output_token_iteration", NULL};
  static const char *const k_last[] = {"last_token_iteration", NULL};
  static const char *const k_end[] = {"request_end", "resolve_end", NULL};
  /* The request's own keys: the computed fields of current versions, the
   * flat fields of older ones. */
  static const char *const o_start[] = {"request_start_time", "start_time", NULL};
  static const char *const o_first[] = {"first_token_time", NULL};
  static const char *const o_last[] = {"last_token_time", NULL};
  static const char *const o_end[] = {"request_end_time", "end_time", NULL};
  if (!json_is_object(q))
    return IM_PARSE;
  enum im_err e = IM_OK;
  struct im_record *r = im__import_push(im, stage, &e);
  if (!r)
    return e;
  const json_t *info = json_object_get(q, "info"), *tm = json_object_get(info, "timings");
  r->t_sched = secs_of(tm, k_sched);
  *has_sched |= r->t_sched >= 0;
  r->t_start = r->t_send = secs_of(tm, k_start);
  if (r->t_start < 0)
    r->t_start = r->t_send = secs_of(q, o_start);
  r->t_dispatch = secs_of(tm, k_disp);
  if (r->t_dispatch < 0)
    r->t_dispatch = r->t_start;
  r->t_sched_first = r->t_sched;
  int64_t first = secs_of(tm, k_first), last = secs_of(tm, k_last);
  if (first < 0)
    first = secs_of(q, o_first);
  if (last < 0)
    last = secs_of(q, o_last);
  r->t_end = secs_of(tm, k_end);
  if (r->t_end < 0)
    r->t_end = secs_of(q, o_end);
  if (r->t_start < 0)
    return IM_PARSE;
  const char *id = json_string_value(json_object_get(q, "request_id"));
  if (id)
    snprintf(r->request_id, sizeof r->request_id, "%s", id);
  r->prompt_tokens = im__json_count(json_object_get(q, "prompt_tokens"));
  if (!r->prompt_tokens)
    r->prompt_tokens = im__json_count(path2(q, "input_metrics", "total_tokens"));
  r->context_tokens = r->prompt_tokens;
  r->output_tokens = im__json_count(json_object_get(q, "output_tokens"));
  if (!r->output_tokens)
    r->output_tokens = im__json_count(path2(q, "output_metrics", "total_tokens"));
  r->output_source = r->output_tokens ? IM_COUNT_USAGE : IM_COUNT_NONE;
  if (outcome == 1) {
    const char *msg = json_string_value(json_object_get(info, "error"));
    r->error = im__import_errclass(msg ? msg : json_string_value(json_object_get(q, "error")), 0);
  } else if (outcome == 2) { /* still running when the benchmark ended: let go */
    r->kind = IM_KIND_ABORTED;
    r->error = IM_EC_ABORTED;
    r->cancelled = true;
  }
  /* One token-bearing chunk at the first token: GuideLLM keeps the first
   * and last token times and the iteration count, not each token's time. */
  if (first >= 0 && outcome == 0) {
    if ((e = im__import_chunk(r, first, 1)))
      return e;
    r->http_status = 200;
    int64_t a = secs_of(tm, k_answer);
    r->t_answer = a >= 0 ? a : first;
  }
  if (last >= first && first >= 0 && outcome == 0)
    r->t_last = last;
  return IM_OK;
}

static void guidellm_label(const json_t *b, size_t i, char *label, size_t cap, double *rate) {
  const json_t *s = path2(b, "config", "strategy");
  if (!s)
    s = json_object_get(b, "strategy");
  const char *type = json_string_value(json_object_get(s, "type_"));
  if (!type)
    type = json_string_value(json_object_get(s, "type"));
  *rate = im_json_num(json_object_get(s, "rate"), NAN);
  if (!type)
    snprintf(label, cap, "benchmark %zu", i);
  else if (isfinite(*rate))
    snprintf(label, cap, "%s %g", type, *rate);
  else
    snprintf(label, cap, "%s", type);
}

enum im_err im__import_guidellm(const json_t *root, struct im_import *im, char *err,
                                size_t errlen) {
  static const char *const lists[] = {"successful", "errored", "incomplete"};
  const json_t *bs = json_object_get(root, "benchmarks");
  im->tool = IM_IMPORT_GUIDELLM;
  im->epoch_times = true;
  const json_t *md = json_object_get(root, "metadata");
  const char *ver = json_string_value(json_object_get(md, "guidellm_version"));
  snprintf(im->version, sizeof im->version, "%s",
           ver ? ver
           : json_string_value(json_object_get(md, "version"))
               ? json_string_value(json_object_get(md, "version"))
               : "");
  const char *model = json_string_value(path2(root, "args", "model"));
  snprintf(im->model, sizeof im->model, "%s", model ? model : "");
  bool has_sched = false;
  for (size_t i = 0; i < json_array_size(bs); i++) {
    const json_t *b = json_array_get(bs, i), *rq = json_object_get(b, "requests");
    if (!json_is_object(rq))
      return im_errf(err, errlen, IM_PARSE,
                     "GuideLLM benchmarks.json: benchmarks[%zu] has no \"requests\" object "
                     "(successful, errored, incomplete)",
                     i);
    if (!im->model[0]) {
      const char *m = json_string_value(path2(path2(b, "config", "backend"), "kwargs", "model"));
      snprintf(im->model, sizeof im->model, "%s", m ? m : "");
    }
    size_t first = im->n;
    for (int k = 0; k < 3; k++) {
      const json_t *list = json_object_get(rq, lists[k]);
      if (list && !json_is_array(list))
        return im_errf(err, errlen, IM_PARSE,
                       "GuideLLM benchmarks.json: benchmarks[%zu].requests.%s must be an array", i,
                       lists[k]);
      for (size_t j = 0; j < json_array_size(list); j++) {
        enum im_err e =
            guidellm_request(im, (uint32_t)im->n_st, json_array_get(list, j), k, &has_sched);
        if (e == IM_PARSE)
          return im_errf(err, errlen, IM_PARSE,
                         "GuideLLM benchmarks.json: benchmarks[%zu].requests.%s[%zu]: not a "
                         "request with info.timings.request_start (or request_start_time)",
                         i, lists[k], j);
        if (e)
          return e == IM_LIMIT ? im_errf(err, errlen, IM_LIMIT,
                                         "GuideLLM benchmarks.json: "
                                         "more than %u requests",
                                         IM_IMPORT_MAX_RECORDS)
                               : e;
      }
    }
    char label[160];
    double rate;
    guidellm_label(b, i, label, sizeof label, &rate);
    if (im__import_stage(im, first, label, rate))
      return im_errf(err, errlen, IM_LIMIT, "GuideLLM benchmarks.json: more than %d benchmarks",
                     IM_IMPORT_MAX_STAGES);
  }
  if (!json_is_array(bs) || !im->n_st)
    return im_errf(err, errlen, IM_PARSE, "GuideLLM benchmarks.json: \"benchmarks\" is empty");
  im->missing =
      IM_MISS_TOKEN_TIMES | IM_MISS_SERVER | IM_MISS_CLIENT | (has_sched ? 0 : IM_MISS_SCHEDULE);
  return IM_OK;
}

/* ---- AIPerf */

/* metrics[key].value in ns (unit ms, us, ns or s), or NaN. */
static double metric_ns(const json_t *metrics, const char *key, size_t index) {
  const json_t *m = json_object_get(metrics, key), *v = json_object_get(m, "value");
  const char *unit = json_string_value(json_object_get(m, "unit"));
  if (json_is_array(v))
    v = json_array_get(v, index);
  double x = im_json_num(v, NAN), f = 1e6;
  if (unit && !strcmp(unit, "ns"))
    f = 1;
  else if (unit && !strcmp(unit, "us"))
    f = 1e3;
  else if (unit && (!strcmp(unit, "s") || !strcmp(unit, "sec")))
    f = 1e9;
  return x >= 0 && x < 1e15 ? x * f : NAN;
}

static uint32_t metric_count(const json_t *metrics, const char *key) {
  return im__json_count(path2(metrics, key, "value"));
}

static int64_t ns_of(const json_t *v) {
  return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : -1;
}

static enum im_err aiperf_record(struct im_import *im, const json_t *o, bool *has_icl) {
  const json_t *md = json_object_get(o, "metadata"), *mt = json_object_get(o, "metrics"),
               *er = json_object_get(o, "error");
  if (!json_is_object(md))
    return IM_PARSE;
  enum im_err e = IM_OK;
  struct im_record *r = im__import_push(im, 0, &e);
  if (!r)
    return e;
  r->t_start = r->t_send = r->t_dispatch = ns_of(json_object_get(md, "request_start_ns"));
  if (r->t_start < 0)
    return IM_PARSE;
  r->t_hdr = ns_of(json_object_get(md, "request_ack_ns"));
  r->t_end = ns_of(json_object_get(md, "request_end_ns"));
  const char *id = json_string_value(json_object_get(md, "x_request_id"));
  if (id)
    snprintf(r->request_id, sizeof r->request_id, "%s", id);
  const char *phase = json_string_value(json_object_get(md, "benchmark_phase"));
  if (phase && !strcmp(phase, "warmup"))
    r->kind = IM_KIND_WARMUP;
  /* A cancelled warm-up stays a warm-up (kind cancelled would count it
   * among the measured requests). */
  r->cancelled = json_is_true(json_object_get(md, "was_cancelled"));
  if (r->cancelled && r->kind != IM_KIND_WARMUP)
    r->kind = IM_KIND_CANCELLED;
  r->prompt_tokens = metric_count(mt, "input_sequence_length");
  if (!r->prompt_tokens)
    r->prompt_tokens = metric_count(mt, "error_isl");
  r->context_tokens = r->prompt_tokens;
  if (json_is_object(er)) {
    double code = im_json_num(json_object_get(er, "code"), 0);
    r->http_status = code >= 100 && code <= 599 ? (int)code : 0;
    const char *type = json_string_value(json_object_get(er, "type"));
    r->error =
        r->cancelled ? IM_EC_ABORTED : im__import_errclass(type, r->http_status);
    return IM_OK;
  }
  r->http_status = 200;
  r->output_tokens = metric_count(mt, "output_sequence_length");
  if (!r->output_tokens)
    r->output_tokens = metric_count(mt, "output_token_count");
  r->output_source = r->output_tokens ? IM_COUNT_USAGE : IM_COUNT_NONE;
  double ttft = metric_ns(mt, "time_to_first_token", 0);
  double lat = metric_ns(mt, "request_latency", 0);
  if (isnan(ttft))
    return IM_OK; /* no first token: recorded as a failure without output */
  int64_t t = r->t_start + llround(ttft);
  if ((e = im__import_chunk(r, t, 1)))
    return e;
  r->t_answer = t;
  const json_t *icl = path2(mt, "inter_chunk_latency", "value");
  *has_icl |= json_is_array(icl);
  for (size_t k = 0; json_is_array(icl) && k < json_array_size(icl); k++) {
    double g = metric_ns(mt, "inter_chunk_latency", k);
    if (isnan(g))
      return IM_PARSE;
    t += llround(g);
    if ((e = im__import_chunk(r, t, 1)))
      return e;
  }
  if (!json_is_array(icl) && !isnan(lat) && lat >= ttft)
    r->t_last = r->t_start + llround(lat);
  return IM_OK;
}

struct aiperf_ctx {
  struct im_import *im;
  bool has_icl;
};

static enum im_err aiperf_line(const json_t *doc, void *ctx, char *why, size_t whylen) {
  struct aiperf_ctx *c = ctx;
  enum im_err e = aiperf_record(c->im, doc, &c->has_icl);
  if (e == IM_PARSE)
    return im_errf(why, whylen, e,
                   "not a record (metadata with request_start_ns, metrics of "
                   "{value, unit})");
  if (e == IM_LIMIT)
    return im_errf(why, whylen, e, "more than %u records, or %u token times in one",
                   IM_IMPORT_MAX_RECORDS, IM_IMPORT_MAX_CHUNKS);
  return e;
}

enum im_err im__import_aiperf(const char *data, size_t len, struct im_import *im, char *err,
                              size_t errlen) {
  im->tool = IM_IMPORT_AIPERF;
  im->epoch_times = true;
  struct aiperf_ctx c = {im, false};
  enum im_err e =
      im__import_lines(data, len, "AIPerf profile_export.jsonl", aiperf_line, &c, err, errlen);
  if (e)
    return e;
  im->missing =
      IM_MISS_SCHEDULE | IM_MISS_SERVER | IM_MISS_CLIENT | (c.has_icl ? 0 : IM_MISS_TOKEN_TIMES);
  return im__import_stage(im, 0, "", NAN);
}
