/* The flat object view of a requests.jsonl line: see fobj.h. The grammar
 * accepted by the scanner is a strict subset of JSON (RFC 8259): what it
 * does not know it refuses, and jansson decides. */
#include "record/fobj.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct scan {
  const char *p, *end;
};

static void skip_ws(struct scan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
    s->p++;
}

static bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

/* A JSON number at s->p. Integers of up to 18 digits (always within
 * int64) give IM__FV_INT; a fraction or an exponent gives IM__FV_REAL by
 * strtod, as jansson does. Longer integers, overflowing reals and bad
 * syntax: false. */
static bool scan_number(struct scan *s, struct im__fv *v) {
  const char *start = s->p, *p = s->p, *end = s->end;
  bool neg = p < end && *p == '-';
  if (neg)
    p++;
  const char *digits = p;
  if (p < end && *p == '0')
    p++;
  else if (p < end && *p >= '1' && *p <= '9')
    while (p < end && is_digit(*p))
      p++;
  else
    return false;
  size_t n_digits = (size_t)(p - digits);
  bool real = false;
  if (p < end && *p == '.') {
    real = true;
    if (++p >= end || !is_digit(*p))
      return false;
    while (p < end && is_digit(*p))
      p++;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    real = true;
    if (++p < end && (*p == '+' || *p == '-'))
      p++;
    if (p >= end || !is_digit(*p))
      return false;
    while (p < end && is_digit(*p))
      p++;
  }
  s->p = p;
  if (!real) {
    if (n_digits > 18)
      return false;
    int64_t x = 0;
    for (const char *q = digits; q < p; q++)
      x = x * 10 + (*q - '0');
    v->t = IM__FV_INT;
    v->i = neg ? -x : x;
    v->d = (double)v->i;
    return true;
  }
  char tmp[64];
  size_t len = (size_t)(p - start);
  if (len >= sizeof tmp)
    return false;
  memcpy(tmp, start, len);
  tmp[len] = '\0';
  v->t = IM__FV_REAL;
  v->d = strtod(tmp, NULL);
  return isfinite(v->d);
}

/* The bytes a plain string holds, as bits: printable ASCII (0x20-0x7f)
 * but the quote (0x22) and the backslash (0x5c). */
static const uint64_t plain_bits[4] = {0xFFFFFFFB00000000ULL, 0xFFFFFFFFEFFFFFFFULL, 0, 0};

static bool plain(unsigned char c) {
  return (plain_bits[c >> 6] >> (c & 63)) & 1;
}

/* A string of plain printable ASCII (no escape): its bytes. */
static bool scan_string(struct scan *s, const char **out, size_t *n) {
  if (s->p >= s->end || *s->p != '"')
    return false;
  const char *b = ++s->p, *p = b, *end = s->end;
  while (p < end && plain((unsigned char)*p))
    p++;
  if (p >= end || *p != '"')
    return false; /* an escape, a control or non-ASCII byte, or no end */
  *out = b;
  *n = (size_t)(p - b);
  s->p = p + 1;
  return true;
}

/* An array of integers; the elements are converted later (im__fv_next_int). */
static bool scan_array(struct scan *s, struct im__fv *v) {
  s->p++; /* '[' */
  v->t = IM__FV_ARR;
  v->s = s->p;
  v->n = 0;
  skip_ws(s);
  if (s->p < s->end && *s->p == ']') {
    s->p++;
    return true;
  }
  for (;;) {
    struct im__fv e;
    skip_ws(s);
    if (!scan_number(s, &e) || e.t != IM__FV_INT)
      return false;
    v->n++;
    skip_ws(s);
    if (s->p >= s->end)
      return false;
    char c = *s->p++;
    if (c == ']')
      return true;
    if (c != ',')
      return false;
  }
}

static bool word(struct scan *s, const char *w, size_t n) {
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
    return false;
  s->p += n;
  return true;
}

static bool scan_value(struct scan *s, struct im__fv *v) {
  if (s->p >= s->end)
    return false;
  switch (*s->p) {
  case '"':
    v->t = IM__FV_STR;
    return scan_string(s, &v->s, &v->n);
  case '[':
    return scan_array(s, v);
  case 'n':
    v->t = IM__FV_NULL;
    return word(s, "null", 4);
  case 't':
    v->t = IM__FV_TRUE;
    return word(s, "true", 4);
  case 'f':
    v->t = IM__FV_FALSE;
    return word(s, "false", 5);
  default:
    return scan_number(s, v);
  }
}

static unsigned key_hash(const char *key, size_t klen) {
  unsigned h = (unsigned)klen * 31u;
  if (klen)
    h += (unsigned char)key[0] * 7u + (unsigned char)key[klen - 1] * 3u +
         (unsigned char)key[klen / 2];
  return h;
}

/* Indexes the members by key (o->slot, open addressing on a hash of the
 * key's length and three of its bytes); false when two share a key
 * (JSON_REJECT_DUPLICATES refuses that). */
static bool index_keys(struct im__fobj *o) {
  memset(o->slot, 0, sizeof o->slot);
  o->indexed = true;
  for (size_t i = 0; i < o->n; i++) {
    const struct im__fv *v = &o->m[i];
    for (unsigned k = key_hash(v->key, v->klen) & 255u;; k = (k + 1) & 255u) {
      if (!o->slot[k]) {
        o->slot[k] = (uint8_t)(i + 1);
        break;
      }
      const struct im__fv *w = &o->m[o->slot[k] - 1];
      if (w->klen == v->klen && memcmp(w->key, v->key, v->klen) == 0)
        return false;
    }
  }
  return true;
}

enum im_err im__fobj_scan(struct im__fobj *o, const char *line, size_t len) {
  struct scan s = {line, line + len};
  o->m = o->small;
  o->n = 0;
  o->indexed = false;
  skip_ws(&s);
  if (s.p >= s.end || *s.p++ != '{')
    return IM_PARSE;
  skip_ws(&s);
  if (s.p < s.end && *s.p == '}') {
    s.p++;
  } else {
    for (;;) {
      if (o->n == IM__FOBJ_SMALL) /* o->slot holds uint8_t: stays below 255 */
        return IM_PARSE;
      struct im__fv *v = &o->m[o->n];
      v->j = NULL;
      skip_ws(&s);
      if (!scan_string(&s, &v->key, &v->klen))
        return IM_PARSE;
      skip_ws(&s);
      if (s.p >= s.end || *s.p++ != ':')
        return IM_PARSE;
      skip_ws(&s);
      if (!scan_value(&s, v))
        return IM_PARSE;
      o->n++;
      skip_ws(&s);
      if (s.p >= s.end)
        return IM_PARSE;
      char c = *s.p++;
      if (c == '}')
        break;
      if (c != ',')
        return IM_PARSE;
    }
  }
  skip_ws(&s);
  if (s.p != s.end || !index_keys(o))
    return IM_PARSE;
  return IM_OK;
}

enum im_err im__fobj_from_json(struct im__fobj *o, json_t *root) {
  size_t n = json_object_size(root);
  o->m = o->small;
  o->n = 0;
  o->indexed = false;
  if (n > IM__FOBJ_SMALL && !(o->m = calloc(n, sizeof *o->m))) {
    o->m = o->small;
    return IM_NOMEM;
  }
  const char *key;
  json_t *val;
  json_object_foreach(root, key, val) {
    struct im__fv *v = &o->m[o->n++];
    memset(v, 0, sizeof *v);
    v->key = key;
#if JANSSON_VERSION_HEX >= 0x020e00
    v->klen = json_object_iter_key_len(json_object_key_to_iter(key));
#else
    v->klen = strlen(key);
#endif
    switch (json_typeof(val)) {
    case JSON_NULL:
      v->t = IM__FV_NULL;
      break;
    case JSON_TRUE:
      v->t = IM__FV_TRUE;
      break;
    case JSON_FALSE:
      v->t = IM__FV_FALSE;
      break;
    case JSON_INTEGER:
      v->t = IM__FV_INT;
      v->i = json_integer_value(val);
      v->d = (double)v->i;
      break;
    case JSON_REAL:
      v->t = IM__FV_REAL;
      v->d = json_real_value(val);
      break;
    case JSON_STRING:
      v->t = IM__FV_STR;
      v->s = json_string_value(val);
      v->n = json_string_length(val);
      break;
    case JSON_ARRAY:
      v->t = IM__FV_ARR;
      v->j = val;
      v->n = json_array_size(val);
      break;
    default:
      v->t = IM__FV_OTHER;
      break;
    }
  }
  if (o->n <= IM__FOBJ_SMALL)
    (void)index_keys(o); /* jansson refused duplicates already */
  return IM_OK;
}

void im__fobj_cleanup(struct im__fobj *o) {
  if (o && o->m != o->small)
    free(o->m);
  if (o)
    o->m = o->small;
}

const struct im__fv *im__fobj_get(struct im__fobj *o, const char *key) {
  size_t klen = strlen(key);
  if (o->indexed) {
    for (unsigned k = key_hash(key, klen) & 255u; o->slot[k]; k = (k + 1) & 255u) {
      const struct im__fv *v = &o->m[o->slot[k] - 1];
      if (v->klen == klen && memcmp(v->key, key, klen) == 0)
        return v;
    }
    return NULL;
  }
  for (size_t i = 0; i < o->n; i++)
    if (o->m[i].klen == klen && memcmp(o->m[i].key, key, klen) == 0)
      return &o->m[i];
  return NULL;
}

void im__fv_iter_init(struct im__fv_iter *it, const struct im__fv *arr) {
  it->v = arr;
  it->i = 0;
  it->p = arr->s;
}

bool im__fv_next_int(struct im__fv_iter *it, int64_t *out) {
  size_t i = it->i++;
  if (it->v->j) {
    json_t *e = json_array_get(it->v->j, i);
    if (!json_is_integer(e))
      return false;
    *out = json_integer_value(e);
    return true;
  }
  /* Scanned already: integers separated by commas and whitespace. */
  const char *p = it->p;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == ',')
    p++;
  bool neg = *p == '-';
  p += neg;
  int64_t x = 0;
  while (is_digit(*p))
    x = x * 10 + (*p++ - '0');
  it->p = p;
  *out = neg ? -x : x;
  return true;
}
