/* Time slices (analyze/timeslice.h) on hand-built records: a window of
 * 2.5 s in slices of 1 s (the last 0.5 s long).
 *   A: starts 0.1 s, chunks at 0.2, 0.4, 1.1 s, ends 1.1 s: TTFT 100 ms in
 *      slice 0; gaps 200 ms (slice 0) and 700 ms (slice 1); 2 tokens in
 *      slice 0, 1 in slice 1; completes in slice 1 (E2EL 1000 ms).
 *   B: starts 2.0 s, chunks at 2.2 and 2.5 s (the window's end, which the
 *      last slice holds): TTFT 200 ms, gap 300 ms, 2 tokens, E2EL 500 ms.
 *   C: failed: in no slice. */
#include <math.h>
#include <string.h>

#include "analyze/population.h"
#include "analyze/timeslice.h"
#include "check.h"

#define MS INT64_C(1000000)

static struct im_record rec(uint64_t id, int64_t start_ms, const uint32_t *us, uint32_t n) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.id = r.logical_id = id;
  r.attempt = 1;
  r.t_sched = r.t_sched_first = r.t_dispatch = r.t_start = r.t_send = start_ms * MS;
  r.http_status = 200;
  if (n) {
    r.chunk_us = (uint32_t *)us;
    r.n_chunks = n;
    r.t_first = r.t_start + (int64_t)us[0] * 1000;
    r.t_last = r.t_end = r.t_start + (int64_t)us[n - 1] * 1000;
    r.output_tokens = n;
  }
  return r;
}

int main(void) {
  static const uint32_t ua[3] = {100000, 300000, 1000000}, ub[2] = {200000, 500000};
  struct im_record r[3] = {rec(1, 100, ua, 3), rec(2, 2000, ub, 2), rec(3, 500, NULL, 0)};
  r[2].error = IM_EC_HTTP_5XX;
  r[2].http_status = 500;
  r[2].t_end = 600 * MS;
  struct im_population pop;
  CHECK_OK(im_population_build(r, 3, 0, 2500 * MS, &pop));
  struct im_timeslices t;
  /* The width from the window's length: about 12 slices, 1-2-5 steps,
   * 100 ms to the cap. */
  CHECK_EQ(im_timeslice_auto_ns(10000 * MS, 10000 * MS), 1000 * MS);
  CHECK_EQ(im_timeslice_auto_ns(15000 * MS, 10000 * MS), 2000 * MS);
  CHECK_EQ(im_timeslice_auto_ns(3000 * MS, 10000 * MS), 500 * MS);
  CHECK_EQ(im_timeslice_auto_ns(500 * MS, 10000 * MS), 100 * MS);
  CHECK_EQ(im_timeslice_auto_ns(0, 10000 * MS), 100 * MS);
  CHECK_EQ(im_timeslice_auto_ns(50000 * MS, 10000 * MS), 5000 * MS);
  CHECK_EQ(im_timeslice_auto_ns(3600000 * MS, 10000 * MS), 10000 * MS);
  CHECK_EQ(im_timeslices_compute(&pop, 0, &t), IM_INVAL);
  CHECK_OK(im_timeslices_compute(&pop, 1000 * MS, &t));
  CHECK_EQ(t.n, 3);
  CHECK_NEAR(t.slice_s, 1.0, 0);
  if (t.n == 3) {
    CHECK_NEAR(t.v[2].start_s, 2.0, 1e-12);
    CHECK_NEAR(t.v[2].end_s, 2.5, 1e-12);
    CHECK_EQ(t.v[0].completed, 0);
    CHECK_EQ(t.v[1].completed, 1);
    CHECK_EQ(t.v[2].completed, 1);
    CHECK_NEAR(t.v[2].request_throughput, 2.0, 1e-12); /* 1 in 0.5 s */
    CHECK_EQ(t.v[0].output_tokens, 2);
    CHECK_EQ(t.v[1].output_tokens, 1);
    CHECK_EQ(t.v[2].output_tokens, 2);
    CHECK_NEAR(t.v[2].output_throughput, 4.0, 1e-12);
    CHECK_EQ(t.v[0].n[IM_TS_TTFT], 1);
    CHECK_NEAR(t.v[0].p50_ms[IM_TS_TTFT], 100.0, 1e-9);
    CHECK_NEAR(t.v[0].p99_ms[IM_TS_ITL], 200.0, 1e-9);
    CHECK_NEAR(t.v[1].p50_ms[IM_TS_ITL], 700.0, 1e-9);
    CHECK(isnan(t.v[1].p50_ms[IM_TS_TTFT]));
    CHECK_NEAR(t.v[1].p90_ms[IM_TS_E2EL], 1000.0, 1e-9);
    CHECK_NEAR(t.v[2].p50_ms[IM_TS_TTFT], 200.0, 1e-9);
    CHECK_NEAR(t.v[2].p50_ms[IM_TS_ITL], 300.0, 1e-9);
    CHECK_NEAR(t.v[2].p50_ms[IM_TS_E2EL], 500.0, 1e-9);
  }
  im_timeslices_cleanup(&t);
  /* A window of no length: no slice. */
  im_population_cleanup(&pop);
  CHECK_OK(im_population_build(r, 3, 1000, 1000, &pop));
  CHECK_OK(im_timeslices_compute(&pop, 1000 * MS, &t));
  CHECK_EQ(t.n, 0);
  im_timeslices_cleanup(&t);
  im_population_cleanup(&pop);
  return CHECK_DONE();
}
