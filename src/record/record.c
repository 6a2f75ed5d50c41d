/* Request records: chunk bookkeeping and the requests.jsonl line
 * (docs/results-schema.md). */
#include "record/record.h"

#include "core/rng.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 16M chunks: far above any real stream (a 1M-token output sends at most 1M
 * token-bearing chunks), small enough that a runaway server costs 96 MiB. */
/* 4M token-bearing chunks: beyond any context length served today, and a
 * record that long still fits in IM_RECORD_LINE_MAX when written. */
#define MAX_CHUNKS ((uint32_t)1 << 22)
#define FIRST_CHUNKS 64

static const char *const kind_names[IM_KIND_COUNT_] = {
    "measured", "warmup", "retry", "health", "probe", "aborted", "cancelled",
};

static const char *const errclass_names[IM_EC_COUNT_] = {
    "",
    "connect",
    "timeout_connect",
    "timeout_ttft",
    "timeout_idle",
    "timeout_total",
    "http_4xx",
    "http_429",
    "http_5xx",
    "reset",
    "truncated",
    "malformed",
    "error_event",
    "insufficient_resource",
    "aborted",
    "no_output",
    "invalid_json",
    "context_overflow",
};

static const char *const source_names[IM_COUNT_SOURCE_COUNT_] = {
    "none",
    "usage",
    "tokenizer",
    "chunks",
};

static const char *const class_names[IM_CLASS_COUNT_] = {"", "text", "code"};

const char *im_req_class_name(enum im_req_class c) {
  return (unsigned)c < IM_CLASS_COUNT_ ? class_names[c] : "unknown";
}

const char *im_kind_name(enum im_req_kind k) {
  return (unsigned)k < IM_KIND_COUNT_ ? kind_names[k] : "unknown";
}

const char *im_errclass_name(enum im_errclass e) {
  return (unsigned)e < IM_EC_COUNT_ ? errclass_names[e] : "unknown";
}

const char *im_count_source_name(enum im_count_source s) {
  return (unsigned)s < IM_COUNT_SOURCE_COUNT_ ? source_names[s] : "unknown";
}

/* The number that follows the first occurrence of pat in t (spaces,
 * quotes and colons skipped), 0 when none; *found tells whether pat was. */
static uint32_t num_after(const char *t, const char *pat, bool *found) {
  const char *p = strstr(t, pat);
  if (found)
    *found |= p != NULL;
  if (!p)
    return 0;
  p += strlen(pat);
  while (*p == ' ' || *p == '"' || *p == ':' || *p == '(')
    p++;
  uint64_t v = 0;
  for (int n = 0; *p >= '0' && *p <= '9' && n < 10; p++, n++)
    v = v * 10 + (uint64_t)(*p - '0');
  return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The wordings of a context overflow (facts from each project's sources,
 * none copied): pat names the error; prompt_pat and limit_pat precede the
 * counts. Checked in order; the first whose pat is in the text wins.
 *   llama.cpp tools/server: error type exceed_context_size_error with
 *     n_prompt_tokens and n_ctx; b10587's message "request (P tokens)
 *     exceeds the available context size (L tokens), try increasing it";
 *     older builds' message has no counts.
 *   vLLM serving_engine.py: "This model's maximum context length is L
 *     tokens. However, you requested T tokens (P in the messages, ...)";
 *     newer: "... maximum context length is L tokens and your request has
 *     P input tokens ...".
 *   SGLang tokenizer_manager.py / serving_chat: "The input (P tokens) is
 *     longer than the model's context length (L tokens)."; "... exceeds the
 *     model's maximum context length of L tokens. You requested a total of
 *     T tokens: P tokens from the input messages ...".
 *   TGI router validation.rs: "`inputs` tokens + `max_new_tokens` must be
 *     <= L. Given: P `inputs` tokens ...".
 *   OpenAI's code context_length_exceeded (no counts in a fixed place). */
static const struct {
  const char *pat, *prompt_pat, *limit_pat;
} overflow_words[] = {
    {"exceed_context_size_error", "\"n_prompt_tokens\"", "\"n_ctx\""},
    {"exceeds the available context size", "request (", "available context size ("},
    {"However, you requested", "tokens (", "maximum context length is"},
    {"maximum context length is", "your request has", "maximum context length is"},
    {"is longer than the model's context length", "The input (", "model's context length ("},
    {"exceeds the model's maximum context length", "tokens: ", "maximum context length of"},
    {"`inputs` tokens + `max_new_tokens` must be", "Given:", "must be <="},
    {"context_length_exceeded", "", ""},
};

enum im_errclass im_errclass_refine(enum im_errclass e, const char *text, size_t len,
                                    uint32_t *prompt, uint32_t *limit) {
  if (prompt)
    *prompt = 0;
  if (limit)
    *limit = 0;
  if ((e != IM_EC_HTTP_4XX && e != IM_EC_ERROR_EVENT) || !text || !len)
    return e;
  char t[2048];
  size_t n = len < sizeof t - 1 ? len : sizeof t - 1;
  memcpy(t, text, n);
  t[n] = '\0';
  for (size_t i = 0; i < sizeof overflow_words / sizeof overflow_words[0]; i++) {
    if (!strstr(t, overflow_words[i].pat))
      continue;
    bool found = false;
    /* The JSON form's fields, when present, are the exact counts. */
    uint32_t p = num_after(t, "\"n_prompt_tokens\"", &found);
    uint32_t l = num_after(t, "\"n_ctx\"", &found);
    if (!p && overflow_words[i].prompt_pat[0])
      p = num_after(t, overflow_words[i].prompt_pat, NULL);
    if (!l && overflow_words[i].limit_pat[0])
      l = num_after(t, overflow_words[i].limit_pat, NULL);
    if (prompt)
      *prompt = p;
    if (limit)
      *limit = l;
    return IM_EC_CONTEXT_OVERFLOW;
  }
  return e;
}

uint64_t im_trace_run(const char *run_salt) {
  const char *s = run_salt ? run_salt : "0";
  return im_mix64(im_fnv1a64(s, strlen(s)) ^ 0x7472616365ULL); /* "trace" */
}

void im_record_reset(struct im_record *r) {
  uint32_t *chunk_us = r->chunk_us;
  uint32_t cap = r->cap_chunks;
  /* chunk_tokens != NULL means "some chunk held != 1 tokens", so it cannot be
   * kept across attempts; it is rare enough (speculative decoding, usage
   * deltas) that freeing it costs nothing measurable. */
  free(r->chunk_tokens);
  memset(r, 0, sizeof *r);
  r->chunk_us = chunk_us;
  r->cap_chunks = cap;
  r->kind = IM_KIND_MEASURED;
  r->error = IM_EC_NONE;
  r->output_source = IM_COUNT_NONE;
  r->t_sched = r->t_sched_first = r->t_dispatch = r->t_start = r->t_send = -1;
  r->t_hdr = r->t_first = r->t_answer = r->t_last = r->t_end = -1;
  r->temperature = NAN;
  r->top_p = NAN;
  r->repetition = NAN;
  r->entropy = NAN;
  r->lag_client_us = r->read_first_us = r->read_first_client_us = -1;
  r->read_last_us = r->read_last_client_us = -1;
}

void im_record_cleanup(struct im_record *r) {
  if (!r)
    return;
  free(r->chunk_us);
  free(r->chunk_tokens);
  r->chunk_us = NULL;
  r->chunk_tokens = NULL;
  r->cap_chunks = 0;
  r->n_chunks = 0;
}

/* Makes room for `need` chunks. Both arrays keep the same capacity. */
static enum im_err reserve_chunks(struct im_record *r, uint32_t need) {
  if (!r->chunk_us) /* arrays handed to another owner without resetting cap */
    r->cap_chunks = 0;
  if (need <= r->cap_chunks)
    return IM_OK;
  if (need > MAX_CHUNKS)
    return IM_LIMIT;
  uint32_t cap = r->cap_chunks ? r->cap_chunks : FIRST_CHUNKS;
  while (cap < need)
    cap = cap > MAX_CHUNKS / 2 ? MAX_CHUNKS : cap * 2;
  uint32_t *us = realloc(r->chunk_us, (size_t)cap * sizeof *us);
  if (!us)
    return IM_NOMEM;
  r->chunk_us = us;
  if (r->chunk_tokens) {
    uint16_t *tok = realloc(r->chunk_tokens, (size_t)cap * sizeof *tok);
    if (!tok)
      return IM_NOMEM; /* chunk_us grew, cap unchanged: still consistent */
    r->chunk_tokens = tok;
  }
  r->cap_chunks = cap;
  return IM_OK;
}

enum im_err im_record_add_chunk(struct im_record *r, int64_t t, uint32_t n) {
  if (r->n_chunks >= MAX_CHUNKS)
    return IM_LIMIT;
  enum im_err err = reserve_chunks(r, r->n_chunks + 1);
  if (err)
    return err;
  if (n != 1 && !r->chunk_tokens) {
    uint16_t *tok = malloc((size_t)r->cap_chunks * sizeof *tok);
    if (!tok)
      return IM_NOMEM;
    for (uint32_t i = 0; i < r->n_chunks; i++)
      tok[i] = 1;
    r->chunk_tokens = tok;
  }
  int64_t base = r->t_start >= 0 ? r->t_start : 0;
  int64_t us = t > base ? (t - base) / 1000 : 0;
  r->chunk_us[r->n_chunks] = us > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)us;
  if (r->chunk_tokens)
    r->chunk_tokens[r->n_chunks] = n > UINT16_MAX ? UINT16_MAX : (uint16_t)n;
  r->n_chunks++;
  return IM_OK;
}

/* ---- writing ----------------------------------------------------------- */

/* Decimal digits of v into the end of buf (no terminator); returns the start. */
static char *fmt_u64(char *end, uint64_t v) {
  do {
    *--end = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return end;
}

static enum im_err put_u64(struct im_buf *b, uint64_t v) {
  char tmp[24];
  char *s = fmt_u64(tmp + sizeof tmp, v);
  return im_buf_append(b, s, (size_t)(tmp + sizeof tmp - s));
}

static enum im_err put_i64(struct im_buf *b, int64_t v) {
  char tmp[24];
  uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  char *s = fmt_u64(tmp + sizeof tmp, mag);
  if (v < 0)
    *--s = '-';
  return im_buf_append(b, s, (size_t)(tmp + sizeof tmp - s));
}

/* ,"key": — key is a literal without characters to escape. */
static enum im_err put_key(struct im_buf *b, const char *key) {
  enum im_err err = im_buf_append(b, ",\"", 2);
  if (!err)
    err = im_buf_puts(b, key);
  if (!err)
    err = im_buf_append(b, "\":", 2);
  return err;
}

static enum im_err put_str(struct im_buf *b, const char *s, size_t len) {
  enum im_err err = im_buf_append(b, "\"", 1);
  if (!err)
    err = im_buf_json_escape(b, s, len);
  if (!err)
    err = im_buf_append(b, "\"", 1);
  return err;
}

static enum im_err put_time(struct im_buf *b, const char *key, int64_t t) {
  enum im_err err = put_key(b, key);
  if (err)
    return err;
  return t == -1 ? im_buf_puts(b, "null") : put_i64(b, t);
}

/* Shortest-enough form that reads back to the same double (17 digits). */
static enum im_err put_double_or_null(struct im_buf *b, const char *key, double v) {
  enum im_err err = put_key(b, key);
  if (err)
    return err;
  if (!isfinite(v))
    return im_buf_puts(b, "null");
  char tmp[40];
  snprintf(tmp, sizeof tmp, "%.15g", v);
  if (strtod(tmp, NULL) != v)
    snprintf(tmp, sizeof tmp, "%.17g", v);
  /* JSON needs a digit-only or exponent form; %g gives one, but make sure a
   * reader sees a real (not an integer) so the type survives jansson. */
  if (!strpbrk(tmp, ".eE"))
    strcat(tmp, ".0");
  return im_buf_puts(b, tmp);
}

/* Appends the elements of an array (u32 or u16) in batches through a stack
 * buffer: this is the bulk of a long stream's line. */
static enum im_err put_array(struct im_buf *b, const uint32_t *u32, const uint16_t *u16,
                             uint32_t n) {
  char tmp[1024];
  size_t len = 0;
  enum im_err err = im_buf_append(b, "[", 1);
  for (uint32_t i = 0; i < n && !err; i++) {
    if (len > sizeof tmp - 16) {
      err = im_buf_append(b, tmp, len);
      len = 0;
      if (err)
        break;
    }
    if (i)
      tmp[len++] = ',';
    char dig[12];
    char *s = fmt_u64(dig + sizeof dig, u32 ? u32[i] : u16[i]);
    size_t dl = (size_t)(dig + sizeof dig - s);
    memcpy(tmp + len, s, dl);
    len += dl;
  }
  if (!err && len)
    err = im_buf_append(b, tmp, len);
  if (!err)
    err = im_buf_append(b, "]", 1);
  return err;
}

static enum im_err write_record(const struct im_record *r, struct im_buf *b) {
  enum im_err err;
#define TRY(x)                                                                                     \
  do {                                                                                             \
    if ((err = (x)) != IM_OK)                                                                      \
      return err;                                                                                  \
  } while (0)
#define U64(key, v)                                                                                \
  do {                                                                                             \
    TRY(put_key(b, key));                                                                          \
    TRY(put_u64(b, (v)));                                                                          \
  } while (0)

  TRY(im_buf_puts(b, "{\"id\":"));
  TRY(put_u64(b, r->id));
  U64("logical_id", r->logical_id);
  U64("attempt", r->attempt);
  U64("stage", r->stage);
  TRY(put_key(b, "kind"));
  TRY(put_str(b, im_kind_name(r->kind), strlen(im_kind_name(r->kind))));
  TRY(put_key(b, "request_id"));
  TRY(put_str(b, r->request_id, strnlen(r->request_id, sizeof r->request_id)));
  TRY(put_key(b, "status"));
  TRY(put_i64(b, r->http_status));
  TRY(put_key(b, "error"));
  if (r->error == IM_EC_NONE)
    TRY(im_buf_puts(b, "null"));
  else
    TRY(put_str(b, im_errclass_name(r->error), strlen(im_errclass_name(r->error))));
  TRY(put_key(b, "finish_reason"));
  size_t fr = strnlen(r->finish_reason, sizeof r->finish_reason);
  TRY(fr ? put_str(b, r->finish_reason, fr) : im_buf_puts(b, "null"));
  U64("conn", r->conn_id);
  TRY(put_key(b, "conn_new"));
  TRY(im_buf_puts(b, r->conn_new ? "true" : "false"));

  TRY(put_time(b, "t_sched", r->t_sched));
  TRY(put_time(b, "t_sched_first", r->t_sched_first));
  TRY(put_time(b, "t_dispatch", r->t_dispatch));
  TRY(put_time(b, "t_start", r->t_start));
  TRY(put_time(b, "t_send", r->t_send));
  TRY(put_time(b, "t_hdr", r->t_hdr));
  TRY(put_time(b, "t_first", r->t_first));
  TRY(put_time(b, "t_answer", r->t_answer));
  TRY(put_time(b, "t_last", r->t_last));
  TRY(put_time(b, "t_end", r->t_end));

  U64("prompt_tokens", r->prompt_tokens);
  U64("output_tokens", r->output_tokens);
  TRY(put_key(b, "output_tokens_source"));
  const char *src = im_count_source_name(r->output_source);
  TRY(put_str(b, src, strlen(src)));
  U64("cached_tokens", r->cached_tokens);
  U64("reasoning_tokens", r->reasoning_tokens);
  U64("requested_tokens", r->requested_tokens);
  TRY(put_key(b, "ignore_eos"));
  TRY(im_buf_puts(b, r->ignore_eos ? "true" : "false"));
  TRY(put_key(b, "output_shortfall"));
  if (r->ignore_eos)
    TRY(put_i64(b, (int64_t)r->requested_tokens - (int64_t)r->output_tokens));
  else
    TRY(im_buf_puts(b, "null"));
  U64("keepalives", r->keepalives);
  /* A 64-bit hash would lose bits as a JSON number in most readers: hex. */
  TRY(put_key(b, "content_hash"));
  TRY(im_buf_printf(b, "\"%016" PRIx64 "\"", r->content_hash));
  TRY(put_double_or_null(b, "temperature", r->temperature));
  TRY(put_double_or_null(b, "top_p", r->top_p));
  U64("session", r->session);
  U64("turn", r->turn);
  U64("context_tokens", r->context_tokens);
  TRY(put_key(b, "class"));
  TRY(r->content_class != IM_CLASS_NONE
          ? put_str(b, im_req_class_name(r->content_class), strlen(im_req_class_name(r->content_class)))
          : im_buf_puts(b, "null"));
  TRY(put_double_or_null(b, "repetition", r->ngrams ? r->repetition : NAN));
  U64("ngrams", r->ngrams);
  TRY(put_double_or_null(b, "entropy", r->entropy));
  size_t effort = strnlen(r->reasoning_effort, sizeof r->reasoning_effort);
  if (effort) {
    TRY(put_key(b, "reasoning_effort"));
    TRY(put_str(b, r->reasoning_effort, effort));
  }
  if (r->thinking) {
    TRY(put_key(b, "thinking"));
    TRY(im_buf_puts(b, r->thinking > 0 ? "true" : "false"));
  }
  if (r->tools)
    U64("tools", r->tools);
  size_t model_len = strnlen(r->model, sizeof r->model);
  if (model_len) {
    TRY(put_key(b, "model"));
    TRY(put_str(b, r->model, model_len));
  }
  if (r->target)
    U64("target", (uint64_t)r->target - 1);
  if (r->lag_client_us >= 0) {
    /* Written as a group: the engine measures all of them. */
    U64("dispatch_lag_client_us", (uint64_t)r->lag_client_us);
    TRY(put_key(b, "read_lag_us"));
    TRY(im_buf_printf(b, "[%" PRId32 ",%" PRId32 ",%" PRId32 ",%" PRId32 "]", r->read_first_us,
                      r->read_first_client_us, r->read_last_us, r->read_last_client_us));
    U64("late_reads", r->late_reads);
    U64("late_reads_client", r->late_reads_client);
  }

  U64("n_chunks", r->n_chunks);
  TRY(put_key(b, "chunks_us"));
  TRY(put_array(b, r->chunk_us, NULL, r->n_chunks));
  if (r->chunk_tokens) {
    TRY(put_key(b, "chunk_tokens"));
    TRY(put_array(b, NULL, r->chunk_tokens, r->n_chunks));
  }
  TRY(im_buf_append(b, "}\n", 2));
  return IM_OK;
#undef U64
#undef TRY
}

enum im_err im_record_to_jsonl(const struct im_record *r, struct im_buf *out) {
  size_t start = out->len;
  enum im_err err = write_record(r, out);
  if (err && out->data) {
    /* Leave the buffer as it was: no half line in requests.jsonl. */
    out->len = start;
    out->data[start] = '\0';
  }
  return err;
}

/* ---- reading ----------------------------------------------------------- */

/* A reading error: the message, IM_PARSE. */
#define fail(msg, msg_len, ...) im_errf(msg, msg_len, IM_PARSE, __VA_ARGS__)

struct rd {
  json_t *obj;
  char *msg;
  size_t msg_len;
};

static json_t *need(struct rd *d, const char *key, enum im_err *err) {
  json_t *v = json_object_get(d->obj, key);
  if (!v)
    *err = fail(d->msg, d->msg_len, "requests.jsonl: missing field \"%s\"", key);
  return v;
}

/* An integer in [lo, hi]. */
static enum im_err get_int(struct rd *d, const char *key, int64_t lo, int64_t hi, int64_t *out) {
  enum im_err err = IM_OK;
  json_t *v = need(d, key, &err);
  if (!v)
    return err;
  if (!json_is_integer(v))
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"%s\" must be an integer", key);
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi)
    return fail(d->msg, d->msg_len,
                "requests.jsonl: field \"%s\" = %" JSON_INTEGER_FORMAT " is out of range [%" PRId64
                ", %" PRId64 "]",
                key, x, lo, hi);
  *out = x;
  return IM_OK;
}

static enum im_err get_u32(struct rd *d, const char *key, uint32_t *out) {
  int64_t x = 0;
  enum im_err err = get_int(d, key, 0, UINT32_MAX, &x);
  if (!err)
    *out = (uint32_t)x;
  return err;
}

static enum im_err get_u64(struct rd *d, const char *key, uint64_t *out) {
  int64_t x = 0;
  enum im_err err = get_int(d, key, 0, INT64_MAX, &x);
  if (!err)
    *out = (uint64_t)x;
  return err;
}

/* A time: integer ns, or null for -1. */
static enum im_err get_time(struct rd *d, const char *key, int64_t *out) {
  enum im_err err = IM_OK;
  json_t *v = need(d, key, &err);
  if (!v)
    return err;
  if (json_is_null(v)) {
    *out = -1;
    return IM_OK;
  }
  if (!json_is_integer(v))
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"%s\" must be an integer (ns) or null",
                key);
  *out = json_integer_value(v);
  return IM_OK;
}

static enum im_err get_bool(struct rd *d, const char *key, bool *out) {
  enum im_err err = IM_OK;
  json_t *v = need(d, key, &err);
  if (!v)
    return err;
  if (!json_is_boolean(v))
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"%s\" must be true or false", key);
  *out = json_is_true(v);
  return IM_OK;
}

/* A number (integer or real) or null for NaN. */
static enum im_err get_double(struct rd *d, const char *key, double *out) {
  enum im_err err = IM_OK;
  json_t *v = need(d, key, &err);
  if (!v)
    return err;
  if (json_is_null(v)) {
    *out = NAN;
    return IM_OK;
  }
  if (!json_is_number(v))
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"%s\" must be a number or null", key);
  *out = json_number_value(v);
  return IM_OK;
}

/* A string (or null when nullable, giving "") copied into dst[cap]. */
static enum im_err get_str(struct rd *d, const char *key, bool nullable, char *dst, size_t cap) {
  enum im_err err = IM_OK;
  json_t *v = need(d, key, &err);
  if (!v)
    return err;
  if (nullable && json_is_null(v)) {
    dst[0] = '\0';
    return IM_OK;
  }
  if (!json_is_string(v))
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"%s\" must be a string%s", key,
                nullable ? " or null" : "");
  size_t len = json_string_length(v);
  if (len >= cap || memchr(json_string_value(v), '\0', len))
    return fail(d->msg, d->msg_len,
                "requests.jsonl: field \"%s\" is longer than %zu bytes or holds a NUL", key,
                cap - 1);
  memcpy(dst, json_string_value(v), len + 1);
  return IM_OK;
}

/* A name from table[n] (or null for index 0 when nullable). */
static enum im_err get_enum(struct rd *d, const char *key, const char *const *table, int n,
                            bool nullable, int *out) {
  char name[32];
  enum im_err err = get_str(d, key, nullable, name, sizeof name);
  if (err)
    return err;
  if (nullable && name[0] == '\0' && json_is_null(json_object_get(d->obj, key))) {
    *out = 0;
    return IM_OK;
  }
  for (int i = nullable ? 1 : 0; i < n; i++)
    if (strcmp(name, table[i]) == 0) {
      *out = i;
      return IM_OK;
    }
  return fail(d->msg, d->msg_len, "requests.jsonl: field \"%s\" has unknown value \"%s\"", key,
              name);
}

/* The optional group of who-caused-the-lag fields (absent in older files
 * and other tools' records: all stay -1 / 0). */
static enum im_err get_lag_parts(struct rd *d, struct im_record *r) {
  if (!json_object_get(d->obj, "dispatch_lag_client_us"))
    return IM_OK;
  int64_t x = 0;
  enum im_err err = get_int(d, "dispatch_lag_client_us", 0, INT32_MAX, &x);
  if (err)
    return err;
  r->lag_client_us = (int32_t)x;
  json_t *a = json_object_get(d->obj, "read_lag_us");
  int32_t *dst[] = {&r->read_first_us, &r->read_first_client_us, &r->read_last_us,
                    &r->read_last_client_us};
  if (!json_is_array(a) || json_array_size(a) != 4)
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"read_lag_us\" must be an array of 4 integers");
  for (size_t i = 0; i < 4; i++) {
    json_t *v = json_array_get(a, i);
    if (!json_is_integer(v) || json_integer_value(v) < -1 || json_integer_value(v) > INT32_MAX)
      return fail(d->msg, d->msg_len,
                  "requests.jsonl: field \"read_lag_us\" must hold integers from -1");
    *dst[i] = (int32_t)json_integer_value(v);
  }
  if ((err = get_u32(d, "late_reads", &r->late_reads)))
    return err;
  return get_u32(d, "late_reads_client", &r->late_reads_client);
}

static enum im_err get_chunks(struct rd *d, struct im_record *r) {
  uint32_t n = 0;
  enum im_err err = get_u32(d, "n_chunks", &n);
  if (err)
    return err;
  if (n > MAX_CHUNKS)
    return fail(d->msg, d->msg_len,
                "requests.jsonl: field \"n_chunks\" = %" PRIu32 " is above the limit of %" PRIu32,
                n, MAX_CHUNKS);
  json_t *us = need(d, "chunks_us", &err);
  if (!us)
    return err;
  if (!json_is_array(us) || json_array_size(us) != n)
    return fail(d->msg, d->msg_len,
                "requests.jsonl: field \"chunks_us\" must be an array of n_chunks (%" PRIu32
                ") integers",
                n);
  json_t *tok = json_object_get(d->obj, "chunk_tokens");
  if (tok && !json_is_null(tok) && (!json_is_array(tok) || json_array_size(tok) != n))
    return fail(d->msg, d->msg_len,
                "requests.jsonl: field \"chunk_tokens\" must be an array of n_chunks (%" PRIu32
                ") integers",
                n);
  if (tok && json_is_null(tok))
    tok = NULL;

  err = reserve_chunks(r, n);
  if (err)
    return fail(d->msg, d->msg_len, "requests.jsonl: no memory for %" PRIu32 " chunks", n);
  if (tok && !r->chunk_tokens) {
    size_t cap = r->cap_chunks ? r->cap_chunks : 1;
    r->chunk_tokens = malloc(cap * sizeof *r->chunk_tokens);
    if (!r->chunk_tokens)
      return fail(d->msg, d->msg_len, "requests.jsonl: no memory for %" PRIu32 " chunks", n);
  }
  for (uint32_t i = 0; i < n; i++) {
    json_t *v = json_array_get(us, i);
    json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;
    if (x < 0 || x > (json_int_t)UINT32_MAX)
      return fail(d->msg, d->msg_len,
                  "requests.jsonl: field \"chunks_us\"[%" PRIu32 "] must be an integer in "
                  "[0, 4294967295]",
                  i);
    r->chunk_us[i] = (uint32_t)x;
    if (tok) {
      v = json_array_get(tok, i);
      x = json_is_integer(v) ? json_integer_value(v) : -1;
      if (x < 0 || x > (json_int_t)UINT16_MAX)
        return fail(d->msg, d->msg_len,
                    "requests.jsonl: field \"chunk_tokens\"[%" PRIu32 "] must be an integer in "
                    "[0, 65535]",
                    i);
      r->chunk_tokens[i] = (uint16_t)x;
    }
  }
  r->n_chunks = n;
  return IM_OK;
}

static enum im_err read_fields(struct rd *d, struct im_record *r) {
  enum im_err err;
  int64_t x = 0;
  int e = 0;
#define TRY(call)                                                                                  \
  do {                                                                                             \
    if ((err = (call)) != IM_OK)                                                                   \
      return err;                                                                                  \
  } while (0)
  TRY(get_u64(d, "id", &r->id));
  TRY(get_u64(d, "logical_id", &r->logical_id));
  TRY(get_u32(d, "attempt", &r->attempt));
  TRY(get_u32(d, "stage", &r->stage));
  TRY(get_enum(d, "kind", kind_names, IM_KIND_COUNT_, false, &e));
  r->kind = (enum im_req_kind)e;
  TRY(get_str(d, "request_id", false, r->request_id, sizeof r->request_id));
  TRY(get_int(d, "status", 0, 999, &x));
  r->http_status = (int)x;
  TRY(get_enum(d, "error", errclass_names, IM_EC_COUNT_, true, &e));
  r->error = (enum im_errclass)e;
  TRY(get_str(d, "finish_reason", true, r->finish_reason, sizeof r->finish_reason));
  TRY(get_u64(d, "conn", &r->conn_id));
  TRY(get_bool(d, "conn_new", &r->conn_new));

  TRY(get_time(d, "t_sched", &r->t_sched));
  TRY(get_time(d, "t_sched_first", &r->t_sched_first));
  TRY(get_time(d, "t_dispatch", &r->t_dispatch));
  TRY(get_time(d, "t_start", &r->t_start));
  TRY(get_time(d, "t_send", &r->t_send));
  TRY(get_time(d, "t_hdr", &r->t_hdr));
  TRY(get_time(d, "t_first", &r->t_first));
  TRY(get_time(d, "t_answer", &r->t_answer));
  TRY(get_time(d, "t_last", &r->t_last));
  TRY(get_time(d, "t_end", &r->t_end));

  TRY(get_u32(d, "prompt_tokens", &r->prompt_tokens));
  TRY(get_u32(d, "output_tokens", &r->output_tokens));
  TRY(get_enum(d, "output_tokens_source", source_names, IM_COUNT_SOURCE_COUNT_, false, &e));
  r->output_source = (enum im_count_source)e;
  TRY(get_u32(d, "cached_tokens", &r->cached_tokens));
  TRY(get_u32(d, "reasoning_tokens", &r->reasoning_tokens));
  TRY(get_u32(d, "requested_tokens", &r->requested_tokens));
  TRY(get_bool(d, "ignore_eos", &r->ignore_eos));
  /* Derived: only its type is checked (it is recomputed on writing). */
  json_t *sf = json_object_get(d->obj, "output_shortfall");
  if (sf && !json_is_null(sf) && !json_is_integer(sf))
    return fail(d->msg, d->msg_len,
                "requests.jsonl: field \"output_shortfall\" must be an integer or null");
  TRY(get_u32(d, "keepalives", &r->keepalives));
  json_t *ch = json_object_get(d->obj, "content_hash");
  if (ch) { /* optional: absent in files of older versions */
    const char *hex = json_string_value(ch);
    char *end = NULL;
    if (!hex || strlen(hex) != 16 || (r->content_hash = strtoull(hex, &end, 16), *end))
      return fail(d->msg, d->msg_len,
                  "requests.jsonl: field \"content_hash\" must be a string of 16 hex digits");
  }
  TRY(get_double(d, "temperature", &r->temperature));
  TRY(get_double(d, "top_p", &r->top_p));
  /* Optional: absent in files of older versions. */
  if (json_object_get(d->obj, "session"))
    TRY(get_u64(d, "session", &r->session));
  if (json_object_get(d->obj, "turn"))
    TRY(get_u32(d, "turn", &r->turn));
  if (json_object_get(d->obj, "context_tokens"))
    TRY(get_u32(d, "context_tokens", &r->context_tokens));
  if (json_object_get(d->obj, "class")) {
    TRY(get_enum(d, "class", class_names, IM_CLASS_COUNT_, true, &e));
    r->content_class = (enum im_req_class)e;
  }
  if (json_object_get(d->obj, "ngrams")) {
    TRY(get_u32(d, "ngrams", &r->ngrams));
    TRY(get_double(d, "repetition", &r->repetition));
    if (r->ngrams && !(r->repetition >= 0 && r->repetition < 1))
      return fail(d->msg, d->msg_len,
                  "requests.jsonl: field \"repetition\" must be in [0, 1) when \"ngrams\" > 0");
  }
  if (json_object_get(d->obj, "entropy")) {
    TRY(get_double(d, "entropy", &r->entropy));
    if (!isnan(r->entropy) && !(r->entropy >= 0))
      return fail(d->msg, d->msg_len, "requests.jsonl: field \"entropy\" must be >= 0 or null");
  }
  if (json_object_get(d->obj, "reasoning_effort"))
    TRY(get_str(d, "reasoning_effort", false, r->reasoning_effort, sizeof r->reasoning_effort));
  if (json_object_get(d->obj, "thinking")) {
    bool on = false;
    TRY(get_bool(d, "thinking", &on));
    r->thinking = on ? 1 : -1;
  }
  if (json_object_get(d->obj, "tools"))
    TRY(get_u32(d, "tools", &r->tools));
  if (json_object_get(d->obj, "model"))
    TRY(get_str(d, "model", false, r->model, sizeof r->model));
  if (json_object_get(d->obj, "target")) {
    uint32_t t = 0;
    TRY(get_u32(d, "target", &t));
    if (t >= IM_RECORD_MAX_TARGETS)
      return fail(d->msg, d->msg_len, "requests.jsonl: field \"target\" must be below %d",
                  IM_RECORD_MAX_TARGETS);
    r->target = (uint16_t)(t + 1);
  }
  TRY(get_lag_parts(d, r));
  TRY(get_chunks(d, r));
  return IM_OK;
#undef TRY
}

enum im_err im_record_from_json(const char *line, size_t len, struct im_record *r, char *msg,
                                size_t msg_len) {
  if (msg && msg_len)
    msg[0] = '\0';
  json_error_t jerr;
  json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root)
    return fail(msg, msg_len, "requests.jsonl: not JSON (%s, column %d)", jerr.text, jerr.column);
  enum im_err err;
  if (!json_is_object(root)) {
    err = fail(msg, msg_len, "requests.jsonl: a line must be a JSON object");
  } else {
    struct rd d = {root, msg, msg_len};
    err = read_fields(&d, r);
  }
  json_decref(root);
  return err;
}
