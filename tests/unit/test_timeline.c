/* The slowest requests' timeline (analyze/timeline.h) on hand-built
 * records: 25 completed requests of 10 chunks 10 ms apart from 100 ms after
 * their start, request i starting at i seconds with E2EL 190 + i ms (its
 * last gap longer by i ms), so the 20 slowest are 25 down to 6; request 25
 * also has one 60 ms gap before its chunk 5 (a stall: 60 > 5 x 10), and a
 * failed request with the longest time of all is not ranked. */
#include <math.h>
#include <string.h>

#include "analyze/timeline.h"
#include "check.h"

#define MS INT64_C(1000000)
#define SEC INT64_C(1000000000)

static uint32_t chunks[27][10]; /* by id */

static struct im_record req(uint64_t id, int64_t t0, uint32_t stall_before) {
  struct im_record r;
  memset(&r, 0, sizeof r);
  im_record_reset(&r);
  r.id = r.logical_id = id;
  r.attempt = 1;
  r.t_sched = t0 - 2 * MS;
  r.t_sched_first = r.t_sched;
  r.t_dispatch = t0 - 2 * MS;
  r.t_start = t0;
  r.t_send = t0 + 1 * MS;
  r.http_status = 200;
  uint32_t *us = chunks[id], t = 100000;
  for (uint32_t i = 0; i < 10; i++) {
    if (i == 9)
      t += (uint32_t)id * 1000;
    if (stall_before && i == stall_before)
      t += 50000;
    us[i] = t;
    t += 10000;
  }
  r.chunk_us = us;
  r.n_chunks = 10;
  r.t_first = t0 + (int64_t)us[0] * 1000;
  r.t_last = t0 + (int64_t)us[9] * 1000;
  r.t_end = r.t_last;
  r.output_tokens = 10;
  return r;
}

int main(void) {
  struct im_record r[26];
  for (uint64_t i = 1; i <= 25; i++)
    r[i - 1] = req(i, (int64_t)i * SEC, i == 25 ? 5 : 0);
  r[25] = req(26, 26 * SEC, 0);
  r[25].error = IM_EC_RESET; /* failed: not ranked */
  r[25].t_last += 10 * SEC;
  struct im_population pop;
  CHECK_OK(im_population_build(r, 26, 0, 100 * SEC, &pop));
  struct im_timeline tl;
  CHECK(im_timeline_compute(&pop, 5, 1.0, &tl) == IM_INVAL);
  CHECK_OK(im_timeline_compute(&pop, 50, 5.0, &tl));
  CHECK_EQ(tl.completed, 25);
  CHECK_EQ(tl.n, IM_TIMELINE_REQUESTS); /* 50 asked, at most 20 kept */
  /* Slowest first: 25 (E2EL 90 + 25 + 50 + 100 ms = 265 ms), then 24 ... 6. */
  CHECK_EQ(tl.req[0].r->logical_id, 25);
  CHECK_EQ(tl.req[0].e2el_ns, 265 * MS);
  for (size_t i = 1; i < tl.n; i++)
    CHECK_EQ(tl.req[i].r->logical_id, 25 - i);
  CHECK_EQ(tl.req[1].e2el_ns, (90 + 24 + 100) * MS);
  /* Request 25's stall: the gap from chunk 4 (140 ms) to chunk 5 (200 ms),
   * 5 tokens received when it ended; its last gap (35 ms) is below 5 x 10. */
  CHECK_EQ(tl.req[0].n_stalls, 1);
  CHECK_EQ(tl.req[0].n_listed, 1);
  CHECK_EQ(tl.req[0].stalls[0].from_ns, 25 * SEC + 140 * MS);
  CHECK_EQ(tl.req[0].stalls[0].to_ns, 25 * SEC + 200 * MS);
  CHECK_EQ(tl.req[0].stalls[0].tokens, 5);
  CHECK_EQ(tl.req[1].n_stalls, 0);
  /* Fewer wanted than completed; none wanted. */
  CHECK_OK(im_timeline_compute(&pop, 3, 5.0, &tl));
  CHECK_EQ(tl.n, 3);
  CHECK_EQ(tl.req[2].r->logical_id, 23);
  CHECK_OK(im_timeline_compute(&pop, 0, 5.0, &tl));
  CHECK_EQ(tl.n, 0);
  CHECK_EQ(tl.completed, 25);
  im_population_cleanup(&pop);
  return CHECK_DONE();
}
