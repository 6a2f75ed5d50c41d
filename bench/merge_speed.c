/* What rank 0 pays per histogram when it merges N ranks (docs/distributed.md):
 * the bytes of one histogram in its on-disk form (record/hist_json.h), the
 * time to parse it back (json_loads + im_hist_from_json) and the time to add
 * it into the merged one (im_hist_merge), for latency-like histograms of
 * 1K, 100K and 10M values; then the totals for 100 and 1,000 ranks with the
 * 11 histograms of a stage.
 *
 * Build and run from the repository root:
 *   cmake --build build --target merge_speed && build/bench/merge_speed
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/hist.h"
#include "core/rng.h"
#include "record/hist_json.h"

#define HISTS_PER_STAGE 11 /* metrics.histograms of a stage */

int main(void) {
  const long sizes[] = {1000, 100000, 10000000};
  printf("%-10s %9s %8s %11s %11s %14s %14s\n", "values", "buckets", "bytes", "parse_us",
         "merge_us", "100 ranks ms", "1000 ranks ms");
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    struct im_hist h, m;
    if (im_hist_init_default(&h) != IM_OK || im_hist_init_default(&m) != IM_OK)
      return 1;
    struct im_rng rng;
    im_rng_seed(&rng, 1 + s);
    for (long i = 0; i < sizes[s]; i++) /* median ~3 ms, heavy right tail */
      (void)im_hist_record(&h, (int64_t)exp(15.0 + 2.0 * im_rng_normal(&rng)));
    json_t *j = NULL;
    if (im_hist_to_json(&h, &j) != IM_OK)
      return 1;
    char *text = json_dumps(j, JSON_COMPACT);
    size_t bytes = strlen(text);
    size_t buckets = json_array_size(json_object_get(j, "buckets"));
    json_decref(j);
    enum { ROUNDS = 200 };
    int64_t t0 = im_now_ns();
    for (int r = 0; r < ROUNDS; r++) {
      json_t *p = json_loads(text, 0, NULL);
      struct im_hist q;
      if (!p || im_hist_from_json(&q, p) != IM_OK)
        return 1;
      im_hist_cleanup(&q);
      json_decref(p);
    }
    int64_t t1 = im_now_ns();
    for (int r = 0; r < ROUNDS; r++)
      if (im_hist_merge(&m, &h) != IM_OK)
        return 1;
    int64_t t2 = im_now_ns();
    double parse_us = (double)(t1 - t0) / ROUNDS / 1e3, merge_us = (double)(t2 - t1) / ROUNDS / 1e3;
    double per_rank_ms = HISTS_PER_STAGE * (parse_us + merge_us) / 1e3;
    printf("%-10ld %9zu %8zu %11.1f %11.1f %14.1f %14.1f\n", sizes[s], buckets, bytes, parse_us,
           merge_us, 100 * per_rank_ms, 1000 * per_rank_ms);
    free(text);
    im_hist_cleanup(&h);
    im_hist_cleanup(&m);
  }
  return 0;
}
