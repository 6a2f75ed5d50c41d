/* The h1 transport's response parser (load/h1.h), table-driven: every case
 * is fed whole, split in two at every byte, and byte by byte; all must give
 * the same transcript (status lines, headers, body bytes), the same result
 * and the same bytes left over. Also the transport choice
 * (im_load_transport_pick). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "load/h1.h"
#include "load/loader.h"
#include "net/net.h"

struct tr {
  char log[1024];
  size_t n;
  char body[1024];
  size_t bn;
  size_t stop_at; /* the body callback stops once this many bytes came (0: never) */
};

static void put(struct tr *t, const char *s, size_t n) {
  if (t->n + n < sizeof t->log) {
    memcpy(t->log + t->n, s, n);
    t->n += n;
    t->log[t->n] = '\0';
  }
}

static void cb_status(void *ud, int code) {
  char b[16];
  int n = snprintf(b, sizeof b, "S%d;", code);
  put(ud, b, (size_t)n);
}

static void cb_header(void *ud, const char *n, size_t nl, const char *v, size_t vl) {
  put(ud, "H", 1);
  put(ud, n, nl);
  put(ud, "=", 1);
  put(ud, v, vl);
  put(ud, ";", 1);
}

static int cb_body(void *ud, const char *d, size_t n) {
  struct tr *t = ud;
  CHECK(n > 0);
  if (t->bn + n < sizeof t->body) {
    memcpy(t->body + t->bn, d, n);
    t->bn += n;
    t->body[t->bn] = '\0';
  }
  return t->stop_at && t->bn >= t->stop_at;
}

static const struct im_h1_cb cbs = {cb_status, cb_header, cb_body};

struct result {
  struct tr t;
  enum im_h1_rc rc;
  size_t left;  /* bytes not consumed */
  bool reuse;
};

/* Feeds in pieces of at most `step` bytes after a first piece of `first`
 * bytes; at the end (all consumed, MORE) and eof: im_h1_eof. */
static void run(struct result *r, const char *in, size_t len, size_t first, size_t step, bool eof,
                size_t stop_at) {
  memset(r, 0, sizeof *r);
  r->t.stop_at = stop_at;
  struct im_h1 p;
  im_h1_init(&p);
  size_t off = 0;
  enum im_h1_rc rc = IM_H1_MORE;
  while (rc == IM_H1_MORE && off < len) {
    size_t n = off == 0 ? first : step;
    if (n > len - off)
      n = len - off;
    size_t used = 0;
    rc = im_h1_feed(&p, in + off, n, &cbs, &r->t, &used);
    CHECK(used <= n);
    if (rc == IM_H1_MORE)
      CHECK_EQ(used, n);
    off += used;
  }
  if (rc == IM_H1_MORE && eof)
    rc = im_h1_eof(&p);
  r->rc = rc;
  r->left = len - off;
  r->reuse = rc == IM_H1_DONE && im_h1_reusable(&p);
  im_h1_cleanup(&p);
}

struct tcase {
  const char *name;
  const char *in;
  bool eof;             /* the connection closes after the input */
  enum im_h1_rc rc;
  const char *log;      /* status and headers */
  const char *body;
  bool reuse;
  size_t left;          /* bytes after the response */
};

#define SSE_HEAD "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"

static const struct tcase cases[] = {
    {"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, IM_H1_DONE,
     "S200;HContent-Length=5;", "hello", true, 0},
    {"content-length, bytes after", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhello", false,
     IM_H1_DONE, "S200;HContent-Length=2;", "he", true, 3},
    {"length 0", "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", false, IM_H1_DONE,
     "S200;Hcontent-length=0;", "", true, 0},
    {"length list of equal values", "HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\nabc", false,
     IM_H1_DONE, "S200;HContent-Length=3, 3;", "abc", true, 0},
    {"duplicate equal lengths", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
     false, IM_H1_DONE, "S200;HContent-Length=3;HContent-Length=3;", "abc", true, 0},
    {"chunked", SSE_HEAD "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
     false, IM_H1_DONE,
     "S200;HContent-Type=text/event-stream;HTransfer-Encoding=chunked;", "hello world", true, 0},
    {"chunked, extensions, trailers, hex case",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, CHUNKED\r\n\r\nA;name=v;x\r\n0123456789\r\n"
     "b ; e\r\nabcdefghijk\r\n0;end\r\nX-Trailer: 1\r\nY: 2\r\n\r\n",
     false, IM_H1_DONE, "S200;HTransfer-Encoding=gzip, CHUNKED;", "0123456789abcdefghijk", true, 0},
    {"transfer-encoding beats content-length",
     "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
     false, IM_H1_DONE, "S200;HContent-Length=100;HTransfer-Encoding=chunked;", "x", true, 0},
    {"body until close", SSE_HEAD "Connection: close\r\n\r\ndata: a\n\ndata: b\n\n", true, IM_H1_DONE,
     "S200;HContent-Type=text/event-stream;HConnection=close;", "data: a\n\ndata: b\n\n", false, 0},
    {"body until close without Connection", "HTTP/1.1 200 OK\r\n\r\nabc", true, IM_H1_DONE, "S200;",
     "abc", false, 0},
    {"non-chunked final coding: until close", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nzz",
     true, IM_H1_DONE, "S200;HTransfer-Encoding=chunked, gzip;", "zz", false, 0},
    {"connection close with a length", "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 1\r\n\r\nx",
     false, IM_H1_DONE, "S200;HConnection=keep-alive, Close;HContent-Length=1;", "x", false, 0},
    {"HTTP/1.0 is not kept", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", false, IM_H1_DONE,
     "S200;HContent-Length=1;", "x", false, 0},
    {"bare LF line ends, no reason", "HTTP/1.1 429\nRetry-After:  7 \n\n", true, IM_H1_DONE,
     "S429;HRetry-After=7;", "", false, 0},
    {"interim 100 and 103 skipped",
     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\n"
     "Content-Length: 2\r\n\r\nok",
     false, IM_H1_DONE, "S100;S103;S200;HContent-Length=2;", "ok", true, 0},
    {"204 has no body", "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\nXX", false, IM_H1_DONE,
     "S204;HContent-Length=10;", "", true, 2},
    {"error status with a body", "HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy", false,
     IM_H1_DONE, "S503;HContent-Length=4;", "busy", true, 0},
    {"empty header value", "HTTP/1.1 200 OK\r\nX-Empty:\r\nContent-Length: 0\r\n\r\n", false,
     IM_H1_DONE, "S200;HX-Empty=;HContent-Length=0;", "", true, 0},
    /* Malformed. */
    {"not HTTP", "<html>hello</html>\r\n", true, IM_H1_E_STATUS, "", "", false, 0},
    {"HTTP/2 status line", "HTTP/2 200\r\n\r\n", true, IM_H1_E_STATUS, "", "", false, 0},
    {"101 switching", "HTTP/1.1 101 Switching Protocols\r\n\r\n", true, IM_H1_E_STATUS, "", "", false, 0},
    {"two-digit status", "HTTP/1.1 20 OK\r\n\r\n", true, IM_H1_E_STATUS, "", "", false, 0},
    {"status then junk", "HTTP/1.1 200OK\r\n\r\n", true, IM_H1_E_STATUS, "", "", false, 0},
    {"obs-fold", "HTTP/1.1 200 OK\r\nX-A: 1\r\n  continued\r\n\r\n", true, IM_H1_E_HEADER,
     "S200;HX-A=1;", "", false, 0},
    {"space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello", true, IM_H1_E_HEADER,
     "S200;", "", false, 0},
    {"no colon", "HTTP/1.1 200 OK\r\nnonsense\r\n\r\n", true, IM_H1_E_HEADER, "S200;", "", false, 0},
    {"empty name", "HTTP/1.1 200 OK\r\n: v\r\n\r\n", true, IM_H1_E_HEADER, "S200;", "", false, 0},
    {"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
     true, IM_H1_E_LENGTH, "S200;HContent-Length=5;", "", false, 0},
    {"conflicting length list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello", true,
     IM_H1_E_LENGTH, "S200;", "", false, 0},
    {"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", true, IM_H1_E_LENGTH, "S200;",
     "", false, 0},
    {"length overflow", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", true,
     IM_H1_E_LENGTH, "S200;", "", false, 0},
    {"empty length", "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", true, IM_H1_E_LENGTH, "S200;", "",
     false, 0},
    {"chunk size not hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", true,
     IM_H1_E_CHUNK, "S200;HTransfer-Encoding=chunked;", "", false, 0},
    {"chunk size overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF\r\n",
     true, IM_H1_E_CHUNK, "S200;HTransfer-Encoding=chunked;", "", false, 0},
    {"chunk data too long", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n0\r\n\r\n",
     true, IM_H1_E_CHUNK, "S200;HTransfer-Encoding=chunked;", "x", false, 0},
    {"trailer without colon", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad\r\n\r\n",
     true, IM_H1_E_CHUNK, "S200;HTransfer-Encoding=chunked;", "", false, 0},
    {"nothing", "", true, IM_H1_E_NOTHING, "", "", false, 0},
    {"closed in the head", "HTTP/1.1 200 OK\r\nContent-Ty", true, IM_H1_E_PARTIAL, "S200;", "", false, 0},
    {"closed in the status line", "HTTP/1.1 2", true, IM_H1_E_PARTIAL, "", "", false, 0},
    {"closed in a length body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", true,
     IM_H1_E_PARTIAL, "S200;HContent-Length=10;", "hello", false, 0},
    {"closed in a chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", true,
     IM_H1_E_PARTIAL, "S200;HTransfer-Encoding=chunked;", "hel", false, 0},
    {"closed before the last chunk", SSE_HEAD "Transfer-Encoding: chunked\r\n\r\n1\r\nx\r\n", true,
     IM_H1_E_PARTIAL, "S200;HContent-Type=text/event-stream;HTransfer-Encoding=chunked;", "x", false,
     0},
    {"closed in the trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: b\r\n",
     true, IM_H1_E_PARTIAL, "S200;HTransfer-Encoding=chunked;", "", false, 0},
};

static void test_cases(void) {
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    const struct tcase *k = &cases[c];
    size_t len = strlen(k->in);
    /* whole, every split in two, byte by byte */
    for (size_t first = 0; first <= len + 1; first++) {
      size_t f = first > len ? 1 : first ? first : len;
      size_t step = first > len ? 1 : len;
      struct result r;
      run(&r, k->in, len, f ? f : 1, step ? step : 1, k->eof, 0);
      bool ok = r.rc == k->rc && !strcmp(r.t.log, k->log) && !strcmp(r.t.body, k->body) &&
                r.reuse == k->reuse && (k->rc != IM_H1_DONE || r.left == k->left);
      CHECK(ok);
      if (!ok) {
        fprintf(stderr, "  case '%s' first %zu step %zu: rc %d (%s) log '%s' body '%s' reuse %d left %zu\n",
                k->name, f, step, r.rc, im_h1_rc_name(r.rc), r.t.log, r.t.body, r.reuse, r.left);
        break;
      }
    }
  }
}

/* Limits: a line over IM_H1_LINE_MAX, a head over IM_H1_HEAD_MAX, too many
 * header lines; fed whole and in 1000-byte reads. */
static void test_limits(void) {
  size_t cap = IM_H1_HEAD_MAX * 2;
  char *in = malloc(cap);
  CHECK(in != NULL);
  if (!in)
    return;
  for (int mode = 0; mode < 3; mode++) {
    size_t n = (size_t)snprintf(in, cap, "HTTP/1.1 200 OK\r\n");
    if (mode == 0) { /* one huge header line */
      n += (size_t)snprintf(in + n, cap - n, "X-Big: ");
      memset(in + n, 'a', IM_H1_LINE_MAX + 10);
      n += IM_H1_LINE_MAX + 10;
    } else if (mode == 1) { /* many 1 KiB lines */
      while (n + 1100 < cap) {
        n += (size_t)snprintf(in + n, cap - n, "X-L: ");
        memset(in + n, 'b', 1000);
        n += 1000;
        in[n++] = '\r';
        in[n++] = '\n';
      }
    } else { /* many tiny lines */
      for (unsigned i = 0; i <= IM_H1_MAX_HEADERS + 1; i++)
        n += (size_t)snprintf(in + n, cap - n, "A: 1\r\n");
    }
    for (int split = 0; split < 2; split++) {
      struct result r;
      run(&r, in, n, split ? 1000 : n, split ? 1000 : n, true, 0);
      CHECK_EQ(r.rc, IM_H1_E_TOOBIG);
    }
  }
  free(in);
}

/* The body callback stops the parse (a cancelled stream). */
static void test_stop(void) {
  const char *in = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
  struct result r;
  run(&r, in, strlen(in), strlen(in), strlen(in), false, 3);
  CHECK_EQ(r.rc, IM_H1_STOP);
  run(&r, in, strlen(in), 1, 1, false, 3);
  CHECK_EQ(r.rc, IM_H1_STOP);
  CHECK_STR(r.t.body, "012");
}

/* Two responses on one kept connection: reset between them. */
static void test_reuse(void) {
  const char *in = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n"
                   "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nc";
  struct im_h1 p;
  im_h1_init(&p);
  struct tr t;
  memset(&t, 0, sizeof t);
  size_t used = 0, len = strlen(in);
  CHECK_EQ(im_h1_feed(&p, in, len, &cbs, &t, &used), IM_H1_DONE);
  CHECK(im_h1_reusable(&p));
  CHECK(used < len);
  im_h1_reset(&p);
  size_t used2 = 0;
  CHECK_EQ(im_h1_feed(&p, in + used, len - used, &cbs, &t, &used2), IM_H1_DONE);
  CHECK_EQ(used + used2, len);
  CHECK_STR(t.body, "abc");
  im_h1_cleanup(&p);
}

static int pick(enum im_load_transport mode, const char *url, bool http2, const struct im_net *net,
                const char *const *headers) {
  char why[320] = "";
  struct im_load_transport_in in = {.mode = mode, .url = url, .http2 = http2, .net = net,
                                    .headers = headers};
  int t = im_load_transport_pick(&in, why, sizeof why);
  if (t < 0)
    CHECK(strncmp(why, "--transport h1: ", 16) == 0);
  return t;
}

static void test_pick(void) {
  unsetenv("http_proxy");
  unsetenv("all_proxy");
  unsetenv("ALL_PROXY");
  const int H1 = IM_TRANSPORT_H1, CURL = IM_TRANSPORT_CURL;
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://127.0.0.1:8000", false, NULL, NULL), H1);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "HTTP://localhost", false, NULL, NULL), H1);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://[::1]:9/prefix/v", false, NULL, NULL), H1);
  CHECK_EQ(pick(IM_TRANSPORT_CURL, "http://127.0.0.1:8000", false, NULL, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "https://127.0.0.1:8000", false, NULL, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_H1, "https://127.0.0.1:8000", false, NULL, NULL), -1);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://user:pw@h:1", false, NULL, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://h:1/?q=1", false, NULL, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://h:0", false, NULL, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://h:65536", false, NULL, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://[::1", false, NULL, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://:80", false, NULL, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://h:1", true, NULL, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_H1, "http://h:1", true, NULL, NULL), -1);
  struct im_net proxy = {.proxy = "http://p:3128"}, sock = {.unix_socket = "/tmp/s"};
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://h:1", false, &proxy, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://h:1", false, &sock, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_H1, "http://h:1", false, &sock, NULL), -1);
  const char *plain[] = {"X-Tenant: a", "x-b:c", NULL};
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://h:1", false, NULL, plain), H1);
  static const char *const special[][2] = {{"Host: other", NULL}, {"Content-Type: text/plain", NULL},
                                           {"Expect:", NULL},      {"X-Empty;", NULL},
                                           {"X-Empty:  ", NULL},   {"Bad Name: v", NULL},
                                           {"Accept: */*", NULL},  {"connection: close", NULL}};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++) {
    CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://h:1", false, NULL, special[i]), CURL);
    CHECK_EQ(pick(IM_TRANSPORT_H1, "http://h:1", false, NULL, special[i]), -1);
  }
  setenv("http_proxy", "http://p:3128", 1);
  CHECK_EQ(pick(IM_TRANSPORT_AUTO, "http://h:1", false, NULL, NULL), CURL);
  CHECK_EQ(pick(IM_TRANSPORT_H1, "http://h:1", false, NULL, NULL), H1); /* asked for: no proxy */
  unsetenv("http_proxy");
  const char *urls[] = {"http://a:1", "https://b:2"};
  struct im_load_transport_in two = {.mode = IM_TRANSPORT_AUTO, .urls = urls, .n_urls = 2};
  char why[320];
  CHECK_EQ(im_load_transport_pick(&two, why, sizeof why), CURL);
  CHECK_STR(im_load_transport_name(H1), "h1");
  CHECK_STR(im_load_transport_name(CURL), "curl");
}

int main(void) {
  test_cases();
  test_limits();
  test_stop();
  test_reuse();
  test_pick();
  return CHECK_DONE();
}
