/* Retries: Retry-After parsed strictly (RFC 9110 §10.2.3, both forms and
 * the obsolete dates), and the backoff capped and free of overflow for any
 * attempt number. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "load/loader.h"
#include "proto/retry_after.h"

/* 1994-11-06T08:49:37Z, RFC 9110's example date. */
#define EXAMPLE_T 784111777LL

static int64_t ra(const char *s, int64_t now, enum im_err want) {
  int64_t d = -7;
  enum im_err e = im_retry_after_parse(s, strlen(s), now, &d);
  if (e != want)
    IM__FAIL("im_retry_after_parse(\"%s\") = %d, want %d", s, (int)e, (int)want);
  return d;
}

static void test_retry_after(void) {
  CHECK_EQ(ra("120", 0, IM_OK), 120);
  CHECK_EQ(ra("0", 0, IM_OK), 0);
  CHECK_EQ(ra("  7\t", 0, IM_OK), 7);
  CHECK_EQ(ra(" 7\r\n", 0, IM_OK), 7);
  CHECK_EQ(ra("99999999999999999999999999", 0, IM_OK), IM_RETRY_AFTER_MAX_S);
  /* The three date forms of the same instant, seen 60 s before it. */
  CHECK_EQ(ra("Sun, 06 Nov 1994 08:49:37 GMT", EXAMPLE_T - 60, IM_OK), 60);
  CHECK_EQ(ra("Sunday, 06-Nov-94 08:49:37 GMT", EXAMPLE_T - 60, IM_OK), 60);
  CHECK_EQ(ra("Sun Nov  6 08:49:37 1994", EXAMPLE_T - 60, IM_OK), 60);
  /* A date in the past: no wait. */
  CHECK_EQ(ra("Sun, 06 Nov 1994 08:49:37 GMT", EXAMPLE_T + 3600, IM_OK), 0);
  /* Far future: saturated. */
  CHECK_EQ(ra("Fri, 31 Dec 9999 23:59:59 GMT", 0, IM_OK), IM_RETRY_AFTER_MAX_S);
  /* Leap day. */
  CHECK_EQ(ra("Thu, 29 Feb 2024 00:00:00 GMT", 1709164800LL - 5, IM_OK), 5);
  /* Rejected: sign, fraction, units, trailing text, bad dates, empty. */
  const char *bad[] = {"",
                       "  ",
                       "-1",
                       "+5",
                       "1.5",
                       "5s",
                       "5 5",
                       "0x10",
                       "120abc",
                       "Sun, 06 Nov 1994 08:49:37 UTC",
                       "Sun, 31 Nov 1994 08:49:37 GMT",
                       "Sun, 29 Feb 2023 08:49:37 GMT",
                       "Sun, 06 Nov 1994 24:00:00 GMT",
                       "Sun, 6 Nov 1994 08:49:37 GMT",
                       "Sun, 06 Nov 94 08:49:37 GMT",
                       "Sunday, 06-Nov-1994 08:49:37 GMT",
                       "Sun Nov 6 08:49:37 1994",
                       "Xyz, 06 Nov 1994 08:49:37 GMT",
                       "Sun, 06 Nov 1994 08:49:37 GMT x",
                       "Sun, 06 Foo 1994 08:49:37 GMT"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK_EQ(ra(bad[i], EXAMPLE_T, IM_PARSE), -7); /* untouched on failure */
}

static void test_backoff(void) {
  const int64_t cap = 30LL * 1000000000;
  /* 0.25 s x 2^(n-1) x (0.5 + u) below the cap. */
  CHECK_EQ(im_load_backoff_ns(1, 0.5, cap), 250000000);
  CHECK_EQ(im_load_backoff_ns(2, 0.5, cap), 500000000);
  CHECK_EQ(im_load_backoff_ns(3, 0.0, cap), 500000000);
  CHECK_EQ(im_load_backoff_ns(0, 0.5, cap), 250000000);
  /* Capped, and monotone in the attempt, for every attempt number. */
  int64_t prev = 0;
  for (uint64_t n = 1; n <= UINT32_MAX; n = n < 200 ? n + 1 : n * 3) {
    int64_t w = im_load_backoff_ns((uint32_t)n, 0.999999, cap);
    CHECK(w > 0 && w <= cap);
    CHECK(w >= prev);
    prev = w;
  }
  CHECK_EQ(im_load_backoff_ns(UINT32_MAX, 0.0, cap), cap);
  CHECK_EQ(im_load_backoff_ns(36, 0.5, cap), cap); /* the old overflow point */
  CHECK_EQ(im_load_backoff_ns(100, 0.5, INT64_MAX), INT64_MAX);
  /* No cap, no wait; a u out of [0, 1) is taken as 0.5. */
  CHECK_EQ(im_load_backoff_ns(5, 0.5, 0), 0);
  CHECK_EQ(im_load_backoff_ns(1, 7.0, cap), 250000000);
}

int main(void) {
  test_retry_after();
  test_backoff();
  return CHECK_DONE();
}
