/* See report/jsonw.h. */
#include "report/jsonw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int im_jw_num(json_t *obj, const char *key, double v, const char *why) {
  if (isfinite(v))
    return json_object_set_new(obj, key, json_real(v));
  if (json_object_set_new(obj, key, json_null()))
    return -1;
  if (!why)
    return 0;
  json_t *r = json_object_get(obj, "null_reasons");
  if (!r && (!(r = json_object()) || json_object_set_new(obj, "null_reasons", r)))
    return -1;
  return json_object_set_new(r, key, json_string(why));
}

int im_jw_uint(json_t *obj, const char *key, uint64_t v) {
  return json_object_set_new(obj, key, json_integer((json_int_t)(v > INT64_MAX ? INT64_MAX : v)));
}

int im_jw_int(json_t *obj, const char *key, int64_t v) {
  return json_object_set_new(obj, key, json_integer((json_int_t)v));
}

json_t *im_jw_child(json_t *obj, const char *key) {
  json_t *o = json_object();
  /* json_object_set_new takes the reference even when it fails. */
  if (!o || json_object_set_new(obj, key, o))
    return NULL;
  return o;
}

json_t *im_jw_array(json_t *obj, const char *key) {
  json_t *a = json_array();
  if (!a || json_object_set_new(obj, key, a))
    return NULL;
  return a;
}

/* Python's str of a float is the shortest repr that round-trips; %.*g with
 * the smallest such precision gives the same digits for p in (0, 100]
 * (both switch to an exponent below 1e-4). */
void im_jw_pct_word(double p, char *buf, size_t len) {
  if (p == floor(p) && fabs(p) < 1e15) {
    snprintf(buf, len, "%lld", (long long)p);
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, len, "%.*g", prec, p);
    if (strtod(buf, NULL) == p)
      return;
  }
}
