/* results/ (src/results): a run directory written before the command line
 * was split into run/, results/ and export/ (tests/fixtures/rundirs/single)
 * gives the same figures through im_results_dir (the same results.json
 * but for generated_at when it was split; since then new keys may join);
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
#include "record/rundir.h"

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

/* Is got a compatible successor of want (tests/e2e/fixture_compat.py's
 * rule): every key of want in got with the same value, recursively; a
 * list of checks (objects with an id or a name) may gain checks; a
 * check's evidence and fix may be reworded. */
static const char *check_key(const json_t *e) {
  const char *k = json_string_value(json_object_get(e, "id"));
  return k ? k : json_string_value(json_object_get(e, "name"));
}

static bool is_check_list(const json_t *a) {
  size_t i;
  json_t *e;
  if (!json_array_size(a))
    return false;
  json_array_foreach(a, i, e) if (!json_is_object(e) || !check_key(e)) return false;
  return true;
}

static bool grows(const json_t *want, const json_t *got, const char *key) {
  /* By design (issue 31): slices cut by the old 10 s default are cut by the
   * window's length now (at most 10 s). */
  if (!strcmp(key, "timeslices") && json_is_object(got) &&
      json_number_value(json_object_get(want, "slice_s")) == 10 &&
      json_number_value(json_object_get(got, "slice_s")) <= 10 &&
      json_is_array(json_object_get(got, "slices")))
    return true;
  if (json_is_object(want)) {
    const char *k;
    json_t *v;
    if (!json_is_object(got))
      return false;
    json_object_foreach((json_t *)want, k, v) if (!grows(v, json_object_get(got, k), k)) {
      fprintf(stderr, "results.json: %s differs\n", k);
      return false;
    }
    return true;
  }
  if (is_check_list(want)) {
    size_t i, j;
    json_t *e, *g;
    if (!json_is_array(got))
      return false;
    json_array_foreach(want, i, e) {
      bool found = false;
      json_array_foreach(got, j, g) if (json_is_object(g) && check_key(g) &&
                                        !strcmp(check_key(g), check_key(e))) {
        found = grows(e, g, check_key(e));
        break;
      }
      if (!found)
        return false;
    }
    return true;
  }
  if (json_is_array(want)) {
    if (!json_is_array(got) || json_array_size(got) != json_array_size(want))
      return false;
    for (size_t i = 0; i < json_array_size(want); i++)
      if (!grows(json_array_get(want, i), json_array_get(got, i), key))
        return false;
    return true;
  }
  if ((!strcmp(key, "evidence") || !strcmp(key, "fix")) && json_is_string(got))
    return true;
  return got && json_equal(want, got);
}

/* Changed by design (issue 28, docs/metrics.md §2; fixture_compat.py
 * alike): a window ending on its last arrival no longer counts it in
 * scheduled_rps, (n - 1) / T where it was n / T. When got's value is
 * exactly that, want takes it. */
static void scheduled_rps_by_design(json_t *want, const json_t *got) {
  json_t *wr = json_object_get(json_object_get(want, "metrics"), "rates");
  const json_t *gr = json_object_get(json_object_get(got, "metrics"), "rates");
  const json_t *n = json_object_get(json_object_get(json_object_get(want, "metrics"), "counts"),
                                    "scheduled");
  double a = json_number_value(json_object_get(wr, "scheduled_rps"));
  double b = json_number_value(json_object_get(gr, "scheduled_rps"));
  if (!json_is_integer(n) || json_integer_value(n) < 1)
    return;
  double k = (double)json_integer_value(n);
  CHECK_NEAR(b, a * (k - 1) / k, 1e-6 * a);
  json_object_set_new(wr, "scheduled_rps", json_real(b));
}

static int notes;
static void count_note(void *data, const char *line) {
  (void)data;
  (void)line;
  notes++;
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
  scheduled_rps_by_design(want, got);
  CHECK(grows(want, got, "")); /* results.json v1 only grows */
  /* The figures (results.json v1 only grows: new keys may join). */
  CHECK(json_equal(json_object_get(want, "summary"), json_object_get(got, "summary")));
  static const char *const blocks[] = {"latency_ms", "rates", "counts", "histograms", "window"};
  for (size_t k = 0; k < sizeof blocks / sizeof blocks[0]; k++)
    CHECK(json_equal(json_object_get(json_object_get(want, "metrics"), blocks[k]),
                     json_object_get(json_object_get(got, "metrics"), blocks[k])));
  CHECK(json_equal(json_object_get(json_object_get(json_object_get(want, "audit"), "client_check"),
                                   "verdict"),
                   json_object_get(json_object_get(json_object_get(got, "audit"), "client_check"),
                                   "verdict")));
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

/* The host probe's figures in stages.jsonl's end event reach the
 * self-check: results.json says what the probe saw; the same directory
 * without them (as older versions wrote it) says nothing of a probe. */
static void test_host_probe(const char *tmp) {
  char dir[300], cmd[1600], path[400];
  snprintf(dir, sizeof dir, "%s/host", tmp);
  snprintf(cmd, sizeof cmd, "cp -r " FIX "/single %s && rm -f %s/results.json %s/report.html",
           dir, dir, dir);
  CHECK_EQ(sh(cmd), 0);
  snprintf(path, sizeof path, "%s/stages.jsonl", dir);
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL);
  json_t *lines = json_array();
  json_error_t je;
  json_t *ev;
  while (f && (ev = json_loadf(f, JSON_DISABLE_EOF_CHECK, &je)) != NULL)
    json_array_append_new(lines, ev);
  if (f)
    fclose(f);
  struct im_hostlat h;
  im_hostlat_init(&h, 2000000);
  for (int i = 0; i < 1000; i++) /* 5 % of the wake-ups 1.5 ms late */
    im_hostlat_add(&h, (int64_t)i * 2000000, i % 20 == 0 ? 1500000 : 10000);
  size_t i;
  json_t *e;
  int ends = 0;
  f = fopen(path, "wb");
  CHECK(f != NULL);
  json_array_foreach(lines, i, e) {
    if (!strcmp(json_string_value(json_object_get(e, "event")), "end")) {
      json_object_set_new(e, "host", im_rundir_host_json(&h));
      ends++;
    }
    if (f) {
      json_dumpf(e, f, JSON_COMPACT);
      fputc('\n', f);
    }
  }
  if (f)
    fclose(f);
  CHECK_EQ(ends, 1);
  struct im_results_opts o = {.no_html = true};
  struct im_verdict v;
  char err[512];
  CHECK_EQ(im_results_dir(dir, &o, &v, err, sizeof err), IM_OK);
  char plain[300]; /* test_golden's copy: the same directory without them */
  snprintf(plain, sizeof plain, "%s/single", tmp);
  json_t *got = results_of(dir), *old = results_of(plain);
  json_t *cc = json_object_get(json_object_get(got, "audit"), "client_check");
  json_t *hp = json_object_get(json_object_get(cc, "attribution"), "host_probe");
  CHECK_EQ(json_integer_value(json_object_get(hp, "wakes")), 1000);
  CHECK_EQ(json_integer_value(json_object_get(hp, "late")), 50);
  const char *sum = json_string_value(json_object_get(cc, "summary"));
  CHECK(sum && strstr(sum, "probe saw 5.0% late wake-ups") != NULL);
  json_t *oc = json_object_get(json_object_get(old, "audit"), "client_check");
  CHECK(json_is_null(json_object_get(json_object_get(oc, "attribution"), "host_probe")));
  const char *os = json_string_value(json_object_get(oc, "summary"));
  CHECK(os && strstr(os, "probe") == NULL);
  json_decref(got);
  json_decref(old);
  json_decref(lines);
  im_hostlat_cleanup(&h);
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
  test_host_probe(tmp);
  test_not_a_run(tmp);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  (void)sh(cmd);
  return CHECK_DONE();
}
