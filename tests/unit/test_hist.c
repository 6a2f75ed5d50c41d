#include <jansson.h>
#include <stdint.h>

#include "check.h"
#include "core/hist.h"
#include "record/hist_json.h"
#include "core/rng.h"

/* The reported value r of v (highest equivalent value of v's bucket) must
 * satisfy v <= r and r - v <= max(v / H, 2^u - 1) (hist.h). */
static void check_bound(const struct im_hist *h, int64_t v) {
  int32_t i = im_hist_index_of(h, v);
  CHECK(i >= 0 && i < h->bucket_count);
  if (i < 0 || i >= h->bucket_count)
    return;
  int64_t lo = im_hist_bucket_lowest(h, i), hi = im_hist_bucket_highest(h, i);
  int64_t half = (int64_t)1 << (h->sub_bits - 1), unit = (int64_t)1 << h->unit_shift;
  if (lo > v || hi < v)
    IM__FAIL("value %" PRId64 " outside its bucket [%" PRId64 ", %" PRId64 "]", v, lo, hi);
  int64_t err = hi - v;
  /* err < unit, or err * H < v, i.e. err < ceil(v / H). */
  if (!(err < unit || err < (v + half - 1) / half))
    IM__FAIL("bound broken at %" PRId64 ": r=%" PRId64 " H=%" PRId64, v, hi, half);
  im_test_checks++;
}

static void test_layout(void) {
  struct im_hist h;
  CHECK_OK(im_hist_init_default(&h));
  /* S = 11 (2^11 = 2048 >= 2000), H = 1024; 3.6e12 has 42 bits, so
   * k = 31 and its index is 31*1024 + (3.6e12 >> 31) = 31744 + 1676. */
  CHECK_EQ(h.sub_bits, 11);
  CHECK_EQ(h.unit_shift, 0);
  CHECK_EQ(h.bucket_count, 31744 + 1676 + 1);
  /* Bucket boundaries: linear region, then doubling widths. */
  CHECK_EQ(im_hist_index_of(&h, 0), 0);
  CHECK_EQ(im_hist_index_of(&h, 2047), 2047);
  CHECK_EQ(im_hist_index_of(&h, 2048), 2048);
  CHECK_EQ(im_hist_index_of(&h, 2049), 2048);
  CHECK_EQ(im_hist_index_of(&h, 2050), 2049);
  CHECK_EQ(im_hist_index_of(&h, 4095), 3071);
  CHECK_EQ(im_hist_index_of(&h, 4096), 3072);
  CHECK_EQ(im_hist_bucket_lowest(&h, 3072), 4096);
  CHECK_EQ(im_hist_bucket_highest(&h, 3072), 4099);
  CHECK_EQ(im_hist_index_of(&h, -1), -1);
  CHECK_EQ(im_hist_index_of(&h, IM_HIST_DEFAULT_HIGHEST + 1), -1);
  /* Adjacent buckets tile the range with no gap or overlap. */
  for (int32_t i = 1; i < h.bucket_count; i++)
    if (im_hist_bucket_lowest(&h, i) != im_hist_bucket_highest(&h, i - 1) + 1) {
      IM__FAIL("gap between buckets %d and %d", (int)(i - 1), (int)i);
      break;
    }
  CHECK(im_hist_bucket_highest(&h, h.bucket_count - 1) >= IM_HIST_DEFAULT_HIGHEST);
  im_hist_cleanup(&h);
  im_hist_cleanup(&h); /* twice is fine */
  im_hist_cleanup(NULL);

  CHECK_EQ(im_hist_init(&h, 0, 1000, 3), IM_INVAL);
  CHECK_EQ(im_hist_init(&h, 1, 1000, 0), IM_INVAL);
  CHECK_EQ(im_hist_init(&h, 1, 1000, 6), IM_INVAL);
  CHECK_EQ(im_hist_init(&h, 100, 150, 3), IM_INVAL);
  CHECK_EQ(im_hist_init(&h, 1, INT64_MAX, 3), IM_INVAL);
  im_hist_cleanup(&h);
  /* The largest allowed range works, and its top bucket fits in int64. */
  CHECK_OK(im_hist_init(&h, 1, IM_HIST_MAX_HIGHEST, 2));
  CHECK(im_hist_bucket_highest(&h, h.bucket_count - 1) >= IM_HIST_MAX_HIGHEST);
  CHECK(im_hist_record(&h, IM_HIST_MAX_HIGHEST));
  CHECK_EQ(im_hist_percentile(&h, 1.0), IM_HIST_MAX_HIGHEST);
  im_hist_cleanup(&h);
}

static void test_error_bound(void) {
  struct im_rng rng;
  im_rng_seed(&rng, 42);
  struct {
    int64_t lowest, highest;
    int digits;
  } layouts[] = {
      {1, IM_HIST_DEFAULT_HIGHEST, 3}, {1, IM_HIST_DEFAULT_HIGHEST, 1},
      {1, IM_HIST_DEFAULT_HIGHEST, 2}, {1, IM_HIST_DEFAULT_HIGHEST, 4},
      {1, INT64_C(1) << 40, 5},        {1000, IM_HIST_DEFAULT_HIGHEST, 3},
      {7, INT64_C(1) << 50, 3},
  };
  for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
    struct im_hist h;
    CHECK_OK(im_hist_init(&h, layouts[l].lowest, layouts[l].highest, layouts[l].digits));
    if (!h.counts)
      continue;
    /* Geometric grid (ratio 1.0007) and its neighbours. */
    for (double x = 1.0; x <= (double)h.highest; x *= 1.0007) {
      int64_t v = (int64_t)x;
      check_bound(&h, v);
      if (v > 0)
        check_bound(&h, v - 1);
      if (v < h.highest)
        check_bound(&h, v + 1);
    }
    /* Every power of two and its neighbours (the bucket-width changes). */
    for (int b = 0; b < 63 && ((int64_t)1 << b) <= h.highest; b++) {
      int64_t v = (int64_t)1 << b;
      check_bound(&h, v);
      check_bound(&h, v - 1);
      if (v < h.highest)
        check_bound(&h, v + 1);
    }
    check_bound(&h, 0);
    check_bound(&h, h.highest);
    /* Random values, log-uniform over the magnitudes. */
    for (int i = 0; i < 200000; i++) {
      int bits = 1 + (int)im_rng_below(&rng, 62);
      int64_t v = (int64_t)im_rng_below(&rng, (uint64_t)1 << bits);
      if (v <= h.highest)
        check_bound(&h, v);
    }
    im_hist_cleanup(&h);
  }

  /* With lowest == 1 the promise is simply: relative error < 10^-d, checked
   * through the public query (a percentile that lands on the value). */
  for (int d = 1; d <= 3; d++) {
    struct im_hist h;
    CHECK_OK(im_hist_init(&h, 1, IM_HIST_DEFAULT_HIGHEST, d));
    double bound = pow(10.0, -d);
    for (int i = 0; i < 20000; i++) {
      int bits = 1 + (int)im_rng_below(&rng, 41);
      int64_t v = (int64_t)im_rng_below(&rng, (uint64_t)1 << bits) + 1;
      im_hist_reset(&h);
      /* v is the median of {0, v, highest}: neither min nor max. */
      CHECK(im_hist_record(&h, 0));
      CHECK(im_hist_record(&h, v));
      CHECK(im_hist_record(&h, h.highest));
      int64_t r = im_hist_percentile(&h, 0.5);
      if (r < v || (double)(r - v) >= bound * (double)v) {
        IM__FAIL("d=%d v=%" PRId64 " reported %" PRId64, d, v, r);
        break;
      }
    }
    im_hist_cleanup(&h);
  }
}

static void test_percentiles(void) {
  struct im_hist h;
  CHECK_OK(im_hist_init_default(&h));
  for (int64_t v = 1; v <= 10000; v++)
    CHECK(im_hist_record(&h, v));
  CHECK_EQ(im_hist_count(&h), 10000);
  CHECK_EQ(im_hist_min(&h), 1);
  CHECK_EQ(im_hist_max(&h), 10000);
  CHECK_NEAR(im_hist_mean(&h), 5000.5, 1e-9);
  /* Population std of 1..N is sqrt((N^2 - 1) / 12) = 2886.7513...; the
   * histogram's is within the 0.1 % bucket error. */
  CHECK_REL(im_hist_stddev(&h), sqrt((1e8 - 1) / 12.0), 1e-3);
  /* Nearest rank: p50 -> rank 5000, value 5000, whose bucket (width 4 at
   * 4096..8191) is [5000, 5003]; p99 -> 9900 in [9896, 9903]; p99.9 ->
   * 9990 in [9984, 9991]; p100 -> exact max. */
  CHECK_EQ(im_hist_percentile(&h, 0.5), 5003);
  CHECK_EQ(im_hist_percentile(&h, 0.99), 9903);
  CHECK_EQ(im_hist_percentile(&h, 0.999), 9991);
  CHECK_EQ(im_hist_percentile(&h, 1.0), 10000);
  CHECK_EQ(im_hist_percentile(&h, 0.0), 1);
  CHECK_EQ(im_hist_percentile(&h, 0.1), 1000); /* linear region: exact */
  CHECK_EQ(im_hist_percentile(&h, 0.2047), 2047);
  CHECK_EQ(im_hist_percentile(&h, 0.2048), 2049); /* bucket [2048, 2049] */
  CHECK_EQ(im_hist_percentile(&h, 2.0), 10000);   /* clamped */
  CHECK_EQ(im_hist_percentile(&h, -1.0), 1);
  CHECK_EQ(im_hist_percentile(&h, NAN), 1);
  double ps[] = {0.0, 0.5, 0.99, 0.999, 1.0};
  int64_t out[5];
  CHECK_OK(im_hist_percentiles(&h, ps, out, 5));
  CHECK_EQ(out[0], 1);
  CHECK_EQ(out[1], 5003);
  CHECK_EQ(out[2], 9903);
  CHECK_EQ(out[3], 9991);
  CHECK_EQ(out[4], 10000);
  double bad[] = {0.9, 0.5};
  CHECK_EQ(im_hist_percentiles(&h, bad, out, 2), IM_INVAL);

  /* Edge cases of nearest rank. */
  im_hist_reset(&h);
  CHECK_EQ(im_hist_count(&h), 0);
  CHECK_EQ(im_hist_percentile(&h, 0.5), 0);
  CHECK_EQ(im_hist_min(&h), 0);
  CHECK_EQ(im_hist_max(&h), 0);
  CHECK_NEAR(im_hist_mean(&h), 0.0, 0.0);
  CHECK_NEAR(im_hist_stddev(&h), 0.0, 0.0);
  CHECK(im_hist_record(&h, 123456789));
  CHECK_EQ(im_hist_percentile(&h, 0.0), 123456789); /* N = 1: min == max */
  CHECK_EQ(im_hist_percentile(&h, 0.5), 123456789);
  CHECK_EQ(im_hist_percentile(&h, 1.0), 123456789);
  CHECK_NEAR(im_hist_stddev(&h), 0.0, 0.0);
  im_hist_reset(&h);
  for (int64_t v = 10; v <= 40; v += 10)
    CHECK(im_hist_record(&h, v));
  CHECK_EQ(im_hist_percentile(&h, 0.25), 10); /* rank ceil(1.0) = 1 */
  CHECK_EQ(im_hist_percentile(&h, 0.26), 20); /* rank ceil(1.04) = 2 */
  CHECK_EQ(im_hist_percentile(&h, 0.5), 20);
  CHECK_EQ(im_hist_percentile(&h, 0.75), 30);
  CHECK_EQ(im_hist_percentile(&h, 0.7500001), 40);
  im_hist_reset(&h);
  for (int64_t v = 1; v <= 100; v++)
    CHECK(im_hist_record(&h, v));
  /* p * N with binary rounding: 0.99*100, 0.29*100, 0.57*100 are ranks
   * 99, 29, 57, not one more. */
  CHECK_EQ(im_hist_percentile(&h, 0.99), 99);
  CHECK_EQ(im_hist_percentile(&h, 0.29), 29);
  CHECK_EQ(im_hist_percentile(&h, 0.57), 57);
  CHECK_EQ(im_hist_percentile(&h, 0.58), 58);
  im_hist_cleanup(&h);
}

static void test_range_and_counts(void) {
  struct im_hist h;
  CHECK_OK(im_hist_init(&h, 1, 1000000, 3));
  CHECK(!im_hist_record(&h, -1));
  CHECK(!im_hist_record(&h, 1000001));
  CHECK(!im_hist_record(&h, INT64_MAX));
  CHECK(!im_hist_record_n(&h, -5, 3));
  CHECK(im_hist_record(&h, 1000000));
  CHECK(im_hist_record(&h, 0));
  CHECK(!im_hist_record_n(&h, 5, 0));
  CHECK(!im_hist_record_n(&h, 5, -2));
  CHECK_EQ(h.below, 4);
  CHECK_EQ(h.above, 2);
  CHECK_EQ(im_hist_count(&h), 2);
  CHECK_EQ(im_hist_min(&h), 0);
  CHECK_EQ(im_hist_max(&h), 1000000);
  CHECK_NEAR(im_hist_mean(&h), 500000.0, 0.0);
  im_hist_cleanup(&h);

  /* record_n's 128-bit sum: 5e9 copies of 3.6e12 sum to 1.8e22 > 2^63. */
  CHECK_OK(im_hist_init_default(&h));
  CHECK(im_hist_record_n(&h, IM_HIST_DEFAULT_HIGHEST, INT64_C(5000000000)));
  CHECK(im_hist_record_n(&h, 1, INT64_C(5000000000)));
  CHECK_EQ(im_hist_count(&h), INT64_C(10000000000));
  CHECK_REL(im_hist_mean(&h), (3.6e12 + 1) / 2, 1e-15);
  CHECK_REL(im_hist_stddev(&h), (3.6e12 - 1) / 2, 1e-3);
  CHECK_EQ(im_hist_percentile(&h, 0.5), 1);
  CHECK_EQ(im_hist_percentile(&h, 0.5000001), IM_HIST_DEFAULT_HIGHEST);

  /* Iteration: ascending, cumulative, all counts. */
  im_hist_reset(&h);
  struct im_rng rng;
  im_rng_seed(&rng, 3);
  for (int i = 0; i < 5000; i++)
    (void)im_hist_record(&h, (int64_t)(im_rng_exp(&rng) * 1e7));
  struct im_hist_iter it;
  im_hist_iter_init(&it, &h);
  int64_t sum = 0, prev_hi = -1;
  int buckets = 0;
  while (im_hist_iter_next(&it)) {
    CHECK(it.count > 0);
    CHECK(it.lowest > prev_hi);
    CHECK(it.highest >= it.lowest);
    sum += it.count;
    CHECK_EQ(it.cumulative, sum);
    prev_hi = it.highest;
    buckets++;
  }
  CHECK(!im_hist_iter_next(&it)); /* stays at the end */
  CHECK_EQ(sum, 5000);
  CHECK(buckets > 100);
  CHECK(im_hist_max(&h) <= prev_hi);
  im_hist_cleanup(&h);
}

static void check_same(const struct im_hist *a, const struct im_hist *b) {
  CHECK_EQ(a->bucket_count, b->bucket_count);
  CHECK_EQ(a->total, b->total);
  CHECK_EQ(a->below, b->below);
  CHECK_EQ(a->above, b->above);
  CHECK_EQ(im_hist_min(a), im_hist_min(b));
  CHECK_EQ(im_hist_max(a), im_hist_max(b));
  CHECK(a->sum_lo == b->sum_lo && a->sum_hi == b->sum_hi);
  CHECK(a->bucket_count == b->bucket_count && a->counts && b->counts &&
        memcmp(a->counts, b->counts, (size_t)a->bucket_count * sizeof *a->counts) == 0);
}

static void test_merge(void) {
  struct im_hist all, part[4], sum;
  CHECK_OK(im_hist_init_default(&all));
  CHECK_OK(im_hist_init_default(&sum));
  for (int t = 0; t < 4; t++)
    CHECK_OK(im_hist_init_default(&part[t]));
  struct im_rng rng;
  im_rng_seed(&rng, 99);
  for (int i = 0; i < 100000; i++) {
    /* Log-normal-ish latencies, a few out of range on both sides. */
    int64_t v = (int64_t)(exp(im_rng_normal(&rng) * 3.0 + 15.0));
    if (i % 9973 == 0)
      v = -v;
    if (i % 10007 == 0)
      v = IM_HIST_DEFAULT_HIGHEST + i;
    (void)im_hist_record(&all, v);
    (void)im_hist_record(&part[im_rng_below(&rng, 4)], v);
  }
  for (int t = 0; t < 4; t++)
    CHECK_OK(im_hist_merge(&sum, &part[t]));
  check_same(&sum, &all);
  CHECK(all.below > 0 && all.above > 0);
  CHECK_EQ(im_hist_percentile(&sum, 0.999), im_hist_percentile(&all, 0.999));

  /* The single query (which scans upper ranks from the top) agrees with
   * the one-pass query, which scans from the bottom. */
  for (int q = 0; q <= 10000; q++) {
    double p = q / 10000.0;
    int64_t one = 0;
    CHECK_OK(im_hist_percentiles(&all, &p, &one, 1));
    if (im_hist_percentile(&all, p) != one) {
      IM__FAIL("p=%g: %" PRId64 " vs %" PRId64, p, im_hist_percentile(&all, p), one);
      break;
    }
  }

  /* Merging an empty histogram changes nothing (min stays). */
  im_hist_reset(&part[0]);
  CHECK_OK(im_hist_merge(&sum, &part[0]));
  check_same(&sum, &all);

  /* Incompatible layouts fail and leave dst unchanged. */
  struct im_hist other;
  CHECK_OK(im_hist_init(&other, 1, IM_HIST_DEFAULT_HIGHEST, 2));
  (void)im_hist_record(&other, 5);
  CHECK_EQ(im_hist_merge(&sum, &other), IM_INVAL);
  check_same(&sum, &all);
  im_hist_cleanup(&other);
  CHECK_OK(im_hist_init(&other, 1, 1000000, 3));
  CHECK_EQ(im_hist_merge(&sum, &other), IM_INVAL);
  im_hist_cleanup(&other);
  CHECK_OK(im_hist_init(&other, 1024, IM_HIST_DEFAULT_HIGHEST, 3));
  CHECK_EQ(im_hist_merge(&sum, &other), IM_INVAL);
  CHECK_EQ(im_hist_merge(&sum, &part[9 % 4]), IM_OK);
  im_hist_cleanup(&other);
  CHECK_EQ(im_hist_merge(&sum, &other), IM_INVAL); /* cleaned up */

  im_hist_cleanup(&all);
  im_hist_cleanup(&sum);
  for (int t = 0; t < 4; t++)
    im_hist_cleanup(&part[t]);
}

/* to_json -> text -> from_json, then compares. */
static void roundtrip(const struct im_hist *h) {
  json_t *j = NULL;
  CHECK_OK(im_hist_to_json(h, &j));
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  CHECK(text != NULL);
  json_error_t jerr;
  json_t *back = text ? json_loads(text, 0, &jerr) : NULL;
  CHECK(back != NULL);
  struct im_hist g;
  CHECK_OK(im_hist_from_json(&g, back));
  check_same(&g, h);
  CHECK_EQ(g.lowest, h->lowest);
  CHECK_EQ(g.highest, h->highest);
  CHECK_EQ(g.digits, h->digits);
  im_hist_cleanup(&g);
  free(text);
  json_decref(back);
  json_decref(j);
}

static enum im_err parse_text(const char *text) {
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  if (!j)
    return IM_ERR_COUNT_;
  struct im_hist g;
  enum im_err err = im_hist_from_json(&g, j);
  im_hist_cleanup(&g);
  json_decref(j);
  return err;
}

static void test_json(void) {
  struct im_hist h;
  CHECK_OK(im_hist_init_default(&h));
  roundtrip(&h); /* empty */
  struct im_rng rng;
  im_rng_seed(&rng, 5);
  for (int i = 0; i < 20000; i++)
    (void)im_hist_record(&h, (int64_t)(im_rng_exp(&rng) * 5e8));
  (void)im_hist_record(&h, -3);
  (void)im_hist_record(&h, INT64_MAX);
  roundtrip(&h);
  /* A sum beyond int64 travels as a decimal string. */
  CHECK(im_hist_record_n(&h, IM_HIST_DEFAULT_HIGHEST, INT64_C(1) << 40));
  CHECK(h.sum_hi != 0);
  roundtrip(&h);
  json_t *j = NULL;
  CHECK_OK(im_hist_to_json(&h, &j));
  CHECK(json_is_string(json_object_get(j, "sum")));
  json_decref(j);
  im_hist_cleanup(&h);

  CHECK_OK(im_hist_init(&h, 1000, INT64_C(1) << 45, 4));
  for (int i = 0; i < 1000; i++)
    (void)im_hist_record(&h, (int64_t)im_rng_below(&rng, INT64_C(1) << 44));
  roundtrip(&h);
  im_hist_cleanup(&h);

  /* The format, exactly. */
  CHECK_OK(im_hist_init(&h, 1, 1000, 1));
  (void)im_hist_record(&h, 5);
  (void)im_hist_record(&h, 5);
  (void)im_hist_record(&h, 700);
  CHECK_OK(im_hist_to_json(&h, &j));
  char *text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  /* digits 1: S = 5, H = 16; 700 has 10 bits, k = 5, index 5*16 + 21. */
  CHECK_STR(text, "{\"above\":0,\"below\":0,\"buckets\":[[5,2],[101,1]],\"count\":3,"
                  "\"digits\":1,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                  "\"max\":700,\"min\":5,\"sum\":710}");
  free(text);
  json_decref(j);
  im_hist_cleanup(&h);

  /* Malformed input is refused cleanly. */
  const char *good = "{\"above\":0,\"below\":0,\"buckets\":[[5,2],[101,1]],\"count\":3,"
                     "\"digits\":1,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                     "\"max\":700,\"min\":5,\"sum\":710}";
  CHECK_EQ(parse_text(good), IM_OK);
  CHECK_EQ(parse_text("[]"), IM_PARSE);
  CHECK_EQ(parse_text("{\"format\":\"im-hist-1\"}"), IM_PARSE);
  /* count disagrees with the buckets */
  CHECK_EQ(parse_text("{\"above\":0,\"below\":0,\"buckets\":[[5,2],[101,1]],\"count\":4,"
                      "\"digits\":1,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                      "\"max\":700,\"min\":5,\"sum\":710}"),
           IM_PARSE);
  /* bucket index beyond the layout */
  CHECK_EQ(parse_text("{\"above\":0,\"below\":0,\"buckets\":[[5,2],[9999,1]],\"count\":3,"
                      "\"digits\":1,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                      "\"max\":700,\"min\":5,\"sum\":710}"),
           IM_PARSE);
  /* repeated / descending indices */
  CHECK_EQ(parse_text("{\"above\":0,\"below\":0,\"buckets\":[[101,1],[5,2]],\"count\":3,"
                      "\"digits\":1,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                      "\"max\":700,\"min\":5,\"sum\":710}"),
           IM_PARSE);
  /* max not in the last bucket */
  CHECK_EQ(parse_text("{\"above\":0,\"below\":0,\"buckets\":[[5,2],[101,1]],\"count\":3,"
                      "\"digits\":1,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                      "\"max\":900,\"min\":5,\"sum\":710}"),
           IM_PARSE);
  /* negative count, bad sum string */
  CHECK_EQ(parse_text("{\"above\":0,\"below\":0,\"buckets\":[[5,-2],[101,1]],\"count\":3,"
                      "\"digits\":1,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                      "\"max\":700,\"min\":5,\"sum\":710}"),
           IM_PARSE);
  CHECK_EQ(parse_text("{\"above\":0,\"below\":0,\"buckets\":[[5,2],[101,1]],\"count\":3,"
                      "\"digits\":1,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                      "\"max\":700,\"min\":5,\"sum\":\"7x\"}"),
           IM_PARSE);
  CHECK_EQ(parse_text("{\"above\":0,\"below\":0,\"buckets\":[[5,2],[101,1]],\"count\":3,"
                      "\"digits\":1,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                      "\"max\":700,\"min\":5,\"sum\":\"999999999999999999999999999999999999999"
                      "9\"}"),
           IM_PARSE);
  /* invalid layout */
  CHECK_EQ(parse_text("{\"above\":0,\"below\":0,\"buckets\":[],\"count\":0,"
                      "\"digits\":9,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                      "\"max\":0,\"min\":0,\"sum\":0}"),
           IM_INVAL);
  /* the largest 128-bit sum parses; one more does not */
  CHECK_EQ(parse_text("{\"above\":0,\"below\":0,\"buckets\":[[5,2],[101,1]],\"count\":3,"
                      "\"digits\":1,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                      "\"max\":700,\"min\":5,\"sum\":\"340282366920938463463374607431768211455\"}"),
           IM_OK);
  CHECK_EQ(parse_text("{\"above\":0,\"below\":0,\"buckets\":[[5,2],[101,1]],\"count\":3,"
                      "\"digits\":1,\"format\":\"im-hist-1\",\"highest\":1000,\"lowest\":1,"
                      "\"max\":700,\"min\":5,\"sum\":\"340282366920938463463374607431768211456\"}"),
           IM_PARSE);
}

int main(void) {
  test_layout();
  test_error_bound();
  test_percentiles();
  test_range_and_counts();
  test_merge();
  test_json();
  return CHECK_DONE();
}
