/* Speed of the histogram's hot paths: ns per im_hist_record and per
 * percentile query, on latency-like values (log-normal, ~1 us .. ~10 s).
 *
 * Build and run from the repository root:
 *   cmake --build build --target hist_speed && build/bench/hist_speed
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/hist.h"
#include "core/rng.h"

#define N_VALUES (1 << 20)
#define ROUNDS 20
#define QUERIES 2000

int main(void) {
  struct im_hist h;
  if (im_hist_init_default(&h) != IM_OK)
    return 1;
  int64_t *values = malloc(N_VALUES * sizeof *values);
  if (!values)
    return 1;
  struct im_rng rng;
  im_rng_seed(&rng, 1);
  for (int i = 0; i < N_VALUES; i++) /* median ~3 ms, heavy right tail */
    values[i] = (int64_t)exp(15.0 + 2.0 * im_rng_normal(&rng));

  int64_t t0 = im_now_ns();
  int64_t kept = 0;
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < N_VALUES; i++)
      kept += im_hist_record(&h, values[i]);
  int64_t t1 = im_now_ns();
  double rec_ns = (double)(t1 - t0) / ((double)ROUNDS * N_VALUES);

  /* Single percentile queries, spread over p so that the scan length varies. */
  volatile int64_t sink = 0;
  t0 = im_now_ns();
  for (int q = 0; q < QUERIES; q++)
    sink += im_hist_percentile(&h, (double)(q % 1000) / 1000.0);
  t1 = im_now_ns();
  double pct_ns = (double)(t1 - t0) / QUERIES;

  /* p50 and p99.9 alone. */
  t0 = im_now_ns();
  for (int q = 0; q < QUERIES; q++)
    sink += im_hist_percentile(&h, 0.5);
  t1 = im_now_ns();
  double p50_ns = (double)(t1 - t0) / QUERIES;
  t0 = im_now_ns();
  for (int q = 0; q < QUERIES; q++)
    sink += im_hist_percentile(&h, 0.999);
  t1 = im_now_ns();
  double p999_ns = (double)(t1 - t0) / QUERIES;

  /* The report's set in one pass. */
  const double ps[] = {0.5, 0.9, 0.95, 0.99, 0.999};
  int64_t out[5];
  t0 = im_now_ns();
  for (int q = 0; q < QUERIES; q++) {
    if (im_hist_percentiles(&h, ps, out, 5) != IM_OK)
      return 1;
    sink += out[4];
  }
  t1 = im_now_ns();
  double set_ns = (double)(t1 - t0) / QUERIES;
  int64_t checksum = sink; /* the queries' results are used: not optimised away */
  (void)checksum;

  printf("buckets %d, values %lld (kept %lld, above %lld)\n", (int)h.bucket_count,
         (long long)ROUNDS * N_VALUES, (long long)kept, (long long)h.above);
  printf("record:                 %.2f ns/value\n", rec_ns);
  printf("percentile, p spread:   %.0f ns/query\n", pct_ns);
  printf("percentile, p50:        %.0f ns/query\n", p50_ns);
  printf("percentile, p99.9:      %.0f ns/query\n", p999_ns);
  printf("percentiles (5, 1 pass): %.0f ns/query\n", set_ns);
  printf("p50 %lld ns, p99 %lld ns, p99.9 %lld ns\n", (long long)out[0], (long long)out[3],
         (long long)out[4]);
  free(values);
  im_hist_cleanup(&h);
  return 0;
}
