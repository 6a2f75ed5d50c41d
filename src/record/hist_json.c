/* A histogram as JSON: see record/hist_json.h. */
#include "record/hist_json.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>

/* ---- serialisation */

#define FORMAT_NAME "im-hist-1"

enum im_err im_hist_to_json(const struct im_hist *h, json_t **out) {
  enum im_err result = IM_NOMEM;
  json_t *obj = json_object(), *buckets = json_array(), *sum = NULL;
  *out = NULL;
  if (!obj || !buckets)
    goto out;
  if (h->sum_hi == 0 && h->sum_lo <= (uint64_t)INT64_MAX) {
    sum = json_integer((json_int_t)h->sum_lo);
  } else {
    char dec[48];
    im_u128_to_dec(h->sum_hi, h->sum_lo, dec);
    sum = json_string(dec);
  }
  if (!sum)
    goto out;
  /* json_object_set_new takes the value's reference even when it fails. */
  int rc = json_object_set_new(obj, "sum", sum);
  sum = NULL;
  if (rc || json_object_set_new(obj, "format", json_string(FORMAT_NAME)) ||
      json_object_set_new(obj, "lowest", json_integer(h->lowest)) ||
      json_object_set_new(obj, "highest", json_integer(h->highest)) ||
      json_object_set_new(obj, "digits", json_integer(h->digits)) ||
      json_object_set_new(obj, "count", json_integer(h->total)) ||
      json_object_set_new(obj, "min", json_integer(im_hist_min(h))) ||
      json_object_set_new(obj, "max", json_integer(im_hist_max(h))) ||
      json_object_set_new(obj, "below", json_integer(h->below)) ||
      json_object_set_new(obj, "above", json_integer(h->above)))
    goto out;
  for (int32_t i = 0; i < h->bucket_count; i++) {
    if (!h->counts[i])
      continue;
    json_t *pair = json_pack("[II]", (json_int_t)i, (json_int_t)h->counts[i]);
    if (!pair || json_array_append_new(buckets, pair))
      goto out;
  }
  if (json_object_set(obj, "buckets", buckets))
    goto out;
  *out = obj;
  obj = NULL;
  result = IM_OK;
out:
  json_decref(sum);
  json_decref(buckets);
  json_decref(obj);
  return result;
}

/* Reads a non-negative integer member; false if absent or not one. */
static bool get_nonneg(const json_t *obj, const char *key, int64_t *v) {
  json_t *j = json_object_get(obj, key);
  if (!json_is_integer(j) || json_integer_value(j) < 0)
    return false;
  *v = (int64_t)json_integer_value(j);
  return true;
}

enum im_err im_hist_from_json(struct im_hist *h, const json_t *json) {
  enum im_err result = IM_PARSE;
  int64_t lowest, highest, digits, count, min, max, below, above;
  uint64_t sum_hi = 0, sum_lo = 0;
  memset(h, 0, sizeof *h);
  h->min = INT64_MAX;
  if (!json_is_object(json))
    return IM_PARSE;
  const char *fmt = json_string_value(json_object_get(json, "format"));
  if (!fmt || strcmp(fmt, FORMAT_NAME) != 0)
    return IM_PARSE;
  if (!get_nonneg(json, "lowest", &lowest) || !get_nonneg(json, "highest", &highest) ||
      !get_nonneg(json, "digits", &digits) || !get_nonneg(json, "count", &count) ||
      !get_nonneg(json, "min", &min) || !get_nonneg(json, "max", &max) ||
      !get_nonneg(json, "below", &below) || !get_nonneg(json, "above", &above))
    return IM_PARSE;
  json_t *sum = json_object_get(json, "sum");
  if (json_is_integer(sum) && json_integer_value(sum) >= 0) {
    sum_lo = (uint64_t)json_integer_value(sum);
  } else if (!json_is_string(sum) || !im_u128_from_dec(json_string_value(sum), &sum_hi, &sum_lo)) {
    return IM_PARSE;
  }
  json_t *buckets = json_object_get(json, "buckets");
  if (!json_is_array(buckets))
    return IM_PARSE;
  if (digits > 5)
    return IM_INVAL;
  result = im_hist_init(h, lowest, highest, (int)digits);
  if (result != IM_OK)
    return result;
  result = IM_PARSE;
  int64_t seen = 0;
  int64_t prev = -1;
  size_t i;
  json_t *pair;
  json_array_foreach(buckets, i, pair) {
    if (!json_is_array(pair) || json_array_size(pair) != 2)
      goto fail;
    json_t *ji = json_array_get(pair, 0), *jc = json_array_get(pair, 1);
    if (!json_is_integer(ji) || !json_is_integer(jc))
      goto fail;
    json_int_t idx = json_integer_value(ji), c = json_integer_value(jc);
    /* Strictly ascending indices: each bucket once. */
    if (idx <= prev || idx >= h->bucket_count || c <= 0 || c > INT64_MAX - seen)
      goto fail;
    prev = idx;
    h->counts[idx] = c;
    seen += c;
  }
  if (seen != count)
    goto fail;
  if (count > 0) {
    /* min and max must lie in the first and last non-empty buckets. */
    struct im_hist_iter it;
    im_hist_iter_init(&it, h);
    if (!im_hist_iter_next(&it) || min < it.lowest || min > it.highest || max > highest ||
        im_hist_index_of(h, max) != (int32_t)prev || min > max)
      goto fail;
    h->min = min;
    h->max = max;
  } else if (min != 0 || max != 0 || sum_lo != 0 || sum_hi != 0) {
    goto fail;
  }
  h->total = count;
  h->below = below;
  h->above = above;
  h->sum_hi = sum_hi;
  h->sum_lo = sum_lo;
  return IM_OK;
fail:
  im_hist_cleanup(h);
  return result;
}
