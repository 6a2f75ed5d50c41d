/* See report/batch_json.h. */
#include "report/batch_json.h"

#include <math.h>

#include "report/jsonw.h"

json_t *im_batch_means_json(const struct im_batch_means *bm) {
  json_t *o = json_object();
  size_t b = im_batch_count(bm->requests);
  const char *few = "fewer than 20 batches of 2 completed requests";
  if (!o || im_jw_uint(o, "requests", bm->requests) ||
      json_object_set_new(o, "batches", b >= IM_BATCH_MIN ? json_integer((json_int_t)b) : json_null())) {
    json_decref(o);
    return NULL;
  }
  for (int f = 0; f < IM_BF_COUNT_; f++) {
    const struct im_batch_ci *c = &bm->fig[f];
    const char *why = c->ok ? NULL : b >= IM_BATCH_MIN ? "a batch without a value" : few;
    json_t *x = im_jw_child(o, im_batch_fig_name((enum im_batch_fig)f));
    if (!x || im_jw_num(x, "mean", c->mean, why) || im_jw_num(x, "ci95_lo", c->lo, why) ||
        im_jw_num(x, "ci95_hi", c->hi, why) || im_jw_num(x, "rel_half_width", c->rel_half, why) ||
        (f != IM_BF_THROUGHPUT &&
         (im_jw_num(x, "drift_ratio", c->drift_ratio, why ? why : "no drift test") ||
          im_jw_num(x, "drift_p", c->drift_p, why ? why : "no drift test")))) {
      json_decref(o);
      return NULL;
    }
  }
  return o;
}
