#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/hostlat.h"
#include "core/rng.h"
#include "core/thread.h"

static void test_duration(void) {
  int64_t ns = 0;
  CHECK_OK(im_parse_duration("250ms", &ns));
  CHECK_EQ(ns, 250000000);
  CHECK_OK(im_parse_duration("2.5", &ns));
  CHECK_EQ(ns, 2500000000LL);
  CHECK_OK(im_parse_duration("1m", &ns));
  CHECK_EQ(ns, 60000000000LL);
  CHECK_OK(im_parse_duration("100us", &ns));
  CHECK_EQ(ns, 100000);
  CHECK(im_parse_duration("", &ns) != 0);
  CHECK(im_parse_duration("-1s", &ns) != 0);
  CHECK(im_parse_duration("3 parsecs", &ns) != 0);
  CHECK(im_parse_duration("1e30s", &ns) != 0);
}

static void test_buf(void) {
  struct im_buf b;
  im_buf_init(&b, 16);
  CHECK_OK(im_buf_puts(&b, "hello"));
  CHECK_OK(im_buf_printf(&b, " %d", 42));
  CHECK_STR(b.data, "hello 42");
  CHECK_EQ(im_buf_puts(&b, "0123456789"), IM_LIMIT); /* 8 + 10 > 16 */
  CHECK_STR(b.data, "hello 42");                     /* unchanged */
  im_buf_consume(&b, 6);
  CHECK_STR(b.data, "42");
  im_buf_reset(&b);
  CHECK_OK(im_buf_json_escape(&b, "a\"\\\n\x01\xff", 6));
  CHECK_STR(b.data, "a\\\"\\\\\\n\\u0001\xef\xbf\xbd");
  im_buf_cleanup(&b);
  im_buf_cleanup(NULL);

  /* No unbounded buffer: a cap of 0 holds nothing (it meant "unbounded"). */
  im_buf_init(&b, 0);
  CHECK_EQ(im_buf_puts(&b, "x"), IM_LIMIT);
  CHECK_OK(im_buf_append(&b, "", 0));
  CHECK_EQ(b.len, 0);
  im_buf_cleanup(&b);

  im_buf_init(&b, IM_TEST_BUF_MAX);
  for (int i = 0; i < 1000; i++)
    CHECK_OK(im_buf_printf(&b, "%04d", i));
  CHECK_EQ(b.len, 4000);
  CHECK(memcmp(b.data + 3996, "0999", 4) == 0);
  /* Multi-byte UTF-8 passes through unchanged; overlong forms do not. */
  im_buf_reset(&b);
  CHECK_OK(im_buf_json_escape(&b, "\xe4\xb8\xad\xc0\xaf", 5));
  CHECK_STR(b.data, "\xe4\xb8\xad\xef\xbf\xbd\xef\xbf\xbd");
  im_buf_cleanup(&b);
}

static void test_rng(void) {
  struct im_rng a, b;
  im_rng_seed(&a, 7);
  im_rng_seed(&b, 7);
  for (int i = 0; i < 100; i++)
    CHECK(im_rng_u64(&a) == im_rng_u64(&b));
  im_rng_seed(&b, 8);
  CHECK(im_rng_u64(&a) != im_rng_u64(&b));

  /* Moments of the distributions over 200k draws (seeded: deterministic). */
  const int n = 200000;
  double se = 0, sn = 0, sn2 = 0, sg = 0, su = 0;
  uint64_t below_hist[10] = {0};
  for (int i = 0; i < n; i++) {
    se += im_rng_exp(&a);
    double z = im_rng_normal(&a);
    sn += z;
    sn2 += z * z;
    sg += im_rng_gamma(&a, 0.5);
    double u = im_rng_uniform(&a);
    CHECK(u >= 0.0 && u < 1.0);
    su += u;
    below_hist[im_rng_below(&a, 10)]++;
  }
  CHECK_NEAR(se / n, 1.0, 0.01);
  CHECK_NEAR(sn / n, 0.0, 0.01);
  CHECK_NEAR(sn2 / n, 1.0, 0.01);
  CHECK_NEAR(sg / n, 0.5, 0.01);
  CHECK_NEAR(su / n, 0.5, 0.005);
  for (int i = 0; i < 10; i++)
    CHECK_NEAR(below_hist[i], n / 10.0, n / 10.0 * 0.03);
  CHECK_EQ(im_rng_below(&a, 0), 0);

  /* FNV-1a test vectors from the FNV reference (Noll). */
  CHECK(im_fnv1a64("", 0) == 0xcbf29ce484222325ULL);
  CHECK(im_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cULL);
  CHECK(im_fnv1a64("foobar", 6) == 0x85944171f73967e8ULL);
}

static void test_err(void) {
  CHECK_STR(im_strerror(IM_OK), "success");
  CHECK_STR(im_strerror(IM_LIMIT), "input exceeds a configured limit");
  CHECK_STR(im_strerror((enum im_err)999), "unknown error");
}

/* im_buf_put_i64 / im_buf_put_hex print what printf does. */
static void test_buf_put_int(void) {
  static const int64_t v[] = {0, 1, 9, 10, 255, 4096, -1, -10, 1796193630, INT64_MAX, INT64_MIN};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    struct im_buf b;
    char want[64];
    im_buf_init(&b, 64);
    CHECK_OK(im_buf_put_i64(&b, v[i]));
    CHECK_OK(im_buf_puts(&b, "|"));
    CHECK_OK(im_buf_put_hex(&b, (uint64_t)v[i]));
    snprintf(want, sizeof want, "%" PRId64 "|%" PRIx64, v[i], (uint64_t)v[i]);
    CHECK(!strcmp(b.data, want));
    im_buf_cleanup(&b);
  }
  static const uint64_t u[] = {0, 7, 10, 4294967295u, UINT64_MAX};
  for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) {
    struct im_buf b;
    char want[32];
    im_buf_init(&b, 64);
    CHECK_OK(im_buf_put_u64(&b, u[i]));
    snprintf(want, sizeof want, "%" PRIu64, u[i]);
    CHECK_STR(b.data, want);
    im_buf_cleanup(&b);
  }
  struct im_buf b;
  im_buf_init(&b, 3);
  CHECK(im_buf_put_i64(&b, 1234) != IM_OK); /* past max: an error */
  CHECK(im_buf_put_u64(&b, 1234) != IM_OK);
  CHECK_EQ(b.len, 0);
  im_buf_cleanup(&b);
}

/* A reserve hint never fails and never moves the cap: past max it reserves
 * up to max, and the appends still stop at max. The inline append grows the
 * buffer byte by byte across every doubling. */
static void test_buf_hint(void) {
  struct im_buf b;
  im_buf_init(&b, 16);
  im_buf_reserve_hint(&b, 1000);
  CHECK(b.data != NULL);
  CHECK_EQ(b.len, 0);
  for (int i = 0; i < 16; i++)
    CHECK_OK(im_buf_append(&b, "x", 1));
  CHECK_EQ(im_buf_append(&b, "y", 1), IM_LIMIT);
  im_buf_reserve_hint(&b, 8); /* full: nothing */
  CHECK_EQ(b.len, 16);
  CHECK_STR(b.data, "xxxxxxxxxxxxxxxx");
  im_buf_cleanup(&b);

  im_buf_init(&b, 5000);
  char want[5001];
  for (int i = 0; i < 5000; i++) {
    want[i] = (char)('a' + i % 26);
    CHECK_OK(im_buf_append(&b, &want[i], 1));
    CHECK_EQ(b.data[b.len], '\0');
  }
  want[5000] = '\0';
  CHECK_STR(b.data, want);
  CHECK_EQ(im_buf_puts(&b, "z"), IM_LIMIT);
  CHECK_EQ(b.len, 5000);
  im_buf_cleanup(&b);
}

/* A background thread reads its policy after the starter has returned
 * (it waits for a byte on a pipe first): SCHED_IDLE, or the normal policy
 * when INFERMETER_AUX_THREADS=normal. Signals stay blocked in both. */
struct policy_probe {
  int fd;
  int policy;
  int sigint_blocked;
};

static void *read_policy(void *arg) {
  struct policy_probe *p = arg;
  char c;
  if (read(p->fd, &c, 1) != 1)
    return NULL;
  struct sched_param sp;
  if (pthread_getschedparam(pthread_self(), &p->policy, &sp) != 0)
    p->policy = -1;
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, NULL, &now);
  p->sigint_blocked = sigismember(&now, SIGINT);
  return NULL;
}

static int background_policy(void) {
  int fds[2];
  CHECK(pipe(fds) == 0);
  struct policy_probe p = {fds[0], -2, 0};
  pthread_t t;
  CHECK_EQ(im_thread_start_background(&t, read_policy, &p), 0);
  CHECK(write(fds[1], "x", 1) == 1);
  pthread_join(t, NULL);
  close(fds[0]);
  close(fds[1]);
  CHECK_EQ(p.sigint_blocked, 1);
  return p.policy;
}

static void test_thread_background(void) {
  unsetenv("INFERMETER_AUX_THREADS");
  CHECK_EQ(background_policy(), SCHED_IDLE);
  setenv("INFERMETER_AUX_THREADS", "normal", 1);
  CHECK_EQ(background_policy(), SCHED_OTHER);
  unsetenv("INFERMETER_AUX_THREADS");
}

/* Host lateness: counts per bound, stalls kept and matched by time, merge
 * in time order. */
static void test_hostlat(void) {
  struct im_hostlat a, b;
  im_hostlat_init(&a, 2000000);
  im_hostlat_init(&b, 2000000);
  im_hostlat_add(&a, 10000000, 50000);    /* 0.05 ms: not late */
  im_hostlat_add(&a, 20000000, 1500000);  /* 1.5 ms: late, no stall */
  im_hostlat_add(&a, 30000000, 3000000);  /* 3 ms: a stall from 27 to 30 ms */
  im_hostlat_add(&a, 40000000, -5);       /* early: 0 */
  CHECK_EQ(a.wakes, 4);
  CHECK_EQ(im_hostlat_late(&a), 2);
  CHECK_EQ(a.over[0], 2); /* > 0.1 ms */
  CHECK_EQ(a.n_stalls, 1);
  CHECK_EQ(a.max_ns, 3000000);
  CHECK_EQ(im_hostlat_stall_within(&a, 28000000, 29000000), 3000000);
  CHECK_EQ(im_hostlat_stall_within(&a, 26000000, 27500000), 3000000);
  CHECK_EQ(im_hostlat_stall_within(&a, 30000001, 31000000), 0);
  CHECK_EQ(im_hostlat_stall_within(&a, 20000000, 26999999), 0);
  im_hostlat_add(&b, 5000000, 9000000);
  im_hostlat_add(&b, 50000000, 2500000);
  CHECK_OK(im_hostlat_merge(&a, &b));
  CHECK_EQ(a.wakes, 6);
  CHECK_EQ(a.n_stalls, 3);
  CHECK_EQ(a.stalls[0].t, 5000000);
  CHECK_EQ(a.stalls[1].t, 30000000);
  CHECK_EQ(a.stalls[2].t, 50000000);
  CHECK_EQ(a.max_ns, 9000000);
  for (int i = 0; i < IM_HOSTLAT_MAX_STALLS + 10; i++)
    im_hostlat_add(&b, 60000000 + i, 4000000);
  CHECK_EQ(b.n_stalls, IM_HOSTLAT_MAX_STALLS);
  CHECK_EQ(b.stalls_total, IM_HOSTLAT_MAX_STALLS + 12);
  im_hostlat_cleanup(&a);
  im_hostlat_cleanup(&b);
  im_hostlat_cleanup(NULL);
}

int main(void) {
  test_hostlat();
  test_duration();
  test_buf();
  test_buf_put_int();
  test_buf_hint();
  test_rng();
  test_err();
  test_thread_background();
  return CHECK_DONE();
}
