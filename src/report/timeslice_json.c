/* metrics.timeslices: see report/timeslice_json.h. */
#include "report/timeslice_json.h"

#include <stdio.h>

#include "report/jsonw.h"

json_t *im_timeslices_json(const struct im_timeslices *t) {
  json_t *o = json_object(), *arr = json_array();
  if (!o || !arr || json_object_set_new(o, "slices", arr)) {
    json_decref(o);
    if (!o)
      json_decref(arr);
    return NULL;
  }
  if (im_jw_num(o, "slice_s", t->slice_s, "no measured window") ||
      json_object_set_new(o, "definition",
                          json_string("the measured window in slices of slice_s (the last may "
                                      "be shorter); completed: final attempts ending in the "
                                      "slice; output tokens: chunks arriving in it; TTFT of "
                                      "first tokens, ITL of gaps and E2EL of requests ending "
                                      "in it, percentiles by linear interpolation")))
    goto oom;
  for (size_t i = 0; i < t->n; i++) {
    const struct im_timeslice *s = &t->v[i];
    json_t *e = json_object();
    if (!e || json_array_append_new(arr, e) || im_jw_num(e, "start_s", s->start_s, NULL) ||
        im_jw_num(e, "end_s", s->end_s, NULL) || im_jw_uint(e, "completed", s->completed) ||
        im_jw_num(e, "request_throughput", s->request_throughput, NULL) ||
        im_jw_uint(e, "output_tokens", s->output_tokens) ||
        im_jw_num(e, "output_throughput", s->output_throughput, NULL))
      goto oom;
    for (int m = 0; m < IM_TS_METRICS_; m++) {
      char key[16];
      snprintf(key, sizeof key, "%s_ms", im_timeslice_metric_name(m));
      json_t *p = im_jw_child(e, key);
      const char *none = "no value in this slice";
      if (!p || im_jw_uint(p, "n", s->n[m]) || im_jw_num(p, "p50", s->p50_ms[m], none) ||
          im_jw_num(p, "p90", s->p90_ms[m], none) || im_jw_num(p, "p99", s->p99_ms[m], none))
        goto oom;
    }
  }
  return o;
oom:
  json_decref(o);
  return NULL;
}
