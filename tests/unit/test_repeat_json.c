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

/* runs_needed past the cap reads "> N" in the evidence and keeps its key
 * and type (runs_needed_capped says so); an exempt throughput is not
 * listed, the exemption's reason is said whole; a heterogeneous tail is. */
static void capped_and_exempt(void) {
  static struct im_repeat_set set;
  static struct im_repeat_run runs[3];
  memset(&set, 0, sizeof set);
  set.runs = set.planned = 3;
  set.run = runs;
  set.max_width = 0.08;
  for (int r = 0; r < 3; r++)
    runs[r].publishable_but_repeats = true;
  set.stat[IM_RF_TTFT_P50] = (struct im_repeat_stat){
      .n = 3, .wide = true, .rel_width = 1.18, .runs_needed = IM_REPEAT_RUNS_NEEDED_CAP,
      .runs_needed_capped = true};
  set.stat[IM_RF_REQ_TPUT] = (struct im_repeat_stat){.n = 3, .wide = true, .rel_width = 1.04,
                                                     .runs_needed = 344, .exempt = true};
  set.stat[IM_RF_TPOT_P90] = (struct im_repeat_stat){
      .n = 3, .kind = IM_CI_POOLED, .heterogeneous = true, .homog_tested = true,
      .homog_p = 5e-5, .rel_width = 0.011};
  set.tput_exempt = true;
  snprintf(set.exempt_why, sizeof set.exempt_why, "throughputs exempt: open loop");
  set.ci_status = 2;
  json_t *root = im_repeat_json(&set);
  CHECK(root != NULL);
  const char *ci = evidence(root, "ci_width");
  CHECK(ci != NULL);
  if (ci) {
    char want[96];
    snprintf(want, sizeof want, "ttft_p50_ms (118.0%%, > %d runs)", IM_REPEAT_RUNS_NEEDED_CAP);
    CHECK(strstr(ci, want) != NULL);
    CHECK(strstr(ci, "request_throughput") == NULL);
    CHECK(strstr(ci, "tpot_p90_ms (heterogeneous") != NULL);
    CHECK(strstr(ci, "; throughputs exempt: open loop") != NULL);
  }
  json_t *f = json_object_get(json_object_get(root, "figures"), "ttft_p50_ms");
  CHECK(json_is_integer(json_object_get(f, "runs_needed")));
  CHECK(json_is_true(json_object_get(f, "runs_needed_capped")));
  json_t *t = json_object_get(json_object_get(root, "figures"), "tpot_p90_ms");
  CHECK(!strcmp(json_string_value(json_object_get(t, "ci_kind")), "pooled_order_statistic"));
  CHECK(json_is_true(json_object_get(t, "heterogeneous")));
  CHECK(json_is_true(json_object_get(json_object_get(root, "throughput_exemption"), "exempt")));
  json_decref(root);
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
  capped_and_exempt();
  return CHECK_DONE();
}
