/* The load engine's parts that run without a server: the record writer
 * (never drops a record, keeps order, counts what could not be written)
 * and the stage's start barrier (one t0 for every shard, on_start once, a
 * failed shard releases the others). No timing assertion. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "load/loader_int.h"

/* Reads a pipe to its end, counting lines and checking the ids in order. */
struct drain {
  int fd;
  uint64_t lines, out_of_order;
};

static void *drain_main(void *arg) {
  struct drain *d = arg;
  char buf[65536], key[] = "\"id\":";
  char *line = malloc(1 << 20);
  size_t len = 0;
  ssize_t n;
  while (line && (n = read(d->fd, buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] != '\n') {
        if (len < (1 << 20) - 1)
          line[len++] = buf[i];
        continue;
      }
      line[len] = '\0';
      const char *p = strstr(line, key);
      if (!p || strtoull(p + sizeof key - 1, NULL, 10) != d->lines + 1)
        d->out_of_order++;
      d->lines++;
      len = 0;
    }
  }
  free(line);
  return NULL;
}

static void test_writer_keeps_all(void) {
  enum { N = 10000 }; /* more than the queue holds: the loop must wait */
  int p[2];
  CHECK_OK(pipe(p));
  struct drain d = {.fd = p[0]};
  pthread_t t;
  CHECK_OK(pthread_create(&t, NULL, drain_main, &d));
  struct im_load_result res;
  memset(&res, 0, sizeof res);
  struct im__load_writer w;
  CHECK_OK(im__load_writer_start(&w, p[1], &res));
  for (uint64_t i = 1; i <= N; i++) {
    struct im_record r;
    memset(&r, 0, sizeof r);
    im_record_reset(&r);
    r.id = r.logical_id = i;
    r.attempt = 1;
    CHECK_OK(im_record_add_chunk(&r, 5, 1)); /* the chunk arrays move along */
    im__load_writer_push(&w, &r);
    CHECK(r.chunk_us == NULL);
    im_record_cleanup(&r);
  }
  CHECK_OK(im__load_writer_stop(&w));
  close(p[1]);
  pthread_join(t, NULL);
  close(p[0]);
  CHECK_EQ(d.lines, N);
  CHECK_EQ(d.out_of_order, 0);
  CHECK_EQ(res.n_records, N);
  CHECK_EQ(res.record_write_failures, 0);
  CHECK(res.writer_wait_ns >= 0);
  CHECK(res.writer_waits == 0 || res.writer_wait_ns > 0);
  for (size_t i = 0; i < res.n_records; i++)
    if (res.records[i].id != i + 1 || res.records[i].n_chunks != 1)
      CHECK_FAIL("records kept in order with their chunks");
  im_load_result_cleanup(&res);
}

static void test_writer_disk_full(void) {
  int fd = open("/dev/full", O_WRONLY | O_APPEND);
  if (fd < 0)
    return; /* no /dev/full here */
  struct im_load_result res;
  memset(&res, 0, sizeof res);
  struct im__load_writer w;
  CHECK_OK(im__load_writer_start(&w, fd, &res));
  for (int i = 1; i <= 3; i++) {
    struct im_record r;
    memset(&r, 0, sizeof r);
    im_record_reset(&r);
    r.id = r.logical_id = (uint64_t)i;
    im__load_writer_push(&w, &r);
  }
  CHECK_OK(im__load_writer_stop(&w));
  close(fd);
  CHECK(atomic_load(&w.failed));
  CHECK_EQ(res.record_write_failures, 3); /* none reached the disk */
  CHECK_EQ(res.n_records, 3);             /* all kept */
  CHECK(strstr(res.record_write_error, "No space left") != NULL);
  im_load_result_cleanup(&res);
}

/* ---- what a stream says: the SSE events of a 200 response, classified ---- */

#define TOK(s) "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" s "\"}}]}\n\n"
#define DONE "data: [DONE]\n\n"
#define USAGE(n)                                                                                   \
  "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}],"                              \
  "\"usage\":{\"completion_tokens\":" #n "}}\n\n"

static void test_classify(void) {
  static const struct {
    const char *body;
    enum im_errclass want;
    const char *reason; /* a part of the reason kept, or NULL */
  } cases[] = {
      {TOK("a") TOK("b") DONE, IM_EC_NONE, NULL},
      {DONE, IM_EC_NO_OUTPUT, NULL},
      {"", IM_EC_NO_OUTPUT, NULL},
      {"<html><body>nginx</body></html>\n", IM_EC_NO_OUTPUT, NULL},
      {TOK("a"), IM_EC_TRUNCATED, NULL},
      {"error: {\"code\":400,\"message\":\"exceeds the context\"}\n\n" DONE, IM_EC_ERROR_EVENT,
       "exceeds the context"},
      {"data: {\"error\":{\"message\":\"boom\"}}\n\n" DONE, IM_EC_ERROR_EVENT, "boom"},
      {TOK("a") DONE DONE, IM_EC_MALFORMED, "[DONE] twice"},
      {TOK("a") DONE TOK("b"), IM_EC_MALFORMED, "after [DONE]"},
      {"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\"}}]}\n\n" DONE,
       IM_EC_MALFORMED, "not JSON"},
      {USAGE(1000000000) DONE, IM_EC_MALFORMED, "1000000000"},
      {USAGE(5000) DONE, IM_EC_MALFORMED, "in one chunk"},
      {USAGE(3) USAGE(4096) DONE, IM_EC_NONE, NULL},
      {USAGE(3) USAGE(4100) DONE, IM_EC_MALFORMED, "in one chunk"},
  };
  struct im_load_config cfg;
  im_load_config_default(&cfg);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct loader L;
    memset(&L, 0, sizeof L);
    L.cfg = &cfg;
    im_oai_chunk_init(&L.chunk, 0);
    struct attempt *a = im__load_attempt_new(&L);
    CHECK(a != NULL);
    if (!a)
      return;
    a->rec.http_status = 200;
    a->rec.t_start = a->last_chunk = 0;
    /* Fed byte by byte: the verdict must not depend on the reads. */
    const char *b = cases[i].body;
    for (size_t k = 0; b[k]; k++)
      if (im_sse_feed(&a->sse, b + k, 1) != IM_OK)
        break;
    enum im_errclass got = im__load_classify(a, CURLE_OK);
    if (got != cases[i].want)
      IM__FAIL("case %zu: class %s, want %s", i, im_errclass_name(got),
               im_errclass_name(cases[i].want));
    if (cases[i].reason && !strstr(a->reason, cases[i].reason))
      IM__FAIL("case %zu: reason \"%s\" lacks \"%s\"", i, a->reason, cases[i].reason);
    im__load_attempt_free(a);
    im_oai_chunk_cleanup(&L.chunk);
  }
}

/* ---- the start barrier ---- */

struct starter {
  struct im_load_start *s;
  bool ok, go;
  int64_t t0, wall;
};

static int on_start_calls;
static void count_start(void *ctx, int64_t t0, int64_t wall) {
  (void)t0;
  (void)wall;
  (*(int *)ctx)++;
}

static void *starter_main(void *arg) {
  struct starter *st = arg;
  st->go = im__load_start_wait(st->s, st->ok, &st->t0, &st->wall);
  return NULL;
}

static void test_start_barrier(void) {
  enum { N = 4 };
  for (int failing = -1; failing < N; failing++) {
    struct im_load_start s;
    on_start_calls = 0;
    CHECK_OK(im_load_start_init(&s, N, count_start, &on_start_calls));
    struct starter st[N];
    pthread_t t[N];
    for (int k = 0; k < N; k++) {
      st[k] = (struct starter){.s = &s, .ok = k != failing};
      CHECK_OK(pthread_create(&t[k], NULL, starter_main, &st[k]));
    }
    for (int k = 0; k < N; k++)
      pthread_join(t[k], NULL);
    for (int k = 0; k < N; k++) {
      CHECK_EQ(st[k].go, failing < 0);
      CHECK_EQ(st[k].t0, st[0].t0); /* one origin */
    }
    CHECK_EQ(on_start_calls, failing < 0 ? 1 : 0);
    im_load_start_cleanup(&s);
  }
  /* Shards that never ran: the others are released, failed. */
  struct im_load_start s;
  CHECK_OK(im_load_start_init(&s, 3, NULL, NULL));
  struct starter one = {.s = &s, .ok = true};
  pthread_t t;
  CHECK_OK(pthread_create(&t, NULL, starter_main, &one));
  im_load_start_abandon(&s, 2);
  pthread_join(t, NULL);
  CHECK(!one.go);
  im_load_start_cleanup(&s);
  CHECK_EQ(im_load_start_init(&s, 0, NULL, NULL), IM_INVAL);
}

/* Who was late (docs/metrics.md §10): the client's part of a lag is the
 * loop's work since the last mark before the due time. Marks on the run's
 * clock (ms) and the client clock (the thread's CPU, read now and set back
 * by hand): the last turn woke at 10 (its CPU 5 ms ago), ended its work at
 * 12 (0.3 ms ago), slept at 13, woke at 20 (0.1 ms ago). The CPU clock
 * moves by the few µs of the calls themselves: bounds of 0.5 ms. */
static void test_client_part(void) {
  struct im_load_result res;
  memset(&res, 0, sizeof res);
  struct loader L;
  memset(&L, 0, sizeof L);
  L.res = &res;
  const int64_t ms = 1000000;
  int64_t cpu = im__load_client_clock(&L);
  L.prev_turn_t = 10 * ms;
  L.prev_turn_cpu = cpu - 5 * ms;
  L.tail_t = 12 * ms;
  L.tail_cpu = cpu - 3 * ms / 10;
  L.sleep_t = 13 * ms;
  L.turn_t = 20 * ms;
  L.turn_cpu = cpu - ms / 10;
  /* Due while the loop slept: this turn's work only. */
  int64_t c = im__load_client_part(&L, 15 * ms, 21 * ms);
  CHECK(c >= ms / 10 && c < ms / 10 + ms / 2);
  /* Due after the last turn's work, before it slept (the host held the
   * loop off there): the work since the end of that turn, not the turn's. */
  c = im__load_client_part(&L, 12 * ms + ms / 2, 21 * ms);
  CHECK(c >= 3 * ms / 10 && c < 3 * ms / 10 + ms / 2);
  /* Due during the last turn's work: that work counts. */
  c = im__load_client_part(&L, 11 * ms, 21 * ms);
  CHECK(c >= 5 * ms && c < 5 * ms + ms / 2);
  /* Due before the last turn woke: turns behind, all the client's. */
  CHECK_EQ(im__load_client_part(&L, 9 * ms, 21 * ms), 12 * ms);
  /* Never more than the lag. */
  CHECK_EQ(im__load_client_part(&L, 11 * ms, 11 * ms + ms), ms);
}

/* The kernel's receive stamp moved to the run's clock: a stamp 1 s ago
 * reads about 1 s before the read (at least 1 s: the realtime clock is
 * read after the stamp was made); a stamp in the future is the read's
 * time; no stamp, or a zero one, is -1. */
static void test_rx_stamp(void) {
  union {
    char buf[CMSG_SPACE(sizeof(struct timespec))];
    struct cmsghdr align;
  } ctl;
  struct msghdr m = {.msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_TIMESTAMPNS;
  c->cmsg_len = CMSG_LEN(sizeof(struct timespec));
  const int64_t S = 1000000000;
  int64_t t0 = im_now_ns() - 50 * S; /* a run 50 s old */
  int64_t b0 = im_now_ns() - t0;     /* the run's clock before the stamp is made */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec -= 1;
  memcpy(CMSG_DATA(c), &ts, sizeof ts);
  int64_t t = im__load_rx_stamp(&m, t0, INT64_MAX);
  int64_t after = im_now_ns() - t0;
  /* The stamp's instant on the run's clock lies in [b0 - 1 s, after - 1 s]:
   * never earlier (the monotonic clock is read after the realtime one),
   * never later than the call. */
  CHECK(t >= b0 - S);
  CHECK(t <= after - S);
  int64_t rel = after;
  ts.tv_sec += 11; /* 10 s ahead */
  memcpy(CMSG_DATA(c), &ts, sizeof ts);
  CHECK_EQ(im__load_rx_stamp(&m, t0, rel - 5), rel - 5);
  ts.tv_sec = ts.tv_nsec = 0;
  memcpy(CMSG_DATA(c), &ts, sizeof ts);
  CHECK_EQ(im__load_rx_stamp(&m, t0, rel), -1);
  c->cmsg_type = SCM_RIGHTS;
  CHECK_EQ(im__load_rx_stamp(&m, t0, rel), -1);
  struct msghdr none = {0};
  CHECK_EQ(im__load_rx_stamp(&none, t0, rel), -1);
}

int main(void) {
  test_rx_stamp();
  test_client_part();
  test_writer_keeps_all();
  test_writer_disk_full();
  test_start_barrier();
  test_classify();
  return CHECK_DONE();
}
