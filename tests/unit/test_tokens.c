/* Segmented sampling and stalls (analyze/tokens.h), on hand-built records
 * whose answers are worked out next to each check. */
#include <math.h>
#include <string.h>

#include "analyze/tokens.h"
#include "check.h"

#define MS INT64_C(1000000)

/* A completed request starting at t0 whose chunk i arrives at us[i] µs. */
static struct im_record req(uint64_t id, int64_t t0, uint32_t *us, uint32_t n, uint32_t prompt) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.id = r.logical_id = id;
  r.attempt = 1;
  r.t_sched = r.t_dispatch = r.t_start = t0;
  r.chunk_us = us;
  r.n_chunks = n;
  r.t_first = t0 + (int64_t)us[0] * 1000;
  r.t_last = t0 + (int64_t)us[n - 1] * 1000;
  r.t_end = r.t_last;
  r.output_tokens = n;
  r.prompt_tokens = prompt;
  return r;
}

/* Chunks every 10 ms from 100 ms, with one gap of `stall_ms` before chunk
 * `at` (0: none). */
static void evenly(uint32_t *us, uint32_t n, uint32_t at, uint32_t stall_ms) {
  uint32_t t = 100000;
  for (uint32_t i = 0; i < n; i++) {
    if (i && i == at)
      t += stall_ms * 1000 - 10000;
    us[i] = t;
    t += 10000;
  }
}

static void compute(struct im_record *r, size_t n, struct im_tokens *t) {
  struct im_population pop;
  struct im_tokens_config c;
  im_tokens_config_default(&c);
  CHECK_OK(im_population_build(r, n, 0, INT64_C(1) << 40, &pop));
  CHECK_OK(im_tokens_compute(&pop, &c, t));
  im_population_cleanup(&pop);
}

/* Windows: 17 gaps of 10 ms, w 8, s 4: windows at 0, 4, 8 (12 + 8 > 17):
 * three, each mean 10 and max 10. */
static void test_windows(void) {
  uint32_t us[18];
  evenly(us, 18, 0, 0);
  struct im_record r = req(1, 0, us, 18, 100);
  struct im_tokens t;
  compute(&r, 1, &t);
  CHECK_EQ(t.requests, 1);
  CHECK_EQ(t.gaps, 17);
  CHECK_EQ(t.windows, 3);
  CHECK_EQ(im_hist_min(&t.win_mean), 10 * MS);
  CHECK_EQ(im_hist_max(&t.win_max), 10 * MS);
  CHECK_EQ(t.stalls, 0);
  CHECK_EQ(t.peak_position, -1);
  CHECK(isnan(t.aligned_share));
  im_tokens_cleanup(&t);
  /* Fewer gaps than a window: no window; one chunk: no gap at all. */
  struct im_record s = req(2, 0, us, 5, 100), u = req(3, 0, us, 1, 100);
  struct im_record both[2] = {s, u};
  compute(both, 2, &t);
  CHECK_EQ(t.windows, 0);
  CHECK_EQ(t.requests, 1);
  CHECK_EQ(t.gaps, 4);
  im_tokens_cleanup(&t);
}

/* A 60 ms gap before chunk 100 of a 10 ms stream: 60 > 5 x 10, a stall at
 * token index 100 (bucket [64, 128)), context 4,000 + 100 = 4,100 tokens
 * (the 4-8K bucket). A 40 ms gap is not one (40 < 50). */
static void test_stall_position(void) {
  uint32_t a[200], b[200];
  evenly(a, 200, 100, 60);
  evenly(b, 200, 150, 40);
  struct im_record r[2] = {req(1, 0, a, 200, 4000), req(2, 0, b, 200, 10)};
  struct im_tokens t;
  compute(r, 2, &t);
  CHECK_EQ(t.stalls, 1);
  CHECK_EQ(t.stalled_requests, 1);
  CHECK_EQ(t.by_position[100 / IM_TOKENS_POS_WIDTH], 1);
  /* The exact index, not its 64-token bucket's start. */
  CHECK_EQ(t.peak_position, 100);
  CHECK_EQ(t.peak_stalls, 1);
  CHECK_EQ(t.peak_spread, 0);
  /* 200 tokens in 64 bins: width 4 (2 x 64 < 200 <= 4 x 64); index 100 in bin 25. */
  CHECK_EQ(t.hist_width, 4);
  CHECK_EQ(t.by_index[25], 1);
  CHECK_EQ(t.by_context[1], 1);
  /* The window holding the stall has a max of 60 ms. */
  CHECK_EQ(im_hist_max(&t.win_max), 60 * MS);
  /* Alone in time: not aligned. */
  CHECK_EQ(t.aligned, 0);
  CHECK_NEAR(t.aligned_share, 0.0, 1e-12);
  im_tokens_cleanup(&t);
}

/* A server hiccup: three streams started at different times stall at the
 * same instant (their stalls end together) -> all three aligned; a fourth
 * stalls 50 ms later alone -> not aligned. Tolerance max(2 ms, 10 % of the
 * 10 ms median gap) = 2 ms. */
static void test_alignment(void) {
  uint32_t us[4][100];
  struct im_record r[4];
  /* Stream k starts at k*3 ms; its stall before chunk 50 - k ends at
   * start + 100 ms + (49 - k) * 10 ms + 80 ms. For k = 0..2 choose the
   * start so every stall ends at the same run time. */
  for (int k = 0; k < 3; k++) {
    evenly(us[k], 100, (uint32_t)(50 - k), 80);
    int64_t end_rel = (int64_t)us[k][50 - k] * 1000;
    r[k] = req((uint64_t)k + 1, 2000 * MS - end_rel, us[k], 100, 10);
  }
  evenly(us[3], 100, 50, 80);
  r[3] = req(4, 2050 * MS - (int64_t)us[3][50] * 1000, us[3], 100, 10);
  struct im_tokens t;
  compute(r, 4, &t);
  CHECK_EQ(t.stalls, 4);
  CHECK_EQ(t.align_tol_ns, 2 * MS);
  CHECK_EQ(t.aligned, 3);
  CHECK_NEAR(t.aligned_share, 0.75, 1e-12);
  im_tokens_cleanup(&t);
}

/* Localisation: eight requests stall at token 50, 50, 49, 51, 50, 52, 50,
 * 50 and two elsewhere (token 10 and 150): the densest 5-token window is
 * [48, 52] or [49, 53]... holding the eight; its median index is 50; eight
 * within +-2 of 50, the farthest 2 away. "8 of 10 stalls at token 50 +- 2". */
static void test_localise(void) {
  static const uint32_t at[10] = {50, 50, 49, 51, 50, 52, 50, 50, 10, 150};
  uint32_t us[10][300];
  struct im_record r[10];
  for (int k = 0; k < 10; k++) {
    evenly(us[k], 300, at[k], 90);
    /* Apart in time (1 s each): no alignment needed here. */
    r[k] = req((uint64_t)k + 1, (int64_t)k * 1000 * MS, us[k], 300, 10);
  }
  struct im_tokens t;
  compute(r, 10, &t);
  CHECK_EQ(t.stalls, 10);
  CHECK_EQ(t.peak_position, 50);
  CHECK_EQ(t.peak_stalls, 8);
  CHECK_EQ(t.peak_spread, 2);
  /* 300 tokens over 64 bins: width 8. */
  CHECK_EQ(t.hist_width, 8);
  CHECK_EQ(t.by_index[1], 1);  /* 10 */
  CHECK_EQ(t.by_index[6], 8);  /* 48..55 */
  CHECK_EQ(t.by_index[18], 1); /* 150 */
  char buf[96];
  im_tokens_peak_text(&t, buf, sizeof buf);
  CHECK_STR(buf, "8 of 10 stalls at token 50 +- 2");
  im_tokens_cleanup(&t);
  /* Two clusters, the later one bigger: the peak follows the count, not
   * the first bucket. */
  static const uint32_t at2[5] = {5, 6, 200, 200, 201};
  for (int k = 0; k < 5; k++) {
    evenly(us[k], 300, at2[k], 90);
    r[k] = req((uint64_t)k + 1, (int64_t)k * 1000 * MS, us[k], 300, 10);
  }
  compute(r, 5, &t);
  CHECK_EQ(t.peak_position, 200);
  CHECK_EQ(t.peak_stalls, 3);
  CHECK_EQ(t.peak_spread, 1);
  im_tokens_cleanup(&t);
}

/* Bad configurations are refused; zero-variance streams have no stall. */
static void test_edges(void) {
  struct im_population pop;
  struct im_tokens t;
  struct im_tokens_config c = {.window = 0, .stride = 4, .stall_k = 5};
  CHECK_OK(im_population_build(NULL, 0, 0, 0, &pop));
  CHECK_EQ(im_tokens_compute(&pop, &c, &t), IM_INVAL);
  c = (struct im_tokens_config){.window = 8, .stride = 4, .stall_k = 1};
  CHECK_EQ(im_tokens_compute(&pop, &c, &t), IM_INVAL);
  im_tokens_config_default(&c);
  CHECK_OK(im_tokens_compute(&pop, &c, &t));
  CHECK_EQ(t.requests, 0);
  CHECK_EQ(t.median_gap_ns, 0);
  im_tokens_cleanup(&t);
  im_population_cleanup(&pop);
}

/* The host's pauses: 40 chunks 10 ms apart from t0 = 1 s, a 95 ms gap
 * before chunk 20 (it ends at 1 s + 100 + 19*10 + 95 ms = 1.385 s, limit
 * 5 x 10 = 50 ms) and a 150 ms gap before chunk 30. The probe saw one stall
 * 50 ms late waking at 1.36 s (inside the first gap: 95 - 50 = 45 <= 50, the
 * host's) and none in the second: one stall, one host stall. Without the
 * probe both are stalls; a probe stall of 30 ms does not explain the 95 ms
 * gap (65 > 50). */
static void test_host_stalls(void) {
  uint32_t us[40];
  evenly(us, 40, 20, 95);
  for (uint32_t i = 30; i < 40; i++)
    us[i] += 140000; /* 150 ms before chunk 30 */
  struct im_record r = req(1, 1000 * MS, us, 40, 100);
  struct im_population pop;
  struct im_tokens_config c;
  struct im_tokens t;
  im_tokens_config_default(&c);
  CHECK_OK(im_population_build(&r, 1, 0, INT64_C(1) << 40, &pop));
  CHECK_OK(im_tokens_compute(&pop, &c, &t));
  CHECK_EQ(t.stalls, 2);
  CHECK_EQ(t.host_stalls, 0);
  im_tokens_cleanup(&t);
  struct im_hostlat h;
  im_hostlat_init(&h, MS);
  im_hostlat_add(&h, 1360 * MS, 50 * MS);
  c.host = &h;
  CHECK_OK(im_tokens_compute(&pop, &c, &t));
  CHECK_EQ(t.stalls, 1);
  CHECK_EQ(t.host_stalls, 1);
  CHECK_EQ(t.peak_position, 30); /* the stall left is the server's */
  im_tokens_cleanup(&t);
  im_hostlat_cleanup(&h);
  im_hostlat_init(&h, MS);
  im_hostlat_add(&h, 1360 * MS, 30 * MS);
  c.host = &h;
  CHECK_OK(im_tokens_compute(&pop, &c, &t));
  CHECK_EQ(t.stalls, 2);
  CHECK_EQ(t.host_stalls, 0);
  im_tokens_cleanup(&t);
  im_hostlat_cleanup(&h);
  im_population_cleanup(&pop);
}

int main(void) {
  test_windows();
  test_host_stalls();
  test_stall_position();
  test_alignment();
  test_localise();
  test_edges();
  return CHECK_DONE();
}
