/* See report/audit_json.h. */
#include "report/audit_json.h"

#include "report/jsonw.h"

enum im_err im_validity_json(const struct im_validity *v, json_t *audit) {
  json_t *p = im_jw_child(audit, "publishable"), *checks = json_array();
  json_t *wl = p ? im_jw_child(p, "workload") : NULL;
  json_t *pt = wl ? im_jw_child(wl, "prompt_tokens") : NULL;
  json_t *ot = wl ? im_jw_child(wl, "output_tokens") : NULL;
  if (!p || !checks || !pt || !ot ||
      json_object_set_new(p, "verdict",
                          json_string(v->publishable ? "PUBLISHABLE" : "NOT_PUBLISHABLE")) ||
      json_object_set_new(p, "checks", checks)) {
    if (!p)
      json_decref(checks);
    return IM_NOMEM;
  }
  for (size_t i = 0; i < v->n; i++) {
    const struct im_valid_check *c = &v->checks[i];
    json_t *o = json_pack("{s:s, s:s, s:s}", "id", c->id, "status",
                          im_check_status_name(c->status), "evidence", c->evidence);
    if (!o || json_array_append_new(checks, o) ||
        (c->fix[0] && json_object_set_new(o, "fix", json_string(c->fix))))
      return IM_NOMEM;
  }
  if (im_jw_uint(pt, "min", v->prompt_min) || im_jw_uint(pt, "p50", v->prompt_p50) ||
      im_jw_uint(pt, "max", v->prompt_max) || im_jw_uint(pt, "distinct", v->prompt_distinct) ||
      im_jw_uint(ot, "min", v->output_min) || im_jw_uint(ot, "p50", v->output_p50) ||
      im_jw_uint(ot, "max", v->output_max))
    return IM_NOMEM;
  return IM_OK;
}

void im_validity_text(FILE *o, const struct im_validity *v, bool verbose) {
  fprintf(o, "Publishable:                             %s\n",
          v->publishable ? "PUBLISHABLE" : "NOT_PUBLISHABLE");
  for (size_t i = 0; i < v->n; i++) {
    const struct im_valid_check *c = &v->checks[i];
    if (c->status == IM_CHECK_PASS && !verbose)
      continue;
    fprintf(o, "  %-4s %-14s %s\n", im_check_status_name(c->status), c->id, c->evidence);
    if (c->fix[0])
      fprintf(o, "       %-14s fix: %s\n", "", c->fix);
  }
}
