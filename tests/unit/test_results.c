/* results/ (src/results): a run directory written before the command line
 * was split into run/, results/ and export/ (tests/fixtures/rundirs/single)
 * gives the same results.json through im_results_dir, generated_at aside;
 * a directory cut short as kill -9 leaves one (no end lines, a torn last
 * record) gives the documented partial results: every whole record
 * counted, the run marked interrupted, the torn tail said; a directory
 * that is not a run's is an error with a message, nothing written. */
#include "check.h"

#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "results/results.h"
#include "results/set.h"

#define FIX "tests/fixtures/rundirs"

static int sh(const char *cmd) { return system(cmd); }

/* dir's results.json without generated_at (NULL when unreadable). */
static json_t *results_of(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/results.json", dir);
  json_t *j = json_load_file(path, 0, NULL);
  if (j)
    json_object_del(j, "generated_at");
  return j;
}

static int notes;
static void count_note(void *data, const char *line) {
  (void)data;
  (void)line;
  notes++;
}

/* Whether `got` is a compatible successor of `want` (results.json v1 only
 * grows; tests/e2e/fixture_compat.py states the rule): every key of want
 * is in got with the same value, recursively; lists of checks (objects
 * with an "id") are matched by id and may gain checks; a check's evidence
 * and fix, words for people, may be reworded. */
static bool grows(const json_t *want, const json_t *got, const char *key) {
  if (key && (!strcmp(key, "evidence") || !strcmp(key, "fix")) && json_is_string(got))
    return true;
  if (json_is_object(want)) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)want, k, v) {
      if (!grows(v, json_object_get(got, k), k)) {
        fprintf(stderr, "  results.json v1: .%s changed\n", k);
        return false;
      }
    }
    return json_is_object(got);
  }
  const char *by = NULL; /* a list of checks, by "id" (or "name") */
  if (json_is_array(want) && json_array_size(want))
    by = json_object_get(json_array_get(want, 0), "id")     ? "id"
         : json_object_get(json_array_get(want, 0), "name") ? "name"
                                                            : NULL;
  if (by) {
    for (size_t i = 0; i < json_array_size(want); i++) {
      const json_t *w = json_array_get(want, i), *match = NULL;
      json_t *id = json_object_get(w, by);
      for (size_t j = 0; id && j < json_array_size(got) && !match; j++) {
        json_t *gid = json_object_get(json_array_get(got, j), by);
        if (gid && json_equal(gid, id))
          match = json_array_get(got, j);
      }
      if (!match || !grows(w, match, NULL))
        return false;
    }
    return true;
  }
  if (json_is_array(want)) {
    if (!json_is_array(got) || json_array_size(got) != json_array_size(want))
      return false;
    for (size_t i = 0; i < json_array_size(want); i++)
      if (!grows(json_array_get(want, i), json_array_get(got, i), NULL))
        return false;
    return true;
  }
  return json_equal((json_t *)want, (json_t *)got);
}

static void test_golden(const char *tmp) {
  char dir[300], cmd[1600];
  snprintf(dir, sizeof dir, "%s/single", tmp);
  snprintf(cmd, sizeof cmd, "cp -r " FIX "/single %s && rm -f %s/results.json %s/report.html",
           dir, dir, dir);
  CHECK_EQ(sh(cmd), 0);
  struct im_results_opts o = {.no_html = true};
  struct im_verdict v;
  char err[512];
  CHECK_EQ(im_results_dir(dir, &o, &v, err, sizeof err), IM_OK);
  json_t *want = results_of(FIX "/single"), *got = results_of(dir);
  CHECK(want && got);
  /* results.json v1 only grows: the old file's every key, same value. */
  CHECK(grows(want, got, NULL));
  CHECK(!v.interrupted && !v.unreachable && v.stages == 1);
  CHECK_EQ(im_verdict_exit(&v), im_verdict_exit(&v)); /* defined for every verdict */
  char html[400];
  snprintf(html, sizeof html, "%s/report.html", dir);
  CHECK(access(html, F_OK) != 0); /* no_html: none written */
  json_decref(want);
  json_decref(got);
}

static void test_cut_short(const char *tmp) {
  char dir[300], cmd[2400];
  snprintf(dir, sizeof dir, "%s/killed", tmp);
  /* kill -9 in the middle: no stage end, no run end, a half-written last
   * record line. */
  snprintf(cmd, sizeof cmd,
           "cp -r " FIX "/single %s && rm -f %s/results.json %s/report.html && "
           "grep -v '\"event\": *\"\\(end\\|run_end\\)\"' " FIX "/single/stages.jsonl > %s/stages.jsonl && "
           "head -c $(( $(wc -c < " FIX "/single/requests.jsonl) - 40 )) " FIX
           "/single/requests.jsonl > %s/requests.jsonl",
           dir, dir, dir, dir, dir);
  CHECK_EQ(sh(cmd), 0);
  notes = 0;
  struct im_results_opts o = {.no_html = true, .note = count_note};
  struct im_verdict v;
  char err[512];
  CHECK_EQ(im_results_dir(dir, &o, &v, err, sizeof err), IM_OK);
  CHECK(v.interrupted);
  CHECK_EQ(im_verdict_exit(&v), IM_EXIT_INTERRUPTED);
  json_t *got = results_of(dir), *full = results_of(FIX "/single");
  json_t *m = json_object_get(got, "manifest");
  CHECK(json_is_true(json_object_get(m, "interrupted")));
  CHECK(json_is_true(json_object_get(json_object_get(m, "input"), "requests_truncated_tail")));
  json_int_t lines = json_integer_value(
      json_object_get(json_object_get(json_object_get(full, "manifest"), "input"), "requests_lines"));
  json_int_t kept = json_integer_value(json_object_get(json_object_get(m, "input"), "requests_lines"));
  CHECK_EQ(kept, lines); /* the torn line is read, said, and left out */
  json_int_t done_full = json_integer_value(
      json_object_get(json_object_get(full, "summary"), "completed"));
  json_int_t done_cut = json_integer_value(
      json_object_get(json_object_get(got, "summary"), "completed"));
  CHECK(done_cut <= done_full && done_cut >= done_full - 1); /* every whole record */
  CHECK(notes >= 1);
  json_decref(got);
  json_decref(full);
}

static void test_not_a_run(const char *tmp) {
  char dir[512], err[512] = "";
  snprintf(dir, sizeof dir, "%s/empty", tmp);
  CHECK_EQ(mkdir(dir, 0755), 0);
  struct im_results_opts o = {.no_html = true};
  struct im_verdict v;
  CHECK(im_results_dir(dir, &o, &v, err, sizeof err) != IM_OK);
  CHECK(strstr(err, "manifest.json") != NULL);
  char path[600];
  snprintf(path, sizeof path, "%s/results.json", dir);
  CHECK(access(path, F_OK) != 0);
  CHECK(!im_results_is_set(dir));
  CHECK(im_results_is_set(FIX "/repeat"));
}

int main(void) {
  char tmp[] = "/tmp/im-test-results.XXXXXX";
  if (!mkdtemp(tmp))
    return 1;
  test_golden(tmp);
  test_cut_short(tmp);
  test_not_a_run(tmp);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  (void)sh(cmd);
  return CHECK_DONE();
}
