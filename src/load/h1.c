/* The HTTP/1.1 response parser (h1.h). */
#include "load/h1.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum {
  ST_STATUS,
  ST_HEADER,
  ST_BODY_LEN,   /* Content-Length bytes left */
  ST_BODY_EOF,   /* everything until the connection closes */
  ST_CHUNK_SIZE,
  ST_CHUNK_DATA,
  ST_CHUNK_END,  /* the CRLF after a chunk's data */
  ST_TRAILER,
  ST_DONE,
};

#define H1_LENGTH_MAX ((uint64_t)1 << 62)

void im_h1_init(struct im_h1 *p) {
  memset(p, 0, sizeof *p);
}

void im_h1_reset(struct im_h1 *p) {
  char *line = p->line;
  size_t cap = p->line_cap;
  memset(p, 0, sizeof *p);
  p->line = line;
  p->line_cap = cap;
}

void im_h1_cleanup(struct im_h1 *p) {
  free(p->line);
  memset(p, 0, sizeof *p);
}

const char *im_h1_rc_name(enum im_h1_rc rc) {
  switch (rc) {
  case IM_H1_MORE: return "incomplete";
  case IM_H1_DONE: return "complete";
  case IM_H1_STOP: return "stopped";
  case IM_H1_E_STATUS: return "not an HTTP/1.x status line";
  case IM_H1_E_HEADER: return "a malformed header line";
  case IM_H1_E_TOOBIG: return "a response head above the size limit";
  case IM_H1_E_LENGTH: return "a bad or conflicting Content-Length";
  case IM_H1_E_CHUNK: return "malformed chunked framing";
  case IM_H1_E_NOTHING: return "the connection closed without a response";
  case IM_H1_E_PARTIAL: return "the connection closed in the middle of the response";
  case IM_H1_E_NOMEM: return "out of memory";
  }
  return "unknown";
}

/* RFC 9110 §5.6.2 tchar. */
static bool is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
    return true;
  return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_ows(char c) { return c == ' ' || c == '\t'; }

static void trim(const char **s, size_t *n) {
  while (*n && is_ows(**s)) {
    (*s)++;
    (*n)--;
  }
  while (*n && is_ows((*s)[*n - 1]))
    (*n)--;
}

static bool token_eq(const char *s, size_t n, const char *lit) {
  return n == strlen(lit) && strncasecmp(s, lit, n) == 0;
}

/* Content-Length: digits, or a list of identical values (RFC 9110 §8.6). */
static enum im_h1_rc on_length(struct im_h1 *p, const char *v, size_t n) {
  size_t i = 0;
  do {
    while (i < n && is_ows(v[i]))
      i++;
    uint64_t x = 0;
    size_t d = 0;
    for (; i < n && v[i] >= '0' && v[i] <= '9'; i++, d++) {
      x = x * 10 + (uint64_t)(v[i] - '0');
      if (x > H1_LENGTH_MAX)
        return IM_H1_E_LENGTH;
    }
    while (i < n && is_ows(v[i]))
      i++;
    if (!d || (i < n && v[i] != ','))
      return IM_H1_E_LENGTH;
    if (p->has_length && x != p->length)
      return IM_H1_E_LENGTH;
    p->has_length = true;
    p->length = x;
  } while (i++ < n);
  return IM_H1_MORE;
}

/* Transfer-Encoding: chunked when it is the last coding (RFC 9112 §6.3:
 * any other final coding reads the body until the close). */
static void on_te(struct im_h1 *p, const char *v, size_t n) {
  const char *last = v;
  size_t ln = n;
  const char *c = memchr(v, ',', n);
  while (c) {
    last = c + 1;
    ln = n - (size_t)(last - v);
    c = memchr(last, ',', ln);
  }
  trim(&last, &ln);
  p->te_seen = true;
  p->chunked = token_eq(last, ln, "chunked");
}

static void on_connection(struct im_h1 *p, const char *v, size_t n) {
  size_t i = 0;
  while (i < n) {
    size_t j = i;
    while (j < n && v[j] != ',')
      j++;
    const char *t = v + i;
    size_t tn = j - i;
    trim(&t, &tn);
    if (token_eq(t, tn, "close"))
      p->close = true;
    i = j + 1;
  }
}

static enum im_h1_rc status_line(struct im_h1 *p, const char *s, size_t n,
                                 const struct im_h1_cb *cb, void *ud) {
  /* "HTTP/1.x SP 3DIGIT [SP reason]" */
  if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0 || (s[7] != '0' && s[7] != '1') || s[8] != ' ')
    return IM_H1_E_STATUS;
  for (int i = 9; i < 12; i++)
    if (s[i] < '0' || s[i] > '9')
      return IM_H1_E_STATUS;
  if (n > 12 && s[12] != ' ')
    return IM_H1_E_STATUS;
  int code = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
  if (code < 100 || code == 101)
    return IM_H1_E_STATUS;
  p->status = code;
  p->http10 = s[7] == '0';
  if (cb->status)
    cb->status(ud, code);
  p->state = ST_HEADER;
  return IM_H1_MORE;
}

/* The end of a head: what the body is. */
static enum im_h1_rc head_done(struct im_h1 *p) {
  if (p->status < 200) { /* interim: the final response follows */
    bool any = p->any;
    im_h1_reset(p);
    p->any = any;
    return IM_H1_MORE;
  }
  p->head_bytes = 0;
  if (p->status == 204 || p->status == 304) {
    p->state = ST_DONE;
    return IM_H1_DONE;
  }
  if (p->te_seen) {
    p->state = p->chunked ? ST_CHUNK_SIZE : ST_BODY_EOF;
    p->until_eof = !p->chunked;
    return IM_H1_MORE;
  }
  if (p->has_length) {
    p->left = p->length;
    p->state = p->length ? ST_BODY_LEN : ST_DONE;
    return p->length ? IM_H1_MORE : IM_H1_DONE;
  }
  p->until_eof = true;
  p->state = ST_BODY_EOF;
  return IM_H1_MORE;
}

static enum im_h1_rc header_line(struct im_h1 *p, const char *s, size_t n,
                                 const struct im_h1_cb *cb, void *ud) {
  if (!n)
    return head_done(p);
  if (is_ows(s[0]))
    return IM_H1_E_HEADER; /* obs-fold (RFC 9112 §5.2) */
  if (++p->n_headers > IM_H1_MAX_HEADERS)
    return IM_H1_E_TOOBIG;
  const char *colon = memchr(s, ':', n);
  if (!colon || colon == s)
    return IM_H1_E_HEADER;
  size_t nl = (size_t)(colon - s);
  for (size_t i = 0; i < nl; i++)
    if (!is_tchar((unsigned char)s[i]))
      return IM_H1_E_HEADER; /* includes a space before the colon */
  const char *v = colon + 1;
  size_t vn = n - nl - 1;
  trim(&v, &vn);
  if (p->status >= 200) {
    if (token_eq(s, nl, "content-length")) {
      enum im_h1_rc rc = on_length(p, v, vn);
      if (rc)
        return rc;
    } else if (token_eq(s, nl, "transfer-encoding")) {
      on_te(p, v, vn);
    } else if (token_eq(s, nl, "connection")) {
      on_connection(p, v, vn);
    }
    if (cb->header)
      cb->header(ud, s, nl, v, vn);
  }
  return IM_H1_MORE;
}

static enum im_h1_rc chunk_size_line(struct im_h1 *p, const char *s, size_t n) {
  size_t i = 0;
  uint64_t x = 0;
  for (; i < n; i++) {
    char c = s[i];
    unsigned d;
    if (c >= '0' && c <= '9')
      d = (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = (unsigned)(c - 'A' + 10);
    else
      break;
    x = x * 16 + d;
    if (x > H1_LENGTH_MAX)
      return IM_H1_E_CHUNK;
  }
  if (!i)
    return IM_H1_E_CHUNK;
  while (i < n && is_ows(s[i]))
    i++;
  if (i < n && s[i] != ';') /* chunk-ext: skipped */
    return IM_H1_E_CHUNK;
  if (!x) {
    p->state = ST_TRAILER;
    p->head_bytes = 0;
    return IM_H1_MORE;
  }
  p->left = x;
  p->state = ST_CHUNK_DATA;
  return IM_H1_MORE;
}

/* One line of a line state (s without its line end). */
static enum im_h1_rc on_line(struct im_h1 *p, const char *s, size_t n, const struct im_h1_cb *cb,
                             void *ud) {
  switch (p->state) {
  case ST_STATUS: return status_line(p, s, n, cb, ud);
  case ST_HEADER: return header_line(p, s, n, cb, ud);
  case ST_CHUNK_SIZE: return chunk_size_line(p, s, n);
  case ST_CHUNK_END:
    if (n)
      return IM_H1_E_CHUNK;
    p->state = ST_CHUNK_SIZE;
    return IM_H1_MORE;
  case ST_TRAILER:
    if (!n) {
      p->state = ST_DONE;
      return IM_H1_DONE;
    }
    if (is_ows(s[0]) || !memchr(s, ':', n))
      return IM_H1_E_CHUNK; /* a trailer field is a header line */
    return IM_H1_MORE;
  default: return IM_H1_E_STATUS; /* not a line state: a bug */
  }
}

static enum im_h1_rc keep_partial(struct im_h1 *p, const char *s, size_t n) {
  if (p->line_len + n > IM_H1_LINE_MAX)
    return IM_H1_E_TOOBIG;
  if (p->line_len + n > p->line_cap) {
    size_t cap = p->line_cap ? p->line_cap : 256;
    while (cap < p->line_len + n)
      cap *= 2;
    if (cap > IM_H1_LINE_MAX)
      cap = IM_H1_LINE_MAX;
    char *l = realloc(p->line, cap);
    if (!l)
      return IM_H1_E_NOMEM;
    p->line = l;
    p->line_cap = cap;
  }
  memcpy(p->line + p->line_len, s, n);
  p->line_len += n;
  return IM_H1_MORE;
}

/* A line state: consumes up to and including the next LF (or keeps what
 * there is). *i advances. */
static enum im_h1_rc line_step(struct im_h1 *p, const char *data, size_t len, size_t *i,
                               const struct im_h1_cb *cb, void *ud) {
  const char *s = data + *i;
  size_t avail = len - *i;
  const char *lf = memchr(s, '\n', avail);
  size_t take = lf ? (size_t)(lf - s) + 1 : avail;
  bool head = p->state == ST_STATUS || p->state == ST_HEADER || p->state == ST_TRAILER;
  if (head) {
    p->head_bytes += take;
    if (p->head_bytes > IM_H1_HEAD_MAX)
      return IM_H1_E_TOOBIG;
  }
  if (!lf) {
    *i = len;
    return keep_partial(p, s, avail);
  }
  *i += take;
  const char *line = s;
  size_t n = take - 1;
  if (p->line_len) {
    enum im_h1_rc rc = keep_partial(p, s, n);
    if (rc)
      return rc;
    line = p->line;
    n = p->line_len;
    p->line_len = 0;
  } else if (n > IM_H1_LINE_MAX) {
    return IM_H1_E_TOOBIG;
  }
  if (n && line[n - 1] == '\r')
    n--;
  return on_line(p, line, n, cb, ud);
}

enum im_h1_rc im_h1_feed(struct im_h1 *p, const char *data, size_t len, const struct im_h1_cb *cb,
                         void *ud, size_t *used) {
  size_t i = 0;
  enum im_h1_rc rc = IM_H1_MORE;
  if (len)
    p->any = true;
  while (i < len && rc == IM_H1_MORE) {
    switch (p->state) {
    case ST_BODY_EOF: {
      size_t n = len - i;
      i = len;
      if (cb->body && cb->body(ud, data + i - n, n))
        rc = IM_H1_STOP;
      break;
    }
    case ST_BODY_LEN:
    case ST_CHUNK_DATA: {
      size_t n = len - i;
      if ((uint64_t)n > p->left)
        n = (size_t)p->left;
      p->left -= n;
      i += n;
      bool last = p->left == 0;
      if (last)
        p->state = p->state == ST_BODY_LEN ? ST_DONE : ST_CHUNK_END;
      if (cb->body && cb->body(ud, data + i - n, n))
        rc = IM_H1_STOP;
      else if (last && p->state == ST_DONE)
        rc = IM_H1_DONE;
      break;
    }
    case ST_DONE: rc = IM_H1_DONE; break;
    default: rc = line_step(p, data, len, &i, cb, ud); break;
    }
  }
  if (rc == IM_H1_MORE && p->state == ST_DONE)
    rc = IM_H1_DONE; /* a head that ended the response (204, length 0) */
  *used = i;
  return rc;
}

enum im_h1_rc im_h1_eof(struct im_h1 *p) {
  if (p->state == ST_DONE || p->state == ST_BODY_EOF) {
    p->state = ST_DONE;
    return IM_H1_DONE;
  }
  return p->any ? IM_H1_E_PARTIAL : IM_H1_E_NOTHING;
}

bool im_h1_reusable(const struct im_h1 *p) {
  return p->state == ST_DONE && !p->close && !p->http10 && !p->until_eof;
}
