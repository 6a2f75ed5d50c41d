/* See report/causes_json.h. */
#include "report/causes_json.h"

#include <math.h>

#include "report/jsonw.h"

/* A rule's figures and why into o. */
static int figures(json_t *o, const struct im_cause_check *ck) {
  for (size_t i = 0; i < ck->n_figs; i++)
    if (im_jw_num(o, ck->figs[i].key, ck->figs[i].value, "not defined for this run"))
      return -1;
  return json_object_set_new(o, "why", json_string(ck->why));
}

/* What every entry of an SLO carries in its evidence. */
static json_t *evidence(const struct im_cause_slo *s) {
  json_t *e = json_object();
  if (!e || im_jw_num(e, "limit_ms", s->limit_ms, NULL) ||
      im_jw_num(e, "attainment", s->attainment, NULL) || im_jw_num(e, "target", s->target, NULL) ||
      im_jw_uint(e, "requests", s->requests) || im_jw_uint(e, "violating", s->violating) ||
      im_jw_num(e, "bimodality_coefficient", s->bimodality, "fewer than 4 values, or all equal")) {
    json_decref(e);
    return NULL;
  }
  return e;
}

static int entry(json_t *arr, const struct im_cause_slo *s, enum im_cause cause, double score,
                 json_t *ev) {
  json_t *o = json_object();
  if (!o || json_array_append_new(arr, o)) {
    json_decref(ev);
    return -1;
  }
  if (json_object_set_new(o, "slo", json_string(im_slo_name(s->slo))) ||
      json_object_set_new(o, "cause", json_string(im_cause_name(cause))) ||
      im_jw_num(o, "score", score,
                cause == IM_CAUSE_UNEXPLAINED ? "no rule fired" : "not defined for this run"))
    return -1;
  return json_object_set_new(o, "evidence", ev);
}

/* evidence.checked: every rule, its status and why. */
static int checked(json_t *ev, const struct im_cause_slo *s) {
  json_t *arr = json_array();
  if (!arr || json_object_set_new(ev, "checked", arr))
    return -1;
  for (int r = 0; r < IM_CAUSE_RULES_; r++) {
    const struct im_cause_check *ck = &s->checks[r];
    json_t *o = json_object();
    if (!o || json_array_append_new(arr, o) ||
        json_object_set_new(o, "cause", json_string(im_cause_name(ck->cause))) ||
        json_object_set_new(o, "status", json_string(im_cause_status_name(ck->status))) ||
        im_jw_num(o, "score", ck->score, "not computed") || figures(o, ck))
      return -1;
  }
  return 0;
}

/* One entry per rule that fired, else one "unexplained"; every entry's
 * evidence lists every rule checked. */
static int slo_entries(json_t *arr, const struct im_cause_slo *s) {
  for (int r = 0; r <= IM_CAUSE_RULES_; r++) {
    const struct im_cause_check *ck = r < IM_CAUSE_RULES_ ? &s->checks[r] : NULL;
    if (ck ? ck->status != IM_CAUSE_FIRED : s->n_fired > 0)
      continue;
    json_t *ev = evidence(s);
    if (!ev || (ck && figures(ev, ck)) || checked(ev, s)) {
      json_decref(ev);
      return -1;
    }
    if (entry(arr, s, ck ? ck->cause : IM_CAUSE_UNEXPLAINED, ck ? ck->score : NAN, ev))
      return -1;
  }
  return 0;
}

enum im_err im_causes_json(const struct im_causes *c, json_t *dst) {
  json_t *a = json_object_get(dst, "analysis");
  if (!a)
    a = im_jw_child(dst, "analysis");
  json_t *arr = json_array();
  if (!a || !arr || json_object_set_new(a, "root_causes", arr))
    return IM_NOMEM;
  for (size_t i = 0; i < c->n; i++)
    if (slo_entries(arr, &c->slo[i]))
      return IM_NOMEM;
  return IM_OK;
}

/* Host noise that is not a cause still has its share said, once, in the
 * rule's own words. */
static void host_share(FILE *o, const struct im_cause_slo *s) {
  const struct im_cause_check *h = &s->checks[IM_CAUSE_HOST_NOISE];
  if (h->status == IM_CAUSE_NOT_FIRED && h->score > 0.005)
    fprintf(o, "  host noise, not a cause: %s\n", h->why);
}

void im_causes_text(FILE *o, const struct im_causes *c) {
  for (size_t i = 0; i < c->n; i++) {
    const struct im_cause_slo *s = &c->slo[i];
    fprintf(o, "Root cause, SLO %s (%g ms, %.1f%% met): ", im_slo_name(s->slo), s->limit_ms,
            100 * s->attainment);
    if (!s->n_fired) {
      fprintf(o, "unexplained (no rule fired; analysis.root_causes says why)\n");
      host_share(o, s);
      continue;
    }
    const char *sep = "";
    for (int r = 0; r < IM_CAUSE_RULES_; r++) {
      const struct im_cause_check *ck = &s->checks[r];
      if (ck->status != IM_CAUSE_FIRED)
        continue;
      fprintf(o, "%s%s (score %.2f)", sep, im_cause_name(ck->cause), ck->score);
      sep = ", ";
    }
    fputc('\n', o);
    for (int r = 0; r < IM_CAUSE_RULES_; r++)
      if (s->checks[r].status == IM_CAUSE_FIRED)
        fprintf(o, "  %s: %s\n", im_cause_name(s->checks[r].cause), s->checks[r].why);
    host_share(o, s);
  }
}

