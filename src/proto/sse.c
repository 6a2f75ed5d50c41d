/* Server-Sent Events parser; the contract is in src/proto/sse.h.
 *
 * Hot path: a feed holding whole lines is scanned with memchr for '\n' and
 * '\r' separately, and each search result is remembered until the scan
 * passes it, so every byte is looked at once per search however many lines
 * the feed holds (streams without CR cost one failed memchr per feed). Lines
 * are parsed in place; only a line cut by a feed boundary is copied into
 * p->line. Event data is copied once, into p->data, whose storage is kept. */
#include "proto/sse.h"

#include <string.h>

static const unsigned char bom_bytes[3] = {0xEF, 0xBB, 0xBF};

void im_sse_init(struct im_sse *p, const struct im_sse_limits *limits, im_sse_cb cb, void *ud) {
  memset(p, 0, sizeof *p);
  p->cb = cb;
  p->ud = ud;
  p->max_line = limits && limits->max_line ? limits->max_line : IM_SSE_DEFAULT_MAX_LINE;
  p->max_data = limits && limits->max_data ? limits->max_data : IM_SSE_DEFAULT_MAX_DATA;
  /* +1: p->data keeps a "\n" after every line, the last one stripped at
   * dispatch. The limit itself is enforced in on_data(). */
  im_buf_init(&p->line, p->max_line);
  im_buf_init(&p->data, p->max_data + 1);
  im_buf_init(&p->type, p->max_line);
  im_buf_init(&p->id, p->max_line);
  p->retry_ms = -1;
}

void im_sse_report_fields(struct im_sse *p, int on) { p->fields = on ? 1 : 0; }

void im_sse_cleanup(struct im_sse *p) {
  if (!p)
    return;
  im_buf_cleanup(&p->line);
  im_buf_cleanup(&p->data);
  im_buf_cleanup(&p->type);
  im_buf_cleanup(&p->id);
}

void im_sse_reset(struct im_sse *p) {
  im_buf_reset(&p->line);
  im_buf_reset(&p->data);
  im_buf_reset(&p->type);
  im_buf_reset(&p->id);
  p->retry_ms = -1;
  p->failed = IM_OK;
  p->bom = 0;
  p->after_cr = 0;
  p->pending = 0;
}

/* A NUL-terminated view of a buffer that may never have been allocated. */
static const char *buf_str(const struct im_buf *b) {
  return b->data && b->len ? b->data : "";
}

static enum im_err emit_comment(struct im_sse *p, const char *s, size_t n) {
  struct im_sse_event ev = {
      .kind = IM_SSE_COMMENT,
      .data = s,
      .data_len = n,
      .type = "",
      .type_len = 0,
      .id = buf_str(&p->id),
      .id_len = p->id.len,
      .retry_ms = p->retry_ms,
  };
  return p->cb(p->ud, &ev);
}

/* A blank line. */
static enum im_err dispatch(struct im_sse *p) {
  p->pending = 0;
  if (p->data.len == 0) {
    /* No data line: the standard resets the type and dispatches nothing. */
    p->type.len = 0;
    return IM_OK;
  }
  p->data.len--; /* the "\n" after the last line */
  p->data.data[p->data.len] = '\0';
  struct im_sse_event ev = {
      .kind = IM_SSE_EVENT,
      .data = p->data.data,
      .data_len = p->data.len,
      .type = p->type.len ? p->type.data : "message",
      .type_len = p->type.len ? p->type.len : 7,
      .id = buf_str(&p->id),
      .id_len = p->id.len,
      .retry_ms = p->retry_ms,
  };
  enum im_err err = p->cb(p->ud, &ev);
  p->data.len = 0;
  p->type.len = 0;
  return err;
}

static enum im_err on_data(struct im_sse *p, const char *v, size_t n) {
  /* p->data.len already counts one "\n" per earlier line, so after this line
   * the joined data is p->data.len + n bytes long. */
  if (n > p->max_data || p->data.len > p->max_data - n)
    return IM_LIMIT;
  enum im_err err = im_buf_reserve(&p->data, n + 1);
  if (err)
    return err;
  if (n)
    memcpy(p->data.data + p->data.len, v, n);
  p->data.len += n;
  p->data.data[p->data.len++] = '\n';
  p->data.data[p->data.len] = '\0';
  return IM_OK;
}

static enum im_err set_buf(struct im_buf *b, const char *v, size_t n) {
  im_buf_reset(b);
  return im_buf_append(b, v, n);
}

static void on_retry(struct im_sse *p, const char *v, size_t n) {
  if (n == 0)
    return;
  int64_t ms = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < '0' || v[i] > '9')
      return; /* the standard ignores the field */
    if (ms <= INT64_MAX / 10)
      ms = ms * 10 + (v[i] - '0');
    else
      ms = INT64_MAX;
  }
  p->retry_ms = ms;
}

/* One complete line, line end excluded; n <= max_line. */
static enum im_err process_line(struct im_sse *p, const char *s, size_t n) {
  if (n == 0)
    return dispatch(p);
  if (s[0] == ':') {
    size_t skip = n > 1 && s[1] == ' ' ? 2 : 1;
    return emit_comment(p, s + skip, n - skip);
  }
  p->pending = 1;
  const char *colon = memchr(s, ':', n);
  size_t flen = colon ? (size_t)(colon - s) : n;
  const char *v = colon ? colon + 1 : s + n;
  size_t vlen = (size_t)(s + n - v);
  if (vlen && *v == ' ') {
    v++;
    vlen--;
  }
  switch (flen) {
  case 4:
    if (memcmp(s, "data", 4) == 0)
      return on_data(p, v, vlen);
    break;
  case 5:
    if (memcmp(s, "event", 5) == 0)
      return set_buf(&p->type, v, vlen);
    if (memcmp(s, "retry", 5) == 0) {
      on_retry(p, v, vlen);
      return IM_OK;
    }
    break;
  case 2:
    if (s[0] == 'i' && s[1] == 'd')
      return memchr(v, '\0', vlen) ? IM_OK : set_buf(&p->id, v, vlen);
    break;
  default:
    break;
  }
  if (p->fields) {
    struct im_sse_event ev = {.kind = IM_SSE_FIELD, .data = v, .data_len = vlen, .type = s,
                              .type_len = flen, .id = buf_str(&p->id), .id_len = p->id.len,
                              .retry_ms = p->retry_ms};
    return p->cb(p->ud, &ev);
  }
  return IM_OK; /* unknown fields are ignored */
}

/* Bytes after the BOM check. */
static enum im_err scan(struct im_sse *p, const char *s, size_t len) {
  size_t i = 0;
  if (p->after_cr && len) {
    p->after_cr = 0;
    if (s[0] == '\n')
      i = 1; /* the LF of a CRLF cut by the feed boundary */
  }
  /* Next LF / CR at or after i; len when there is none. */
  size_t lf = 0, cr = 0;
  int lf_ok = 0, cr_ok = 0;
  while (i < len) {
    if (!lf_ok || lf < i) {
      const char *q = memchr(s + i, '\n', len - i);
      lf = q ? (size_t)(q - s) : len;
      lf_ok = 1;
    }
    if (!cr_ok || cr < i) {
      const char *q = memchr(s + i, '\r', len - i);
      cr = q ? (size_t)(q - s) : len;
      cr_ok = 1;
    }
    size_t eol = lf < cr ? lf : cr;
    size_t n = eol - i;
    if (p->line.len + n > p->max_line)
      return IM_LIMIT;
    if (eol == len) { /* no line end: keep the start of the line */
      return im_buf_append(&p->line, s + i, n);
    }
    enum im_err err;
    if (p->line.len) {
      err = im_buf_append(&p->line, s + i, n);
      if (!err)
        err = process_line(p, p->line.data, p->line.len);
      p->line.len = 0;
    } else {
      err = process_line(p, s + i, n);
    }
    if (err)
      return err;
    i = eol + 1;
    if (s[eol] == '\r') {
      if (i == len)
        p->after_cr = 1;
      else if (s[i] == '\n')
        i++;
    }
  }
  return IM_OK;
}

enum im_err im_sse_feed(struct im_sse *p, const void *data, size_t len) {
  if (p->failed)
    return IM_STATE;
  const char *s = data;
  enum im_err err = IM_OK;
  while (p->bom < 3 && len) {
    if ((unsigned char)*s == bom_bytes[p->bom]) {
      p->bom++;
      s++;
      len--;
      continue;
    }
    /* Not a BOM after all: the bytes matched so far are ordinary bytes. */
    size_t k = p->bom;
    p->bom = 3;
    err = scan(p, (const char *)bom_bytes, k);
    if (err)
      goto out;
  }
  if (len)
    err = scan(p, s, len);
out:
  if (err)
    p->failed = err;
  return err;
}

enum im_err im_sse_finish(struct im_sse *p) {
  if (p->failed)
    return IM_STATE;
  if (p->line.len || p->pending || (p->bom > 0 && p->bom < 3))
    return IM_AGAIN;
  return IM_OK;
}
