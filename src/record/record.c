/* Request records: chunk bookkeeping and the requests.jsonl line
 * (docs/results-schema.md). */
#include "record/record.h"

#include "core/rng.h"
#include "record/fobj.h"

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

/* Room for exactly `need` chunks when there is less (a record read back
 * does not grow: a whole run's records are held by the analysis, and the
 * doubling's minimum of FIRST_CHUNKS was most of a short answer's memory). */
static enum im_err reserve_exact(struct im_record *r, uint32_t need) {
  if (!r->chunk_us)
    r->cap_chunks = 0;
  if (need <= r->cap_chunks)
    return IM_OK;
  uint32_t *us = realloc(r->chunk_us, (size_t)need * sizeof *us);
  if (!us)
    return IM_NOMEM;
  r->chunk_us = us;
  if (r->chunk_tokens) {
    uint16_t *tok = realloc(r->chunk_tokens, (size_t)need * sizeof *tok);
    if (!tok)
      return IM_NOMEM;
    r->chunk_tokens = tok;
  }
  r->cap_chunks = need;
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

/* A line is written through a cursor into the buffer's own memory: one
 * capacity check per field instead of three appends (a reserve, a memcpy
 * and a terminator each) per key and value. That was 33,000 instructions
 * per record, the record writer's whole cost for a short answer. */
struct cur {
  struct im_buf *b;
  char *p, *end; /* the next byte; the end of the room (the terminator's byte excluded) */
};

/* Room for n more bytes at c->p (growing the buffer), or IM_LIMIT/IM_NOMEM. */
static enum im_err room(struct cur *c, size_t n) {
  if ((size_t)(c->end - c->p) >= n)
    return IM_OK;
  c->b->len = (size_t)(c->p - c->b->data);
  enum im_err err = im_buf_reserve(c->b, n);
  if (err)
    return err;
  c->p = c->b->data + c->b->len;
  c->end = c->b->data + c->b->cap - 1;
  return IM_OK;
}

static void put_mem(struct cur *c, const char *s, size_t n) {
  memcpy(c->p, s, n);
  c->p += n;
}

/* The longest key, quoted, with its comma and colon, and a number. */
#define FIELD_ROOM 64

static void put_u64(struct cur *c, uint64_t v) {
  char tmp[24];
  char *s = fmt_u64(tmp + sizeof tmp, v);
  put_mem(c, s, (size_t)(tmp + sizeof tmp - s));
}

static void put_i64(struct cur *c, int64_t v) {
  if (v < 0)
    *c->p++ = '-';
  put_u64(c, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* ,"key": — key is a literal without characters to escape, shorter than
 * FIELD_ROOM - 24. */
#define KEY(c, key) put_mem((c), ",\"" key "\":", sizeof(key) + 3)

/* A quoted, escaped string. */
static enum im_err put_str(struct cur *c, const char *s, size_t len) {
  enum im_err err = room(c, len + 2);
  if (err)
    return err;
  size_t plain = 0;
  while (plain < len && (unsigned char)s[plain] >= 0x20 && (unsigned char)s[plain] < 0x80 &&
         s[plain] != '"' && s[plain] != '\\')
    plain++;
  *c->p++ = '"';
  if (plain == len) {
    put_mem(c, s, len);
  } else { /* the rare string with something to escape: the buffer's escaper */
    c->b->len = (size_t)(c->p - c->b->data);
    if ((err = im_buf_json_escape(c->b, s, len)) != IM_OK)
      return err;
    c->p = c->b->data + c->b->len;
    c->end = c->b->data + c->b->cap - 1;
    if ((err = room(c, 1)) != IM_OK)
      return err;
  }
  *c->p++ = '"';
  return room(c, FIELD_ROOM);
}

static void put_time(struct cur *c, int64_t t) {
  if (t == -1)
    put_mem(c, "null", 4);
  else
    put_i64(c, t);
}

/* Shortest-enough form that reads back to the same double (17 digits). */
static void put_double_or_null(struct cur *c, double v) {
  if (!isfinite(v)) {
    put_mem(c, "null", 4);
    return;
  }
  char tmp[40];
  snprintf(tmp, sizeof tmp, "%.15g", v);
  if (strtod(tmp, NULL) != v)
    snprintf(tmp, sizeof tmp, "%.17g", v);
  /* JSON needs a digit-only or exponent form; %g gives one, but make sure a
   * reader sees a real (not an integer) so the type survives jansson. */
  if (!strpbrk(tmp, ".eE"))
    strcat(tmp, ".0");
  put_mem(c, tmp, strlen(tmp));
}

/* The elements of an array (u32 or u16): the bulk of a long stream's line. */
static enum im_err put_array(struct cur *c, const uint32_t *u32, const uint16_t *u16,
                             uint32_t n) {
  enum im_err err = room(c, (size_t)n * 11 + 2 + FIELD_ROOM);
  if (err)
    return err;
  *c->p++ = '[';
  for (uint32_t i = 0; i < n; i++) {
    if (i)
      *c->p++ = ',';
    put_u64(c, u32 ? u32[i] : u16[i]);
  }
  *c->p++ = ']';
  return IM_OK;
}

static void put_hex16(struct cur *c, uint64_t v) {
  for (int i = 15; i >= 0; i--, v >>= 4)
    c->p[i] = "0123456789abcdef"[v & 15];
  c->p += 16;
}

/* Below: every scalar field is preceded by room(FIELD_ROOM) through TRY
 * (put_str and put_array leave FIELD_ROOM free after themselves). */
static enum im_err write_record(const struct im_record *r, struct cur *c) {
  enum im_err err;
#define TRY(x)                                                                                     \
  do {                                                                                             \
    if ((err = (x)) != IM_OK)                                                                      \
      return err;                                                                                  \
  } while (0)
#define U64(key, v)                                                                                \
  do {                                                                                             \
    TRY(room(c, FIELD_ROOM));                                                                      \
    KEY(c, key);                                                                                   \
    put_u64(c, (v));                                                                               \
  } while (0)
#define TIME(key, v)                                                                               \
  do {                                                                                             \
    TRY(room(c, FIELD_ROOM));                                                                      \
    KEY(c, key);                                                                                   \
    put_time(c, (v));                                                                              \
  } while (0)
#define LIT(key, s)                                                                                \
  do {                                                                                             \
    TRY(room(c, FIELD_ROOM));                                                                      \
    KEY(c, key);                                                                                   \
    put_mem(c, s, strlen(s));                                                                      \
  } while (0)
#define STR(key, s, len)                                                                           \
  do {                                                                                             \
    TRY(room(c, FIELD_ROOM));                                                                      \
    KEY(c, key);                                                                                   \
    TRY(put_str(c, (s), (len)));                                                                   \
  } while (0)
#define DBL(key, v)                                                                                \
  do {                                                                                             \
    TRY(room(c, FIELD_ROOM));                                                                      \
    KEY(c, key);                                                                                   \
    put_double_or_null(c, (v));                                                                    \
  } while (0)

  TRY(room(c, FIELD_ROOM));
  put_mem(c, "{\"id\":", 6);
  put_u64(c, r->id);
  U64("logical_id", r->logical_id);
  U64("attempt", r->attempt);
  U64("stage", r->stage);
  STR("kind", im_kind_name(r->kind), strlen(im_kind_name(r->kind)));
  STR("request_id", r->request_id, strnlen(r->request_id, sizeof r->request_id));
  TRY(room(c, FIELD_ROOM));
  KEY(c, "status");
  put_i64(c, r->http_status);
  if (r->error == IM_EC_NONE)
    LIT("error", "null");
  else
    STR("error", im_errclass_name(r->error), strlen(im_errclass_name(r->error)));
  size_t fr = strnlen(r->finish_reason, sizeof r->finish_reason);
  if (fr)
    STR("finish_reason", r->finish_reason, fr);
  else
    LIT("finish_reason", "null");
  if (r->cancelled)
    LIT("cancelled", "true");
  U64("conn", r->conn_id);
  LIT("conn_new", r->conn_new ? "true" : "false");

  TIME("t_sched", r->t_sched);
  TIME("t_sched_first", r->t_sched_first);
  TIME("t_dispatch", r->t_dispatch);
  TIME("t_start", r->t_start);
  TIME("t_send", r->t_send);
  TIME("t_hdr", r->t_hdr);
  TIME("t_first", r->t_first);
  TIME("t_answer", r->t_answer);
  TIME("t_last", r->t_last);
  TIME("t_end", r->t_end);

  U64("prompt_tokens", r->prompt_tokens);
  U64("output_tokens", r->output_tokens);
  const char *src = im_count_source_name(r->output_source);
  STR("output_tokens_source", src, strlen(src));
  U64("cached_tokens", r->cached_tokens);
  U64("reasoning_tokens", r->reasoning_tokens);
  U64("requested_tokens", r->requested_tokens);
  LIT("ignore_eos", r->ignore_eos ? "true" : "false");
  if (r->ignore_eos) {
    TRY(room(c, FIELD_ROOM));
    KEY(c, "output_shortfall");
    put_i64(c, (int64_t)r->requested_tokens - (int64_t)r->output_tokens);
  } else
    LIT("output_shortfall", "null");
  U64("keepalives", r->keepalives);
  /* A 64-bit hash would lose bits as a JSON number in most readers: hex. */
  TRY(room(c, FIELD_ROOM));
  KEY(c, "content_hash");
  *c->p++ = '"';
  put_hex16(c, r->content_hash);
  *c->p++ = '"';
  DBL("temperature", r->temperature);
  DBL("top_p", r->top_p);
  U64("session", r->session);
  U64("turn", r->turn);
  U64("context_tokens", r->context_tokens);
  if (r->content_class != IM_CLASS_NONE)
    STR("class", im_req_class_name(r->content_class), strlen(im_req_class_name(r->content_class)));
  else
    LIT("class", "null");
  DBL("repetition", r->ngrams ? r->repetition : NAN);
  U64("ngrams", r->ngrams);
  DBL("entropy", r->entropy);
  size_t effort = strnlen(r->reasoning_effort, sizeof r->reasoning_effort);
  if (effort)
    STR("reasoning_effort", r->reasoning_effort, effort);
  if (r->thinking)
    LIT("thinking", r->thinking > 0 ? "true" : "false");
  if (r->tools)
    U64("tools", r->tools);
  size_t model_len = strnlen(r->model, sizeof r->model);
  if (model_len)
    STR("model", r->model, model_len);
  if (r->target)
    U64("target", (uint64_t)r->target - 1);
  if (r->lag_client_us >= 0) {
    /* Written as a group: the engine measures all of them. */
    U64("dispatch_lag_client_us", (uint64_t)r->lag_client_us);
    TRY(room(c, 2 * FIELD_ROOM)); /* the key and four signed 32-bit numbers */
    KEY(c, "read_lag_us");
    const int32_t lag[4] = {r->read_first_us, r->read_first_client_us, r->read_last_us,
                            r->read_last_client_us};
    for (int i = 0; i < 4; i++) {
      *c->p++ = i ? ',' : '[';
      put_i64(c, lag[i]);
    }
    *c->p++ = ']';
    U64("late_reads", r->late_reads);
    U64("late_reads_client", r->late_reads_client);
  }

  U64("n_chunks", r->n_chunks);
  TRY(room(c, FIELD_ROOM));
  KEY(c, "chunks_us");
  TRY(put_array(c, r->chunk_us, NULL, r->n_chunks));
  if (r->chunk_tokens) {
    KEY(c, "chunk_tokens");
    TRY(put_array(c, NULL, r->chunk_tokens, r->n_chunks));
  }
  put_mem(c, "}\n", 2);
  return IM_OK;
#undef DBL
#undef STR
#undef LIT
#undef TIME
#undef U64
#undef TRY
}

enum im_err im_record_to_jsonl(const struct im_record *r, struct im_buf *out) {
  size_t start = out->len;
  struct cur c = {out, NULL, NULL};
  enum im_err err = im_buf_reserve(out, 0); /* a buffer to point into; room() grows it */
  if (!err) {
    c.p = out->data + out->len;
    c.end = out->data + out->cap - 1;
    err = write_record(r, &c);
  }
  if (!err) {
    out->len = (size_t)(c.p - out->data);
    out->data[out->len] = '\0';
  } else if (out->data) {
    /* Leave the buffer as it was: no half line in requests.jsonl. */
    out->len = start;
    out->data[start] = '\0';
  }
  return err;
}

/* ---- reading ----------------------------------------------------------- */

/* A reading error: the message, IM_PARSE. */
#define fail(msg, msg_len, ...) im_errf(msg, msg_len, IM_PARSE, __VA_ARGS__)

/* Fields are read from a flat view of the line (record/fobj.h): scanned in
 * place for the lines this tool writes, through jansson for anything else. */
struct rd {
  struct im__fobj *obj;
  char *msg;
  size_t msg_len;
};

#define HAS(d, key) (im__fobj_get((d)->obj, key) != NULL)

static const struct im__fv *need(struct rd *d, const char *key, enum im_err *err) {
  const struct im__fv *v = im__fobj_get(d->obj, key);
  if (!v)
    *err = fail(d->msg, d->msg_len, "requests.jsonl: missing field \"%s\"", key);
  return v;
}

/* An integer in [lo, hi]. */
static enum im_err get_int(struct rd *d, const char *key, int64_t lo, int64_t hi, int64_t *out) {
  enum im_err err = IM_OK;
  const struct im__fv *v = need(d, key, &err);
  if (!v)
    return err;
  if (v->t != IM__FV_INT)
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"%s\" must be an integer", key);
  int64_t x = v->i;
  if (x < lo || x > hi)
    return fail(d->msg, d->msg_len,
                "requests.jsonl: field \"%s\" = %" PRId64 " is out of range [%" PRId64
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
  const struct im__fv *v = need(d, key, &err);
  if (!v)
    return err;
  if (v->t == IM__FV_NULL) {
    *out = -1;
    return IM_OK;
  }
  if (v->t != IM__FV_INT)
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"%s\" must be an integer (ns) or null",
                key);
  *out = v->i;
  return IM_OK;
}

static enum im_err get_bool(struct rd *d, const char *key, bool *out) {
  enum im_err err = IM_OK;
  const struct im__fv *v = need(d, key, &err);
  if (!v)
    return err;
  if (v->t != IM__FV_TRUE && v->t != IM__FV_FALSE)
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"%s\" must be true or false", key);
  *out = v->t == IM__FV_TRUE;
  return IM_OK;
}

/* A number (integer or real) or null for NaN. */
static enum im_err get_double(struct rd *d, const char *key, double *out) {
  enum im_err err = IM_OK;
  const struct im__fv *v = need(d, key, &err);
  if (!v)
    return err;
  if (v->t == IM__FV_NULL) {
    *out = NAN;
    return IM_OK;
  }
  if (v->t != IM__FV_INT && v->t != IM__FV_REAL)
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"%s\" must be a number or null", key);
  *out = v->d;
  return IM_OK;
}

/* A string (or null when nullable, giving "") copied into dst[cap]. */
static enum im_err get_str(struct rd *d, const char *key, bool nullable, char *dst, size_t cap) {
  enum im_err err = IM_OK;
  const struct im__fv *v = need(d, key, &err);
  if (!v)
    return err;
  if (nullable && v->t == IM__FV_NULL) {
    dst[0] = '\0';
    return IM_OK;
  }
  if (v->t != IM__FV_STR)
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"%s\" must be a string%s", key,
                nullable ? " or null" : "");
  size_t len = v->n;
  if (len >= cap || memchr(v->s, '\0', len))
    return fail(d->msg, d->msg_len,
                "requests.jsonl: field \"%s\" is longer than %zu bytes or holds a NUL", key,
                cap - 1);
  memcpy(dst, v->s, len);
  dst[len] = '\0';
  return IM_OK;
}

/* A name from table[n] (or null for index 0 when nullable). */
static enum im_err get_enum(struct rd *d, const char *key, const char *const *table, int n,
                            bool nullable, int *out) {
  char name[32];
  enum im_err err = get_str(d, key, nullable, name, sizeof name);
  if (err)
    return err;
  if (nullable && name[0] == '\0' && im__fobj_get(d->obj, key)->t == IM__FV_NULL) {
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
  if (!HAS(d, "dispatch_lag_client_us"))
    return IM_OK;
  int64_t x = 0;
  enum im_err err = get_int(d, "dispatch_lag_client_us", 0, INT32_MAX, &x);
  if (err)
    return err;
  r->lag_client_us = (int32_t)x;
  const struct im__fv *a = im__fobj_get(d->obj, "read_lag_us");
  int32_t *dst[] = {&r->read_first_us, &r->read_first_client_us, &r->read_last_us,
                    &r->read_last_client_us};
  if (!a || a->t != IM__FV_ARR || a->n != 4)
    return fail(d->msg, d->msg_len, "requests.jsonl: field \"read_lag_us\" must be an array of 4 integers");
  struct im__fv_iter it;
  im__fv_iter_init(&it, a);
  for (size_t i = 0; i < 4; i++) {
    int64_t v = 0;
    if (!im__fv_next_int(&it, &v) || v < -1 || v > INT32_MAX)
      return fail(d->msg, d->msg_len,
                  "requests.jsonl: field \"read_lag_us\" must hold integers from -1");
    *dst[i] = (int32_t)v;
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
  const struct im__fv *us = need(d, "chunks_us", &err);
  if (!us)
    return err;
  if (us->t != IM__FV_ARR || us->n != n)
    return fail(d->msg, d->msg_len,
                "requests.jsonl: field \"chunks_us\" must be an array of n_chunks (%" PRIu32
                ") integers",
                n);
  const struct im__fv *tok = im__fobj_get(d->obj, "chunk_tokens");
  if (tok && tok->t != IM__FV_NULL && (tok->t != IM__FV_ARR || tok->n != n))
    return fail(d->msg, d->msg_len,
                "requests.jsonl: field \"chunk_tokens\" must be an array of n_chunks (%" PRIu32
                ") integers",
                n);
  if (tok && tok->t == IM__FV_NULL)
    tok = NULL;

  err = reserve_exact(r, n);
  if (err)
    return fail(d->msg, d->msg_len, "requests.jsonl: no memory for %" PRIu32 " chunks", n);
  if (tok && !r->chunk_tokens) {
    size_t cap = r->cap_chunks ? r->cap_chunks : 1;
    r->chunk_tokens = malloc(cap * sizeof *r->chunk_tokens);
    if (!r->chunk_tokens)
      return fail(d->msg, d->msg_len, "requests.jsonl: no memory for %" PRIu32 " chunks", n);
  }
  struct im__fv_iter ius, itok;
  im__fv_iter_init(&ius, us);
  if (tok)
    im__fv_iter_init(&itok, tok);
  for (uint32_t i = 0; i < n; i++) {
    int64_t x = -1;
    if (!im__fv_next_int(&ius, &x))
      x = -1;
    if (x < 0 || x > (int64_t)UINT32_MAX)
      return fail(d->msg, d->msg_len,
                  "requests.jsonl: field \"chunks_us\"[%" PRIu32 "] must be an integer in "
                  "[0, 4294967295]",
                  i);
    r->chunk_us[i] = (uint32_t)x;
    if (tok) {
      if (!im__fv_next_int(&itok, &x))
        x = -1;
      if (x < 0 || x > (int64_t)UINT16_MAX)
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
  if (HAS(d, "cancelled")) /* optional: written only when true */
    TRY(get_bool(d, "cancelled", &r->cancelled));
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
  const struct im__fv *sf = im__fobj_get(d->obj, "output_shortfall");
  if (sf && sf->t != IM__FV_NULL && sf->t != IM__FV_INT)
    return fail(d->msg, d->msg_len,
                "requests.jsonl: field \"output_shortfall\" must be an integer or null");
  TRY(get_u32(d, "keepalives", &r->keepalives));
  const struct im__fv *ch = im__fobj_get(d->obj, "content_hash");
  if (ch) { /* optional: absent in files of older versions */
    char hex[17];
    char *end = NULL;
    bool is16 = ch->t == IM__FV_STR && strnlen(ch->s, ch->n) == 16;
    if (is16) {
      memcpy(hex, ch->s, 16);
      hex[16] = '\0';
    }
    if (!is16 || (r->content_hash = strtoull(hex, &end, 16), *end))
      return fail(d->msg, d->msg_len,
                  "requests.jsonl: field \"content_hash\" must be a string of 16 hex digits");
  }
  TRY(get_double(d, "temperature", &r->temperature));
  TRY(get_double(d, "top_p", &r->top_p));
  /* Optional: absent in files of older versions. */
  if (HAS(d, "session"))
    TRY(get_u64(d, "session", &r->session));
  if (HAS(d, "turn"))
    TRY(get_u32(d, "turn", &r->turn));
  if (HAS(d, "context_tokens"))
    TRY(get_u32(d, "context_tokens", &r->context_tokens));
  if (HAS(d, "class")) {
    TRY(get_enum(d, "class", class_names, IM_CLASS_COUNT_, true, &e));
    r->content_class = (enum im_req_class)e;
  }
  if (HAS(d, "ngrams")) {
    TRY(get_u32(d, "ngrams", &r->ngrams));
    TRY(get_double(d, "repetition", &r->repetition));
    if (r->ngrams && !(r->repetition >= 0 && r->repetition < 1))
      return fail(d->msg, d->msg_len,
                  "requests.jsonl: field \"repetition\" must be in [0, 1) when \"ngrams\" > 0");
  }
  if (HAS(d, "entropy")) {
    TRY(get_double(d, "entropy", &r->entropy));
    if (!isnan(r->entropy) && !(r->entropy >= 0))
      return fail(d->msg, d->msg_len, "requests.jsonl: field \"entropy\" must be >= 0 or null");
  }
  if (HAS(d, "reasoning_effort"))
    TRY(get_str(d, "reasoning_effort", false, r->reasoning_effort, sizeof r->reasoning_effort));
  if (HAS(d, "thinking")) {
    bool on = false;
    TRY(get_bool(d, "thinking", &on));
    r->thinking = on ? 1 : -1;
  }
  if (HAS(d, "tools"))
    TRY(get_u32(d, "tools", &r->tools));
  if (HAS(d, "model"))
    TRY(get_str(d, "model", false, r->model, sizeof r->model));
  if (HAS(d, "target")) {
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

enum im_err im__record_from_tree(const char *line, size_t len, struct im_record *r, char *msg,
                                size_t msg_len) {
  if (msg && msg_len)
    msg[0] = '\0';
  json_error_t jerr;
  json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root)
    return fail(msg, msg_len, "requests.jsonl: not JSON (%s, column %d)", jerr.text, jerr.column);
  struct im__fobj obj;
  obj.m = obj.small;
  struct rd d = {&obj, msg, msg_len};
  enum im_err err;
  if (!json_is_object(root))
    err = fail(msg, msg_len, "requests.jsonl: a line must be a JSON object");
  else if (im__fobj_from_json(&obj, root) != IM_OK)
    err = fail(msg, msg_len, "requests.jsonl: no memory for the line's fields");
  else
    err = read_fields(&d, r);
  im__fobj_cleanup(&obj);
  json_decref(root);
  return err;
}

enum im_err im_record_from_json(const char *line, size_t len, struct im_record *r, char *msg,
                                size_t msg_len) {
  struct im__fobj obj;
  if (im__fobj_scan(&obj, line, len) != IM_OK)
    /* Not of the plain shape this tool writes: jansson reads it (and says
     * what is wrong with it). */
    return im__record_from_tree(line, len, r, msg, msg_len);
  if (msg && msg_len)
    msg[0] = '\0';
  struct rd d = {&obj, msg, msg_len};
  return read_fields(&d, r);
}
