/* Batch means within one run (analyze/batch.h), worked by hand. */
#include <math.h>
#include <string.h>

#include "analyze/batch.h"
#include "check.h"
#include "core/stats.h"

#define MS INT64_C(1000000)
#define SEC INT64_C(1000000000)
#define N 100

static void test_count(void) {
  CHECK_EQ(im_batch_count(0), 0);
  CHECK_EQ(im_batch_count(39), 19); /* below IM_BATCH_MIN: not computed */
  CHECK_EQ(im_batch_count(40), 20);
  CHECK_EQ(im_batch_count(51), 25);
  CHECK_EQ(im_batch_count(100000), 25);
}

static void test_ci_of(void) {
  /* 1 .. 20: mean 10.5, s^2 = 20 * 21 / 12 = 35, t(0.975, 19) = 2.093024054,
   * half = 2.093024054 * sqrt(35 / 20). */
  double v[20];
  for (int i = 0; i < 20; i++)
    v[i] = i + 1;
  struct im_batch_ci c;
  im_batch_ci_of(v, 20, true, &c);
  CHECK(c.ok);
  CHECK_EQ(c.batches, 20);
  CHECK_NEAR(c.mean, 10.5, 1e-12);
  CHECK_NEAR(c.half, 2.093024054408 * sqrt(35.0 / 20.0), 1e-9);
  CHECK_NEAR(c.lo, 10.5 - c.half, 1e-12);
  CHECK_NEAR(c.rel_half, c.half / 10.5, 1e-12);
  /* Drift: Welch on the logs of 1..10 against 11..20. */
  double a[10], b[10];
  for (int i = 0; i < 10; i++) {
    a[i] = log(i + 1.0);
    b[i] = log(i + 11.0);
  }
  struct im_stats_welch w;
  CHECK_OK(im_stats_welch(a, 10, b, 10, 0.95, &w));
  CHECK(c.drift_judged);
  CHECK_NEAR(c.drift_ratio, exp(-w.diff), 1e-12);
  CHECK_NEAR(c.drift_p, w.p, 1e-15);
  CHECK(c.drift_p < 0.05 && c.drift_ratio > 3);
  /* Without the drift test; one batch: nothing. */
  im_batch_ci_of(v, 20, false, &c);
  CHECK(c.ok && !c.drift_judged && isnan(c.drift_p));
  im_batch_ci_of(v, 1, true, &c);
  CHECK(!c.ok && isnan(c.mean));
  /* Constant halves: exact. */
  double k[20];
  for (int i = 0; i < 20; i++)
    k[i] = i < 10 ? 4.0 : 5.0;
  im_batch_ci_of(k, 20, true, &c);
  CHECK(c.drift_judged && c.drift_p == 0.0);
  CHECK_NEAR(c.drift_ratio, 1.25, 1e-12);
}

static uint32_t chunks[5] = {0, 10000, 20000, 30000, 40000};

/* Request i scheduled at i * 100 ms (window [0, 10 s)), TTFT ttft, 5 tokens
 * 10 ms apart (TPOT 10 ms, E2EL ttft + 40 ms). */
static struct im_record rec(uint64_t i, int64_t ttft) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.id = r.logical_id = i + 1;
  r.attempt = 1;
  r.t_sched = r.t_sched_first = r.t_dispatch = r.t_start = r.t_send = (int64_t)i * 100 * MS;
  r.t_first = r.t_answer = r.t_start + ttft;
  r.t_last = r.t_end = r.t_first + 40 * MS;
  r.http_status = 200;
  r.output_tokens = 5;
  r.kind = IM_KIND_MEASURED;
  r.chunk_us = chunks;
  r.n_chunks = 5;
  return r;
}

static void test_population(void) {
  static struct im_record r[N];
  /* TTFT 50, 52, 54, 56 ms repeating: no drift. */
  for (int i = 0; i < N; i++)
    r[i] = rec((uint64_t)i, (50 + 2 * (i % 4)) * MS);
  struct im_population pop;
  struct im_batch_means bm;
  CHECK_OK(im_population_build(r, N, 0, 10 * SEC, &pop));
  CHECK_OK(im_batch_means_compute(&pop, &bm));
  CHECK_EQ(bm.requests, N);
  /* 100 requests: 25 batches of 4, each {50, 52, 54, 56}: median 52
   * (nearest rank 2), zero spread. */
  const struct im_batch_ci *t = &bm.fig[IM_BF_TTFT_P50];
  CHECK(t->ok);
  CHECK_EQ(t->batches, 25);
  CHECK_NEAR(t->mean, 52.0, 1e-9);
  CHECK_NEAR(t->half, 0.0, 1e-9);
  CHECK(t->drift_judged && t->drift_p == 1.0);
  CHECK_NEAR(bm.fig[IM_BF_TPOT_P50].mean, 10.0, 1e-9);
  CHECK_NEAR(bm.fig[IM_BF_E2EL_P50].mean, 92.0, 1e-9);
  /* Throughput: completions (t_last) in 25 slices of 0.4 s: requests finish
   * at i * 0.1 s + ~0.095 s, 4 per slice: 10 req/s, exactly. */
  const struct im_batch_ci *q = &bm.fig[IM_BF_THROUGHPUT];
  CHECK(q->ok && !q->drift_judged);
  CHECK_NEAR(q->mean, 10.0, 1e-9);
  CHECK_NEAR(q->half, 0.0, 1e-9);
  im_population_cleanup(&pop);

  /* TTFT grows by half in the second half of the window: drift. */
  for (int i = N / 2; i < N; i++)
    r[i] = rec((uint64_t)i, (75 + 3 * (i % 4)) * MS);
  CHECK_OK(im_population_build(r, N, 0, 10 * SEC, &pop));
  CHECK_OK(im_batch_means_compute(&pop, &bm));
  t = &bm.fig[IM_BF_TTFT_P50];
  /* Batches 0-11 median 52, 12 holds requests 48-51 (50, 52, 75, 78 -> 52),
   * 13-24 median 78: halves 0-11 (12 batches) vs 12-24 (13). */
  CHECK(t->drift_judged && t->drift_p < 0.05);
  double want = exp((log(52.0) + 12 * log(78.0)) / 13 - log(52.0));
  CHECK_NEAR(t->drift_ratio, want, 1e-9);
  im_population_cleanup(&pop);

  /* Too few requests: 30 -> 15 batches, nothing computed. */
  CHECK_OK(im_population_build(r, 30, 0, 3 * SEC, &pop));
  CHECK_OK(im_batch_means_compute(&pop, &bm));
  CHECK_EQ(bm.requests, 30);
  CHECK(!bm.fig[IM_BF_TTFT_P50].ok && !bm.fig[IM_BF_THROUGHPUT].ok);
  im_population_cleanup(&pop);
}

int main(void) {
  test_count();
  test_ci_of();
  test_population();
  return CHECK_DONE();
}
