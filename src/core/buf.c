#include "core/buf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void im_buf_init(struct im_buf *b, size_t max) {
  b->data = NULL;
  b->len = b->cap = 0;
  b->max = max < SIZE_MAX / 2 ? max : SIZE_MAX / 2;
}

void im_buf_cleanup(struct im_buf *b) {
  if (!b)
    return;
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

enum im_err im_buf_reserve(struct im_buf *b, size_t extra) {
  if (extra > b->max || b->len > b->max - extra)
    return IM_LIMIT;
  size_t need = b->len + extra + 1;
  if (need <= b->cap)
    return IM_OK;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need)
    cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  char *p = realloc(b->data, cap);
  if (!p)
    return IM_NOMEM; /* b->data still valid */
  b->data = p;
  b->cap = cap;
  return IM_OK;
}

enum im_err im__buf_append_grow(struct im_buf *b, const void *data, size_t len) {
  enum im_err err = im_buf_reserve(b, len);
  if (err)
    return err;
  if (len)
    memcpy(b->data + b->len, data, len);
  b->len += len;
  b->data[b->len] = '\0';
  return IM_OK;
}

enum im_err im_buf_vprintf(struct im_buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap2);
  va_end(ap2);
  if (n < 0)
    return IM_INVAL;
  if ((size_t)n < sizeof small)
    return im_buf_append(b, small, (size_t)n);
  enum im_err err = im_buf_reserve(b, (size_t)n);
  if (err)
    return err;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return IM_OK;
}

/* Digits of u in base 10 or 16, most significant first, into the end of
 * tmp[24]; returns the first. */
static char *digits(char *end, uint64_t u, unsigned base) {
  char *p = end;
  do {
    *--p = "0123456789abcdef"[u % base];
    u /= base;
  } while (u);
  return p;
}

enum im_err im_buf_put_i64(struct im_buf *b, int64_t v) {
  char tmp[24];
  char *p = digits(tmp + sizeof tmp, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, 10);
  if (v < 0)
    *--p = '-';
  return im_buf_append(b, p, (size_t)(tmp + sizeof tmp - p));
}

enum im_err im_buf_put_u64(struct im_buf *b, uint64_t v) {
  char tmp[24];
  char *p = digits(tmp + sizeof tmp, v, 10);
  return im_buf_append(b, p, (size_t)(tmp + sizeof tmp - p));
}

void im_buf_reserve_hint(struct im_buf *b, size_t extra) {
  if (b->len >= b->max)
    return;
  if (b->max - b->len < extra)
    extra = b->max - b->len;
  enum im_err err = im_buf_reserve(b, extra);
  (void)err; /* a hint: the appends that follow report any failure */
}

enum im_err im_buf_put_hex(struct im_buf *b, uint64_t v) {
  char tmp[24];
  char *p = digits(tmp + sizeof tmp, v, 16);
  return im_buf_append(b, p, (size_t)(tmp + sizeof tmp - p));
}

enum im_err im_buf_printf(struct im_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  enum im_err err = im_buf_vprintf(b, fmt, ap);
  va_end(ap);
  return err;
}

/* Length of the valid UTF-8 sequence starting at s (1..4), or 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *s, size_t avail) {
  unsigned char c = s[0];
  size_t n;
  uint32_t cp;
  if (c < 0x80)
    return 1;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (n > avail)
    return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  /* Reject overlong forms, surrogates and values past U+10FFFF. */
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
    return 0;
  return n;
}

enum im_err im_buf_json_escape(struct im_buf *b, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {
    size_t run = i;
    /* Copy runs of bytes that need no escaping in one append. */
    while (run < len && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' && p[run] != '\\')
      run++;
    if (run > i) {
      enum im_err err = im_buf_append(b, s + i, run - i);
      if (err)
        return err;
      i = run;
      continue;
    }
    unsigned char c = p[i];
    char esc[8];
    const char *out = esc;
    size_t out_len = 2, adv = 1;
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
    } else if (c == '\n') {
      out = "\\n";
    } else if (c == '\r') {
      out = "\\r";
    } else if (c == '\t') {
      out = "\\t";
    } else if (c < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      out_len = 6;
    } else {
      adv = utf8_seq_len(p + i, len - i);
      if (adv == 0) {
        out = "\xef\xbf\xbd";
        out_len = 3;
        adv = 1;
      } else {
        out = s + i;
        out_len = adv;
      }
    }
    enum im_err err = im_buf_append(b, out, out_len);
    if (err)
      return err;
    i += adv;
  }
  return IM_OK;
}

void im_buf_consume(struct im_buf *b, size_t n) {
  if (n >= b->len) {
    b->len = 0;
  } else {
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
  }
  if (b->data)
    b->data[b->len] = '\0';
}

void im_buf_reset(struct im_buf *b) {
  b->len = 0;
  if (b->data)
    b->data[0] = '\0';
}
