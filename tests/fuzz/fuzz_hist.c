/* Fuzz target for the on-disk histogram (record/hist_json.c), the format
 * that repeat sets, `compare` and merges of shards read back.
 *
 * Input: a JSON document. Checks:
 *   - reading either fails (and leaves the histogram safe to clean up) or
 *     gives a histogram whose totals agree: count = the sum of the buckets,
 *     min <= every percentile <= max, percentiles non-decreasing in p;
 *   - what was read writes back to JSON that reads back to the same
 *     histogram (same JSON text: the writer and the reader agree);
 *   - merging it into a copy of itself doubles the count exactly. */
#include <jansson.h>
#include <string.h>

#include "core/hist.h"
#include "fuzz.h"
#include "record/hist_json.h"

static char *dump(const struct im_hist *h) {
  json_t *j = NULL;
  if (im_hist_to_json(h, &j) != IM_OK)
    return NULL;
  char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(j);
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_error_t jerr;
  json_t *root = json_loadb((const char *)data, size, JSON_DECODE_ANY, &jerr);
  if (!root)
    return 0;
  struct im_hist h;
  memset(&h, 0, sizeof h);
  enum im_err err = im_hist_from_json(&h, root);
  json_decref(root);
  if (err != IM_OK) {
    REQUIRE(err == IM_PARSE || err == IM_INVAL || err == IM_NOMEM);
    im_hist_cleanup(&h);
    return 0;
  }
  int64_t n = im_hist_count(&h);
  REQUIRE(n >= 0);
  int64_t sum = 0;
  struct im_hist_iter it;
  im_hist_iter_init(&it, &h);
  while (im_hist_iter_next(&it))
    sum += it.count;
  REQUIRE(sum == n);
  if (n > 0) {
    static const double ps[] = {0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 1.0};
    int64_t prev = INT64_MIN;
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
      int64_t v = im_hist_percentile(&h, ps[i]);
      REQUIRE(v >= im_hist_min(&h) && v <= im_hist_max(&h));
      REQUIRE(v >= prev);
      prev = v;
    }
  }
  char *once = dump(&h);
  if (once) {
    json_t *again_j = json_loads(once, 0, &jerr);
    REQUIRE(again_j);
    struct im_hist back;
    memset(&back, 0, sizeof back);
    REQUIRE(im_hist_from_json(&back, again_j) == IM_OK);
    json_decref(again_j);
    char *twice = dump(&back);
    REQUIRE(twice && !strcmp(once, twice));
    free(twice);
    if (im_hist_merge(&back, &h) == IM_OK)
      REQUIRE(im_hist_count(&back) == 2 * n);
    im_hist_cleanup(&back);
    free(once);
  }
  im_hist_cleanup(&h);
  return 0;
}
