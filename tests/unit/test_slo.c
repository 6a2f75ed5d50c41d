/* The early-stopping minimum that --min-requests auto sizes a run by
 * (analyze/slo.h im_slo_min_requests), against MLPerf LoadGen's published
 * minimum query counts and a brute-force search. */
#include <math.h>

#include "analyze/slo.h"
#include "check.h"

int main(void) {
  /* LoadGen's figures with none over the limit: 44 for p90, 459 for p99. */
  CHECK_EQ(im_slo_min_requests(0.9), 44);
  CHECK_EQ(im_slo_min_requests(0.99), 459);
  /* Brute force: the smallest n with target^n <= 0.01, by repeated
   * multiplication (no logarithm). */
  const double targets[] = {0.5, 0.75, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999};
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
    double p = 1.0;
    int64_t n = 0;
    while (p > 0.01 * (1 + 1e-12)) {
      p *= targets[i];
      n++;
    }
    if (im_slo_min_requests(targets[i]) != n)
      IM__FAIL("target %g: %lld, brute force %lld", targets[i],
               (long long)im_slo_min_requests(targets[i]), (long long)n);
  }
  CHECK_EQ(im_slo_min_requests(0.95), 90); /* 0.95^90 = 0.0099 <= 0.01 < 0.95^89 */
  /* No quantile: no minimum. */
  CHECK_EQ(im_slo_min_requests(1.0), 0);
  CHECK_EQ(im_slo_min_requests(0.0), 0);
  CHECK_EQ(im_slo_min_requests(NAN), 0);
  return CHECK_DONE();
}
