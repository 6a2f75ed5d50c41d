/* analysis.timeline: see report/timeline_json.h. */
#include "report/timeline_json.h"

#include <math.h>

#include "report/jsonw.h"

/* t - base in ms; null (with why) when t did not happen. */
static int rel_ms(json_t *o, const char *key, int64_t t, int64_t base) {
  return im_jw_num(o, key, t >= 0 ? (double)(t - base) / 1e6 : NAN, "did not happen");
}

static json_t *req_json(const struct im_timeline_req *q) {
  const struct im_record *r = q->r;
  json_t *e = json_object(), *st = NULL;
  if (!e)
    return NULL;
  int64_t s = r->t_sched;
  if (im_jw_uint(e, "id", r->logical_id) || im_jw_uint(e, "attempt", r->attempt) ||
      json_object_set_new(e, "request_id", json_string(r->request_id)) ||
      im_jw_num(e, "scheduled_s", (double)s / 1e9, NULL) || rel_ms(e, "start_ms", r->t_start, s) ||
      rel_ms(e, "send_ms", r->t_send, s) || rel_ms(e, "first_ms", r->t_first, s) ||
      rel_ms(e, "last_ms", r->t_last, s) ||
      im_jw_num(e, "e2el_ms", (double)q->e2el_ns / 1e6, NULL) ||
      im_jw_uint(e, "output_tokens", r->output_tokens) || im_jw_uint(e, "stalls", q->n_stalls) ||
      !(st = im_jw_array(e, "stalls_listed")))
    goto oom;
  for (uint32_t i = 0; i < q->n_listed; i++) {
    const struct im_timeline_stall *x = &q->stalls[i];
    if (json_array_append_new(st, json_pack("[f, f, I]", (double)(x->from_ns - s) / 1e6,
                                            (double)(x->to_ns - s) / 1e6,
                                            (json_int_t)x->tokens)))
      goto oom;
  }
  return e;
oom:
  json_decref(e);
  return NULL;
}

json_t *im_timeline_json(const struct im_timeline *tl) {
  json_t *o = json_object(), *arr = json_array();
  if (!o || !arr || json_object_set_new(o, "requests", arr)) {
    json_decref(o);
    if (!o)
      json_decref(arr);
    return NULL;
  }
  if (json_object_set_new(o, "by", json_string("e2el")) ||
      im_jw_num(o, "stall_k", tl->stall_k, NULL) || im_jw_uint(o, "completed", tl->completed) ||
      json_object_set_new(o, "definition",
                          json_string("the completed requests with the longest E2EL (final "
                                      "attempt), slowest first; times in ms from the attempt's "
                                      "t_sched: start_ms = t_start, send_ms = t_send, first_ms "
                                      "= t_first, last_ms = t_last; stalls_listed: [gap start, "
                                      "gap end, tokens received at its end] of gaps above "
                                      "stall_k x the request's median gap (at most 32 listed)")))
    goto oom;
  for (size_t i = 0; i < tl->n; i++) {
    json_t *e = req_json(&tl->req[i]);
    if (!e || json_array_append_new(arr, e))
      goto oom;
  }
  return o;
oom:
  json_decref(o);
  return NULL;
}
