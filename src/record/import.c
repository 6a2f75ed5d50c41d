/* Other tools' results as records: see record/import.h. This file holds
 * what the parsers share, the recognition of a file's format, and vLLM's
 * result file; import_tools.c has GuideLLM and AIPerf, import_otlp.c the
 * OpenTelemetry traces. */
#include "record/import.h"
#include "record/json_get.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tool_names[IM_IMPORT_TOOL_COUNT_] = {"auto", "vllm", "guidellm", "aiperf",
                                                              "otlp"};

const char *im_import_tool_name(enum im_import_tool t) {
  return (unsigned)t < IM_IMPORT_TOOL_COUNT_ ? tool_names[t] : "?";
}

enum im_import_tool im_import_tool_from_name(const char *name) {
  for (int i = 0; i < IM_IMPORT_TOOL_COUNT_; i++)
    if (name && !strcmp(name, tool_names[i]))
      return (enum im_import_tool)i;
  return IM_IMPORT_TOOL_COUNT_;
}

const char *im_import_missing_text(unsigned miss) {
  switch (miss) {
  case IM_MISS_SCHEDULE:
    return "schedule (intended send times): whether the load stayed open-loop, i.e. "
           "coordinated omission, cannot be judged";
  case IM_MISS_START_TIMES:
    return "request start times: every request is placed at 0, so concurrency and the "
           "measured window are not the source's";
  case IM_MISS_TOKEN_TIMES:
    return "token arrival times: no inter-token latency distribution and no stall analysis "
           "(TPOT comes from first and last token)";
  case IM_MISS_FIRST_TOKEN:
    return "first-token time: TTFT and E2E are both the span's duration";
  case IM_MISS_SERVER:
    return "server /metrics scrape: no KV-cache, queue or prefix-cache figures";
  case IM_MISS_CLIENT:
    return "generator self-monitoring: dispatch lag, CPU, file descriptors and ports";
  case IM_MISS_TOKENS:
    return "token counts";
  case IM_MISS_RECORDS:
    return "per-request records (the file holds summary figures only, saved without "
           "--save-detailed): sample sizes, percentile confidence, steady state, workload "
           "shape, errors and the client cannot be judged; the figures are the source's own";
  default:
    return "?";
  }
}

struct im_record *im__import_push(struct im_import *im, uint32_t stage, enum im_err *e) {
  if (im->n >= IM_IMPORT_MAX_RECORDS) {
    *e = IM_LIMIT;
    return NULL;
  }
  if (im->n == im->cap) {
    size_t cap = im->cap ? 2 * im->cap : 256;
    struct im_record *v = realloc(im->recs, cap * sizeof *v);
    if (!v) {
      *e = IM_NOMEM;
      return NULL;
    }
    memset(v + im->cap, 0, (cap - im->cap) * sizeof *v);
    im->recs = v;
    im->cap = cap;
  }
  struct im_record *r = &im->recs[im->n++];
  im_record_reset(r);
  r->id = r->logical_id = im->n;
  r->attempt = 1;
  r->stage = stage;
  snprintf(r->request_id, sizeof r->request_id, "imp-%zu", im->n);
  return r;
}

static void shift(int64_t *t, int64_t base) {
  if (*t >= 0)
    *t = *t >= base ? *t - base : 0;
}

enum im_err im__import_stage(struct im_import *im, size_t first, const char *label, double rate) {
  if (im->n_st == IM_IMPORT_MAX_STAGES)
    return IM_LIMIT;
  int64_t base = -1, last = 0;
  for (size_t i = first; i < im->n; i++) {
    const struct im_record *r = &im->recs[i];
    int64_t t = r->t_sched >= 0 && r->t_sched < r->t_start ? r->t_sched : r->t_start;
    if (t >= 0 && (base < 0 || t < base))
      base = t;
  }
  if (base < 0)
    base = 0;
  if (im->n_st == 0 && im->epoch_times)
    im->wall_start_ns = (uint64_t)base;
  for (size_t i = first; i < im->n; i++) {
    struct im_record *r = &im->recs[i];
    int64_t *ts[] = {&r->t_sched, &r->t_sched_first, &r->t_dispatch, &r->t_start, &r->t_send,
                     &r->t_hdr,   &r->t_first,       &r->t_answer,   &r->t_last,  &r->t_end};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++)
      shift(ts[k], base);
    /* The window holds every request: the latest of its intended, dispatch
     * and start times. */
    int64_t t = r->t_sched > r->t_dispatch ? r->t_sched : r->t_dispatch;
    t = t > r->t_start ? t : r->t_start;
    if (t > last)
      last = t;
  }
  struct im_import_stage *s = &im->st[im->n_st++];
  snprintf(s->label, sizeof s->label, "%s", label ? label : "");
  s->rate = rate;
  s->duration_ns = last + 1;
  s->first = first;
  s->n = im->n - first;
  return IM_OK;
}

enum im_err im__import_chunk(struct im_record *r, int64_t t, uint32_t tokens) {
  if (r->n_chunks >= IM_IMPORT_MAX_CHUNKS)
    return IM_LIMIT;
  if (r->n_chunks == 0)
    r->t_first = t;
  r->t_last = t;
  return im_record_add_chunk(r, t, tokens);
}

enum im_errclass im__import_errclass(const char *text, int status) {
  if (status == 429)
    return IM_EC_HTTP_429;
  if (status >= 500 && status <= 599)
    return IM_EC_HTTP_5XX;
  if (status >= 400 && status <= 499)
    return IM_EC_HTTP_4XX;
  if (!text)
    return IM_EC_ERROR_EVENT;
  /* An HTTP status in the text: three digits 400-599 standing alone. */
  for (const char *p = text; *p; p++) {
    bool alone = (p == text || !isdigit((unsigned char)p[-1])) && isdigit((unsigned char)p[0]) &&
                 isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
                 !isdigit((unsigned char)p[3]);
    int code = alone ? (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0') : 0;
    if (code >= 400 && code <= 599)
      return im__import_errclass(NULL, code);
    if (alone)
      p += 2;
  }
  if (strstr(text, "Too Many Requests"))
    return IM_EC_HTTP_429;
  if (strstr(text, "imeout") || strstr(text, "timed out"))
    return IM_EC_TIMEOUT_TOTAL;
  if (strstr(text, "onnect"))
    return IM_EC_CONNECT;
  if (strstr(text, "ancel"))
    return IM_EC_ABORTED;
  /* An error the source reported without a class: an error event. */
  return IM_EC_ERROR_EVENT;
}

uint32_t im__json_count(const json_t *v) {
  double d = im_json_num(v, -1);
  return d >= 0 && d <= 4294967295.0 ? (uint32_t)d : 0;
}

enum im_err im__import_lines(const char *data, size_t len, const char *what, im__import_line_fn fn,
                             void *ctx, char *err, size_t errlen) {
  size_t line = 0;
  for (const char *p = data, *end = data + len; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = (size_t)((nl ? nl : end) - p);
    line++;
    while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
      n--;
    if (n) {
      json_error_t je;
      json_t *doc = json_loadb(p, n, 0, &je);
      char why[256] = "";
      enum im_err e = doc ? fn(doc, ctx, why, sizeof why) : IM_PARSE;
      json_decref(doc);
      if (e)
        return im_errf(err, errlen, e, "%s: line %zu: %s%s%s", what, line, doc ? why : "not JSON (",
                       doc ? "" : je.text, doc ? "" : ")");
    }
    p = nl ? nl + 1 : end;
  }
  return IM_OK;
}

static void copy_str(char *dst, size_t cap, const json_t *v) {
  if (json_is_string(v))
    snprintf(dst, cap, "%s", json_string_value(v));
}

/* ---- vLLM's result file (`vllm bench serve --save-result --save-detailed`):
 * keys as vLLM's benchmarks/serve.py writes them (input_lens, output_lens,
 * ttfts and itls in seconds, start_times from time.perf_counter(), errors,
 * date, backend, model_id, request_rate, burstiness, max_concurrency). */

static enum im_err vllm_array(const json_t *root, const char *key, size_t n, bool need,
                              const json_t **out, char *err, size_t errlen) {
  const json_t *a = json_object_get(root, key);
  *out = NULL;
  if (!a && !need)
    return IM_OK;
  if (!json_is_array(a) || json_array_size(a) != n)
    return im_errf(err, errlen, IM_PARSE,
                   "vLLM result: \"%s\" must be an array of %zu entries (one per request, as "
                   "\"ttfts\")",
                   key, n);
  *out = a;
  return IM_OK;
}

static enum im_err vllm_request(struct im_import *im, size_t i, const json_t *in, const json_t *ol,
                                const json_t *tt, const json_t *it, const json_t *er,
                                const json_t *st, char *err, size_t errlen) {
  enum im_err e = IM_OK;
  struct im_record *r = im__import_push(im, 0, &e);
  if (!r)
    return e;
  const char *etext = json_string_value(json_array_get(er, i));
  double ttft = im_json_num(json_array_get(tt, i), NAN);
  double start = st ? im_json_num(json_array_get(st, i), NAN) : 0.0;
  const json_t *gaps = json_array_get(it, i);
  if (!(start >= 0 && start < 9.2e9) || !json_is_array(gaps) ||
      json_array_size(gaps) >= IM_IMPORT_MAX_CHUNKS)
    return im_errf(err, errlen, IM_PARSE,
                   "vLLM result: request %zu: start_times must be non-negative seconds and "
                   "itls a list of seconds",
                   i);
  r->t_start = r->t_send = r->t_dispatch = llround(start * 1e9);
  r->prompt_tokens = r->context_tokens = im__json_count(json_array_get(in, i));
  bool ok = !etext || !etext[0];
  if (!ok) {
    r->error = im__import_errclass(etext, 0);
    return IM_OK;
  }
  if (!(ttft >= 0 && ttft < 1e6))
    return im_errf(err, errlen, IM_PARSE, "vLLM result: request %zu: ttft must be seconds >= 0", i);
  r->http_status = 200;
  r->output_tokens = im__json_count(json_array_get(ol, i));
  r->output_source = IM_COUNT_USAGE;
  int64_t t = r->t_start + llround(ttft * 1e9);
  if ((e = im__import_chunk(r, t, 1)))
    return e;
  r->t_answer = t;
  for (size_t k = 0; k < json_array_size(gaps); k++) {
    double g = im_json_num(json_array_get(gaps, k), NAN);
    if (!(g >= 0 && g < 1e6))
      return im_errf(err, errlen, IM_PARSE,
                     "vLLM result: request %zu: itls[%zu] must be seconds >= 0", i, k);
    t += llround(g * 1e9);
    if ((e = im__import_chunk(r, t, 1)))
      return e;
  }
  r->t_end = r->t_last;
  return IM_OK;
}

/* A file saved without --save-detailed: vLLM's summary figures (the keys
 * of serve.py's result that are numbers or null), no records. */
static enum im_err vllm_summary(const json_t *root, struct im_import *im, char *err, size_t errlen) {
  static const char *const setup[] = {"num_prompts", "request_rate", "burstiness",
                                      "max_concurrency", "ramp_up_start_rps", "ramp_up_end_rps"};
  if (!json_is_integer(json_object_get(root, "completed")))
    return im_errf(err, errlen, IM_PARSE,
                   "vLLM result: neither per-request arrays (\"ttfts\", \"itls\", ...) nor "
                   "a summary (\"completed\"...)");
  if (!(im->summary = json_object()))
    return IM_NOMEM;
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)root, key, v) {
    bool is_setup = false;
    for (size_t k = 0; k < sizeof setup / sizeof setup[0]; k++)
      is_setup |= !strcmp(key, setup[k]);
    /* null: a figure vLLM could not compute (goodput without --goodput) */
    if (!is_setup && (json_is_number(v) || (json_is_null(v) && !strcmp(key, "request_goodput"))) &&
        json_object_set(im->summary, key, (json_t *)v))
      return IM_NOMEM;
  }
  im->missing |= IM_MISS_RECORDS | IM_MISS_START_TIMES | IM_MISS_TOKEN_TIMES | IM_MISS_FIRST_TOKEN;
  return im__import_stage(im, 0, "", im->rate);
}

enum im_err im__import_vllm(const json_t *root, struct im_import *im, char *err, size_t errlen) {
  const json_t *tt = json_object_get(root, "ttfts"), *in = NULL, *ol = NULL, *it = NULL,
               *er = NULL, *st = NULL;
  size_t n = json_array_size(tt);
  enum im_err e;
  if (json_is_array(tt) &&
      ((e = vllm_array(root, "input_lens", n, true, &in, err, errlen)) ||
       (e = vllm_array(root, "output_lens", n, true, &ol, err, errlen)) ||
       (e = vllm_array(root, "itls", n, true, &it, err, errlen)) ||
       (e = vllm_array(root, "errors", n, false, &er, err, errlen)) ||
       (e = vllm_array(root, "start_times", n, false, &st, err, errlen))))
    return e;
  im->tool = IM_IMPORT_VLLM;
  copy_str(im->model, sizeof im->model, json_object_get(root, "model_id"));
  copy_str(im->backend, sizeof im->backend, json_object_get(root, "backend"));
  copy_str(im->date, sizeof im->date, json_object_get(root, "date"));
  const json_t *rate = json_object_get(root, "request_rate");
  im->rate = json_is_string(rate) && !strcmp(json_string_value(rate), "inf")
                 ? INFINITY
                 : im_json_num(rate, NAN);
  im->burstiness = im_json_num(json_object_get(root, "burstiness"), NAN);
  const json_t *mc = json_object_get(root, "max_concurrency");
  im->max_concurrency =
      json_is_integer(mc) && json_integer_value(mc) > 0 ? json_integer_value(mc) : -1;
  im->missing = IM_MISS_SCHEDULE | IM_MISS_SERVER | IM_MISS_CLIENT | (st ? 0 : IM_MISS_START_TIMES);
  if (!json_is_array(tt))
    return vllm_summary(root, im, err, errlen);
  for (size_t i = 0; i < n; i++)
    if ((e = vllm_request(im, i, in, ol, tt, it, er, st, err, errlen)))
      return e == IM_LIMIT ? im_errf(err, errlen, IM_LIMIT,
                                     "vLLM result: more than %u requests "
                                     "or %u token times in one",
                                     IM_IMPORT_MAX_RECORDS, IM_IMPORT_MAX_CHUNKS)
                           : e;
  return im__import_stage(im, 0, "", im->rate);
}

/* ---- recognition */

static const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
    p++;
  return p;
}

/* The tool whose format an object is (IM_IMPORT_AUTO: none). */
static enum im_import_tool recognise(const json_t *o) {
  if (json_object_get(o, "resourceSpans"))
    return IM_IMPORT_OTLP;
  if (json_is_array(json_object_get(o, "benchmarks")))
    return IM_IMPORT_GUIDELLM;
  if (json_object_get(o, "ttfts") || json_object_get(o, "input_lens") ||
      (json_object_get(o, "backend") && json_object_get(o, "completed")))
    return IM_IMPORT_VLLM;
  if (json_is_object(json_object_get(o, "metadata")) && json_object_get(o, "metrics"))
    return IM_IMPORT_AIPERF;
  return IM_IMPORT_AUTO;
}

static enum im_err parse_root(const json_t *root, enum im_import_tool tool, struct im_import *im,
                              char *err, size_t errlen) {
  switch (tool) {
  case IM_IMPORT_VLLM:
    return im__import_vllm(root, im, err, errlen);
  case IM_IMPORT_GUIDELLM:
    return im__import_guidellm(root, im, err, errlen);
  case IM_IMPORT_OTLP:
    return im__import_otlp(root, im, err, errlen);
  default:
    return im_errf(err, errlen, IM_UNSUPPORTED,
                   "not a format infermeter imports: expected a vLLM result file (\"ttfts\", "
                   "\"itls\"...), a GuideLLM benchmarks.json (\"benchmarks\"), an AIPerf "
                   "profile_export.jsonl (\"metadata\" and \"metrics\" per line) or an OTLP JSON "
                   "trace export (\"resourceSpans\")");
  }
}

static enum im_err parse_any(const char *data, size_t len, enum im_import_tool tool,
                             struct im_import *im, char *err, size_t errlen) {
  memset(im, 0, sizeof *im);
  im->rate = im->burstiness = NAN;
  im->max_concurrency = -1;
  if (err && errlen)
    err[0] = '\0';
  if (len > IM_IMPORT_MAX_BYTES)
    return im_errf(err, errlen, IM_LIMIT, "the file is larger than %zu bytes", IM_IMPORT_MAX_BYTES);
  const char *p = skip_ws(data, data + len);
  if (p == data + len)
    return im_errf(err, errlen, IM_PARSE, "the file is empty");
  if (*p != '{')
    return im_errf(err, errlen, IM_PARSE,
                   "not JSON or JSON lines: a result file starts with '{' (found '%c')",
                   (*p >= 32 && *p < 127) ? *p : '?');
  json_error_t je;
  json_t *root = json_loadb(p, (size_t)(data + len - p), 0, &je);
  if (!root) {
    /* JSON lines: AIPerf's records, or an OTLP file exporter's requests. */
    const char *nl = memchr(p, '\n', (size_t)(data + len - p));
    json_t *first = nl ? json_loadb(p, (size_t)(nl - p), 0, NULL) : NULL;
    enum im_import_tool t = first ? recognise(first) : IM_IMPORT_AUTO;
    json_decref(first);
    if (tool != IM_IMPORT_AUTO && t != IM_IMPORT_AUTO && t != tool)
      t = IM_IMPORT_AUTO;
    if (t == IM_IMPORT_AIPERF)
      return im__import_aiperf(p, (size_t)(data + len - p), im, err, errlen);
    if (t == IM_IMPORT_OTLP)
      return im__import_otlp_lines(p, (size_t)(data + len - p), im, err, errlen);
    return im_errf(err, errlen, IM_PARSE, "not JSON: line %d, column %d: %s", je.line, je.column,
                   je.text);
  }
  enum im_err e;
  enum im_import_tool t = json_is_object(root) ? recognise(root) : IM_IMPORT_AUTO;
  if (tool != IM_IMPORT_AUTO && t != tool)
    e = im_errf(err, errlen, IM_UNSUPPORTED, "this is not a %s file%s%s", im_import_tool_name(tool),
                t != IM_IMPORT_AUTO ? ": it looks like " : "",
                t != IM_IMPORT_AUTO ? im_import_tool_name(t) : "");
  else if (t == IM_IMPORT_AIPERF) /* one record, one line */
    e = im__import_aiperf(p, (size_t)(data + len - p), im, err, errlen);
  else
    e = parse_root(root, t, im, err, errlen);
  json_decref(root);
  return e;
}

enum im_err im_import_parse(const char *data, size_t len, enum im_import_tool tool,
                            struct im_import *im, char *err, size_t errlen) {
  enum im_err e = parse_any(data, len, tool, im, err, errlen);
  if (e == IM_OK && im->n == 0 && !im->summary)
    e = im_errf(err, errlen, IM_PARSE, "%s file without a single request",
                im_import_tool_name(im->tool));
  return e;
}

void im_import_free(struct im_import *im) {
  if (!im)
    return;
  for (size_t i = 0; i < im->n; i++)
    im_record_cleanup(&im->recs[i]);
  free(im->recs);
  im->recs = NULL;
  json_decref(im->summary);
  im->summary = NULL;
  im->n = im->cap = 0;
}
