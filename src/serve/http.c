#include "serve/http.h"

#include <stdint.h>
#include <string.h>

/* Parser states (p->state). */
enum {
  S_LINE,       /* request line */
  S_FIELDS,     /* header field lines */
  S_BODY_CL,    /* Content-Length body */
  S_CHUNK_SIZE, /* chunk-size [chunk-ext] CRLF */
  S_CHUNK_DATA, /* chunk-data */
  S_CHUNK_CRLF, /* CRLF after chunk-data */
  S_TRAILER,    /* trailer section */
  S_DONE,       /* request complete, waiting for im_http_next() */
  S_ERROR
};

/* Input is copied in pieces of at most this size, each parsed before the
 * next is copied, so a large read of a discarded body never sits in memory
 * whole. */
#define PIECE ((size_t)64 * 1024)
/* A chunk-size line with its extensions; nothing legitimate comes close.
 * (nginx allows no extensions at all; 4 KiB is generous.) */
#define MAX_CHUNK_LINE ((size_t)4096)
/* Storage kept between requests; larger buffers are freed when emptied. */
#define KEEP_CAP ((size_t)64 * 1024)

static size_t sat_add(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

void im_http_limits_default(struct im_http_limits *l) {
  l->max_head = 16 * 1024;
  l->max_headers = 64;
  l->max_body = 4 * 1024 * 1024;
}

static void reset_request(struct im_http_parser *p) {
  memset(&p->req, 0, sizeof p->req);
  p->req.content_length = -1;
  p->req.body = "";
  p->head_done = false;
  p->discard_body = false;
  p->state = S_LINE;
  p->pos = p->scan = p->body_start = p->req_end = 0;
  p->body_seen = p->chunk_left = 0;
  p->body_over = false;
  p->path_off = p->query_off = 0;
  if (p->body.cap > KEEP_CAP)
    im_buf_cleanup(&p->body);
  im_buf_reset(&p->body);
}

void im_http_parser_init(struct im_http_parser *p, const struct im_http_limits *limits) {
  memset(p, 0, sizeof *p);
  if (limits)
    p->limits = *limits;
  else
    im_http_limits_default(&p->limits);
  if (p->limits.max_headers > sizeof p->req.headers / sizeof p->req.headers[0])
    p->limits.max_headers = sizeof p->req.headers / sizeof p->req.headers[0];
  size_t one = sat_add(p->limits.max_head, p->limits.max_body);
  p->cap = sat_add(sat_add(one, one), PIECE);
  /* The caps are enforced here; the buffers hold at most p->cap. */
  im_buf_init(&p->in, p->cap);
  im_buf_init(&p->body, p->cap);
  p->err = IM_OK;
  reset_request(p);
}

void im_http_parser_cleanup(struct im_http_parser *p) {
  if (!p)
    return;
  im_buf_cleanup(&p->in);
  im_buf_cleanup(&p->body);
  memset(&p->req, 0, sizeof p->req);
  p->state = S_ERROR;
  p->err = IM_STATE;
}

/* ---- character classes (RFC 9110 §5.6.2, §5.5) ---- */

static bool is_tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
    return true;
  return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_token(const char *s, size_t n) {
  if (n == 0)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!is_tchar((unsigned char)s[i]))
      return false;
  return true;
}

/* field-vchar / SP / HTAB / obs-text: anything but CTLs other than HTAB. */
static bool is_field_char(unsigned char c) {
  return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool is_ows(char c) {
  return c == ' ' || c == '\t';
}

static bool ieq(const char *a, size_t an, const char *b) {
  size_t bn = strlen(b);
  if (an != bn)
    return false;
  for (size_t i = 0; i < an; i++) {
    unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
    if (x >= 'A' && x <= 'Z')
      x = (unsigned char)(x + 32);
    if (y >= 'A' && y <= 'Z')
      y = (unsigned char)(y + 32);
    if (x != y)
      return false;
  }
  return true;
}

static void trim_ows(const char **s, size_t *n) {
  while (*n && is_ows(**s)) {
    (*s)++;
    (*n)--;
  }
  while (*n && is_ows((*s)[*n - 1]))
    (*n)--;
}

/* ---- buffer helpers ---- */

/* The current request's bytes; "" before the first append (no arithmetic on
 * a NULL pointer). */
static const char *base(const struct im_http_parser *p) {
  return p->in.data ? p->in.data + p->start : "";
}
static size_t avail(const struct im_http_parser *p) {
  return p->in.len - p->start;
}

/* Removes bytes [from, to) (relative to start) from `in`, moving the tail
 * down; the head before `from` stays where it is. */
static void cut(struct im_http_parser *p, size_t from, size_t to) {
  if (to <= from)
    return;
  char *b = p->in.data + p->start;
  memmove(b + from, b + to, avail(p) - to);
  p->in.len -= to - from;
  p->in.data[p->in.len] = '\0';
}

/* Moves the live bytes to the front of `in` when the dead prefix is at least
 * as large as they are (or when `force`), so each byte is moved O(1) times. */
static void compact(struct im_http_parser *p, bool force) {
  if (p->start == 0)
    return;
  size_t live = avail(p);
  if (!force && p->start < live)
    return;
  memmove(p->in.data, p->in.data + p->start, live);
  p->in.len = live;
  p->in.data[live] = '\0';
  p->start = 0;
  if (live == 0 && p->in.cap > KEEP_CAP)
    im_buf_cleanup(&p->in);
}

/* Re-derives every pointer in p->req from the stored offsets. */
static void fixup(struct im_http_parser *p) {
  struct im_http_request *r = &p->req;
  if (!p->in.data)
    return;
  const char *b = base(p);
  r->method_str = b;
  r->path = b + p->path_off;
  r->query = b + p->query_off;
  for (size_t i = 0; i < r->n_headers; i++) {
    r->headers[i].name = b + p->hdr_off[i][0];
    r->headers[i].value = b + p->hdr_off[i][1];
  }
  if (p->state == S_DONE) {
    if (p->discard_body) {
      r->body = "";
      r->body_len = 0;
    } else if (r->chunked) {
      r->body = p->body.data ? p->body.data : "";
      r->body_len = p->body.len;
    } else {
      r->body = b + p->body_start;
      r->body_len = (size_t)r->content_length;
    }
  }
}

static enum im_err fail(struct im_http_parser *p, enum im_err err) {
  p->state = S_ERROR;
  p->err = err;
  return err;
}

/* Finds the next complete line starting at p->pos. Returns true and sets
 * *len (without the line end) and *next (offset after the LF); returns false
 * when no LF has arrived yet. A CR before the LF is dropped; any other CR is
 * left in the line for the callers' character checks to reject. */
static bool next_line(struct im_http_parser *p, size_t *len, size_t *next) {
  const char *b = base(p);
  size_t n = avail(p);
  const char *lf = p->scan < n ? memchr(b + p->scan, '\n', n - p->scan) : NULL;
  if (!lf) {
    p->scan = n;
    return false;
  }
  size_t end = (size_t)(lf - b);
  *next = end + 1;
  if (end > p->pos && b[end - 1] == '\r')
    end--;
  *len = end - p->pos;
  p->scan = *next;
  return true;
}

/* ---- head ---- */

static enum im_err parse_request_line(struct im_http_parser *p, const char *s, size_t n) {
  struct im_http_request *r = &p->req;
  const char *sp1 = memchr(s, ' ', n);
  if (!sp1 || !is_token(s, (size_t)(sp1 - s)))
    return IM_PARSE;
  size_t mlen = (size_t)(sp1 - s);
  const char *t = sp1 + 1;
  const char *sp2 = memchr(t, ' ', n - (size_t)(t - s));
  if (!sp2 || sp2 == t)
    return IM_PARSE;
  size_t tlen = (size_t)(sp2 - t);
  for (size_t i = 0; i < tlen; i++) {
    unsigned char c = (unsigned char)t[i];
    if (c <= 0x20 || c >= 0x7f)
      return IM_PARSE;
  }
  const char *v = sp2 + 1;
  size_t vlen = n - (size_t)(v - s);
  if (vlen != 8 || memcmp(v, "HTTP/1.", 7) != 0 || v[7] < '0' || v[7] > '9')
    return IM_PARSE;
  /* RFC 9110 §6.2: a higher minor version is handled as the highest we know. */
  r->version_minor = v[7] == '0' ? 0 : 1;
  r->method_len = mlen;
  if (mlen == 3 && memcmp(s, "GET", 3) == 0)
    r->method = IM_HTTP_GET;
  else if (mlen == 4 && memcmp(s, "HEAD", 4) == 0)
    r->method = IM_HTTP_HEAD;
  else if (mlen == 4 && memcmp(s, "POST", 4) == 0)
    r->method = IM_HTTP_POST;
  else
    r->method = IM_HTTP_OTHER;
  p->path_off = mlen + 1;
  const char *q = memchr(t, '?', tlen);
  r->path_len = q ? (size_t)(q - t) : tlen;
  p->query_off = p->path_off + r->path_len + (q ? 1 : 0);
  r->query_len = q ? tlen - r->path_len - 1 : 0;
  return IM_OK;
}

/* Checks a field line (header or trailer); sets the name and trimmed value. */
static enum im_err check_field(const char *s, size_t n, size_t *name_len, const char **value,
                               size_t *value_len) {
  /* A line starting with whitespace is obs-fold (or whitespace between the
   * start line and the first field): RFC 9112 §5.2 and §2.2 allow 400. */
  if (n == 0 || is_ows(s[0]))
    return IM_PARSE;
  const char *colon = memchr(s, ':', n);
  /* Whitespace before the colon fails the token check: RFC 9112 §5.1. */
  if (!colon || !is_token(s, (size_t)(colon - s)))
    return IM_PARSE;
  *name_len = (size_t)(colon - s);
  const char *v = colon + 1;
  size_t vn = n - *name_len - 1;
  for (size_t i = 0; i < vn; i++)
    if (!is_field_char((unsigned char)v[i]))
      return IM_PARSE;
  trim_ows(&v, &vn);
  *value = v;
  *value_len = vn;
  return IM_OK;
}

static enum im_err parse_field(struct im_http_parser *p, const char *s, size_t n) {
  struct im_http_request *r = &p->req;
  size_t name_len, value_len;
  const char *value;
  enum im_err err = check_field(s, n, &name_len, &value, &value_len);
  if (err)
    return err;
  if (r->n_headers >= p->limits.max_headers)
    return IM_LIMIT;
  const char *b = base(p);
  struct im_http_header *h = &r->headers[r->n_headers];
  h->name = s;
  h->name_len = name_len;
  h->value = value;
  h->value_len = value_len;
  p->hdr_off[r->n_headers][0] = (size_t)(s - b);
  p->hdr_off[r->n_headers][1] = (size_t)(value - b);
  r->n_headers++;
  return IM_OK;
}

/* Calls fn for each non-empty element of a comma-separated list value. */
static void each_element(const char *v, size_t n, void (*fn)(const char *, size_t, void *),
                         void *ctx) {
  while (n) {
    const char *comma = memchr(v, ',', n);
    size_t len = comma ? (size_t)(comma - v) : n;
    const char *e = v;
    size_t en = len;
    trim_ows(&e, &en);
    if (en)
      fn(e, en, ctx);
    if (!comma)
      break;
    v += len + 1;
    n -= len + 1;
  }
}

struct head_info {
  int te_chunked, te_other, te_empty;
  bool conn_close, conn_keep_alive;
};

static void on_te(const char *e, size_t n, void *ctx) {
  struct head_info *hi = ctx;
  if (ieq(e, n, "chunked"))
    hi->te_chunked++;
  else
    hi->te_other++;
}

static void on_connection(const char *e, size_t n, void *ctx) {
  struct head_info *hi = ctx;
  if (ieq(e, n, "close"))
    hi->conn_close = true;
  else if (ieq(e, n, "keep-alive"))
    hi->conn_keep_alive = true;
}

/* 1*DIGIT without overflow past INT64_MAX; -1 when malformed. */
static int64_t parse_content_length(const char *v, size_t n) {
  if (n == 0)
    return -1;
  int64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < '0' || v[i] > '9')
      return -1;
    int d = v[i] - '0';
    if (x > (INT64_MAX - d) / 10)
      return -1;
    x = x * 10 + d;
  }
  return x;
}

/* Applies the framing and connection headers once the head is complete. */
static enum im_err finish_head(struct im_http_parser *p) {
  struct im_http_request *r = &p->req;
  struct head_info hi = {0};
  bool has_te = false;
  fixup(p); /* the buffer may have moved since the fields were recorded */
  for (size_t i = 0; i < r->n_headers; i++) {
    const struct im_http_header *h = &r->headers[i];
    if (ieq(h->name, h->name_len, "content-length")) {
      /* RFC 9112 §6.3 item 5: differing or malformed values are fatal. */
      int64_t cl = parse_content_length(h->value, h->value_len);
      if (cl < 0 || (r->content_length >= 0 && cl != r->content_length))
        return IM_PARSE;
      r->content_length = cl;
    } else if (ieq(h->name, h->name_len, "transfer-encoding")) {
      has_te = true;
      each_element(h->value, h->value_len, on_te, &hi);
    } else if (ieq(h->name, h->name_len, "connection")) {
      each_element(h->value, h->value_len, on_connection, &hi);
    } else if (ieq(h->name, h->name_len, "expect")) {
      /* RFC 9110 §10.1.1: ignored in HTTP/1.0 requests. */
      if (r->version_minor >= 1 && ieq(h->value, h->value_len, "100-continue"))
        r->expect_continue = true;
    }
  }
  if (has_te) {
    /* RFC 9112 §6.1: a server ought to reject CL together with TE. */
    if (r->content_length >= 0)
      return IM_PARSE;
    if (hi.te_other)
      return IM_UNSUPPORTED;
    /* Empty, or chunked applied twice (RFC 9112 §6.1 forbids it). */
    if (hi.te_chunked != 1)
      return IM_PARSE;
    r->chunked = true;
  }
  if (hi.conn_close)
    r->keep_alive = false;
  else
    r->keep_alive = r->version_minor >= 1 || hi.conn_keep_alive;
  /* RFC 9112 §6.1: TE in HTTP/1.0 means the framing is suspect; close after. */
  if (has_te && r->version_minor == 0)
    r->keep_alive = false;
  return IM_OK;
}

static enum im_err parse_head(struct im_http_parser *p) {
  size_t len, next;
  while (p->state == S_LINE || p->state == S_FIELDS) {
    if (!next_line(p, &len, &next)) {
      if (avail(p) > p->limits.max_head)
        return fail(p, IM_LIMIT);
      return IM_AGAIN;
    }
    if (next > p->limits.max_head)
      return fail(p, IM_LIMIT);
    const char *s = base(p) + p->pos;
    enum im_err err;
    if (p->state == S_LINE) {
      if (len == 0) {
        /* RFC 9112 §2.2: empty lines before the request line are ignored. */
        p->start += next;
        p->pos = p->scan = 0;
        continue;
      }
      err = parse_request_line(p, s, len);
      p->state = S_FIELDS;
    } else if (len == 0) {
      p->pos = next;
      p->body_start = next;
      p->head_done = true;
      err = finish_head(p);
      if (err)
        return fail(p, err);
      if (p->req.chunked) {
        p->state = S_CHUNK_SIZE;
      } else {
        if (p->req.content_length < 0)
          p->req.content_length = 0;
        p->state = S_BODY_CL;
        if ((uint64_t)p->req.content_length > p->limits.max_body)
          p->body_over = true;
      }
      return IM_OK;
    } else {
      err = parse_field(p, s, len);
    }
    if (err)
      return fail(p, err);
    p->pos = next;
  }
  return IM_OK;
}

/* ---- body ---- */

static void finish_request(struct im_http_parser *p, size_t end) {
  p->req_end = end;
  p->state = S_DONE;
}

static enum im_err parse_body_cl(struct im_http_parser *p) {
  uint64_t cl = (uint64_t)p->req.content_length;
  size_t have = avail(p) - p->body_start;
  if (p->discard_body) {
    uint64_t left = cl - p->body_seen;
    size_t take = have < left ? have : (size_t)left;
    cut(p, p->body_start, p->body_start + take);
    p->body_seen += take;
    if (p->body_seen == cl)
      finish_request(p, p->body_start);
  } else {
    p->body_seen = have < cl ? have : cl;
    if (have >= cl)
      finish_request(p, p->body_start + (size_t)cl);
  }
  return p->state == S_DONE ? IM_OK : IM_AGAIN;
}

/* chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ), ext-val =
 * token / quoted-string (RFC 9112 §7.1.1). */
static bool check_chunk_ext(const char *s, size_t n) {
  size_t i = 0;
#define SKIP_BWS()                                                                                 \
  while (i < n && is_ows(s[i]))                                                                    \
  i++
  for (;;) {
    SKIP_BWS();
    if (i == n)
      return true;
    if (s[i++] != ';')
      return false;
    SKIP_BWS();
    size_t t0 = i;
    while (i < n && is_tchar((unsigned char)s[i]))
      i++;
    if (i == t0)
      return false;
    SKIP_BWS();
    if (i == n || s[i] != '=')
      continue;
    i++;
    SKIP_BWS();
    if (i < n && s[i] == '"') {
      for (i++;; i++) {
        if (i >= n)
          return false;
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
          break;
        if (c == '\\') {
          if (++i >= n || !is_field_char((unsigned char)s[i]))
            return false;
        } else if (!is_field_char(c)) {
          return false;
        }
      }
      i++;
    } else {
      t0 = i;
      while (i < n && is_tchar((unsigned char)s[i]))
        i++;
      if (i == t0)
        return false;
    }
  }
#undef SKIP_BWS
}

static enum im_err parse_chunk_size(struct im_http_parser *p) {
  size_t len, next;
  if (!next_line(p, &len, &next))
    return avail(p) - p->pos > MAX_CHUNK_LINE ? fail(p, IM_PARSE) : IM_AGAIN;
  if (len > MAX_CHUNK_LINE)
    return fail(p, IM_PARSE);
  const char *s = base(p) + p->pos;
  uint64_t size = 0;
  size_t i = 0;
  for (; i < len; i++) {
    char c = s[i];
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      break;
    if (size > (UINT64_MAX >> 5))
      return fail(p, IM_PARSE);
    size = size * 16 + (uint64_t)d;
  }
  if (i == 0 || !check_chunk_ext(s + i, len - i))
    return fail(p, IM_PARSE);
  p->pos = next;
  if (size == 0) {
    p->state = S_TRAILER;
    p->chunk_left = 0; /* counts trailer bytes from here on */
    return IM_AGAIN;
  }
  p->chunk_left = size;
  p->state = S_CHUNK_DATA;
  if (!p->discard_body && size > p->limits.max_body - p->body.len) {
    p->body_over = true;
    return IM_LIMIT;
  }
  return IM_AGAIN;
}

static enum im_err parse_chunk_data(struct im_http_parser *p) {
  size_t have = avail(p) - p->pos;
  size_t take = have < p->chunk_left ? have : (size_t)p->chunk_left;
  if (take == 0)
    return IM_AGAIN;
  if (!p->discard_body) {
    enum im_err err = im_buf_append(&p->body, base(p) + p->pos, take);
    if (err)
      return fail(p, err);
  }
  p->pos += take;
  p->scan = p->pos;
  p->chunk_left -= take;
  p->body_seen += take;
  if (p->chunk_left == 0)
    p->state = S_CHUNK_CRLF;
  return IM_AGAIN;
}

static enum im_err parse_chunk_crlf(struct im_http_parser *p) {
  size_t have = avail(p) - p->pos;
  const char *s = base(p) + p->pos;
  if (have == 0)
    return IM_AGAIN;
  size_t n;
  if (s[0] == '\n')
    n = 1;
  else if (s[0] != '\r')
    return fail(p, IM_PARSE);
  else if (have < 2)
    return IM_AGAIN;
  else if (s[1] != '\n')
    return fail(p, IM_PARSE);
  else
    n = 2;
  p->pos += n;
  p->scan = p->pos;
  p->state = S_CHUNK_SIZE;
  return IM_AGAIN;
}

/* Trailer fields are checked and dropped; their bytes count against max_head. */
static enum im_err parse_trailer(struct im_http_parser *p) {
  size_t len, next;
  if (!next_line(p, &len, &next))
    return p->chunk_left + (avail(p) - p->pos) > p->limits.max_head ? fail(p, IM_LIMIT) : IM_AGAIN;
  p->chunk_left += next - p->pos;
  if (p->chunk_left > p->limits.max_head)
    return fail(p, IM_LIMIT);
  if (len == 0) {
    p->pos = next;
    finish_request(p, next);
    return IM_OK;
  }
  size_t nl, vl;
  const char *v;
  if (check_field(base(p) + p->pos, len, &nl, &v, &vl))
    return fail(p, IM_PARSE);
  p->pos = next;
  return IM_AGAIN;
}

static enum im_err parse_chunked(struct im_http_parser *p) {
  enum im_err err = IM_AGAIN;
  size_t pos0;
  do {
    pos0 = p->pos;
    switch (p->state) {
    case S_CHUNK_SIZE:
      err = parse_chunk_size(p);
      break;
    case S_CHUNK_DATA:
      err = parse_chunk_data(p);
      break;
    case S_CHUNK_CRLF:
      err = parse_chunk_crlf(p);
      break;
    case S_TRAILER:
      err = parse_trailer(p);
      break;
    default:
      err = IM_OK;
      break;
    }
  } while (err == IM_AGAIN && p->pos != pos0);
  if (p->state == S_ERROR)
    return err;
  /* Drop the raw chunk bytes decoded so far, once per call (not per chunk,
   * which would move the tail once for each of many small chunks). */
  size_t gone = p->pos - p->body_start;
  cut(p, p->body_start, p->pos);
  p->pos -= gone;
  p->scan -= gone;
  if (p->state == S_DONE)
    p->req_end = p->body_start;
  return err;
}

/* Runs the state machine over the buffered bytes. */
static enum im_err parse(struct im_http_parser *p) {
  if (p->state == S_ERROR)
    return p->err;
  if (p->state == S_LINE || p->state == S_FIELDS) {
    enum im_err err = parse_head(p);
    if (err != IM_OK)
      return err;
  }
  if (p->body_over)
    return IM_LIMIT;
  switch (p->state) {
  case S_BODY_CL:
    return parse_body_cl(p);
  case S_DONE:
    return IM_OK;
  default:
    return parse_chunked(p);
  }
}

static bool parsing(const struct im_http_parser *p) {
  return p->state != S_DONE && p->state != S_ERROR && !p->body_over;
}

enum im_err im_http_feed(struct im_http_parser *p, const char *data, size_t len) {
  enum im_err err = IM_OK;
  if (p->state == S_ERROR)
    return p->err;
  for (;;) {
    size_t n = len;
    if (parsing(p) && n > PIECE)
      n = PIECE;
    if (n) {
      if (p->start && (p->start >= avail(p) || avail(p) + n > p->cap))
        compact(p, true);
      if (avail(p) + n > p->cap) {
        err = fail(p, IM_LIMIT);
        break;
      }
      err = im_buf_append(&p->in, data, n);
      if (err) {
        fail(p, err);
        break;
      }
      data += n;
      len -= n;
    }
    err = parse(p);
    if (p->state == S_ERROR || len == 0)
      break;
  }
  fixup(p);
  return err;
}

void im_http_discard_body(struct im_http_parser *p) {
  if (!p->head_done || p->state == S_DONE || p->state == S_ERROR || p->discard_body)
    return;
  p->discard_body = true;
  p->body_over = false;
  im_buf_reset(&p->body);
  if (p->state == S_BODY_CL) {
    /* Bytes already kept count as consumed; parse_body_cl cuts them. */
    p->body_seen = 0;
  }
  fixup(p);
}

enum im_err im_http_next(struct im_http_parser *p) {
  if (p->state == S_ERROR)
    return p->err;
  if (p->state != S_DONE)
    return IM_STATE;
  p->start += p->req_end;
  reset_request(p);
  compact(p, false);
  enum im_err err = parse(p);
  fixup(p);
  return err;
}

const struct im_http_header *im_http_find_header(const struct im_http_request *r,
                                                 const char *name) {
  for (size_t i = 0; i < r->n_headers; i++)
    if (ieq(r->headers[i].name, r->headers[i].name_len, name))
      return &r->headers[i];
  return NULL;
}
