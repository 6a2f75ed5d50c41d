/* metrics.by_target: see report/targets_json.h. */
#include "report/targets_json.h"

#include "report/breakdown_json.h"
#include "report/jsonw.h"

static int put(json_t *o, const char *k, json_t *v) { return !v || json_object_set_new(o, k, v); }

json_t *im_targets_json(const struct im_targets *t, const struct im_summary_config *sc) {
  json_t *a = json_array();
  for (size_t k = 0; a && k < t->n; k++) {
    const struct im_target_group *g = &t->g[k];
    json_t *row = json_object();
    if (!row || json_array_append_new(a, row) || im_jw_uint(row, "target", g->index) ||
        im_jw_uint(row, "completed", g->completed) || im_jw_uint(row, "failed", g->failed) ||
        im_jw_uint(row, "output_tokens", g->output_tokens) ||
        put(row, "ttft_ms", im_bd_dist_json(&g->ttft, sc)) ||
        put(row, "tpot_ms", im_bd_dist_json(&g->tpot, sc)) ||
        put(row, "itl_ms", im_bd_dist_json(&g->itl, sc))) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

void im_targets_text(FILE *o, const struct im_targets *t, const json_t *urls) {
  if (!t->n)
    return;
  fprintf(o, "By target (--url):\n  target                          done  failed  TTFT p50(ms)  "
             "TPOT p50(ms)  TPOT p99(ms)\n");
  for (size_t k = 0; k < t->n; k++) {
    const struct im_target_group *g = &t->g[k];
    char name[40];
    const char *url = json_string_value(json_array_get(urls, g->index));
    snprintf(name, sizeof name, "%u %s", g->index, url ? url : "");
    fprintf(o, "  %-30.30s %6llu  %6llu  %12.1f  %12.2f  %12.2f\n", name,
            (unsigned long long)g->completed, (unsigned long long)g->failed, g->ttft.p50,
            g->tpot.p50, g->tpot.p99);
  }
}
