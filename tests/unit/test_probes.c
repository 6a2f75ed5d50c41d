/* Probe figures (analyze/probes.h) on hand-built probe records: latencies
 * 10, 10, ..., 10 ms (17 probes), 60 and 100 ms and one failed; p50 10 ms,
 * so with k = 5 the stalls are the probes above 50 ms: the 60 and 100 ms
 * ones, listed at their instants. A probe outside the window and a measured
 * request count for nothing. */
#include <math.h>
#include <string.h>

#include "analyze/population.h"
#include "analyze/probes.h"
#include "check.h"

#define MS INT64_C(1000000)
#define SEC INT64_C(1000000000)

static struct im_record probe(uint64_t id, int64_t t, int64_t lat_ms, bool fail) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.id = r.logical_id = (UINT64_C(1) << 52) + id;
  r.attempt = 1;
  r.kind = IM_KIND_PROBE;
  r.t_sched = r.t_sched_first = r.t_dispatch = r.t_start = r.t_send = t;
  r.t_end = t + lat_ms * MS;
  r.requested_tokens = 1;
  if (fail) {
    r.error = IM_EC_HTTP_5XX;
    r.http_status = 503;
  } else {
    r.http_status = 200;
  }
  return r;
}

int main(void) {
  struct im_record r[22];
  size_t n = 0;
  for (int i = 0; i < 17; i++, n++)
    r[n] = probe(n + 1, (int64_t)i * 100 * MS + SEC, 10, false);
  r[n] = probe(n + 1, 3 * SEC, 60, false), n++;
  r[n] = probe(n + 1, 4 * SEC, 100, false), n++;
  r[n] = probe(n + 1, 5 * SEC, 10, true), n++;
  r[n] = probe(n + 1, 20 * SEC, 500, false), n++; /* after the window */
  struct im_record m;
  memset(&m, 0, sizeof m);
  im_record_reset(&m);
  m.id = m.logical_id = 1;
  m.attempt = 1;
  m.t_sched = m.t_sched_first = m.t_dispatch = m.t_start = 2 * SEC;
  r[n] = m, n++;

  struct im_population pop;
  CHECK_OK(im_population_build(r, n, 0, 10 * SEC, &pop));
  struct im_probes p;
  CHECK_OK(im_probes_compute(&pop, 5.0, &p));
  CHECK_EQ(p.sent, 20);
  CHECK_EQ(p.failed, 1);
  CHECK_NEAR(p.p50_ms, 10.0, 1e-9);
  CHECK_NEAR(p.max_ms, 100.0, 1e-9);
  /* p99 of 19 sorted values, linear: rank 0.99 * 18 = 17.82 between 60 and
   * 100: 60 + 0.82 * 40 = 92.8. */
  CHECK_NEAR(p.p99_ms, 92.8, 1e-9);
  CHECK_EQ(p.stalls, 2);
  CHECK_EQ(p.n_listed, 2);
  CHECK_NEAR(p.stall_share, 2.0 / 19.0, 1e-12);
  bool at3 = false, at4 = false;
  for (size_t i = 0; i < p.n_listed; i++) {
    at3 |= p.stall_at_s[i] == 3.0 && p.stall_ms[i] == 60.0;
    at4 |= p.stall_at_s[i] == 4.0 && p.stall_ms[i] == 100.0;
  }
  CHECK(at3 && at4);
  im_population_cleanup(&pop);

  /* No probe: zero counts, NaN figures. */
  CHECK_OK(im_population_build(&m, 1, 0, 10 * SEC, &pop));
  CHECK_OK(im_probes_compute(&pop, 5.0, &p));
  CHECK_EQ(p.sent, 0);
  CHECK(isnan(p.p50_ms) && isnan(p.stall_share));
  im_population_cleanup(&pop);
  return CHECK_DONE();
}
