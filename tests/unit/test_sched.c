/* Arrival schedules and length draws (src/workload/sched.c).
 *
 * Statistical checks use fixed seeds, so each is deterministic; the
 * tolerances are still set from the sampling error (>= 4.5 standard errors)
 * so that a change of seed or of the RNG would not make them flaky. No check
 * depends on wall-clock timing. */
#include "check.h"

#include "workload/sched.h"

#define N_STAT 100000

/* Mean and coefficient of variation of the gaps (first gap from 0). */
static void gap_stats(const int64_t *t, size_t n, double *mean, double *cv) {
  double s = 0, s2 = 0;
  int64_t prev = 0;
  for (size_t i = 0; i < n; i++) {
    double g = (double)(t[i] - prev) / 1e9;
    prev = t[i];
    s += g;
    s2 += g * g;
  }
  double m = s / (double)n;
  double var = s2 / (double)n - m * m;
  *mean = m;
  *cv = sqrt(var) / m;
}

static int is_sorted(const int64_t *t, size_t n) {
  for (size_t i = 1; i < n; i++)
    if (t[i] < t[i - 1])
      return 0;
  return 1;
}

static size_t count_in(const int64_t *t, size_t n, int64_t lo, int64_t hi) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++)
    c += t[i] >= lo && t[i] < hi;
  return c;
}

static struct im_sched_spec spec_of(enum im_sched_kind kind, double rate, int64_t dur,
                                    uint64_t max_n, uint64_t seed) {
  struct im_sched_spec s = {0};
  s.kind = kind;
  s.rate = rate;
  s.duration_ns = dur;
  s.max_requests = max_n;
  s.seed = seed;
  s.burstiness = 1.0;
  return s;
}

static void test_poisson(void) {
  struct im_sched_spec s = spec_of(IM_SCHED_POISSON, 1000.0, 0, N_STAT, 42);
  int64_t *t = NULL;
  size_t n = 0;
  CHECK_OK(im_sched_generate(&s, &t, &n));
  CHECK_EQ(n, N_STAT);
  CHECK(is_sorted(t, n));
  double mean, cv;
  gap_stats(t, n, &mean, &cv);
  /* Exponential gaps: the mean's standard error is mean/sqrt(N) = 0.32 %;
   * the sample std's is about sqrt((kurtosis-1)/N)/2 = sqrt(8/N)/2 = 0.45 %.
   * 2 % for both is over 4.5 standard errors. */
  CHECK_REL(mean, 1e-3, 0.02);
  CHECK_NEAR(cv, 1.0, 0.02);
  CHECK_NEAR(im_sched_rate_at(&s, 12345), 1000.0, 0);
  free(t);
}

static void test_gamma(void) {
  const double shapes[] = {0.5, 2.0, 10.0};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    struct im_sched_spec s = spec_of(IM_SCHED_GAMMA, 500.0, 0, N_STAT, 7 + k);
    s.burstiness = shapes[k];
    int64_t *t = NULL;
    size_t n = 0;
    CHECK_OK(im_sched_generate(&s, &t, &n));
    CHECK_EQ(n, N_STAT);
    CHECK(is_sorted(t, n));
    double mean, cv;
    gap_stats(t, n, &mean, &cv);
    /* Gamma(k): the mean's standard error is CV/sqrt(N) <= 0.45 % (k = 0.5);
     * the std's is sqrt((excess kurtosis + 2)/N)/2 with excess kurtosis 6/k,
     * at most sqrt(14/N)/2 = 0.59 % (k = 0.5). Tolerances 3 % relative. */
    CHECK_REL(mean, 1.0 / 500.0, 0.03);
    CHECK_REL(cv, 1.0 / sqrt(shapes[k]), 0.03);
    free(t);
  }
}

static void test_constant(void) {
  struct im_sched_spec s = spec_of(IM_SCHED_CONSTANT, 1000.0, 1000000000, 0, 1);
  int64_t *t = NULL;
  size_t n = 0;
  CHECK_OK(im_sched_generate(&s, &t, &n));
  /* [0, 1 s) at 1000/s: 0, 1 ms, ..., 999 ms. */
  CHECK_EQ(n, 1000);
  int exact = 1;
  for (size_t i = 0; i < n; i++)
    exact &= t[i] == (int64_t)i * 1000000;
  CHECK(exact);
  free(t);

  /* A rate whose gap is not a whole number of ns: each time is rounded on
   * its own, so no drift (t[3k] is exactly k seconds). */
  s = spec_of(IM_SCHED_CONSTANT, 3.0, 0, 3001, 1);
  CHECK_OK(im_sched_generate(&s, &t, &n));
  CHECK_EQ(n, 3001);
  CHECK_EQ(t[0], 0);
  CHECK_EQ(t[1], 333333333);
  CHECK_EQ(t[2], 666666667);
  CHECK_EQ(t[3], 1000000000);
  CHECK_EQ(t[3000], 1000000000000LL);
  /* The seed does not matter. */
  int64_t *u = NULL;
  size_t m = 0;
  s.seed = 99;
  CHECK_OK(im_sched_generate(&s, &u, &m));
  CHECK_EQ(m, n);
  CHECK(m == n && memcmp(t, u, n * sizeof *t) == 0);
  free(t);
  free(u);
}

/* Expected count of a ramp r0 -> r1 over D seconds in [a, b) seconds. */
static double ramp_expect(double r0, double r1, double D, double a, double b) {
  double k = (r1 - r0) / (2.0 * D);
  return r0 * (b - a) + k * (b * b - a * a);
}

static void check_ramp(double r0, double r1, uint64_t seed) {
  const double D = 100.0;
  struct im_sched_spec s = spec_of(IM_SCHED_RAMP, r0, (int64_t)(D * 1e9), 0, seed);
  s.rate_end = r1;
  int64_t *t = NULL;
  size_t n = 0;
  CHECK_OK(im_sched_generate(&s, &t, &n));
  CHECK(is_sorted(t, n));
  CHECK(n > 0 && t[n - 1] < s.duration_ns);
  /* Counts are Poisson: standard deviation sqrt(expected); allow 5 of them. */
  double e_all = ramp_expect(r0, r1, D, 0, D);
  double e_first = ramp_expect(r0, r1, D, 0, D / 10);
  double e_last = ramp_expect(r0, r1, D, 0.9 * D, D);
  double c_first = (double)count_in(t, n, 0, (int64_t)(D / 10 * 1e9));
  double c_last = (double)count_in(t, n, (int64_t)(0.9 * D * 1e9), s.duration_ns);
  CHECK_NEAR((double)n, e_all, 5 * sqrt(e_all));
  CHECK_NEAR(c_first, e_first, 5 * sqrt(e_first));
  CHECK_NEAR(c_last, e_last, 5 * sqrt(e_last));
  CHECK_NEAR(im_sched_rate_at(&s, 0), r0, 1e-9);
  CHECK_NEAR(im_sched_rate_at(&s, s.duration_ns / 2), (r0 + r1) / 2, 1e-9);
  CHECK_NEAR(im_sched_rate_at(&s, s.duration_ns * 2), r1, 1e-9);
  free(t);
}

static void test_ramp(void) {
  check_ramp(100.0, 1000.0, 3); /* first tenth ~1450, last ~9550 */
  check_ramp(1000.0, 100.0, 4); /* decreasing */
  check_ramp(300.0, 300.0, 5);  /* flat: a Poisson process */
  check_ramp(0.5, 2000.0, 6);   /* from nearly 0 */
}

/* vLLM's --ramp-up-strategy: the rate steps with the request index. */
static void test_vllm_ramp(void) {
  /* A flat ramp is the Poisson schedule of the same seed (to the ns). */
  struct im_sched_spec flat = spec_of(IM_SCHED_RAMP_REQ_EXP, 50.0, 0, 1000, 9);
  flat.rate_end = 50.0;
  struct im_sched_spec poi = spec_of(IM_SCHED_POISSON, 50.0, 0, 1000, 9);
  int64_t *a = NULL, *b = NULL;
  size_t na = 0, nb = 0;
  CHECK_OK(im_sched_generate(&flat, &a, &na));
  CHECK_OK(im_sched_generate(&poi, &b, &nb));
  CHECK_EQ(na, nb);
  int64_t worst = 0;
  for (size_t i = 0; i < na; i++)
    worst = llabs(a[i] - b[i]) > worst ? llabs(a[i] - b[i]) : worst;
  CHECK_INT(worst, <=, 1);
  free(a);
  free(b);
  /* Linear 10 -> 1000 over N: the gap before request i has mean 1/r_i, so
   * the mean gap of the first and last 5 % follow r at their centres. */
  for (int k = 0; k < 2; k++) {
    struct im_sched_spec s = spec_of(k ? IM_SCHED_RAMP_REQ_EXP : IM_SCHED_RAMP_REQ_LINEAR, 10.0,
                                     0, N_STAT, 3);
    s.rate_end = 1000.0;
    int64_t *t = NULL;
    size_t n = 0;
    CHECK_OK(im_sched_generate(&s, &t, &n));
    CHECK_EQ(n, N_STAT);
    CHECK(is_sorted(t, n));
    size_t w = N_STAT / 20;
    double first = (double)t[w] / 1e9 / (double)w;
    double last = (double)(t[n - 1] - t[n - 1 - w]) / 1e9 / (double)w;
    /* expected: mean of 1/r_i over each window */
    double ef = 0, el = 0;
    for (size_t i = 0; i < w; i++) {
      double p0 = (double)i / (N_STAT - 1), p1 = (double)(n - 1 - i) / (N_STAT - 1);
      ef += 1.0 / (k ? 10.0 * pow(100.0, p0) : 10.0 + 990.0 * p0);
      el += 1.0 / (k ? 10.0 * pow(100.0, p1) : 10.0 + 990.0 * p1);
    }
    /* 5,000 exponential gaps: the mean's standard error is 1.4 %; 6 %. */
    CHECK_REL(first, ef / (double)w, 0.06);
    CHECK_REL(last, el / (double)w, 0.06);
    free(t);
  }
  /* vLLM's checks. */
  struct im_sched_spec bad = spec_of(IM_SCHED_RAMP_REQ_LINEAR, 10.0, 0, 100, 1);
  bad.rate_end = 5.0;
  CHECK(im_sched_check(&bad) != NULL);
  bad.rate_end = 20.0;
  bad.max_requests = 0;
  bad.duration_ns = 1000000000;
  CHECK(im_sched_check(&bad) != NULL);
}

static void test_caps(void) {
  int64_t *t = NULL;
  size_t n = 0;
  /* Duration cap only: 10 s at 100/s, count Poisson(1000) (sd 32). */
  struct im_sched_spec s = spec_of(IM_SCHED_POISSON, 100.0, 10000000000LL, 0, 11);
  CHECK_OK(im_sched_generate(&s, &t, &n));
  CHECK_NEAR((double)n, 1000.0, 5 * sqrt(1000.0));
  CHECK(n > 0 && t[n - 1] < s.duration_ns);
  free(t);
  /* Request cap reached first. */
  s.max_requests = 50;
  CHECK_OK(im_sched_generate(&s, &t, &n));
  CHECK_EQ(n, 50);
  free(t);
  /* Both caps: the duration wins when it comes first. */
  s = spec_of(IM_SCHED_CONSTANT, 10.0, 1000000000, 1000, 0);
  CHECK_OK(im_sched_generate(&s, &t, &n));
  CHECK_EQ(n, 10);
  free(t);
  /* A gamma schedule respects both as well. */
  s = spec_of(IM_SCHED_GAMMA, 100.0, 2000000000, 0, 12);
  s.burstiness = 4.0;
  CHECK_OK(im_sched_generate(&s, &t, &n));
  CHECK(n > 0 && t[n - 1] < s.duration_ns);
  free(t);
  s.max_requests = 7;
  CHECK_OK(im_sched_generate(&s, &t, &n));
  CHECK_EQ(n, 7);
  free(t);
  /* A ramp cut by the request cap. */
  s = spec_of(IM_SCHED_RAMP, 100.0, 60000000000LL, 25, 13);
  s.rate_end = 200.0;
  CHECK_OK(im_sched_generate(&s, &t, &n));
  CHECK_EQ(n, 25);
  free(t);
}

static void test_seeds(void) {
  const enum im_sched_kind kinds[] = {IM_SCHED_POISSON, IM_SCHED_GAMMA, IM_SCHED_RAMP};
  for (size_t k = 0; k < 3; k++) {
    struct im_sched_spec s = spec_of(kinds[k], 200.0, 5000000000LL, 0, 1234);
    s.rate_end = 400.0;
    s.burstiness = 0.7;
    int64_t *a = NULL, *b = NULL, *c = NULL;
    size_t na = 0, nb = 0, nc = 0;
    CHECK_OK(im_sched_generate(&s, &a, &na));
    CHECK_OK(im_sched_generate(&s, &b, &nb));
    s.seed = 1235;
    CHECK_OK(im_sched_generate(&s, &c, &nc));
    CHECK_EQ(na, nb);
    CHECK(na == nb && memcmp(a, b, na * sizeof *a) == 0);
    CHECK(na > 0 && nc > 0);
    CHECK(na != nc || memcmp(a, c, na * sizeof *a) != 0);
    CHECK(is_sorted(a, na));
    CHECK(is_sorted(c, nc));
    free(a);
    free(b);
    free(c);
  }
}

/* --rate inf: a burst, every arrival at 0, as many as the request cap,
 * whatever the kind and the duration. */
static void test_burst(void) {
  enum im_sched_kind kinds[] = {IM_SCHED_POISSON, IM_SCHED_GAMMA, IM_SCHED_CONSTANT};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    struct im_sched_spec s = spec_of(kinds[k], INFINITY, 30 * (int64_t)1000000000, 7, 1);
    int64_t *t = NULL;
    size_t n = 0;
    CHECK_OK(im_sched_generate(&s, &t, &n));
    CHECK_EQ(n, 7);
    for (size_t i = 0; t && i < n; i++)
      CHECK_EQ(t[i], 0);
    free(t);
  }
  struct im_sched_spec s = spec_of(IM_SCHED_POISSON, INFINITY, 1000000000, 0, 1);
  int64_t *t = NULL;
  size_t n = 5;
  CHECK_EQ(im_sched_generate(&s, &t, &n), IM_INVAL); /* no count: no burst */
  CHECK(t == NULL && n == 0);
  CHECK(strstr(im_sched_check(&s), "request count") != NULL);
}

static void test_check(void) {
  struct im_sched_spec ok = spec_of(IM_SCHED_POISSON, 10.0, 1000000000, 0, 0);
  CHECK(im_sched_check(&ok) == NULL);
  struct im_sched_spec s = ok;
  s.rate = 0;
  CHECK(im_sched_check(&s) != NULL);
  s.rate = -5;
  CHECK(im_sched_check(&s) != NULL);
  s.rate = NAN;
  CHECK(im_sched_check(&s) != NULL);
  s.rate = INFINITY; /* a burst needs a request count */
  CHECK(im_sched_check(&s) != NULL);
  s.max_requests = 3;
  CHECK(im_sched_check(&s) == NULL);
  s.kind = IM_SCHED_RAMP;
  s.rate_end = 5;
  CHECK(im_sched_check(&s) != NULL); /* a burst cannot ramp */

  s = ok;
  s.kind = IM_SCHED_GAMMA;
  s.burstiness = 0;
  CHECK(im_sched_check(&s) != NULL);
  s.burstiness = -1;
  CHECK(im_sched_check(&s) != NULL);
  s.burstiness = 0.1;
  CHECK(im_sched_check(&s) == NULL);

  s = ok;
  s.kind = IM_SCHED_RAMP;
  s.rate_end = 0; /* not given */
  const char *msg = im_sched_check(&s);
  CHECK(msg != NULL && strstr(msg, "end rate") != NULL);
  s.rate_end = 20;
  CHECK(im_sched_check(&s) == NULL);
  s.duration_ns = 0;
  s.max_requests = 100;
  CHECK(im_sched_check(&s) != NULL); /* a ramp needs a duration */

  s = ok;
  s.duration_ns = 0;
  s.max_requests = 0;
  msg = im_sched_check(&s);
  CHECK(msg != NULL && strstr(msg, "duration") != NULL);
  s.max_requests = 10;
  CHECK(im_sched_check(&s) == NULL);
  s.duration_ns = -1;
  CHECK(im_sched_check(&s) != NULL);

  /* Allocation bounds. */
  s = ok;
  s.max_requests = IM_SCHED_MAX_ARRIVALS + 1;
  CHECK(im_sched_check(&s) != NULL);
  s = ok;
  s.rate = 1e6;
  s.duration_ns = 3600LL * 1000000000LL; /* 3.6e9 arrivals */
  CHECK(im_sched_check(&s) != NULL);
  s.max_requests = 1000; /* capped: fine */
  CHECK(im_sched_check(&s) == NULL);
  s.kind = (enum im_sched_kind)42;
  CHECK(im_sched_check(&s) != NULL);

  /* generate refuses a bad spec and leaves the outputs empty. */
  int64_t *t = (int64_t *)&ok;
  size_t n = 99;
  s = ok;
  s.rate = 0;
  CHECK_EQ(im_sched_generate(&s, &t, &n), IM_INVAL);
  CHECK(t == NULL);
  CHECK_EQ(n, 0);
}

static void test_length(void) {
  /* r = 0: exactly L. */
  int exact = 1;
  for (uint64_t i = 0; i < 1000; i++)
    exact &= im_sched_length(512, 0.0, 5, i) == 512;
  CHECK(exact);
  CHECK_EQ(im_sched_length(0, 0.0, 5, 0), 1); /* at least 1 */
  CHECK_EQ(im_sched_length(0, 0.5, 5, 0), 1);

  /* L = 1000, r = 0.5: integers 500..1500, mean 1000, sd 289; the sample
   * mean's standard error over N draws is 289/sqrt(N) = 0.91; tolerance 5. */
  uint32_t lo = UINT32_MAX, hi = 0;
  double sum = 0;
  for (uint64_t i = 0; i < N_STAT; i++) {
    uint32_t v = im_sched_length(1000, 0.5, 77, i);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
    sum += v;
  }
  CHECK_EQ(lo, 500); /* each of the 1001 values is expected ~100 times */
  CHECK_EQ(hi, 1500);
  CHECK_NEAR(sum / N_STAT, 1000.0, 5.0);

  /* vLLM's bounds come from double arithmetic: 100 * (1 + 0.1) is
   * 110.00000000000001, so ceil gives 111 (and 100 * 0.9 floors to 90). */
  lo = UINT32_MAX;
  hi = 0;
  for (uint64_t i = 0; i < 20000; i++) {
    uint32_t v = im_sched_length(100, 0.1, 78, i);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  CHECK_EQ(lo, 90);
  CHECK_EQ(hi, 111);

  /* Small L: lower bound clamped to 1. */
  int in = 1;
  for (uint64_t i = 0; i < 1000; i++) {
    uint32_t v = im_sched_length(1, 0.9, 1, i);
    in &= v >= 1 && v <= 2;
  }
  CHECK(in);
  /* Large L does not overflow. */
  uint32_t big = im_sched_length(UINT32_MAX, 0.5, 1, 1);
  CHECK(big >= UINT32_MAX / 2 - 1);

  /* Deterministic in (seed, index), independent of call order. */
  uint32_t a = im_sched_length(4096, 0.8, 9, 12345);
  (void)im_sched_length(4096, 0.8, 9, 1);
  CHECK_EQ(im_sched_length(4096, 0.8, 9, 12345), a);
  int differ = 0;
  for (uint64_t i = 0; i < 100; i++)
    differ += im_sched_length(4096, 0.8, 9, i) != im_sched_length(4096, 0.8, 10, i);
  CHECK(differ > 90);
}

int main(void) {
  test_poisson();
  test_gamma();
  test_constant();
  test_ramp();
  test_vllm_ramp();
  test_caps();
  test_seeds();
  test_check();
  test_burst();
  test_length();
  return CHECK_DONE();
}
