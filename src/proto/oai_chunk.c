/* OpenAI-compatible streaming chunk decoder; contract in
 * src/proto/oai_chunk.h.
 *
 * Why a hand-written scanner: jansson builds a tree of heap nodes per chunk
 * (one malloc per key and value); on typical 200-400 byte chunks that costs
 * more than ten times this single pass (figures in bench/sse_speed.c), and
 * the client decodes every chunk of every stream on its event-loop thread.
 * The jansson version is kept in oai_chunk_ref.c as the reference the fuzz
 * target compares against.
 *
 * The scanner is a recursive descent over the whole document: every byte is
 * validated (strict RFC 8259, UTF-8 checked like jansson: no overlong forms,
 * no surrogates, nothing above U+10FFFF), nesting is bounded, and only the
 * handlers of the fields we read do more than skip. Values of keys we do not
 * read ("id", "created", "model", "logprobs", ...) go through the same
 * validating scanners with nothing stored, which for a string is the same
 * cost as finding its end.
 *
 * Strings without escapes are returned in place; strings with escapes are
 * decoded into a scratch buffer reserved at the input's length the first time
 * one is needed in a decode, which bounds the sum of all decoded strings (an
 * escape never decodes longer than it is written), so no pointer handed out
 * is moved by a later reallocation.
 *
 * Cost (bench/sse_speed.c, callgrind): most of a chunk is keys of 2-20 bytes
 * and short values, so the string scanner finds the closing quote with one
 * 8-byte word and a count of trailing zeros instead of a loop per byte, and
 * keys are told apart by their length before any comparison. */
#include "proto/oai_chunk.h"

#include <string.h>

#define DEFAULT_MAX_LEN ((size_t)4 << 20)

/* The hot helpers are forced inline (the compiler's size heuristics keep
 * them out of line otherwise) and the rare paths kept out of line, so that
 * the inline code needs few registers. */
#define HOT static inline __attribute__((always_inline))
#define COLD static __attribute__((noinline))

/* The word scan needs little-endian byte order (the first byte of the word is
 * its lowest); elsewhere strings are scanned a byte at a time. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ &&                        \
    (defined(__GNUC__) || defined(__clang__))
#define WORD_SCAN 1
#else
#define WORD_SCAN 0
#endif
/* On x86-64 SSE2 is always there: sixteen bytes per step. */
#if WORD_SCAN && defined(__SSE2__)
#define SSE2_SCAN 1
#include <emmintrin.h>
#else
#define SSE2_SCAN 0
#endif

struct cur {
  const unsigned char *p, *end;
  int depth;
  struct im_buf *scratch; /* reserved at the input length on first use */
  char *scr;              /* scratch->data once reserved, else NULL */
  size_t scr_len;
  size_t in_len;
};

/* One choice element while it is read; committed when its index is 0. */
struct choice {
  int64_t index;
  int index_ok;
  struct im_oai_str content, text, reasoning_content, reasoning, role, finish;
  size_t n_tool_calls;
  struct im_oai_str tool_calls_json;
  struct im_oai_str logprobs_json;
};

struct state {
  struct im_oai_chunk *c;
  struct choice ch;
  int err_present;
  int obj_is_error;
  struct im_oai_str top_message, top_type, top_code;
  int64_t top_code_num;
};

static const struct im_oai_str no_str = {NULL, 0};

/* a[0..n) == b[0..n) for 1 <= n <= 32, by overlapping 8- or 4-byte loads,
 * reading nothing outside either range. Inlined with b a literal and n a
 * constant, it is a few loads and compares (a memcmp call is not). */
HOT int eq_n(const char *a, const char *b, size_t n) {
  uint64_t x, y, d = 0;
  uint32_t u, v;
  if (n < 4)
    return a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1];
  if (n < 8) {
    memcpy(&u, a, 4), memcpy(&v, b, 4), d = u ^ v;
    memcpy(&u, a + n - 4, 4), memcpy(&v, b + n - 4, 4);
    return (d | (u ^ v)) == 0;
  }
  for (size_t i = 0; i + 8 < n; i += 8)
    memcpy(&x, a + i, 8), memcpy(&y, b + i, 8), d |= x ^ y;
  memcpy(&x, a + n - 8, 8), memcpy(&y, b + n - 8, 8);
  return (d | (x ^ y)) == 0;
}

/* For keys whose length was already compared. */
#define KEQ(k, lit) eq_n((k)->ptr, lit, sizeof(lit) - 1)
#define KEY_IS(k, lit) ((k)->len == sizeof(lit) - 1 && KEQ(k, lit))

COLD void skip_ws_slow(struct cur *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t'))
    c->p++;
}

/* Compact JSON has no whitespace; one compare decides that. */
HOT void skip_ws(struct cur *c) {
  if (c->p < c->end && *c->p <= ' ')
    skip_ws_slow(c);
}

HOT int at(const struct cur *c, unsigned char ch) {
  return c->p < c->end && *c->p == ch;
}

COLD int peek_slow(struct cur *c) {
  skip_ws_slow(c);
  return c->p < c->end ? *c->p : -1;
}

/* The byte at c->p after any whitespace (skipped), or -1 at the end. Where
 * a separator is expected, this costs one compare more than none when there
 * is no whitespace, against two for skipping whitespace then checking. */
HOT int peek(struct cur *c) {
  if (c->p<c->end && * c->p> ' ')
    return *c->p;
  return peek_slow(c);
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

/* A byte that a string may hold as it is: not '"', '\\', a control byte or
 * the start of a UTF-8 sequence. */
static inline int plain_byte(unsigned char ch) {
  return ch >= 0x20 && ch < 0x80 && ch != '"' && ch != '\\';
}

#if SSE2_SCAN
/* Bit i is set when byte i of s[0..15] is not plain_byte. As signed bytes,
 * both the control bytes and the bytes from 0x80 up are below 0x20, so one
 * compare finds them. */
static inline unsigned special16(const unsigned char *s) {
  const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
  __m128i ok = _mm_cmpgt_epi8(v, _mm_set1_epi8(0x1F));
  __m128i qb =
      _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));
  return (unsigned)_mm_movemask_epi8(_mm_andnot_si128(qb, ok)) ^ 0xFFFFu;
}
#endif

/* Address of the first byte in [s, e) that is not plain_byte (e if none). */
static inline const unsigned char *find_special(const unsigned char *s, const unsigned char *e) {
#if SSE2_SCAN
  while (e - s >= 16) {
    unsigned bits = special16(s);
    if (bits)
      return s + __builtin_ctz(bits);
    s += 16;
  }
#endif
#if WORD_SCAN
  /* Eight bytes at a time: bit 7 of byte i of m is set when byte i is '"',
   * '\\' (the "has zero byte" trick on w xor the quote), below 0x20 (w minus
   * 0x20 borrows into bit 7) or 0x80 and above (bit 7 of w). A borrow only
   * flows from a flagged byte to the bytes after it, so the lowest flag is
   * exact and the count of trailing zeros locates the byte. */
  const uint64_t ones = 0x0101010101010101ULL, high = ones * 0x80;
  while (e - s >= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    uint64_t m = (((q - ones) & ~q) | ((b - ones) & ~b) | (w - ones * 0x20) | w) & high;
    if (m)
      return s + ((unsigned)__builtin_ctzll(m) >> 3);
    s += 8;
  }
#endif
  while (s < e && plain_byte(*s))
    s++;
  return s;
}

/* The part of scan_string after the first escape, at s; start is the first
 * byte of the string's content. Decodes into the scratch when out is set. */
static enum im_err scan_escaped(struct cur *c, const unsigned char *start, const unsigned char *s,
                                struct im_oai_str *out) {
  const unsigned char *e = c->end;
  char *d0 = NULL, *d = NULL;
  if (out) {
    if (!c->scr) {
      enum im_err err = im_buf_reserve(c->scratch, c->in_len);
      if (err)
        return err;
      c->scr = c->scratch->data;
    }
    d0 = d = c->scr + c->scr_len;
    memcpy(d, start, (size_t)(s - start));
    d += s - start;
  }
  for (;;) {
    const unsigned char *run = find_special(s, e);
    if (d) {
      memcpy(d, s, (size_t)(run - s));
      d += run - s;
    }
    s = run;
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
    /* ch == '\\' */
    if (e - s < 2)
      return IM_PARSE;
    char rep;
    switch (s[1]) {
    case '"':
    case '\\':
    case '/':
      rep = (char)s[1];
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

/* scan_string past its first bytes: s at a byte not yet looked at, all
 * bytes from start (the first of the content) to s plain. Out of line, so
 * that the inline part needs no registers saved. */
COLD enum im_err scan_string_rest(struct cur *c, const unsigned char *start, const unsigned char *s,
                                  struct im_oai_str *out) {
  const unsigned char *e = c->end;
  for (;;) {
    s = find_special(s, e);
    if (s >= e)
      return IM_PARSE;
    if (*s == '"')
      break;
    if (*s == '\\')
      return scan_escaped(c, start, s, out);
    if (*s < 0x20)
      return IM_PARSE;
    size_t n = utf8_len(s, e);
    if (!n)
      return IM_PARSE;
    s += n;
  }
  if (out) {
    out->ptr = (const char *)start;
    out->len = (size_t)(s - start);
  }
  c->p = s + 1;
  return IM_OK;
}

/* c->p at '"'. Validates the string; when out is not NULL, sets it to the
 * decoded text (in place when there is no escape). Inline: the common case,
 * a key or short value of plain ASCII with 16 bytes of input after its
 * closing quote, costs one vector compare and nothing but pointers; anything
 * else (a non-ASCII byte, an escape, the last 16 bytes of input) continues
 * out of line from where this stopped. */
HOT enum im_err scan_string(struct cur *c, struct im_oai_str *out) {
  const unsigned char *start = c->p + 1, *s = start;
#if SSE2_SCAN
  while (c->end - s >= 16) {
    unsigned bits = special16(s);
    if (bits) {
      s += __builtin_ctz(bits);
      if (*s != '"')
        break;
      if (out) {
        out->ptr = (const char *)start;
        out->len = (size_t)(s - start);
      }
      c->p = s + 1;
      return IM_OK;
    }
    s += 16;
  }
#endif
  return scan_string_rest(c, start, s, out);
}

/* The fraction and exponent of a number, s at its '.', 'e' or 'E'. */
COLD enum im_err scan_number_tail(struct cur *c, const unsigned char *s) {
  const unsigned char *e = c->end;
  if (*s == '.') {
    s++;
    if (s >= e || (unsigned)(*s - '0') >= 10)
      return IM_PARSE;
    while (s < e && (unsigned)(*s - '0') < 10)
      s++;
  }
  if (s < e && (*s == 'e' || *s == 'E')) {
    s++;
    if (s < e && (*s == '+' || *s == '-'))
      s++;
    if (s >= e || (unsigned)(*s - '0') >= 10)
      return IM_PARSE;
    while (s < e && (unsigned)(*s - '0') < 10)
      s++;
  }
  c->p = s;
  return IM_OK;
}

/* c->p at '-' or a digit. *ok is set when the number is an integer that fits
 * int64_t, with its value in *out. */
HOT enum im_err scan_number(struct cur *c, int64_t *out, int *ok) {
  const unsigned char *s = c->p, *e = c->end, *d0;
  int neg = *s == '-';
  uint64_t v = 0;
  d0 = s += neg;
  while (s < e && (unsigned)(*s - '0') < 10)
    v = v * 10 + (unsigned)(*s++ - '0');
  /* A leading zero is a number of its own, and a digit after it is an
   * error wherever the number stands. */
  if (s == d0 || (*d0 == '0' && s - d0 > 1))
    return IM_PARSE;
  if (s < e && (*s == '.' || *s == 'e' || *s == 'E'))
    return scan_number_tail(c, s);
  c->p = s;
  /* 19 digits stay below 2^64; 20 (no leading zeros) are >= 10^19, beyond
   * int64_t either way. */
  if (s - d0 > 19 || v > (uint64_t)INT64_MAX + (unsigned)neg)
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

static enum im_err skip_value(struct cur *c);

/* c->p at '{' (object) or '[' (array): enters one nesting level, then c->p
 * at the first member; *more is 0 when the container is empty (closed). */
HOT enum im_err open_container(struct cur *c, unsigned char close, int *more) {
  if (++c->depth > IM_OAI_MAX_DEPTH)
    return IM_LIMIT;
  c->p++;
  *more = peek(c) != close;
  if (!*more) {
    c->p++;
    c->depth--;
  }
  return IM_OK;
}

/* After a member or element: consumes ',' (*more = 1) or the closing
 * bracket (*more = 0, leaving the level). */
HOT enum im_err next_member(struct cur *c, unsigned char close, int *more) {
  int ch = peek(c);
  if (ch == ',') {
    c->p++;
    if (close == ']') /* an element is read from its first byte */
      skip_ws(c);
    *more = 1;
    return IM_OK;
  }
  if (ch != close)
    return IM_PARSE;
  c->p++;
  c->depth--;
  *more = 0;
  return IM_OK;
}

/* c->p at a member (or whitespace before it): reads its key (into k when
 * not NULL) and the ':'; c->p then at the value's first byte. The compact
 * form, "key":value with the key plain ASCII, is read with the position in a
 * register and stored once. */
HOT enum im_err member_key(struct cur *c, struct im_oai_str *k) {
  enum im_err err;
#if SSE2_SCAN
  const unsigned char *start = c->p + 1, *s = start;
  if (c->p < c->end && *c->p == '"' && c->end - s >= 18) {
    unsigned bits = special16(s); /* room for the quote, ':' and a byte */
    if (bits) {
      s += __builtin_ctz(bits);
      if (s[0] == '"' && s[1] == ':' && s[2] > ' ') {
        if (k) {
          k->ptr = (const char *)start;
          k->len = (size_t)(s - start);
        }
        c->p = s + 2;
        return IM_OK;
      }
    }
  }
#endif
  if (peek(c) != '"')
    return IM_PARSE;
  if ((err = scan_string(c, k)))
    return err;
  if (peek(c) != ':')
    return IM_PARSE;
  c->p++;
  skip_ws(c);
  return IM_OK;
}

/* The loop of an object whose values fn reads: always inlined, so that each
 * caller gets it with its own fn called directly (often inlined too). */
typedef enum im_err (*key_fn)(struct cur *c, const struct im_oai_str *key, void *ctx);

HOT enum im_err scan_object(struct cur *c, key_fn fn, void *ctx) {
  int more;
  enum im_err err = open_container(c, '}', &more);
  while (!err && more) {
    struct im_oai_str key;
    if (!(err = member_key(c, &key)) && !(err = fn(c, &key, ctx)))
      err = next_member(c, '}', &more);
  }
  return err;
}

/* Validating skips: values of keys we do not read, and the elements of
 * arrays we only count. */
static enum im_err skip_object(struct cur *c) {
  int more;
  enum im_err err = open_container(c, '}', &more);
  while (!err && more)
    if (!(err = member_key(c, NULL)) && !(err = skip_value(c)))
      err = next_member(c, '}', &more);
  return err;
}

/* count gets the number of elements when not NULL. */
static enum im_err skip_array(struct cur *c, size_t *count) {
  int more;
  size_t n = 0;
  enum im_err err = open_container(c, ']', &more);
  while (!err && more) {
    n++;
    if (!(err = skip_value(c)))
      err = next_member(c, ']', &more);
  }
  if (count)
    *count = n;
  return err;
}

static enum im_err skip_value(struct cur *c) {
  if (c->p >= c->end)
    return IM_PARSE;
  int64_t dummy;
  int ok = 0;
  switch (*c->p) {
  case '{':
    return skip_object(c);
  case '[':
    return skip_array(c, NULL);
  case '"':
    return scan_string(c, NULL);
  case 't':
    return scan_literal(c, "true", 4);
  case 'f':
    return scan_literal(c, "false", 5);
  case 'n':
    return scan_literal(c, "null", 4);
  default:
    return scan_number(c, &dummy, &ok);
  }
}

/* A string value, or absent for any other type. */
static inline enum im_err val_str(struct cur *c, struct im_oai_str *out) {
  *out = no_str;
  return at(c, '"') ? scan_string(c, out) : skip_value(c);
}

static inline int at_number(const struct cur *c) {
  return c->p < c->end && (*c->p == '-' || (unsigned)(*c->p - '0') < 10);
}

/* An integer value, or -1 for anything else. */
HOT enum im_err val_int(struct cur *c, int64_t *out, int *ok) {
  int dummy = 0;
  *out = -1;
  if (!ok)
    ok = &dummy;
  *ok = 0;
  if (at_number(c)) {
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
  if (at_number(c)) {
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

/* Key handlers: keys are told apart by length first (a switch), then by
 * content; a key we do not read has its value validated and skipped. */

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
  switch (k->len) {
  case 12:
    if (KEQ(k, "total_tokens"))
      return val_int(c, &u->total_tokens, NULL);
    break;
  case 13:
    if (KEQ(k, "prompt_tokens"))
      return val_int(c, &u->prompt_tokens, NULL);
    break;
  case 17:
    if (KEQ(k, "completion_tokens"))
      return val_int(c, &u->completion_tokens, NULL);
    break;
  case 21:
    if (KEQ(k, "prompt_tokens_details")) {
      u->cached_tokens = -1;
      return at(c, '{') ? scan_object(c, ptd_key, u) : skip_value(c);
    }
    break;
  case 23:
    if (KEQ(k, "prompt_cache_hit_tokens"))
      return val_int(c, &u->cache_hit_tokens, NULL);
    break;
  case 24:
    if (KEQ(k, "prompt_cache_miss_tokens"))
      return val_int(c, &u->cache_miss_tokens, NULL);
    break;
  case 25:
    if (KEQ(k, "completion_tokens_details")) {
      u->reasoning_tokens = -1;
      return at(c, '{') ? scan_object(c, ctd_key, u) : skip_value(c);
    }
    break;
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
  switch (k->len) {
  case 4:
    if (KEQ(k, "role"))
      return val_str(c, &ch->role);
    break;
  case 7:
    if (KEQ(k, "content"))
      return val_str(c, &ch->content);
    break;
  case 9:
    if (KEQ(k, "reasoning"))
      return val_str(c, &ch->reasoning);
    break;
  case 10:
    if (KEQ(k, "tool_calls")) {
      ch->n_tool_calls = 0;
      ch->tool_calls_json = no_str;
      if (!at(c, '['))
        return skip_value(c);
      const unsigned char *s = c->p;
      enum im_err err = skip_array(c, &ch->n_tool_calls);
      ch->tool_calls_json.ptr = (const char *)s;
      ch->tool_calls_json.len = (size_t)(c->p - s);
      return err;
    }
    break;
  case 17:
    if (KEQ(k, "reasoning_content"))
      return val_str(c, &ch->reasoning_content);
    break;
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
  switch (k->len) {
  case 4:
    if (KEQ(k, "text"))
      return val_str(c, &ch->text);
    break;
  case 8:
    if (KEQ(k, "logprobs")) {
      ch->logprobs_json = no_str;
      if (!at(c, '{'))
        return skip_value(c);
      const unsigned char *s = c->p;
      enum im_err err = skip_object(c);
      ch->logprobs_json.ptr = (const char *)s;
      ch->logprobs_json.len = (size_t)(c->p - s);
      return err;
    }
    break;
  case 5:
    if (KEQ(k, "delta")) {
      reset_delta(ch);
      return at(c, '{') ? scan_object(c, delta_key, ch) : skip_value(c);
    }
    if (KEQ(k, "index"))
      return val_int(c, &ch->index, &ch->index_ok);
    break;
  case 13:
    if (KEQ(k, "finish_reason"))
      return val_str(c, &ch->finish);
    break;
  }
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
  o->logprobs_json = ch->logprobs_json;
  /* Prefer the non-empty one; a server sending both sends the same text. */
  if (ch->reasoning_content.len || (!ch->reasoning.len && ch->reasoning_content.ptr))
    o->reasoning = ch->reasoning_content;
  else
    o->reasoning = ch->reasoning;
}

/* One element of "choices", at array position idx. */
static enum im_err choice_elem(struct cur *c, struct state *st, size_t idx) {
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
  o->logprobs_json = no_str;
}

/* c->p at the '[' of "choices". */
static enum im_err scan_choices(struct cur *c, struct state *st) {
  int more;
  size_t n = 0;
  enum im_err err = open_container(c, ']', &more);
  while (!err && more)
    if (!(err = choice_elem(c, st, n++)))
      err = next_member(c, ']', &more);
  st->c->n_choices = n;
  return err;
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

/* The top-level "object": the kind of chunk, or an error response. */
static enum im_err top_object(struct cur *c, struct state *st) {
  struct im_oai_chunk *o = st->c;
  struct im_oai_str str, *v = &str; /* no_str when not a string: matches none */
  enum im_err err = val_str(c, v);
  o->object = IM_OAI_OBJ_OTHER;
  st->obj_is_error = 0;
  if (KEY_IS(v, "chat.completion.chunk"))
    o->object = IM_OAI_OBJ_CHAT;
  else if (KEY_IS(v, "text_completion"))
    o->object = IM_OAI_OBJ_TEXT;
  else if (KEY_IS(v, "error"))
    st->obj_is_error = 1;
  return err;
}

static enum im_err top_key(struct cur *c, const struct im_oai_str *k, void *ctx) {
  struct state *st = ctx;
  struct im_oai_chunk *o = st->c;
  switch (k->len) {
  case 4:
    if (KEQ(k, "type"))
      return val_str(c, &st->top_type);
    if (KEQ(k, "code"))
      return val_code(c, &st->top_code, &st->top_code_num);
    break;
  case 5:
    if (KEQ(k, "usage")) {
      reset_usage(&o->usage);
      o->has_usage = at(c, '{');
      return o->has_usage ? scan_object(c, usage_key, &o->usage) : skip_value(c);
    }
    if (KEQ(k, "error")) {
      reset_error(o);
      st->err_present = at(c, '{') || at(c, '"');
      if (at(c, '{'))
        return scan_object(c, error_key, o);
      return val_str(c, &o->err_message);
    }
    break;
  case 6:
    if (KEQ(k, "object"))
      return top_object(c, st);
    break;
  case 7:
    if (KEQ(k, "choices")) {
      reset_choices(o);
      return at(c, '[') ? scan_choices(c, st) : skip_value(c);
    }
    if (KEQ(k, "timings")) {
      reset_timings(&o->timings);
      o->has_timings = at(c, '{');
      return o->has_timings ? scan_object(c, timings_key, &o->timings) : skip_value(c);
    }
    if (KEQ(k, "message"))
      return val_str(c, &st->top_message);
    break;
  }
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

int im__oai_is_done(const char *s, size_t len) {
  while (len && is_ws(*s)) {
    s++;
    len--;
  }
  while (len && is_ws(s[len - 1]))
    len--;
  return len == 6 && memcmp(s, "[DONE]", 6) == 0;
}

void im__oai_classify(struct im_oai_chunk *c) {
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
  if (len && data[0] == '[' && im__oai_is_done(data, len)) {
    c->kind = IM_OAI_DONE;
    return IM_OK;
  }
  /* The scratch's len stays 0 (only its capacity is used), so scan_escaped
   * can reserve the input's length there when the first escape needs it. */
  enum im_err err;
  struct cur cur = {
      (const unsigned char *)data, (const unsigned char *)data + len, 0, &c->scratch, NULL, 0, len};
  struct state st; /* st.ch is cleared by each choice read */
  st.c = c;
  st.err_present = st.obj_is_error = 0;
  st.top_message = st.top_type = st.top_code = no_str;
  st.top_code_num = -1;
  skip_ws(&cur);
  if (!at(&cur, '{'))
    return im__oai_is_done(data, len) ? (c->kind = IM_OAI_DONE, IM_OK) : IM_PARSE;
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
  im__oai_classify(c);
  return IM_OK;
}

int im_oai_chunk_has_answer(const struct im_oai_chunk *c) {
  return c->kind == IM_OAI_CHUNK && (c->content.len || c->text.len);
}
