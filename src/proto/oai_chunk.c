/* OpenAI-compatible streaming chunk decoder; contract in
 * include/infermeter/oai_chunk.h.
 *
 * Why a hand-written scanner: jansson builds a tree of heap nodes per chunk
 * (one malloc per key and value); on typical 200-400 byte chunks that cost
 * several times what this single pass does (figures in bench/sse_speed.c),
 * and the client decodes every chunk of every stream on its event-loop
 * thread. The jansson version is kept below as the reference the fuzz target
 * compares against.
 *
 * The scanner is a recursive descent over the whole document: every byte is
 * validated (strict RFC 8259, UTF-8 checked like jansson: no overlong forms,
 * no surrogates, nothing above U+10FFFF), nesting is bounded, and only the
 * handlers of the fields we read do more than skip. Strings without escapes
 * are returned in place; strings with escapes are decoded into a scratch
 * buffer reserved once per decode at the input's length, which bounds the
 * sum of all decoded strings (an escape never decodes longer than it is
 * written), so no pointer handed out is moved by a later reallocation. */
#include "infermeter/oai_chunk.h"

#include <jansson.h>
#include <string.h>

#define DEFAULT_MAX_LEN ((size_t)4 << 20)

struct cur {
  const unsigned char *p, *end;
  int depth;
  char *scr; /* scratch, capacity >= input length */
  size_t scr_len;
};

/* One choice element while it is read; committed when its index is 0. */
struct choice {
  int64_t index;
  int index_ok;
  struct im_oai_str content, text, reasoning_content, reasoning, role, finish;
  size_t n_tool_calls;
  struct im_oai_str tool_calls_json;
};

struct state {
  struct im_oai_chunk *c;
  struct choice ch;
  int err_present;
  int obj_is_error;
  struct im_oai_str top_message, top_type, top_code;
  int64_t top_code_num;
};

typedef enum im_err (*key_fn)(struct cur *c, const struct im_oai_str *key, void *ctx);
typedef enum im_err (*elem_fn)(struct cur *c, size_t idx, void *ctx);

static const struct im_oai_str no_str = {NULL, 0};

static int key_is(const struct im_oai_str *k, const char *lit, size_t n) {
  return k->len == n && memcmp(k->ptr, lit, n) == 0;
}
#define KEY_IS(k, lit) key_is((k), lit, sizeof(lit) - 1)

static void skip_ws(struct cur *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
    c->p++;
}

/* Length of the valid UTF-8 sequence at s (2..4 bytes, s[0] >= 0x80), or 0. */
static size_t utf8_len(const unsigned char *s, const unsigned char *e) {
  unsigned char b = s[0];
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF)
    n = 2;
  else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0)
      lo = 0xA0; /* overlong */
    else if (b == 0xED)
      hi = 0x9F; /* surrogates */
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0)
      lo = 0x90; /* overlong */
    else if (b == 0xF4)
      hi = 0x8F; /* above U+10FFFF */
  } else
    return 0;
  if ((size_t)(e - s) < n)
    return 0;
  if (s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xBF)
      return 0;
  return n;
}

static int hex4(const unsigned char *s, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned char h = s[i];
    v <<= 4;
    if (h >= '0' && h <= '9')
      v |= (unsigned)(h - '0');
    else if (h >= 'a' && h <= 'f')
      v |= (unsigned)(h - 'a' + 10);
    else if (h >= 'A' && h <= 'F')
      v |= (unsigned)(h - 'A' + 10);
    else
      return 0;
  }
  *out = v;
  return 1;
}

static size_t put_utf8(char *d, unsigned cp) {
  if (cp < 0x80) {
    d[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    d[0] = (char)(0xC0 | (cp >> 6));
    d[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    d[0] = (char)(0xE0 | (cp >> 12));
    d[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    d[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  d[0] = (char)(0xF0 | (cp >> 18));
  d[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  d[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  d[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* c->p at '"'. Validates the string; when out is not NULL, sets it to the
 * decoded text (in place when there is no escape). */
static enum im_err scan_string(struct cur *c, struct im_oai_str *out) {
  const unsigned char *s = c->p + 1, *e = c->end, *start = s;
  for (;;) { /* fast path: up to the closing quote or the first escape */
    /* Eight plain bytes at a time (no '"', '\\', control or non-ASCII
     * byte), by the "has zero byte" bit trick on 64-bit words. */
    while (e - s >= 8) {
      uint64_t w;
      memcpy(&w, s, 8);
      const uint64_t ones = 0x0101010101010101ULL, high = ones * 0x80;
      uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
      uint64_t special = ((q - ones) & ~q) | ((b - ones) & ~b) | (w - ones * 0x20) | w;
      if (special & high)
        break;
      s += 8;
    }
    if (s >= e)
      return IM_PARSE;
    unsigned char ch = *s;
    if (ch >= 0x20 && ch < 0x80 && ch != '"' && ch != '\\') {
      s++;
      continue;
    }
    if (ch == '"') {
      if (out) {
        out->ptr = (const char *)start;
        out->len = (size_t)(s - start);
      }
      c->p = s + 1;
      return IM_OK;
    }
    if (ch == '\\')
      break;
    if (ch < 0x20)
      return IM_PARSE;
    size_t n = utf8_len(s, e);
    if (!n)
      return IM_PARSE;
    s += n;
  }
  char *d0 = out ? c->scr + c->scr_len : NULL, *d = d0;
  if (d) {
    memcpy(d, start, (size_t)(s - start));
    d += s - start;
  }
  for (;;) {
    if (s >= e)
      return IM_PARSE;
    unsigned char ch = *s;
    if (ch == '"')
      break;
    if (ch < 0x20)
      return IM_PARSE;
    if (ch >= 0x80) {
      size_t n = utf8_len(s, e);
      if (!n)
        return IM_PARSE;
      if (d) {
        memcpy(d, s, n);
        d += n;
      }
      s += n;
      continue;
    }
    if (ch != '\\') {
      if (d)
        *d++ = (char)ch;
      s++;
      continue;
    }
    if (e - s < 2)
      return IM_PARSE;
    char rep;
    switch (s[1]) {
    case '"':
      rep = '"';
      break;
    case '\\':
      rep = '\\';
      break;
    case '/':
      rep = '/';
      break;
    case 'b':
      rep = '\b';
      break;
    case 'f':
      rep = '\f';
      break;
    case 'n':
      rep = '\n';
      break;
    case 'r':
      rep = '\r';
      break;
    case 't':
      rep = '\t';
      break;
    case 'u': {
      unsigned cp, lo;
      if (e - s < 6 || !hex4(s + 2, &cp))
        return IM_PARSE;
      s += 6;
      if (cp >= 0xDC00 && cp <= 0xDFFF)
        return IM_PARSE; /* lone low surrogate */
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (e - s < 6 || s[0] != '\\' || s[1] != 'u' || !hex4(s + 2, &lo) || lo < 0xDC00 ||
            lo > 0xDFFF)
          return IM_PARSE;
        s += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      }
      if (d)
        d += put_utf8(d, cp);
      continue;
    }
    default:
      return IM_PARSE;
    }
    if (d)
      *d++ = rep;
    s += 2;
  }
  if (out) {
    out->ptr = d0;
    out->len = (size_t)(d - d0);
    c->scr_len += out->len;
  }
  c->p = s + 1;
  return IM_OK;
}

/* c->p at '-' or a digit. *ok is set when the number is an integer that fits
 * int64_t, with its value in *out. */
static enum im_err scan_number(struct cur *c, int64_t *out, int *ok) {
  const unsigned char *s = c->p, *e = c->end;
  int neg = 0, integral = 1, fits = 1;
  uint64_t v = 0;
  if (*s == '-') {
    neg = 1;
    s++;
  }
  if (s >= e || *s < '0' || *s > '9')
    return IM_PARSE;
  if (*s == '0')
    s++;
  else
    while (s < e && *s >= '0' && *s <= '9') {
      unsigned dg = (unsigned)(*s - '0');
      if (v > (UINT64_MAX - dg) / 10)
        fits = 0;
      else
        v = v * 10 + dg;
      s++;
    }
  if (s < e && *s == '.') {
    integral = 0;
    s++;
    if (s >= e || *s < '0' || *s > '9')
      return IM_PARSE;
    while (s < e && *s >= '0' && *s <= '9')
      s++;
  }
  if (s < e && (*s == 'e' || *s == 'E')) {
    integral = 0;
    s++;
    if (s < e && (*s == '+' || *s == '-'))
      s++;
    if (s >= e || *s < '0' || *s > '9')
      return IM_PARSE;
    while (s < e && *s >= '0' && *s <= '9')
      s++;
  }
  c->p = s;
  if (!integral || !fits)
    return IM_OK;
  if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
    return IM_OK;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  *ok = 1;
  return IM_OK;
}

static enum im_err scan_literal(struct cur *c, const char *lit, size_t n) {
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
    return IM_PARSE;
  c->p += n;
  return IM_OK;
}

static enum im_err scan_object(struct cur *c, key_fn fn, void *ctx);
static enum im_err scan_array(struct cur *c, elem_fn fn, void *ctx, size_t *count);

/* Validates and skips one value; c->p at its first byte. */
static enum im_err skip_value(struct cur *c) {
  if (c->p >= c->end)
    return IM_PARSE;
  int64_t dummy;
  int ok = 0;
  switch (*c->p) {
  case '{':
    return scan_object(c, NULL, NULL);
  case '[':
    return scan_array(c, NULL, NULL, NULL);
  case '"':
    return scan_string(c, NULL);
  case 't':
    return scan_literal(c, "true", 4);
  case 'f':
    return scan_literal(c, "false", 5);
  case 'n':
    return scan_literal(c, "null", 4);
  default:
    if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))
      return scan_number(c, &dummy, &ok);
    return IM_PARSE;
  }
}

/* c->p at '{'. fn consumes each value (NULL: skip them all). */
static enum im_err scan_object(struct cur *c, key_fn fn, void *ctx) {
  if (++c->depth > IM_OAI_MAX_DEPTH)
    return IM_LIMIT;
  c->p++;
  skip_ws(c);
  if (c->p < c->end && *c->p == '}') {
    c->p++;
    c->depth--;
    return IM_OK;
  }
  for (;;) {
    struct im_oai_str key = no_str;
    enum im_err err;
    if (c->p >= c->end || *c->p != '"')
      return IM_PARSE;
    if ((err = scan_string(c, fn ? &key : NULL)))
      return err;
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':')
      return IM_PARSE;
    c->p++;
    skip_ws(c);
    if ((err = fn ? fn(c, &key, ctx) : skip_value(c)))
      return err;
    skip_ws(c);
    if (c->p >= c->end)
      return IM_PARSE;
    if (*c->p == '}')
      break;
    if (*c->p != ',')
      return IM_PARSE;
    c->p++;
    skip_ws(c);
  }
  c->p++;
  c->depth--;
  return IM_OK;
}

/* c->p at '['. fn consumes each element (NULL: skip); count gets their
 * number when not NULL. */
static enum im_err scan_array(struct cur *c, elem_fn fn, void *ctx, size_t *count) {
  size_t n = 0;
  if (++c->depth > IM_OAI_MAX_DEPTH)
    return IM_LIMIT;
  c->p++;
  skip_ws(c);
  if (c->p < c->end && *c->p == ']') {
    c->p++;
  } else {
    for (;;) {
      enum im_err err = fn ? fn(c, n, ctx) : skip_value(c);
      if (err)
        return err;
      n++;
      skip_ws(c);
      if (c->p >= c->end)
        return IM_PARSE;
      if (*c->p == ']')
        break;
      if (*c->p != ',')
        return IM_PARSE;
      c->p++;
      skip_ws(c);
    }
    c->p++;
  }
  c->depth--;
  if (count)
    *count = n;
  return IM_OK;
}

static int at(const struct cur *c, unsigned char ch) {
  return c->p < c->end && *c->p == ch;
}

/* A string value, or absent for any other type. */
static enum im_err val_str(struct cur *c, struct im_oai_str *out) {
  *out = no_str;
  return at(c, '"') ? scan_string(c, out) : skip_value(c);
}

/* An integer value, or -1 for anything else. */
static enum im_err val_int(struct cur *c, int64_t *out, int *ok) {
  int dummy = 0;
  *out = -1;
  if (!ok)
    ok = &dummy;
  *ok = 0;
  if (c->p < c->end && (*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))) {
    enum im_err err = scan_number(c, out, ok);
    if (!*ok)
      *out = -1;
    return err;
  }
  return skip_value(c);
}

/* An error "code": a string, or a number (raw text and integer value). */
static enum im_err val_code(struct cur *c, struct im_oai_str *raw, int64_t *num) {
  *num = -1;
  if (c->p < c->end && (*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))) {
    const unsigned char *s = c->p;
    int ok = 0;
    enum im_err err = scan_number(c, num, &ok);
    if (!ok)
      *num = -1;
    raw->ptr = (const char *)s;
    raw->len = (size_t)(c->p - s);
    return err;
  }
  return val_str(c, raw);
}

static enum im_err ptd_key(struct cur *c, const struct im_oai_str *k, void *ctx) {
  struct im_oai_usage *u = ctx;
  if (KEY_IS(k, "cached_tokens"))
    return val_int(c, &u->cached_tokens, NULL);
  return skip_value(c);
}

static enum im_err ctd_key(struct cur *c, const struct im_oai_str *k, void *ctx) {
  struct im_oai_usage *u = ctx;
  if (KEY_IS(k, "reasoning_tokens"))
    return val_int(c, &u->reasoning_tokens, NULL);
  return skip_value(c);
}

static enum im_err usage_key(struct cur *c, const struct im_oai_str *k, void *ctx) {
  struct im_oai_usage *u = ctx;
  if (KEY_IS(k, "prompt_tokens"))
    return val_int(c, &u->prompt_tokens, NULL);
  if (KEY_IS(k, "completion_tokens"))
    return val_int(c, &u->completion_tokens, NULL);
  if (KEY_IS(k, "total_tokens"))
    return val_int(c, &u->total_tokens, NULL);
  if (KEY_IS(k, "prompt_cache_hit_tokens"))
    return val_int(c, &u->cache_hit_tokens, NULL);
  if (KEY_IS(k, "prompt_cache_miss_tokens"))
    return val_int(c, &u->cache_miss_tokens, NULL);
  if (KEY_IS(k, "prompt_tokens_details")) {
    u->cached_tokens = -1;
    return at(c, '{') ? scan_object(c, ptd_key, u) : skip_value(c);
  }
  if (KEY_IS(k, "completion_tokens_details")) {
    u->reasoning_tokens = -1;
    return at(c, '{') ? scan_object(c, ctd_key, u) : skip_value(c);
  }
  return skip_value(c);
}

static enum im_err timings_key(struct cur *c, const struct im_oai_str *k, void *ctx) {
  struct im_oai_timings *t = ctx;
  if (KEY_IS(k, "cache_n"))
    return val_int(c, &t->cache_n, NULL);
  if (KEY_IS(k, "prompt_n"))
    return val_int(c, &t->prompt_n, NULL);
  if (KEY_IS(k, "predicted_n"))
    return val_int(c, &t->predicted_n, NULL);
  return skip_value(c);
}

static enum im_err delta_key(struct cur *c, const struct im_oai_str *k, void *ctx) {
  struct choice *ch = ctx;
  if (KEY_IS(k, "content"))
    return val_str(c, &ch->content);
  if (KEY_IS(k, "reasoning_content"))
    return val_str(c, &ch->reasoning_content);
  if (KEY_IS(k, "reasoning"))
    return val_str(c, &ch->reasoning);
  if (KEY_IS(k, "role"))
    return val_str(c, &ch->role);
  if (KEY_IS(k, "tool_calls")) {
    ch->n_tool_calls = 0;
    ch->tool_calls_json = no_str;
    if (!at(c, '['))
      return skip_value(c);
    const unsigned char *s = c->p;
    enum im_err err = scan_array(c, NULL, NULL, &ch->n_tool_calls);
    ch->tool_calls_json.ptr = (const char *)s;
    ch->tool_calls_json.len = (size_t)(c->p - s);
    return err;
  }
  return skip_value(c);
}

static void reset_delta(struct choice *ch) {
  ch->content = ch->reasoning_content = ch->reasoning = ch->role = no_str;
  ch->n_tool_calls = 0;
  ch->tool_calls_json = no_str;
}

static enum im_err choice_key(struct cur *c, const struct im_oai_str *k, void *ctx) {
  struct choice *ch = ctx;
  if (KEY_IS(k, "delta")) {
    reset_delta(ch);
    return at(c, '{') ? scan_object(c, delta_key, ch) : skip_value(c);
  }
  if (KEY_IS(k, "text"))
    return val_str(c, &ch->text);
  if (KEY_IS(k, "finish_reason"))
    return val_str(c, &ch->finish);
  if (KEY_IS(k, "index"))
    return val_int(c, &ch->index, &ch->index_ok);
  return skip_value(c);
}

static void commit_choice(struct im_oai_chunk *o, const struct choice *ch) {
  o->has_choice = 1;
  o->content = ch->content;
  o->text = ch->text;
  o->role = ch->role;
  o->finish_reason = ch->finish;
  o->n_tool_calls = ch->n_tool_calls;
  o->tool_calls_json = ch->tool_calls_json;
  /* Prefer the non-empty one; a server sending both sends the same text. */
  if (ch->reasoning_content.len || (!ch->reasoning.len && ch->reasoning_content.ptr))
    o->reasoning = ch->reasoning_content;
  else
    o->reasoning = ch->reasoning;
}

static enum im_err choice_elem(struct cur *c, size_t idx, void *ctx) {
  struct state *st = ctx;
  if (st->c->has_choice || !at(c, '{'))
    return skip_value(c);
  struct choice *ch = &st->ch;
  memset(ch, 0, sizeof *ch);
  enum im_err err = scan_object(c, choice_key, ch);
  if (err)
    return err;
  if ((ch->index_ok ? ch->index : (int64_t)idx) == 0)
    commit_choice(st->c, ch);
  return IM_OK;
}

static void reset_choices(struct im_oai_chunk *o) {
  o->n_choices = 0;
  o->has_choice = 0;
  o->content = o->text = o->reasoning = o->role = o->finish_reason = no_str;
  o->n_tool_calls = 0;
  o->tool_calls_json = no_str;
}

static void reset_usage(struct im_oai_usage *u) {
  u->prompt_tokens = u->completion_tokens = u->total_tokens = -1;
  u->cached_tokens = u->reasoning_tokens = -1;
  u->cache_hit_tokens = u->cache_miss_tokens = -1;
}

static void reset_timings(struct im_oai_timings *t) {
  t->cache_n = t->prompt_n = t->predicted_n = -1;
}

static void reset_error(struct im_oai_chunk *o) {
  o->err_message = o->err_type = o->err_code = no_str;
  o->err_code_num = -1;
}

static enum im_err error_key(struct cur *c, const struct im_oai_str *k, void *ctx) {
  struct im_oai_chunk *o = ctx;
  if (KEY_IS(k, "message"))
    return val_str(c, &o->err_message);
  if (KEY_IS(k, "type"))
    return val_str(c, &o->err_type);
  if (KEY_IS(k, "code"))
    return val_code(c, &o->err_code, &o->err_code_num);
  return skip_value(c);
}

static enum im_err top_key(struct cur *c, const struct im_oai_str *k, void *ctx) {
  struct state *st = ctx;
  struct im_oai_chunk *o = st->c;
  if (KEY_IS(k, "choices")) {
    reset_choices(o);
    return at(c, '[') ? scan_array(c, choice_elem, st, &o->n_choices) : skip_value(c);
  }
  if (KEY_IS(k, "usage")) {
    reset_usage(&o->usage);
    o->has_usage = at(c, '{');
    return o->has_usage ? scan_object(c, usage_key, &o->usage) : skip_value(c);
  }
  if (KEY_IS(k, "timings")) {
    reset_timings(&o->timings);
    o->has_timings = at(c, '{');
    return o->has_timings ? scan_object(c, timings_key, &o->timings) : skip_value(c);
  }
  if (KEY_IS(k, "object")) {
    struct im_oai_str v;
    enum im_err err = val_str(c, &v);
    o->object = IM_OAI_OBJ_OTHER;
    st->obj_is_error = 0;
    if (v.ptr && KEY_IS(&v, "chat.completion.chunk"))
      o->object = IM_OAI_OBJ_CHAT;
    else if (v.ptr && KEY_IS(&v, "text_completion"))
      o->object = IM_OAI_OBJ_TEXT;
    else if (v.ptr && KEY_IS(&v, "error"))
      st->obj_is_error = 1;
    return err;
  }
  if (KEY_IS(k, "error")) {
    reset_error(o);
    st->err_present = at(c, '{') || at(c, '"');
    if (at(c, '{'))
      return scan_object(c, error_key, o);
    return val_str(c, &o->err_message);
  }
  if (KEY_IS(k, "message"))
    return val_str(c, &st->top_message);
  if (KEY_IS(k, "type"))
    return val_str(c, &st->top_type);
  if (KEY_IS(k, "code"))
    return val_code(c, &st->top_code, &st->top_code_num);
  return skip_value(c);
}

void im_oai_chunk_init(struct im_oai_chunk *c, size_t max_len) {
  memset(c, 0, sizeof *c);
  c->max_len = max_len ? max_len : DEFAULT_MAX_LEN;
  im_buf_init(&c->scratch, c->max_len);
}

void im_oai_chunk_cleanup(struct im_oai_chunk *c) {
  if (!c)
    return;
  im_buf_cleanup(&c->scratch);
}

static void reset_all(struct im_oai_chunk *c) {
  c->kind = IM_OAI_CHUNK;
  c->cls = IM_OAI_EMPTY;
  c->object = IM_OAI_OBJ_OTHER;
  reset_choices(c);
  c->has_usage = c->has_timings = 0;
  reset_usage(&c->usage);
  reset_timings(&c->timings);
  reset_error(c);
}

static int is_ws(char ch) {
  return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t';
}

static int is_done(const char *s, size_t len) {
  while (len && is_ws(*s)) {
    s++;
    len--;
  }
  while (len && is_ws(s[len - 1]))
    len--;
  return len == 6 && memcmp(s, "[DONE]", 6) == 0;
}

static void classify(struct im_oai_chunk *c) {
  if (c->content.len || c->text.len || c->reasoning.len || c->n_tool_calls)
    c->cls = IM_OAI_TOKENS;
  else if (c->role.ptr)
    c->cls = IM_OAI_ROLE;
  else if (c->has_usage)
    c->cls = IM_OAI_USAGE;
  else
    c->cls = IM_OAI_EMPTY;
}

enum im_err im_oai_chunk_decode(struct im_oai_chunk *c, const char *data, size_t len) {
  reset_all(c);
  if (len > c->max_len)
    return IM_LIMIT;
  if (len && data[0] == '[' && is_done(data, len)) {
    c->kind = IM_OAI_DONE;
    return IM_OK;
  }
  im_buf_reset(&c->scratch);
  enum im_err err = im_buf_reserve(&c->scratch, len);
  if (err)
    return err;
  struct cur cur = {(const unsigned char *)data, (const unsigned char *)data + len, 0,
                    c->scratch.data, 0};
  struct state st;
  memset(&st, 0, sizeof st);
  st.c = c;
  st.top_code_num = -1;
  skip_ws(&cur);
  if (!at(&cur, '{'))
    return is_done(data, len) ? (c->kind = IM_OAI_DONE, IM_OK) : IM_PARSE;
  if ((err = scan_object(&cur, top_key, &st)))
    return err;
  skip_ws(&cur);
  if (cur.p != cur.end)
    return IM_PARSE;
  if (st.err_present) {
    c->kind = IM_OAI_ERROR;
  } else if (st.obj_is_error) {
    c->kind = IM_OAI_ERROR;
    c->err_message = st.top_message;
    c->err_type = st.top_type;
    c->err_code = st.top_code;
    c->err_code_num = st.top_code_num;
  }
  classify(c);
  return IM_OK;
}

int im_oai_chunk_has_answer(const struct im_oai_chunk *c) {
  return c->kind == IM_OAI_CHUNK && (c->content.len || c->text.len);
}

/* ---- jansson reference ------------------------------------------------- */

struct jref {
  char *scr;
  size_t scr_len;
};

static struct im_oai_str j_str(struct jref *r, json_t *v) {
  struct im_oai_str s = no_str;
  if (!json_is_string(v))
    return s;
  size_t n = json_string_length(v);
  memcpy(r->scr + r->scr_len, json_string_value(v), n);
  s.ptr = r->scr + r->scr_len;
  s.len = n;
  r->scr_len += n;
  return s;
}

static int64_t j_int(json_t *v) {
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static void j_code(struct jref *r, json_t *v, struct im_oai_str *raw, int64_t *num) {
  *num = -1;
  *raw = no_str;
  if (json_is_string(v))
    *raw = j_str(r, v);
  else if (json_is_integer(v))
    *num = (int64_t)json_integer_value(v);
  /* The raw number text is not kept by jansson; left absent. */
}

enum im_err im__oai_chunk_decode_jansson(struct im_oai_chunk *c, const char *data, size_t len) {
  reset_all(c);
  if (len > c->max_len)
    return IM_LIMIT;
  if (is_done(data, len)) {
    c->kind = IM_OAI_DONE;
    return IM_OK;
  }
  im_buf_reset(&c->scratch);
  enum im_err err = im_buf_reserve(&c->scratch, len);
  if (err)
    return err;
  struct jref r = {c->scratch.data, 0};
  json_error_t jerr;
  json_t *root = json_loadb(data, len, JSON_ALLOW_NUL, &jerr);
  if (!root)
    return IM_PARSE;
  if (!json_is_object(root)) {
    json_decref(root);
    return IM_PARSE;
  }
  json_t *v;
  if ((v = json_object_get(root, "object")) && json_is_string(v)) {
    const char *o = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 21 && memcmp(o, "chat.completion.chunk", 21) == 0)
      c->object = IM_OAI_OBJ_CHAT;
    else if (n == 15 && memcmp(o, "text_completion", 15) == 0)
      c->object = IM_OAI_OBJ_TEXT;
  }
  json_t *choices = json_object_get(root, "choices");
  if (json_is_array(choices)) {
    c->n_choices = json_array_size(choices);
    for (size_t i = 0; i < c->n_choices; i++) {
      json_t *ch = json_array_get(choices, i);
      if (!json_is_object(ch))
        continue;
      json_t *idx = json_object_get(ch, "index");
      int64_t index = json_is_integer(idx) ? (int64_t)json_integer_value(idx) : (int64_t)i;
      if (index != 0)
        continue;
      struct choice tmp;
      memset(&tmp, 0, sizeof tmp);
      json_t *delta = json_object_get(ch, "delta");
      if (json_is_object(delta)) {
        tmp.content = j_str(&r, json_object_get(delta, "content"));
        tmp.reasoning_content = j_str(&r, json_object_get(delta, "reasoning_content"));
        tmp.reasoning = j_str(&r, json_object_get(delta, "reasoning"));
        tmp.role = j_str(&r, json_object_get(delta, "role"));
        json_t *tc = json_object_get(delta, "tool_calls");
        if (json_is_array(tc))
          tmp.n_tool_calls = json_array_size(tc);
      }
      tmp.text = j_str(&r, json_object_get(ch, "text"));
      tmp.finish = j_str(&r, json_object_get(ch, "finish_reason"));
      commit_choice(c, &tmp);
      c->tool_calls_json = no_str;
      break;
    }
  }
  json_t *u = json_object_get(root, "usage");
  if (json_is_object(u)) {
    c->has_usage = 1;
    c->usage.prompt_tokens = j_int(json_object_get(u, "prompt_tokens"));
    c->usage.completion_tokens = j_int(json_object_get(u, "completion_tokens"));
    c->usage.total_tokens = j_int(json_object_get(u, "total_tokens"));
    c->usage.cache_hit_tokens = j_int(json_object_get(u, "prompt_cache_hit_tokens"));
    c->usage.cache_miss_tokens = j_int(json_object_get(u, "prompt_cache_miss_tokens"));
    c->usage.cached_tokens =
        j_int(json_object_get(json_object_get(u, "prompt_tokens_details"), "cached_tokens"));
    c->usage.reasoning_tokens =
        j_int(json_object_get(json_object_get(u, "completion_tokens_details"), "reasoning_tokens"));
  }
  json_t *t = json_object_get(root, "timings");
  if (json_is_object(t)) {
    c->has_timings = 1;
    c->timings.cache_n = j_int(json_object_get(t, "cache_n"));
    c->timings.prompt_n = j_int(json_object_get(t, "prompt_n"));
    c->timings.predicted_n = j_int(json_object_get(t, "predicted_n"));
  }
  json_t *e = json_object_get(root, "error");
  json_t *ob = json_object_get(root, "object");
  if (json_is_object(e) || json_is_string(e)) {
    c->kind = IM_OAI_ERROR;
    if (json_is_string(e)) {
      c->err_message = j_str(&r, e);
    } else {
      c->err_message = j_str(&r, json_object_get(e, "message"));
      c->err_type = j_str(&r, json_object_get(e, "type"));
      j_code(&r, json_object_get(e, "code"), &c->err_code, &c->err_code_num);
    }
  } else if (json_is_string(ob) && json_string_length(ob) == 5 &&
             memcmp(json_string_value(ob), "error", 5) == 0) {
    c->kind = IM_OAI_ERROR;
    c->err_message = j_str(&r, json_object_get(root, "message"));
    c->err_type = j_str(&r, json_object_get(root, "type"));
    j_code(&r, json_object_get(root, "code"), &c->err_code, &c->err_code_num);
  }
  classify(c);
  json_decref(root);
  return IM_OK;
}
