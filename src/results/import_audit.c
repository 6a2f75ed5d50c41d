/* What an imported run could not collect, in its audit (results/results_int.h,
 * docs/import.md). */
#include <stdio.h>
#include <string.h>

#include "results/results_int.h"

/* An evidence text longer than its field (n: snprintf's count) ends in
 * "..." instead of stopping mid-word unannounced. */
static void mark_cut(char *dst, size_t cap, int n) {
  if (n >= 0 && (size_t)n >= cap && cap > 4)
    memcpy(dst + cap - 4, "...", 4);
}

static void add_text(char *dst, size_t cap, const char *s) {
  size_t n = strlen(dst);
  if (n < cap)
    snprintf(dst + n, cap - n, "%s", s);
}

bool im__results_import_unscheduled(const json_t *manifest) {
  const json_t *nc = json_object_get(json_object_get(manifest, "imported_from"), "not_collected");
  for (size_t i = 0; i < json_array_size(nc); i++) {
    const char *w = json_string_value(json_object_get(json_array_get(nc, i), "what"));
    if (w && !strcmp(w, "schedule"))
      return true;
  }
  return false;
}

int im__results_import_audit(const json_t *manifest, struct im_validity *v, json_t *audit_json) {
  const json_t *imp = json_object_get(manifest, "imported_from");
  if (!json_is_object(imp))
    return 0;
  const char *tool = json_string_value(json_object_get(imp, "tool"));
  const char *ver = json_string_value(json_object_get(imp, "version"));
  const json_t *nc = json_object_get(imp, "not_collected");
  char what[480] = "", sched[320] = "";
  bool no_schedule = false, no_records = false;
  for (size_t i = 0; i < json_array_size(nc); i++) {
    const json_t *x = json_array_get(nc, i);
    const char *w = json_string_value(json_object_get(x, "what"));
    const char *why = json_string_value(json_object_get(x, "why"));
    if (!w)
      continue;
    add_text(what, sizeof what, i ? "; " : "");
    add_text(what, sizeof what, w);
    no_records |= !strcmp(w, "per_request_records");
    if (!strcmp(w, "schedule")) {
      no_schedule = true;
      snprintf(sched, sizeof sched, "%s", why ? why : w);
    }
  }
  char src[160];
  snprintf(src, sizeof src, "imported from %s%s%s", tool ? tool : "?", ver ? " " : "",
           ver ? ver : "");
  for (size_t i = 0; i < v->n; i++) {
    struct im_valid_check *c = &v->checks[i];
    if (strcmp(c->id, "client_check"))
      continue;
    if (no_schedule) {
      c->status = IM_CHECK_WARN;
      mark_cut(c->evidence, sizeof c->evidence,
               snprintf(c->evidence, sizeof c->evidence, "not judged: %s, which records no %s", src,
                        sched));
      snprintf(c->fix, sizeof c->fix,
               "measure with infermeter run (open loop, every send time against its schedule) "
               "to judge the client");
    } else {
      add_text(c->evidence, sizeof c->evidence,
               "; judged on the source's own schedule only (its CPU, file descriptors and "
               "ports were not collected)");
    }
  }
  /* A summary-only file (vLLM without --save-detailed): the checks that
   * read the records have nothing to read; each says so instead of
   * judging an empty run. */
  static const char *const by_records[] = {"samples",        "steady_state", "workload",
                                           "effective_rate", "connections",  "errors"};
  for (size_t i = 0; no_records && i < v->n; i++) {
    struct im_valid_check *c = &v->checks[i];
    for (size_t k = 0; k < sizeof by_records / sizeof by_records[0]; k++)
      if (!strcmp(c->id, by_records[k])) {
        c->status = IM_CHECK_WARN;
        snprintf(c->evidence, sizeof c->evidence,
                 "not judged: the %s file holds summary figures only, no per-request records",
                 tool ? tool : "imported");
        snprintf(c->fix, sizeof c->fix,
                 "save with --save-detailed (vLLM's per-request arrays), or measure with "
                 "infermeter run");
      }
  }
  if (v->n < IM_VALID_MAX_CHECKS) {
    struct im_valid_check *c = &v->checks[v->n++];
    memset(c, 0, sizeof *c);
    c->id = "imported";
    c->status = IM_CHECK_WARN;
    mark_cut(c->evidence, sizeof c->evidence,
             snprintf(c->evidence, sizeof c->evidence, "%s; not collected: %s", src,
                      what[0] ? what : "nothing"));
    snprintf(c->fix, sizeof c->fix,
             "figures from another tool's file: what it did not record cannot be checked; run "
             "the workload with infermeter run (with --scrape) for a full audit");
  }
  json_t *cc = json_object_get(audit_json, "client_check");
  if (no_schedule && json_is_object(cc) &&
      json_object_set_new(cc, "not_collected", json_string(sched)))
    return -1;
  return 0;
}
