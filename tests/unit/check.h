/* Minimal assertion helpers for the unit tests: every failure prints the
 * expression, both values and the location, and the program exits non-zero
 * at the end (checks keep running so one run shows every failure). */
#ifndef IM_TEST_CHECK_H
#define IM_TEST_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int im_test_failures;
static int im_test_checks;

#define IM__FAIL(...)                                                        \
  do {                                                                       \
    im_test_failures++;                                                      \
    fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                    \
    fprintf(stderr, __VA_ARGS__);                                            \
    fputc('\n', stderr);                                                     \
  } while (0)

#define CHECK(cond)                                                          \
  do {                                                                       \
    im_test_checks++;                                                        \
    if (!(cond))                                                             \
      IM__FAIL("%s", #cond);                                                 \
  } while (0)

#define CHECK_INT(a, op, b)                                                  \
  do {                                                                       \
    long long im__a = (long long)(a), im__b = (long long)(b);                \
    im_test_checks++;                                                        \
    if (!(im__a op im__b))                                                   \
      IM__FAIL("%s %s %s (%lld vs %lld)", #a, #op, #b, im__a, im__b);        \
  } while (0)

#define CHECK_EQ(a, b) CHECK_INT(a, ==, b)

#define CHECK_NEAR(a, b, tol)                                                \
  do {                                                                       \
    double im__a = (double)(a), im__b = (double)(b), im__t = (double)(tol);  \
    im_test_checks++;                                                        \
    if (!(fabs(im__a - im__b) <= im__t))                                     \
      IM__FAIL("%s ~ %s (%.9g vs %.9g, tol %.3g)", #a, #b, im__a, im__b,     \
               im__t);                                                       \
  } while (0)

/* Relative tolerance: |a - b| <= rel * |b|. */
#define CHECK_REL(a, b, rel)                                                 \
  CHECK_NEAR(a, b, fabs((double)(b)) * (double)(rel))

#define CHECK_STR(a, b)                                                      \
  do {                                                                       \
    const char *im__a = (a), *im__b = (b);                                   \
    im_test_checks++;                                                        \
    if (!im__a || !im__b || strcmp(im__a, im__b) != 0)                       \
      IM__FAIL("%s == %s (\"%s\" vs \"%s\")", #a, #b, im__a ? im__a : "(null)", \
               im__b ? im__b : "(null)");                                    \
  } while (0)

/* A check that failed where it stands (a branch that must not be taken). */
#define CHECK_FAIL(msg)                                                      \
  do {                                                                       \
    im_test_checks++;                                                        \
    IM__FAIL("%s", msg);                                                     \
  } while (0)

#define CHECK_OK(expr)                                                       \
  do {                                                                       \
    int im__e = (int)(expr);                                                 \
    im_test_checks++;                                                        \
    if (im__e != 0)                                                          \
      IM__FAIL("%s returned %d", #expr, im__e);                              \
  } while (0)

/* The cap of tests' scratch buffers (every im_buf states one). */
#define IM_TEST_BUF_MAX ((size_t)1 << 28)

/* Ends main(): prints a summary and returns the exit status. */
#define CHECK_DONE()                                                         \
  (fprintf(stderr, "%s: %d checks, %d failed\n", __FILE__, im_test_checks,   \
           im_test_failures),                                                \
   im_test_failures ? 1 : 0)

#endif
