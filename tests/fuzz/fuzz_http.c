/* Fuzz target for the HTTP/1.1 request parser.
 *
 * Input layout: byte 0 picks the read size (0: one feed of everything),
 * byte 1 holds flags (bit 0: small limits; bit 1: discard a too-large body
 * and go on; bit 2: discard every body at head_done), the rest is the byte
 * stream of a connection. Each input runs twice, fed whole and fed in reads
 * of the chosen size; unless bodies are discarded at head_done (which
 * depends on when head_done is seen), both runs must give the same
 * transcript. Invariants are checked after every call; a violation aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/http.h"
#include "fuzz.h"

#define FLAG_SMALL 1
#define FLAG_DISCARD_413 2
#define FLAG_DISCARD_HEAD 4

static void require(bool ok) {
  if (!ok)
    abort();
}

static bool inside(const struct im_buf *b, const char *s, size_t n) {
  return b->data && s >= b->data && n <= b->len && s <= b->data + b->len - n;
}

static void check(const struct im_http_parser *p, enum im_err err) {
  const struct im_http_request *r = &p->req;
  require(r->n_headers <= p->limits.max_headers);
  for (size_t i = 0; i < r->n_headers; i++) {
    require(inside(&p->in, r->headers[i].name, r->headers[i].name_len));
    require(inside(&p->in, r->headers[i].value, r->headers[i].value_len));
    require(r->headers[i].name_len > 0);
  }
  if (p->head_done) {
    require(inside(&p->in, r->method_str, r->method_len));
    require(inside(&p->in, r->path, r->path_len));
    require(inside(&p->in, r->query, r->query_len));
    require(r->version_minor == 0 || r->version_minor == 1);
    require(!(r->chunked && r->content_length >= 0));
  }
  if (err == IM_OK) {
    require(p->head_done);
    require(r->body != NULL);
    require(r->body_len <= p->limits.max_body);
    if (p->discard_body)
      require(r->body_len == 0);
    else if (r->chunked)
      require(r->body_len == p->body_seen);
    else
      require((int64_t)r->body_len == r->content_length);
    if (r->body_len)
      require(inside(&p->in, r->body, r->body_len) || inside(&p->body, r->body, r->body_len));
  }
  require(p->in.len - p->start <= p->cap);
}

static void note(struct im_buf *t, const void *s, size_t n) {
  if (im_buf_append(t, s, n))
    abort();
}

static void summarize(struct im_buf *t, const struct im_http_request *r) {
  char line[128];
  int n = snprintf(line, sizeof line, "[%d %d %d %d %d %lld %zu]", (int)r->method, r->version_minor,
                   r->keep_alive, r->expect_continue, r->chunked, (long long)r->content_length,
                   r->n_headers);
  note(t, line, (size_t)n);
  note(t, r->method_str, r->method_len);
  note(t, r->path, r->path_len);
  note(t, r->query, r->query_len);
  for (size_t i = 0; i < r->n_headers; i++) {
    note(t, r->headers[i].name, r->headers[i].name_len);
    note(t, "=", 1);
    note(t, r->headers[i].value, r->headers[i].value_len);
  }
  note(t, r->body, r->body_len);
}

/* Returns false once the connection has failed. */
static bool pump(struct im_http_parser *p, enum im_err err, unsigned flags, struct im_buf *t) {
  for (int guard = 0;; guard++) {
    require(guard < 100000);
    check(p, err);
    if (err == IM_OK) {
      summarize(t, &p->req);
      err = im_http_next(p);
    } else if (err == IM_AGAIN) {
      if (!((flags & FLAG_DISCARD_HEAD) && p->head_done && !p->discard_body))
        return true;
      im_http_discard_body(p);
      require(p->discard_body);
      err = im_http_feed(p, NULL, 0);
    } else if (err == IM_LIMIT && p->head_done && (flags & FLAG_DISCARD_413) && !p->discard_body) {
      note(t, "413", 3);
      im_http_discard_body(p);
      if (!p->discard_body) {
        /* A limit past the body (trailers) is not recoverable. */
        require(im_http_feed(p, "x", 1) == IM_LIMIT);
        return false;
      }
      err = im_http_feed(p, NULL, 0);
    } else {
      char e[16];
      int n = snprintf(e, sizeof e, "E%d", (int)err);
      note(t, e, (size_t)n);
      /* Errors stick. */
      require(im_http_feed(p, "x", 1) == err);
      return false;
    }
  }
}

static void run(const char *in, size_t len, size_t read_size, unsigned flags, struct im_buf *t) {
  struct im_http_limits lim;
  im_http_limits_default(&lim);
  if (flags & FLAG_SMALL) {
    lim.max_head = 200;
    lim.max_headers = 6;
    lim.max_body = 64;
  }
  struct im_http_parser p;
  im_http_parser_init(&p, &lim);
  bool going = true;
  for (size_t i = 0; going && i < len;) {
    size_t n = read_size && read_size < len - i ? read_size : len - i;
    going = pump(&p, im_http_feed(&p, in + i, n), flags, t);
    i += n;
  }
  if (going)
    going = pump(&p, im_http_feed(&p, NULL, 0), flags, t);
  im_http_parser_cleanup(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  size_t read_size = data[0];
  unsigned flags = data[1];
  const char *in = (const char *)data + 2;
  size_t len = size - 2;
  struct im_buf whole, split;
  im_buf_init(&whole, (size_t)1 << 28);
  im_buf_init(&split, (size_t)1 << 28);
  run(in, len, 0, flags, &whole);
  run(in, len, read_size, flags, &split);
  if (!(flags & FLAG_DISCARD_HEAD))
    require(whole.len == split.len &&
            (whole.len == 0 || memcmp(whole.data, split.data, whole.len) == 0));
  im_buf_cleanup(&whole);
  im_buf_cleanup(&split);
  return 0;
}
