/* Tests of the HTTP/1.1 request parser. Every case in the table is fed
 * whole, split in two at every byte, and byte by byte; each way must give
 * the same transcript (the requests parsed and the errors met), which is
 * also compared with the expected one. */
#include "serve/http.h"

#include "check.h"

enum discard_mode {
  NO_DISCARD,     /* stop at the first error */
  DISCARD_ON_413, /* on a too-large body: note "413", discard, go on */
};

struct im_run_config {
  const struct im_http_limits *limits;
  enum discard_mode discard;
};

/* Aborts the run when a pointer in the request is outside the buffers. */
static void check_invariants(const struct im_http_parser *p, enum im_err err) {
  const struct im_http_request *r = &p->req;
  const char *lo = p->in.data, *hi = p->in.data ? p->in.data + p->in.len : NULL;
  for (size_t i = 0; i < r->n_headers; i++) {
    const struct im_http_header *h = &r->headers[i];
    CHECK(lo && h->name >= lo && h->name + h->name_len <= hi);
    CHECK(lo && h->value >= lo && h->value + h->value_len <= hi);
  }
  if (err == IM_OK) {
    CHECK(r->body_len <= p->limits.max_body);
    CHECK(r->body != NULL);
    if (r->body_len && !r->chunked)
      CHECK(r->body >= lo && r->body + r->body_len <= hi);
  }
}

static void summarize(struct im_buf *out, const struct im_http_request *r) {
  enum im_err err = im_buf_printf(
      out, "%.*s %.*s%s%.*s 1.%d ka%d ec%d cl%lld ch%d h%zu body=%.*s;", (int)r->method_len,
      r->method_str, (int)r->path_len, r->path, r->query_len ? "?" : "", (int)r->query_len,
      r->query, r->version_minor, r->keep_alive, r->expect_continue, (long long)r->content_length,
      r->chunked, r->n_headers, (int)r->body_len, r->body);
  CHECK_OK(err);
}

/* Handles the result of a feed: records completed requests and parses the
 * pipelined ones. Returns false once the run has stopped at an error. */
static bool pump(struct im_http_parser *p, enum im_err err, const struct im_run_config *o,
                 struct im_buf *out) {
  for (;;) {
    check_invariants(p, err);
    if (err == IM_OK) {
      summarize(out, &p->req);
      err = im_http_next(p);
    } else if (err == IM_AGAIN) {
      return true;
    } else if (err == IM_LIMIT && p->head_done && o->discard != NO_DISCARD && !p->discard_body) {
      CHECK_OK(im_buf_puts(out, "413;"));
      im_http_discard_body(p);
      if (!p->discard_body) { /* not recoverable: a limit past the body */
        CHECK_OK(im_buf_puts(out, "E:hard limit;"));
        return false;
      }
      err = im_http_feed(p, NULL, 0);
    } else {
      CHECK_OK(im_buf_printf(out, "E:%s;", im_strerror(err)));
      return false;
    }
  }
}

/* Feeds in[0..len) in pieces: whole (split 0), at `split` then the rest, or
 * byte by byte (split SIZE_MAX). The transcript is written into out. */
static void run(const char *in, size_t len, size_t split, const struct im_run_config *o,
                struct im_buf *out) {
  struct im_http_parser p;
  im_http_parser_init(&p, o->limits);
  im_buf_reset(out);
  size_t i = 0;
  bool going = true;
  while (going && i < len) {
    size_t n = len - i;
    if (split == SIZE_MAX)
      n = 1;
    else if (split && i < split)
      n = split - i;
    going = pump(&p, im_http_feed(&p, in + i, n), o, out);
    i += n;
  }
  if (going && len == 0)
    going = pump(&p, im_http_feed(&p, NULL, 0), o, out);
  if (going && p.head_done)
    CHECK_OK(im_buf_puts(out, "partial;"));
  im_http_parser_cleanup(&p);
}

struct http_case {
  const char *name;
  const char *in;
  const char *want;
  enum discard_mode discard;
  size_t max_head, max_headers, max_body; /* 0: default */
};

#define CRLF "\r\n"

static const struct http_case cases[] = {
    {"get with headers",
     "GET /v1/models?a=1&b=2 HTTP/1.1" CRLF "Host: x" CRLF "Accept:  */*  " CRLF
     "X-Empty:" CRLF CRLF,
     "GET /v1/models?a=1&b=2 1.1 ka1 ec0 cl0 ch0 h3 body=;", NO_DISCARD, 0, 0, 0},
    {"post content-length",
     "POST /v1/completions HTTP/1.1" CRLF "Content-Length: 11" CRLF CRLF "hello world",
     "POST /v1/completions 1.1 ka1 ec0 cl11 ch0 h1 body=hello world;", NO_DISCARD, 0, 0, 0},
    {"bare LF", "POST /x HTTP/1.1\nContent-Length: 2\n\nok",
     "POST /x 1.1 ka1 ec0 cl2 ch0 h1 body=ok;", NO_DISCARD, 0, 0, 0},
    {"leading empty lines", CRLF CRLF "GET / HTTP/1.1" CRLF CRLF,
     "GET / 1.1 ka1 ec0 cl0 ch0 h0 body=;", NO_DISCARD, 0, 0, 0},
    {"empty query", "GET /a? HTTP/1.1" CRLF CRLF, "GET /a 1.1 ka1 ec0 cl0 ch0 h0 body=;",
     NO_DISCARD, 0, 0, 0},
    {"chunked with extensions and trailer",
     "POST /c HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "5;name=val" CRLF "hello" CRLF
     "1 ; a ; b=\"q\\\"x\"" CRLF " " CRLF "A" CRLF "0123456789" CRLF "0" CRLF "Trailer-One: 1" CRLF
     "Trailer-Two: 2" CRLF CRLF,
     "POST /c 1.1 ka1 ec0 cl-1 ch1 h1 body=hello 0123456789;", NO_DISCARD, 0, 0, 0},
    {"chunked upper hex and LF",
     "POST /c HTTP/1.1\nTransfer-Encoding: Chunked\n\n0a\nabcdefghij\n0\n\n",
     "POST /c 1.1 ka1 ec0 cl-1 ch1 h1 body=abcdefghij;", NO_DISCARD, 0, 0, 0},
    {"pipelined two",
     "POST /a HTTP/1.1" CRLF "Content-Length: 3" CRLF CRLF "abc"
     "GET /b?q HTTP/1.1" CRLF "Connection: close" CRLF CRLF,
     "POST /a 1.1 ka1 ec0 cl3 ch0 h1 body=abc;GET /b?q 1.1 ka0 ec0 cl0 ch0 h1 body=;", NO_DISCARD,
     0, 0, 0},
    {"pipelined chunked then get",
     "POST /a HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "3" CRLF "abc" CRLF
     "0" CRLF CRLF "GET /b HTTP/1.1" CRLF CRLF,
     "POST /a 1.1 ka1 ec0 cl-1 ch1 h1 body=abc;GET /b 1.1 ka1 ec0 cl0 ch0 h0 body=;", NO_DISCARD, 0,
     0, 0},
    {"http/1.0 default close", "GET / HTTP/1.0" CRLF CRLF, "GET / 1.0 ka0 ec0 cl0 ch0 h0 body=;",
     NO_DISCARD, 0, 0, 0},
    {"http/1.0 keep-alive", "GET / HTTP/1.0" CRLF "Connection: Keep-Alive" CRLF CRLF,
     "GET / 1.0 ka1 ec0 cl0 ch0 h1 body=;", NO_DISCARD, 0, 0, 0},
    {"http/1.1 close in list", "GET / HTTP/1.1" CRLF "Connection: upgrade, CLOSE" CRLF CRLF,
     "GET / 1.1 ka0 ec0 cl0 ch0 h1 body=;", NO_DISCARD, 0, 0, 0},
    {"http/1.2 as 1.1", "GET / HTTP/1.2" CRLF CRLF, "GET / 1.1 ka1 ec0 cl0 ch0 h0 body=;",
     NO_DISCARD, 0, 0, 0},
    {"expect continue",
     "POST /e HTTP/1.1" CRLF "Expect: 100-Continue" CRLF "Content-Length: 1" CRLF CRLF "x",
     "POST /e 1.1 ka1 ec1 cl1 ch0 h2 body=x;", NO_DISCARD, 0, 0, 0},
    {"expect ignored in 1.0",
     "POST /e HTTP/1.0" CRLF "Expect: 100-continue" CRLF "Content-Length: 1" CRLF CRLF "x",
     "POST /e 1.0 ka0 ec0 cl1 ch0 h2 body=x;", NO_DISCARD, 0, 0, 0},
    {"duplicate equal content-length",
     "POST / HTTP/1.1" CRLF "Content-Length: 2" CRLF "content-length: 02" CRLF CRLF "ab",
     "POST / 1.1 ka1 ec0 cl2 ch0 h2 body=ab;", NO_DISCARD, 0, 0, 0},
    {"other method", "DELETE /x HTTP/1.1" CRLF CRLF, "DELETE /x 1.1 ka1 ec0 cl0 ch0 h0 body=;",
     NO_DISCARD, 0, 0, 0},
    {"incomplete body", "POST / HTTP/1.1" CRLF "Content-Length: 10" CRLF CRLF "abc", "partial;",
     NO_DISCARD, 0, 0, 0},
    {"incomplete head", "GET / HTTP/1.1" CRLF "Host: x", "", NO_DISCARD, 0, 0, 0},
    {"empty input", "", "", NO_DISCARD, 0, 0, 0},
    /* Limits. */
    {"head too large", "GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1" CRLF CRLF,
     "E:input exceeds a configured limit;", NO_DISCARD, 32, 0, 0},
    {"head too large, no line end", "GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "E:input exceeds a configured limit;", NO_DISCARD, 32, 0, 0},
    {"head exactly at limit", "GET / HTTP/1.1" CRLF "A: b" CRLF CRLF,
     "GET / 1.1 ka1 ec0 cl0 ch0 h1 body=;", NO_DISCARD, 24, 0, 0},
    {"head one past limit", "GET / HTTP/1.1" CRLF "A: bc" CRLF CRLF,
     "E:input exceeds a configured limit;", NO_DISCARD, 24, 0, 0},
    {"too many headers", "GET / HTTP/1.1" CRLF "A: 1" CRLF "B: 2" CRLF "C: 3" CRLF CRLF,
     "E:input exceeds a configured limit;", NO_DISCARD, 0, 2, 0},
    {"headers at limit", "GET / HTTP/1.1" CRLF "A: 1" CRLF "B: 2" CRLF CRLF,
     "GET / 1.1 ka1 ec0 cl0 ch0 h2 body=;", NO_DISCARD, 0, 2, 0},
    {"body too large", "POST / HTTP/1.1" CRLF "Content-Length: 9" CRLF CRLF "123456789",
     "E:input exceeds a configured limit;", NO_DISCARD, 0, 0, 8},
    {"body at limit", "POST / HTTP/1.1" CRLF "Content-Length: 8" CRLF CRLF "12345678",
     "POST / 1.1 ka1 ec0 cl8 ch0 h1 body=12345678;", NO_DISCARD, 0, 0, 8},
    {"body too large, discarded, next parses",
     "POST /big HTTP/1.1" CRLF "Content-Length: 20" CRLF CRLF "01234567890123456789"
     "GET /next HTTP/1.1" CRLF CRLF,
     "413;POST /big 1.1 ka1 ec0 cl20 ch0 h1 body=;GET /next 1.1 ka1 ec0 cl0 ch0 h0 body=;",
     DISCARD_ON_413, 0, 0, 8},
    {"chunked too large, discarded, next parses",
     "POST /big HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "4" CRLF "0123" CRLF "6" CRLF
     "456789" CRLF "0" CRLF CRLF "GET /next HTTP/1.1" CRLF CRLF,
     "413;POST /big 1.1 ka1 ec0 cl-1 ch1 h1 body=;GET /next 1.1 ka1 ec0 cl0 ch0 h0 body=;",
     DISCARD_ON_413, 0, 0, 8},
    {"chunked too large", "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "9" CRLF,
     "E:input exceeds a configured limit;", NO_DISCARD, 0, 0, 8},
    {"trailer too large",
     "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "0" CRLF
     "X: 01234567890123456789012345678901234567890123456789012345678901234567890123456789" CRLF
         CRLF,
     "E:input exceeds a configured limit;", NO_DISCARD, 60, 0, 0},
    {"trailer too large, not recoverable",
     "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "0" CRLF
     "X: 01234567890123456789012345678901234567890123456789012345678901234567890123456789" CRLF
         CRLF,
     "413;E:hard limit;", DISCARD_ON_413, 60, 0, 0},
    /* Malformed. */
    {"no version", "GET /" CRLF CRLF, "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"two spaces", "GET  / HTTP/1.1" CRLF CRLF, "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"bad method", "G(T / HTTP/1.1" CRLF CRLF, "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"bad version", "GET / HTTP/2.0" CRLF CRLF, "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"lowercase version", "GET / http/1.1" CRLF CRLF, "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"version trailing junk", "GET / HTTP/1.1x" CRLF CRLF, "E:malformed input;", NO_DISCARD, 0, 0,
     0},
    {"control in target", "GET /a\x01 HTTP/1.1" CRLF CRLF, "E:malformed input;", NO_DISCARD, 0, 0,
     0},
    {"bare CR in line", "GET / HTTP/1.1" CRLF "A: b\rc" CRLF CRLF, "E:malformed input;", NO_DISCARD,
     0, 0, 0},
    {"space before colon", "GET / HTTP/1.1" CRLF "Host : x" CRLF CRLF, "E:malformed input;",
     NO_DISCARD, 0, 0, 0},
    {"no colon", "GET / HTTP/1.1" CRLF "Host" CRLF CRLF, "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"empty name", "GET / HTTP/1.1" CRLF ": x" CRLF CRLF, "E:malformed input;", NO_DISCARD, 0, 0,
     0},
    {"obs-fold", "GET / HTTP/1.1" CRLF "A: b" CRLF " c" CRLF CRLF, "E:malformed input;", NO_DISCARD,
     0, 0, 0},
    {"NUL in value", "GET / HTTP/1.1" CRLF "A: b\0c" CRLF CRLF, "E:malformed input;", NO_DISCARD, 0,
     0, 0},
    {"bad content-length", "POST / HTTP/1.1" CRLF "Content-Length: 1x" CRLF CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"negative content-length", "POST / HTTP/1.1" CRLF "Content-Length: -1" CRLF CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"content-length list", "POST / HTTP/1.1" CRLF "Content-Length: 1, 1" CRLF CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"empty content-length", "POST / HTTP/1.1" CRLF "Content-Length:" CRLF CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"huge content-length", "POST / HTTP/1.1" CRLF "Content-Length: 99999999999999999999" CRLF CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"differing content-length",
     "POST / HTTP/1.1" CRLF "Content-Length: 1" CRLF "Content-Length: 2" CRLF CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"content-length and chunked",
     "POST / HTTP/1.1" CRLF "Content-Length: 1" CRLF "Transfer-Encoding: chunked" CRLF CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"chunked twice", "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked, chunked" CRLF CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"empty transfer-encoding", "POST / HTTP/1.1" CRLF "Transfer-Encoding: " CRLF CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"te gzip", "POST / HTTP/1.1" CRLF "Transfer-Encoding: gzip" CRLF CRLF, "E:not supported;",
     NO_DISCARD, 0, 0, 0},
    {"te gzip, chunked", "POST / HTTP/1.1" CRLF "Transfer-Encoding: gzip, chunked" CRLF CRLF,
     "E:not supported;", NO_DISCARD, 0, 0, 0},
    {"bad chunk size", "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "xyz" CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"empty chunk size", "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"chunk size overflow",
     "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "fffffffffffffffffff" CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"bad chunk extension",
     "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "1;=" CRLF, "E:malformed input;",
     NO_DISCARD, 0, 0, 0},
    {"missing CRLF after chunk",
     "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "1" CRLF "ab" CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"bad trailer",
     "POST / HTTP/1.1" CRLF "Transfer-Encoding: chunked" CRLF CRLF "0" CRLF "bad" CRLF CRLF,
     "E:malformed input;", NO_DISCARD, 0, 0, 0},
    {"error after a good request",
     "GET /ok HTTP/1.1" CRLF CRLF "GET /bad HTTP/9.9" CRLF CRLF "GET /never HTTP/1.1" CRLF CRLF,
     "GET /ok 1.1 ka1 ec0 cl0 ch0 h0 body=;E:malformed input;", NO_DISCARD, 0, 0, 0},
};

static void test_table(void) {
  struct im_buf got, want_buf;
  im_buf_init(&got, IM_TEST_BUF_MAX);
  im_buf_init(&want_buf, IM_TEST_BUF_MAX);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const struct http_case *tc = &cases[c];
    struct im_http_limits lim;
    im_http_limits_default(&lim);
    if (tc->max_head)
      lim.max_head = tc->max_head;
    if (tc->max_headers)
      lim.max_headers = tc->max_headers;
    if (tc->max_body)
      lim.max_body = tc->max_body;
    struct im_run_config o = {&lim, tc->discard};
    /* The NUL case holds a NUL inside: measure up to the last CRLF CRLF. */
    size_t len = strlen(tc->in);
    if (strcmp(tc->name, "NUL in value") == 0)
      len = sizeof "GET / HTTP/1.1" CRLF "A: b\0c" CRLF CRLF - 1;
    run(tc->in, len, 0, &o, &want_buf);
    if (strcmp(want_buf.data ? want_buf.data : "", tc->want) != 0)
      IM__FAIL("%s: whole: got \"%s\", want \"%s\"", tc->name, want_buf.data ? want_buf.data : "",
               tc->want);
    for (size_t split = 1; split <= len; split++) {
      size_t s = split == len ? SIZE_MAX : split;
      run(tc->in, len, s, &o, &got);
      im_test_checks++;
      if (strcmp(got.data ? got.data : "", tc->want) != 0) {
        IM__FAIL("%s: split %zu: got \"%s\", want \"%s\"", tc->name, split,
                 got.data ? got.data : "", tc->want);
        break;
      }
    }
  }
  im_buf_cleanup(&got);
  im_buf_cleanup(&want_buf);
}

static enum im_err feed_str(struct im_http_parser *p, const char *s) {
  return im_http_feed(p, s, strlen(s));
}

static void test_headers_and_lookup(void) {
  struct im_http_parser p;
  im_http_parser_init(&p, NULL);
  CHECK_EQ(feed_str(&p, "GET /p?q=1 HTTP/1.1\r\nHost: example\r\ncontent-TYPE:\t"
                        "application/json \t\r\nX-A: 1\r\nx-a: 2\r\n\r\n"),
           IM_OK);
  const struct im_http_request *r = &p.req;
  CHECK_EQ(r->method, IM_HTTP_GET);
  CHECK_EQ(r->n_headers, 4);
  const struct im_http_header *h = im_http_find_header(r, "Content-Type");
  CHECK(h != NULL);
  if (h) {
    CHECK_EQ(h->value_len, strlen("application/json"));
    CHECK(memcmp(h->value, "application/json", h->value_len) == 0);
    CHECK_EQ(h->name_len, 12);
  }
  h = im_http_find_header(r, "X-A"); /* the first of two */
  CHECK(h && h->value_len == 1 && h->value[0] == '1');
  CHECK(im_http_find_header(r, "missing") == NULL);
  CHECK(im_http_find_header(r, "host") != NULL);
  CHECK_EQ(r->path_len, 2);
  CHECK(memcmp(r->path, "/p", 2) == 0);
  CHECK_EQ(r->query_len, 3);
  CHECK(memcmp(r->query, "q=1", 3) == 0);
  im_http_parser_cleanup(&p);

  im_http_parser_init(&p, NULL);
  CHECK_EQ(feed_str(&p, "HEAD / HTTP/1.1\r\n\r\n"), IM_OK);
  CHECK_EQ(p.req.method, IM_HTTP_HEAD);
  CHECK_EQ(im_http_next(&p), IM_AGAIN);
  CHECK_EQ(feed_str(&p, "POST / HTTP/1.1\r\n\r\n"), IM_OK);
  CHECK_EQ(p.req.method, IM_HTTP_POST);
  CHECK_EQ(p.req.body_len, 0);
  im_http_parser_cleanup(&p);
}

/* Header pointers stay usable while more bytes arrive and the buffer grows. */
static void test_pointers_survive_growth(void) {
  struct im_http_parser p;
  im_http_parser_init(&p, NULL);
  CHECK_EQ(feed_str(&p, "GET /first HTTP/1.1\r\nX-Name: value-1\r\n\r\n"), IM_OK);
  static char big[200000];
  memset(big, 'a', sizeof big);
  /* A large pipelined request: its bytes are only buffered. */
  CHECK_EQ(feed_str(&p, "POST /second HTTP/1.1\r\nContent-Length: 200000\r\n\r\n"), IM_OK);
  CHECK_EQ(im_http_feed(&p, big, sizeof big), IM_OK);
  const struct im_http_header *h = im_http_find_header(&p.req, "x-name");
  CHECK(h && h->value_len == 7 && memcmp(h->value, "value-1", 7) == 0);
  CHECK(p.req.path_len == 6 && memcmp(p.req.path, "/first", 6) == 0);
  CHECK_EQ(im_http_next(&p), IM_OK);
  CHECK(p.req.path_len == 7 && memcmp(p.req.path, "/second", 7) == 0);
  CHECK_EQ(p.req.body_len, sizeof big);
  CHECK(p.req.body_len == sizeof big && memcmp(p.req.body, big, sizeof big) == 0);
  CHECK_EQ(im_http_next(&p), IM_AGAIN);
  im_http_parser_cleanup(&p);
}

static void test_expect_continue(void) {
  struct im_http_parser p;
  im_http_parser_init(&p, NULL);
  CHECK_EQ(feed_str(&p, "POST /v1/chat/completions HTTP/1.1\r\nExpect: 100-continue\r\n"
                        "Content-Length: 4\r\n\r\n"),
           IM_AGAIN);
  CHECK(p.head_done);
  CHECK(p.req.expect_continue);
  CHECK_EQ(p.req.content_length, 4);
  CHECK_EQ(feed_str(&p, "ab"), IM_AGAIN);
  CHECK_EQ(p.body_seen, 2);
  CHECK_EQ(feed_str(&p, "cd"), IM_OK);
  CHECK(p.req.body_len == 4 && memcmp(p.req.body, "abcd", 4) == 0);
  im_http_parser_cleanup(&p);
}

/* A body larger than max_body in discard mode, fed in large reads: consumed
 * exactly, never buffered whole. */
static void test_discard_large(void) {
  struct im_http_limits lim;
  im_http_limits_default(&lim);
  lim.max_body = 1000;
  struct im_http_parser p;
  im_http_parser_init(&p, &lim);
  size_t n = 10u * 1024 * 1024;
  char *blob = malloc(n + 64);
  CHECK(blob != NULL);
  if (!blob)
    return;
  memset(blob, 'z', n);
  memcpy(blob + n, "GET /after HTTP/1.1\r\n\r\n", 24);
  char head[128];
  snprintf(head, sizeof head, "POST /up HTTP/1.1\r\nContent-Length: %zu\r\n\r\n", n);
  CHECK_EQ(feed_str(&p, head), IM_LIMIT);
  CHECK(p.head_done);
  im_http_discard_body(&p);
  CHECK_EQ(im_http_feed(&p, NULL, 0), IM_AGAIN);
  CHECK_EQ(im_http_feed(&p, blob, n + 23), IM_OK);
  CHECK_EQ(p.req.body_len, 0);
  CHECK_EQ(p.body_seen, n);
  CHECK(p.in.cap < 1024 * 1024);
  CHECK_EQ(im_http_next(&p), IM_OK);
  CHECK(p.req.path_len == 6 && memcmp(p.req.path, "/after", 6) == 0);
  CHECK_EQ(im_http_next(&p), IM_AGAIN);
  free(blob);
  im_http_parser_cleanup(&p);
}

/* Byte-at-a-time feeding of a large chunked body and of many pipelined
 * requests stays linear (a quadratic rescan would time the test out). */
static void test_linear(void) {
  struct im_http_parser p;
  im_http_parser_init(&p, NULL);
  const char *head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  CHECK_EQ(feed_str(&p, head), IM_AGAIN);
  enum im_err err = IM_AGAIN;
  size_t chunks = 300000;
  for (size_t i = 0; i < chunks && err == IM_AGAIN; i++) {
    const char *c = "1;e=v\r\nq\r\n";
    for (size_t j = 0; c[j] && err == IM_AGAIN; j++)
      err = im_http_feed(&p, c + j, 1);
  }
  CHECK_EQ(err, IM_AGAIN);
  CHECK_EQ(feed_str(&p, "0\r\n\r\n"), IM_OK);
  CHECK_EQ(p.req.body_len, chunks);
  im_http_parser_cleanup(&p);

  im_http_parser_init(&p, NULL);
  const char *req = "GET /r HTTP/1.1\r\n\r\n";
  size_t n = 200000, len = strlen(req);
  char *all = malloc(n * len);
  CHECK(all != NULL);
  if (!all)
    return;
  for (size_t i = 0; i < n; i++)
    memcpy(all + i * len, req, len);
  err = im_http_feed(&p, all, n * len);
  size_t seen = 0;
  while (err == IM_OK) {
    seen++;
    err = im_http_next(&p);
  }
  CHECK_EQ(err, IM_AGAIN);
  CHECK_EQ(seen, n);
  free(all);
  im_http_parser_cleanup(&p);
}

static void test_errors_stick(void) {
  struct im_http_parser p;
  im_http_parser_init(&p, NULL);
  CHECK_EQ(feed_str(&p, "BAD\r\n"), IM_PARSE);
  CHECK_EQ(feed_str(&p, "GET / HTTP/1.1\r\n\r\n"), IM_PARSE);
  CHECK_EQ(im_http_next(&p), IM_PARSE);
  im_http_parser_cleanup(&p);
  im_http_parser_cleanup(NULL);

  /* im_http_next before a request is complete. */
  im_http_parser_init(&p, NULL);
  CHECK_EQ(feed_str(&p, "GET / HTTP/1.1\r\n"), IM_AGAIN);
  CHECK_EQ(im_http_next(&p), IM_STATE);
  im_http_parser_cleanup(&p);
}

/* Discard chosen at head_done (e.g. a 404 route): the body is dropped as it
 * arrives, whatever the split, and the next request parses. */
static void test_discard_at_head(void) {
  static const char *const heads[] = {
      "POST /a HTTP/1.1\r\nContent-Length: 10\r\n\r\n",
      "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
  };
  static const char *const rests[] = {
      "0123456789GET /b HTTP/1.1\r\n\r\n",
      "3;x=y\r\n012\r\n7\r\n3456789\r\n0\r\nT: v\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
  };
  for (size_t k = 0; k < 2; k++) {
    size_t len = strlen(rests[k]);
    for (size_t split = 0; split <= len; split++) {
      struct im_http_parser p;
      im_http_parser_init(&p, NULL);
      CHECK_EQ(feed_str(&p, heads[k]), IM_AGAIN);
      CHECK(p.head_done);
      im_http_discard_body(&p);
      CHECK(p.discard_body);
      enum im_err err = IM_AGAIN;
      if (split == 0) {
        for (size_t i = 0; i < len && (err == IM_AGAIN || err == IM_OK); i++)
          err = im_http_feed(&p, rests[k] + i, 1);
      } else {
        err = im_http_feed(&p, rests[k], split);
        if (err == IM_AGAIN || err == IM_OK)
          err = im_http_feed(&p, rests[k] + split, len - split);
      }
      CHECK_EQ(err, IM_OK);
      CHECK_EQ(p.req.body_len, 0);
      CHECK_EQ(p.body_seen, 10);
      CHECK_EQ(im_http_next(&p), IM_OK);
      CHECK(p.req.path_len == 2 && memcmp(p.req.path, "/b", 2) == 0);
      im_http_parser_cleanup(&p);
    }
  }
}

int main(void) {
  test_discard_at_head();
  test_table();
  test_headers_and_lookup();
  test_pointers_survive_growth();
  test_expect_continue();
  test_discard_large();
  test_linear();
  test_errors_stick();
  return CHECK_DONE();
}
