/* SSE parser: every case is fed whole, split in two at every byte position,
 * and byte by byte; all three must give the same events, the same error and
 * the same end-of-stream verdict. */
#include <stdint.h>

#include "check.h"
#include "core/buf.h"
#include "proto/sse.h"

/* Events are logged as "E<type>|<id>|<retry>|<data>;" and comments as
 * "C<text>;" so one string comparison checks everything. */
static enum im_err log_cb(void *ud, const struct im_sse_event *ev) {
  struct im_buf *log = ud;
  enum im_err err;
  if (ev->kind == IM_SSE_COMMENT) {
    err = im_buf_puts(log, "C");
  } else {
    CHECK_EQ(ev->data[ev->data_len], '\0');
    CHECK_EQ(ev->type[ev->type_len], '\0');
    err = im_buf_printf(log, "E%.*s|%.*s|%lld|", (int)ev->type_len, ev->type, (int)ev->id_len,
                        ev->id, (long long)ev->retry_ms);
  }
  CHECK_EQ(ev->id[ev->id_len], '\0');
  if (!err)
    err = im_buf_append(log, ev->data, ev->data_len);
  if (!err)
    err = im_buf_puts(log, ";");
  return err;
}

struct run {
  struct im_buf log;
  enum im_err feed_err; /* first non-OK feed result */
  enum im_err finish;   /* im_sse_finish, when no feed failed */
};

/* Feeds in[0..len) in pieces ending at the offsets in cuts (ascending, last
 * == len). */
static void run_cuts(struct run *r, const struct im_sse_limits *lim, const char *in,
                     const size_t *cuts, size_t ncuts) {
  struct im_sse p;
  im_buf_init(&r->log, IM_TEST_BUF_MAX);
  im_buf_reset(&r->log);
  CHECK_OK(im_buf_puts(&r->log, "")); /* data non-NULL */
  im_sse_init(&p, lim, log_cb, &r->log);
  r->feed_err = IM_OK;
  r->finish = IM_STATE;
  size_t at = 0;
  for (size_t i = 0; i < ncuts; i++) {
    enum im_err err = im_sse_feed(&p, in + at, cuts[i] - at);
    at = cuts[i];
    if (err) {
      r->feed_err = err;
      CHECK_EQ(im_sse_feed(&p, "x", 1), IM_STATE);
      break;
    }
  }
  if (!r->feed_err)
    r->finish = im_sse_finish(&p);
  im_sse_cleanup(&p);
}

static void show(const char *what, const char *s) {
  fprintf(stderr, "  %s: \"", what);
  for (; *s; s++) {
    if (*s == '\n')
      fputs("\\n", stderr);
    else if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
      fprintf(stderr, "\\x%02x", (unsigned char)*s);
    else
      fputc(*s, stderr);
  }
  fputs("\"\n", stderr);
}

/* Runs one case every way and compares with the expectation. */
static void check_case(int line, const struct im_sse_limits *lim, const char *in, size_t len,
                       const char *want, enum im_err want_err, enum im_err want_finish) {
  size_t *cuts = malloc((len + 2) * sizeof *cuts);
  if (!cuts)
    abort();
  int bad = 0;
  /* 0: whole; 1..len+1: split at k = mode-1; len+2: byte by byte. */
  for (size_t mode = 0; mode <= len + 2; mode++) {
    size_t n = 0;
    if (mode == 0) {
      cuts[n++] = len;
    } else if (mode <= len + 1) {
      cuts[n++] = mode - 1;
      cuts[n++] = len;
    } else {
      for (size_t i = 1; i <= len; i++)
        cuts[n++] = i;
      if (!len)
        cuts[n++] = 0;
    }
    struct run r;
    run_cuts(&r, lim, in, cuts, n);
    const char *got = r.log.data ? r.log.data : "";
    im_test_checks++;
    if (strcmp(got, want) != 0 || r.feed_err != want_err ||
        (!want_err && r.finish != want_finish)) {
      if (!bad) {
        IM__FAIL("case at line %d, mode %zu: err %d (want %d), finish %d "
                 "(want %d)",
                 line, mode, r.feed_err, want_err, r.finish, want_finish);
        show("got ", got);
        show("want", want);
      }
      bad = 1;
    }
    im_buf_cleanup(&r.log);
  }
  free(cuts);
}

#define CASE(in, want) check_case(__LINE__, NULL, in, sizeof(in) - 1, want, IM_OK, IM_OK)
#define CASE_END(in, want, fin) check_case(__LINE__, NULL, in, sizeof(in) - 1, want, IM_OK, fin)
#define CASE_LIM(lim, in, want, err) check_case(__LINE__, lim, in, sizeof(in) - 1, want, err, IM_OK)

static void test_line_ends(void) {
  CASE("data: hello\n\n", "Emessage||-1|hello;");
  CASE("data: a\r\ndata: b\r\n\r\n", "Emessage||-1|a\nb;");
  CASE("data: a\rdata: b\r\r", "Emessage||-1|a\nb;");
  /* Mixed: LF line then CRLF blank line; CR then CRLF (the first CR alone). */
  CASE("data: a\n\r\ndata: b\r\r\n", "Emessage||-1|a;Emessage||-1|b;");
  CASE("data: x\r\n\r\ndata: y\n\n", "Emessage||-1|x;Emessage||-1|y;");
  /* Several events in one feed. */
  CASE("data: 1\n\ndata: 2\n\ndata: 3\n\n", "Emessage||-1|1;Emessage||-1|2;Emessage||-1|3;");
  /* Blank lines between events dispatch nothing. */
  CASE("\n\n\r\n\rdata: z\n\n\n\n", "Emessage||-1|z;");
  CASE("", "");
}

static void test_bom(void) {
  CASE("\xEF\xBB\xBF"
       "data: x\n\n",
       "Emessage||-1|x;");
  /* Only one BOM is skipped: the second makes the field name unknown. */
  CASE("\xEF\xBB\xBF\xEF\xBB\xBF"
       "data: x\n\ndata: y\n\n",
       "Emessage||-1|y;");
  /* A BOM prefix is not a BOM: its bytes belong to the first line. */
  CASE("\xEF\xBB"
       "data: x\n\ndata: y\n\n",
       "Emessage||-1|y;");
  CASE_END("\xEF", "", IM_AGAIN);
  CASE_END("\xEF\xBB\xBF", "", IM_OK);
  /* A BOM after the start is data. */
  CASE("data: \xEF\xBB\xBF\n\n", "Emessage||-1|\xEF\xBB\xBF;");
}

static void test_fields(void) {
  CASE("data: a\ndata: b\ndata: c\n\n", "Emessage||-1|a\nb\nc;");
  CASE("data:x\n\n", "Emessage||-1|x;");
  CASE("data:  x\n\n", "Emessage||-1| x;");
  CASE("data: a:b: c\n\n", "Emessage||-1|a:b: c;");
  CASE("data:\n\n", "Emessage||-1|;");
  CASE("data\n\n", "Emessage||-1|;");
  CASE("data\ndata\n\n", "Emessage||-1|\n;");
  CASE("data: \n\n", "Emessage||-1|;");
  CASE("id: 7\nevent: foo\nretry: 1500\ndata: x\n\ndata: y\n\n",
       "Efoo|7|1500|x;Emessage|7|1500|y;");
  CASE("retry: 12a\ndata: x\n\n", "Emessage||-1|x;");
  CASE("retry:\ndata: x\n\n", "Emessage||-1|x;");
  CASE("retry: 99999999999999999999999\ndata: x\n\n", "Emessage||9223372036854775807|x;");
  CASE("id: a\0b\ndata: x\n\n", "Emessage||-1|x;");
  CASE("id: 1\ndata: x\n\nid\ndata: y\n\n", "Emessage|1|-1|x;Emessage||-1|y;");
  CASE("foo: bar\nDATA: no\ndata : no\ndata: x\n\n", "Emessage||-1|x;");
  /* An event without data is not dispatched; its type does not leak. */
  CASE("event: foo\n\ndata: y\n\n", "Emessage||-1|y;");
  CASE("event: foo\nid: 3\n\n", "");
  CASE("event\ndata: z\n\n", "Emessage||-1|z;");
  CASE("data: \0x\n\n", "Emessage||-1|");
}

static void test_comments(void) {
  CASE(": keep-alive\n\ndata: a\n: ping\ndata: b\n\n", "Ckeep-alive;Cping;Emessage||-1|a\nb;");
  CASE(":\n:  two spaces\n:x\n", "C;C two spaces;Cx;");
  /* A comment never becomes data, even with "data:" in it. */
  CASE(":data: nope\n\n", "Cdata: nope;");
  CASE(": keep-alive\r\n\r\n: keep-alive\r\r", "Ckeep-alive;Ckeep-alive;");
}

static void test_truncated(void) {
  CASE_END("data: x\n", "", IM_AGAIN);
  CASE_END("data: x", "", IM_AGAIN);
  CASE_END("data: x\n\ndata: y", "Emessage||-1|x;", IM_AGAIN);
  CASE_END(": partial comment", "", IM_AGAIN);
  CASE_END("data: x\r\r", "Emessage||-1|x;", IM_OK);
  CASE_END("data: x\n\n: done\n", "Emessage||-1|x;Cdone;", IM_OK);
}

static void test_limits(void) {
  struct im_sse_limits lim = {.max_line = 16, .max_data = 8};
  CASE_LIM(&lim, "data: 01234567\n\n", "Emessage||-1|01234567;", IM_OK);
  CASE_LIM(&lim, ": 0123456789abcd\n", "C0123456789abcd;", IM_OK);
  CASE_LIM(&lim, "data: a\n\ndata: 0123456789ab\n\ndata: c\n\n", "Emessage||-1|a;", IM_LIMIT);
  CASE_LIM(&lim, "data: 0123456789ab", "", IM_LIMIT);
  CASE_LIM(&lim, ": 0123456789abcdefgh\n", "", IM_LIMIT);
  /* Data: 4 + "\n" + 3 = 8 fits, 4 + "\n" + 4 = 9 does not. */
  CASE_LIM(&lim, "data: 1234\ndata: 567\n\n", "Emessage||-1|1234\n567;", IM_OK);
  CASE_LIM(&lim, "data: 1234\ndata: 5678\n\n", "", IM_LIMIT);
  CASE_LIM(&lim, "data:12345678\n\n", "Emessage||-1|12345678;", IM_OK);
  CASE_LIM(&lim, "data:123456789\n\n", "", IM_LIMIT);
  /* A long line of an ignored field is still bounded. */
  CASE_LIM(&lim, "xxxxxxxxxxxxxxxxx\n", "", IM_LIMIT);
}

static enum im_err stop_cb(void *ud, const struct im_sse_event *ev) {
  int *n = ud;
  (void)ev;
  return ++*n == 2 ? IM_FULL : IM_OK;
}

static void test_callback_stop_and_reset(void) {
  struct im_sse p;
  int n = 0;
  im_sse_init(&p, NULL, stop_cb, &n);
  const char in[] = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
  CHECK_EQ(im_sse_feed(&p, in, sizeof in - 1), IM_FULL);
  CHECK_EQ(n, 2);
  CHECK_EQ(im_sse_feed(&p, in, sizeof in - 1), IM_STATE);
  CHECK_EQ(im_sse_finish(&p), IM_STATE);
  im_sse_reset(&p);
  n = 10;
  CHECK_OK(im_sse_feed(&p, in, sizeof in - 1));
  CHECK_EQ(n, 13);
  CHECK_OK(im_sse_finish(&p));
  im_sse_cleanup(&p);
  im_sse_cleanup(NULL);
}

static enum im_err count_cb(void *ud, const struct im_sse_event *ev) {
  (void)ev;
  ++*(long *)ud;
  return IM_OK;
}

/* Steady state: the data buffer is not reallocated once it is big enough. */
static void test_no_realloc(void) {
  struct im_sse p;
  long n = 0;
  im_sse_init(&p, NULL, count_cb, &n);
  const char ev[] = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n";
  CHECK_OK(im_sse_feed(&p, ev, sizeof ev - 1));
  const char *data = p.data.data;
  size_t cap = p.data.cap;
  for (int i = 0; i < 1000; i++) {
    CHECK_OK(im_sse_feed(&p, ev, 20));
    CHECK_OK(im_sse_feed(&p, ev + 20, sizeof ev - 21));
  }
  CHECK_EQ(n, 1001);
  CHECK(p.data.data == data);
  CHECK_EQ(p.data.cap, cap);
  im_sse_cleanup(&p);
}

/* Unknown fields reach the callback only when asked for (llama.cpp's
 * "error:" line), and never change the events. */
struct field_log {
  int fields, events;
  char name[16], value[64];
};

static enum im_err field_cb(void *ud, const struct im_sse_event *ev) {
  struct field_log *f = ud;
  if (ev->kind == IM_SSE_FIELD) {
    f->fields++;
    snprintf(f->name, sizeof f->name, "%.*s", (int)ev->type_len, ev->type);
    snprintf(f->value, sizeof f->value, "%.*s", (int)ev->data_len, ev->data);
  } else if (ev->kind == IM_SSE_EVENT) {
    f->events++;
  }
  return IM_OK;
}

static void test_report_fields(void) {
  static const char in[] = "error: {\"code\":400}\nretry: 5\nid: 1\nevent: x\ndata: [DONE]\n\n";
  for (int on = 0; on <= 1; on++) {
    struct field_log f = {0};
    struct im_sse p;
    im_sse_init(&p, NULL, field_cb, &f);
    im_sse_report_fields(&p, on);
    CHECK_OK(im_sse_feed(&p, in, sizeof in - 1));
    CHECK_EQ(f.events, 1);
    CHECK_EQ(f.fields, on); /* retry, id and event are standard fields */
    if (on) {
      CHECK_STR(f.name, "error");
      CHECK_STR(f.value, "{\"code\":400}");
    }
    im_sse_cleanup(&p);
  }
}

int main(void) {
  test_report_fields();
  test_line_ends();
  test_bom();
  test_fields();
  test_comments();
  test_truncated();
  test_limits();
  test_callback_stop_and_reset();
  test_no_realloc();
  return CHECK_DONE();
}
