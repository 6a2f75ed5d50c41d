/* record/headline.c and record/history.c: reading results.json back, repeat
 * directories, configuration differences, the SQLite history (a temporary
 * database, never the user's). Runs from the source tree (the fixtures). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <math.h>
#include <sqlite3.h>

#include "check.h"
#include "record/headline.h"
#include "record/history.h"

#define ONE "tests/schema/fixtures/one-stage"
#define STAGES "tests/schema/fixtures/stages"

static char tmp[256];

/* A number or string of a fixture's results.json: the expectations come
 * from the fixtures themselves, so regenerating them keeps this test true. */
static json_t *fixture(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/results.json", dir);
  return json_load_file(path, 0, NULL);
}

static double fx(const char *dir, const char *a, const char *b, const char *c, const char *d) {
  json_t *root = fixture(dir), *v = json_object_get(root, a);
  if (b)
    v = json_object_get(v, b);
  if (c)
    v = json_object_get(v, c);
  if (d)
    v = json_object_get(v, d);
  double x = json_is_number(v) ? json_number_value(v) : NAN;
  json_decref(root);
  return x;
}

/* A helper that takes its format from its caller (a test's table of
 * inputs): -Wformat-nonliteral has nothing to check here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static int sh(const char *fmt, const char *a, const char *b) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, fmt, a, b);
  return system(cmd);
}
#pragma GCC diagnostic pop

static void headline(void) {
  struct im_headline *h = malloc(sizeof *h);
  char msg[512];
  CHECK(h != NULL);
  if (!h)
    return;
  CHECK_OK(im_headline_read(ONE, h, msg, sizeof msg));
  CHECK_EQ(h->n_stages, 1);
  CHECK_NEAR(h->stage[0].v[IM_FIG_REQUEST_THROUGHPUT],
             fx(ONE, "summary", "request_throughput", NULL, NULL), 1e-12);
  CHECK_NEAR(h->stage[0].v[IM_FIG_TTFT_P99], fx(ONE, "metrics", "latency_ms", "ttft", "p99"), 1e-12);
  CHECK_NEAR(h->stage[0].v[IM_FIG_SLO_ATTAINMENT],
             fx(ONE, "metrics", "slo", "attainment", "all"), 1e-12);
  CHECK_NEAR(h->stage[0].v[IM_FIG_EFFECTIVE_QPS],
             fx(ONE, "metrics", "effective_rate", "effective_qps", NULL), 1e-12);
  CHECK_STR(h->model, "deepseek-v3");
  CHECK_STR(h->tags, "{\"tp\":\"8\"}");
  CHECK_STR(h->verdict, "VALID");
  CHECK_OK(im_headline_read(STAGES, h, msg, sizeof msg));
  CHECK_EQ(h->n_stages, 2);
  CHECK(isnan(h->stage[0].v[IM_FIG_SLO_ATTAINMENT])); /* no SLO: null */
  CHECK_EQ(im_headline_read("tests/schema", h, msg, sizeof msg), IM_NOTFOUND);
  CHECK(strstr(msg, "tests/schema/results.json") != NULL);
  /* Not a results.json. */
  char d[300];
  snprintf(d, sizeof d, "%s/bad", tmp);
  mkdir(d, 0755);
  CHECK_EQ(sh("echo '{\"x\":1}' > %s/results.json%s", d, ""), 0);
  CHECK_EQ(im_headline_read(d, h, msg, sizeof msg), IM_PARSE);
  CHECK_EQ(sh("echo '{\"x\":' > %s/results.json%s", d, ""), 0);
  CHECK_EQ(im_headline_read(d, h, msg, sizeof msg), IM_PARSE);
  free(h);
}

static void repeat_dirs(void) {
  char d[300], (*paths)[IM_HEADLINE_PATH] = malloc(4 * sizeof *paths), msg[512];
  size_t n;
  bool rep;
  CHECK(paths != NULL);
  if (!paths)
    return;
  snprintf(d, sizeof d, "%s/rep", tmp);
  /* run-10 sorts after run-2; run-x and a run without results.json are not runs. */
  CHECK_EQ(sh("mkdir -p %s && cd %s && mkdir run-1 run-2 run-10 run-x run-3", d, d), 0);
  CHECK_EQ(sh("for r in 1 2 10 x; do cp " ONE "/results.json %s/run-$r/; done%s", d, ""), 0);
  CHECK_OK(im_headline_list_runs(d, paths, 4, &n, &rep, msg, sizeof msg));
  CHECK(rep);
  CHECK_EQ(n, 3);
  CHECK(strstr(paths[0], "/run-1") && strstr(paths[1], "/run-2") && strstr(paths[2], "/run-10"));
  CHECK_EQ(im_headline_list_runs(d, paths, 2, &n, &rep, msg, sizeof msg), IM_LIMIT);
  CHECK_OK(im_headline_list_runs(ONE, paths, 4, &n, &rep, msg, sizeof msg));
  CHECK(!rep);
  CHECK_EQ(n, 1);
  CHECK_EQ(im_headline_list_runs("/nonexistent/x", paths, 4, &n, &rep, msg, sizeof msg),
           IM_NOTFOUND);
  free(paths);
}

static void diffs(void) {
  char out[512];
  CHECK(!im_headline_diff("workload.", "{\"a\":1}", "{\"a\":1}", out, sizeof out));
  CHECK_STR(out, "");
  CHECK(im_headline_diff("workload.", "{\"a\":1,\"b\":2}", "{\"a\":1,\"b\":3,\"c\":4}", out,
                         sizeof out));
  CHECK_STR(out, "workload.b: 2 vs 3; workload.c: (absent) vs 4");
  CHECK(im_headline_diff("tags.", "null", "{\"x\":\"y\"}", out, sizeof out));
  CHECK_STR(out, "tags: null vs {\"x\":\"y\"}");
  char small[8];
  CHECK(im_headline_diff("w.", "{\"a\":1}", "{\"a\":2}", small, sizeof small));
  CHECK_EQ(strlen(small), 7); /* truncated, terminated */
  struct im_headline *a = calloc(2, sizeof *a);
  if (!a)
    return;
  char da[17], db[17];
  snprintf(a[0].model, sizeof a[0].model, "m");
  snprintf(a[1].model, sizeof a[1].model, "m");
  im_headline_digest(&a[0], da);
  im_headline_digest(&a[1], db);
  CHECK_STR(da, db);
  snprintf(a[1].tags, sizeof a[1].tags, "{}");
  im_headline_digest(&a[1], db);
  CHECK(strcmp(da, db) != 0);
  free(a);
}

static void history(void) {
  char db[300], msg[512], d1[300], d2[300];
  snprintf(db, sizeof db, "%s/sub/dir/history.db", tmp); /* parents are created */
  snprintf(d1, sizeof d1, "%s/r1", tmp);
  snprintf(d2, sizeof d2, "%s/r2", tmp);
  CHECK_EQ(sh("mkdir -p %s %s", d1, d2), 0);
  CHECK_EQ(sh("cp " ONE "/results.json %s/ && cp " STAGES "/results.json %s/", d1, d2), 0);
  struct im_history_row *rows = NULL;
  size_t n = 99;
  /* No database yet: an empty history. */
  CHECK_OK(im_history_query(db, NULL, &rows, &n, msg, sizeof msg));
  CHECK_EQ(n, 0);
  int64_t id1 = 0, id2 = 0, again = 0;
  CHECK_OK(im_history_add_run(db, d1, &id1, msg, sizeof msg));
  CHECK_OK(im_history_add_run(db, d2, &id2, msg, sizeof msg));
  CHECK(id1 > 0 && id2 > id1);
  CHECK_OK(im_history_add_run(db, d1, &again, msg, sizeof msg)); /* re-add: same row */
  CHECK_EQ(again, id1);
  CHECK_OK(im_history_query(db, NULL, &rows, &n, msg, sizeof msg));
  CHECK_EQ(n, 2);
  if (n == 2) {
    CHECK_EQ(rows[0].id, id2); /* newest started first */
    CHECK_NEAR(rows[1].v[IM_FIG_REQUEST_THROUGHPUT],
               fx(ONE, "summary", "request_throughput", NULL, NULL), 1e-12);
    CHECK(isnan(rows[0].v[IM_FIG_SLO_ATTAINMENT]));
    CHECK_STR(rows[1].model, "deepseek-v3");
    CHECK_EQ(strlen(rows[1].digest), 16);
    CHECK(!rows[1].dir_missing);
    CHECK(rows[1].dir[0] == '/'); /* stored absolute */
  }
  free(rows);
  struct im_history_filter f = {.tag_key = "tp", .tag_value = "8"};
  CHECK_OK(im_history_query(db, &f, &rows, &n, msg, sizeof msg));
  CHECK_EQ(n, 1);
  CHECK_EQ(n ? rows[0].id : 0, id1);
  free(rows);
  f = (struct im_history_filter){.model = "other"};
  CHECK_OK(im_history_query(db, &f, &rows, &n, msg, sizeof msg));
  CHECK_EQ(n, 0);
  free(rows);
  /* Since the second fixture's start: it, and the first when it started in
   * the same second. */
  json_t *r1 = fixture(ONE), *r2 = fixture(STAGES);
  const char *s1 = json_string_value(json_object_get(json_object_get(r1, "manifest"), "started_at"));
  const char *s2 = json_string_value(json_object_get(json_object_get(r2, "manifest"), "started_at"));
  char since[32] = "";
  if (s2)
    snprintf(since, sizeof since, "%.19s", s2);
  f = (struct im_history_filter){.since = since};
  CHECK_OK(im_history_query(db, &f, &rows, &n, msg, sizeof msg));
  CHECK_EQ(n, s1 && s2 && strcmp(s1, s2) >= 0 ? 2 : 1);
  json_decref(r1);
  json_decref(r2);
  free(rows);
  f = (struct im_history_filter){.id = id2};
  CHECK_OK(im_history_query(db, &f, &rows, &n, msg, sizeof msg));
  CHECK_EQ(n, 1);
  free(rows);
  /* A deleted directory is reported, not an error. */
  CHECK_EQ(sh("rm -rf %s%s", d2, ""), 0);
  CHECK_OK(im_history_query(db, NULL, &rows, &n, msg, sizeof msg));
  CHECK_EQ(n, 2);
  CHECK(n == 2 && rows[0].dir_missing && !rows[1].dir_missing);
  free(rows);
  CHECK_EQ(im_history_add_run(db, d2, NULL, msg, sizeof msg), IM_NOTFOUND);
  /* Schema: version 2, WAL. */
  sqlite3 *s = NULL;
  CHECK_EQ(sqlite3_open(db, &s), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  CHECK_EQ(sqlite3_prepare_v2(s, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
  CHECK_EQ(sqlite3_step(st), SQLITE_ROW);
  CHECK_EQ(sqlite3_column_int(st, 0), IM_HISTORY_SCHEMA_VERSION);
  sqlite3_finalize(st);
  CHECK_EQ(sqlite3_prepare_v2(s, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
  CHECK_EQ(sqlite3_step(st), SQLITE_ROW);
  CHECK_STR((const char *)sqlite3_column_text(st, 0), "wal");
  sqlite3_finalize(st);
  /* A database from a newer infermeter is refused. */
  CHECK_EQ(sqlite3_exec(s, "PRAGMA user_version=99", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(s);
  CHECK_EQ(im_history_query(db, NULL, &rows, &n, msg, sizeof msg), IM_UNSUPPORTED);
  CHECK(strstr(msg, "newer") != NULL);
  /* A version-1 database migrates to 2 (the tag table appears). */
  char db1[300];
  snprintf(db1, sizeof db1, "%s/v1.db", tmp);
  CHECK_EQ(sqlite3_open(db1, &s), SQLITE_OK);
  CHECK_EQ(sqlite3_exec(s,
                        "CREATE TABLE runs (id INTEGER PRIMARY KEY, added_at TEXT NOT NULL,"
                        " started_at TEXT NOT NULL, target TEXT NOT NULL, model TEXT NOT NULL,"
                        " tags TEXT NOT NULL, workload_digest TEXT NOT NULL,"
                        " request_throughput REAL, output_throughput REAL, request_goodput REAL,"
                        " ttft_p50_ms REAL, ttft_p90_ms REAL, ttft_p99_ms REAL,"
                        " tpot_p50_ms REAL, tpot_p90_ms REAL, tpot_p99_ms REAL,"
                        " itl_p50_ms REAL, itl_p90_ms REAL, itl_p99_ms REAL,"
                        " e2el_p50_ms REAL, e2el_p90_ms REAL, e2el_p99_ms REAL,"
                        " slo_attainment REAL, effective_qps REAL, verdict TEXT NOT NULL,"
                        " publishable TEXT NOT NULL, dir TEXT NOT NULL UNIQUE);"
                        "PRAGMA user_version=1;",
                        NULL, NULL, NULL),
           SQLITE_OK);
  sqlite3_close(s);
  CHECK_OK(im_history_add_run(db1, d1, &id1, msg, sizeof msg));
  f = (struct im_history_filter){.tag_key = "tp", .tag_value = "8"};
  CHECK_OK(im_history_query(db1, &f, &rows, &n, msg, sizeof msg));
  CHECK_EQ(n, 1);
  free(rows);
  /* A repeat directory: its own results.json when that is one, else its
   * first run's (here the aggregate is in another format). */
  char rep[300];
  snprintf(rep, sizeof rep, "%s/rep", tmp);
  CHECK_OK(im_history_add_run(db1, rep, &id2, msg, sizeof msg));
  CHECK_EQ(sh("echo '{\"aggregate\": true}' > %s/results.json%s", rep, ""), 0);
  CHECK_OK(im_history_add_run(db1, rep, &again, msg, sizeof msg));
  CHECK_EQ(again, id2);
  /* Not a database. */
  char junk[300];
  snprintf(junk, sizeof junk, "%s/junk.db", tmp);
  CHECK_EQ(sh("head -c 5000 /dev/urandom > %s%s", junk, ""), 0);
  CHECK(im_history_add_run(junk, d1, NULL, msg, sizeof msg) != IM_OK);
  /* The default path follows XDG_DATA_HOME, then HOME. */
  char p[512];
  setenv("XDG_DATA_HOME", "/x/data", 1);
  CHECK_OK(im_history_default_path(p, sizeof p));
  CHECK_STR(p, "/x/data/infermeter/history.db");
  unsetenv("XDG_DATA_HOME");
  setenv("HOME", "/home/u", 1);
  CHECK_OK(im_history_default_path(p, sizeof p));
  CHECK_STR(p, "/home/u/.local/share/infermeter/history.db");
  CHECK_EQ(im_history_default_path(p, 8), IM_LIMIT);
}

int main(void) {
  snprintf(tmp, sizeof tmp, "%s/im-history-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmp)) {
    perror("mkdtemp");
    return 1;
  }
  headline();
  repeat_dirs();
  diffs();
  history();
  sh("rm -rf %s%s", tmp, "");
  return CHECK_DONE();
}
