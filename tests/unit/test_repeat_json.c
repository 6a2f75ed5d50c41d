/* The set's audit (report/repeat_json.h): evidence listing many figures or
 * runs is summarised by whole items, never cut mid-figure (issue 27: the
 * ci_width evidence stopped at 399 characters). */
#include <string.h>

#include <jansson.h>

#include "analyze/repeat.h"
#include "check.h"
#include "report/repeat_json.h"

static const char *evidence(json_t *root, const char *id) {
  json_t *checks = json_object_get(json_object_get(root, "audit"), "checks");
  for (size_t i = 0; i < json_array_size(checks); i++) {
    json_t *c = json_array_get(checks, i);
    if (!strcmp(json_string_value(json_object_get(c, "id")), id))
      return json_string_value(json_object_get(c, "evidence"));
  }
  return NULL;
}

int main(void) {
  static struct im_repeat_set set;
  static struct im_repeat_run runs[12];
  memset(&set, 0, sizeof set);
  set.runs = set.planned = 12;
  set.run = runs;
  set.max_width = 0.08;
  /* Every figure wide, the widest last: they are listed widest first. */
  for (int f = 0; f < IM_RF_COUNT_; f++) {
    set.stat[f].n = 12;
    set.stat[f].wide = true;
    set.stat[f].rel_width = 0.1 + 0.01 * f;
    set.stat[f].runs_needed = 100 + (size_t)f;
  }
  /* Every run failing with a long list. */
  for (int r = 0; r < 12; r++)
    snprintf(runs[r].fails, sizeof runs[r].fails,
             "workload (every prompt had one length), samples (too few requests for p99.9)");
  json_t *root = im_repeat_json(&set);
  CHECK(root != NULL);
  const char *ci = evidence(root, "ci_width");
  CHECK(ci != NULL);
  if (ci) {
    size_t n = strlen(ci);
    CHECK(n < 400);
    /* Whole items only: the text ends with the count of those left out,
     * and every item listed closes its parenthesis. */
    CHECK(strstr(ci, "more") == ci + n - 4);
    size_t open = 0, close = 0;
    for (const char *p = ci; *p; p++)
      open += *p == '(', close += *p == ')';
    CHECK_EQ(open, close);
    char widest[64];
    snprintf(widest, sizeof widest, "%s (%.1f%%, %zu runs)",
             im_repeat_fig_name((enum im_repeat_fig)(IM_RF_COUNT_ - 1)),
             100 * set.stat[IM_RF_COUNT_ - 1].rel_width, set.stat[IM_RF_COUNT_ - 1].runs_needed);
    CHECK(strncmp(ci, widest, strlen(widest)) == 0);
  }
  const char *fails = evidence(root, "runs");
  CHECK(fails != NULL);
  if (fails) {
    CHECK(strlen(fails) < 400);
    CHECK(strstr(fails, "more") != NULL);
    CHECK(strstr(fails, "run-1: workload") == fails);
  }
  json_decref(root);
  return CHECK_DONE();
}
