/* The run history in SQLite: see record/history.h. */
#include "record/history.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

/* Migrations, applied in order: migration i brings user_version from i to
 * i + 1. Never edit one that has shipped; append. */
static const char *const migrations[IM_HISTORY_SCHEMA_VERSION] = {
    /* 0 -> 1: the runs. */
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY,"
    " added_at TEXT NOT NULL,"
    " started_at TEXT NOT NULL,"
    " target TEXT NOT NULL,"
    " model TEXT NOT NULL,"
    " tags TEXT NOT NULL,"
    " workload_digest TEXT NOT NULL,"
    " request_throughput REAL, output_throughput REAL, request_goodput REAL,"
    " ttft_p50_ms REAL, ttft_p90_ms REAL, ttft_p99_ms REAL,"
    " tpot_p50_ms REAL, tpot_p90_ms REAL, tpot_p99_ms REAL,"
    " itl_p50_ms REAL, itl_p90_ms REAL, itl_p99_ms REAL,"
    " e2el_p50_ms REAL, e2el_p90_ms REAL, e2el_p99_ms REAL,"
    " slo_attainment REAL, effective_qps REAL,"
    " verdict TEXT NOT NULL,"
    " publishable TEXT NOT NULL,"
    " dir TEXT NOT NULL UNIQUE);"
    "CREATE INDEX runs_model ON runs(model);"
    "CREATE INDEX runs_started ON runs(started_at);",
    /* 1 -> 2: the tags as rows, for --tag k=v. */
    "CREATE TABLE run_tags (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    " key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (run_id, key));"
    "CREATE INDEX run_tags_kv ON run_tags(key, value);",
};

enum im_err im_history_default_path(char *out, size_t len) {
  const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
  int w;
  if (xdg && *xdg)
    w = snprintf(out, len, "%s/infermeter/history.db", xdg);
  else if (home && *home)
    w = snprintf(out, len, "%s/.local/share/infermeter/history.db", home);
  else
    return IM_NOTFOUND;
  return w < 0 || (size_t)w >= len ? IM_LIMIT : IM_OK;
}

/* mkdir -p of path's parent directory. */
static int make_parent(const char *path) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    return -1;
  char *slash = strrchr(buf, '/');
  if (!slash || slash == buf)
    return 0;
  *slash = '\0';
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static enum im_err db_fail(sqlite3 *db, const char *path, char *msg, size_t msg_len,
                           const char *what) {
  return im_errf(msg, msg_len, IM_IO, "%s: %s: %s", path, what,
                 db ? sqlite3_errmsg(db) : "cannot allocate a connection");
}

/* PRAGMA user_version, or -1 when it cannot be read. */
static int user_version(sqlite3 *db) {
  sqlite3_stmt *st = NULL;
  int v = -1;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return v;
}

/* Opens (creating when `create`) and migrates. *db is NULL when the file
 * does not exist and create is false (IM_OK: an empty history). */
static enum im_err open_db(const char *path, bool create, sqlite3 **db, char *msg, size_t msg_len) {
  *db = NULL;
  if (!create && access(path, F_OK) != 0)
    return IM_OK;
  if (create && make_parent(path) != 0)
    return im_errf(msg, msg_len, IM_IO, "%s: cannot create its directory: %s", path,
                   strerror(errno));
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
    enum im_err e = db_fail(*db, path, msg, msg_len, "cannot open");
    sqlite3_close(*db);
    *db = NULL;
    return e;
  }
  sqlite3_busy_timeout(*db, IM_HISTORY_BUSY_MS);
  char *err = NULL;
  if (sqlite3_exec(*db, "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;", NULL, NULL, &err) !=
      SQLITE_OK) {
    enum im_err e = im_errf(msg, msg_len, IM_IO, "%s: %s (not an SQLite database?)", path,
                            err ? err : "cannot set WAL");
    sqlite3_free(err);
    sqlite3_close(*db);
    *db = NULL;
    return e;
  }
  int version = user_version(*db);
  enum im_err e = IM_OK;
  if (version < 0) {
    e = db_fail(*db, path, msg, msg_len, "cannot read the schema version");
  } else if (version > IM_HISTORY_SCHEMA_VERSION) {
    e = im_errf(msg, msg_len, IM_UNSUPPORTED,
                "%s: schema version %d is newer than this infermeter's (%d): upgrade infermeter",
                path, version, IM_HISTORY_SCHEMA_VERSION);
  } else if (version < IM_HISTORY_SCHEMA_VERSION) {
    /* One transaction for all steps; the version is re-read inside it so two
     * processes migrating at once do not both apply a step. */
    if (sqlite3_exec(*db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
      e = db_fail(*db, path, msg, msg_len, "cannot lock for migration");
    } else {
      version = user_version(*db);
      for (int v = version; e == IM_OK && v >= 0 && v < IM_HISTORY_SCHEMA_VERSION; v++) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d", v + 1);
        if (sqlite3_exec(*db, migrations[v], NULL, NULL, &err) != SQLITE_OK ||
            sqlite3_exec(*db, sql, NULL, NULL, &err) != SQLITE_OK) {
          e = im_errf(msg, msg_len, IM_IO, "%s: migration to schema %d failed: %s", path, v + 1,
                      err ? err : "?");
          sqlite3_free(err);
          err = NULL;
        }
      }
      if (version < 0 && e == IM_OK)
        e = db_fail(*db, path, msg, msg_len, "cannot read the schema version");
      sqlite3_exec(*db, e == IM_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    }
  }
  if (e != IM_OK) {
    sqlite3_close(*db);
    *db = NULL;
  }
  return e;
}

static void now_iso(char *out, size_t len) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void bind_num(sqlite3_stmt *st, int i, double v) {
  if (isfinite(v))
    sqlite3_bind_double(st, i, v);
  else
    sqlite3_bind_null(st, i);
}

#define FIG_COLS                                                                                   \
  "request_throughput, output_throughput, request_goodput, ttft_p50_ms, ttft_p90_ms,"              \
  " ttft_p99_ms, tpot_p50_ms, tpot_p90_ms, tpot_p99_ms, itl_p50_ms, itl_p90_ms,"                   \
  " itl_p99_ms, e2el_p50_ms, e2el_p90_ms, e2el_p99_ms, slo_attainment, effective_qps"

static const char insert_sql[] =
    "INSERT INTO runs (added_at, started_at, target, model, tags, workload_digest, " FIG_COLS
    ", verdict, publishable, dir) VALUES (?,?,?,?,?,?, ?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?, ?,?,?)"
    " ON CONFLICT(dir) DO UPDATE SET added_at=excluded.added_at, started_at=excluded.started_at,"
    " target=excluded.target, model=excluded.model, tags=excluded.tags,"
    " workload_digest=excluded.workload_digest,"
    " request_throughput=excluded.request_throughput,"
    " output_throughput=excluded.output_throughput, request_goodput=excluded.request_goodput,"
    " ttft_p50_ms=excluded.ttft_p50_ms, ttft_p90_ms=excluded.ttft_p90_ms,"
    " ttft_p99_ms=excluded.ttft_p99_ms, tpot_p50_ms=excluded.tpot_p50_ms,"
    " tpot_p90_ms=excluded.tpot_p90_ms, tpot_p99_ms=excluded.tpot_p99_ms,"
    " itl_p50_ms=excluded.itl_p50_ms, itl_p90_ms=excluded.itl_p90_ms,"
    " itl_p99_ms=excluded.itl_p99_ms, e2el_p50_ms=excluded.e2el_p50_ms,"
    " e2el_p90_ms=excluded.e2el_p90_ms, e2el_p99_ms=excluded.e2el_p99_ms,"
    " slo_attainment=excluded.slo_attainment, effective_qps=excluded.effective_qps,"
    " verdict=excluded.verdict, publishable=excluded.publishable"
    " RETURNING id";

/* Inserts or updates h's row; its id into *id. Inside the caller's
 * transaction. */
static enum im_err upsert_run(sqlite3 *db, const struct im_headline *h, int64_t *id,
                              const char *path, char *msg, size_t msg_len) {
  sqlite3_stmt *st = NULL;
  char digest[17], added[40];
  im_headline_digest(h, digest);
  now_iso(added, sizeof added);
  if (sqlite3_prepare_v2(db, insert_sql, -1, &st, NULL) != SQLITE_OK)
    return db_fail(db, path, msg, msg_len, "cannot prepare the insert");
  int i = 1;
  sqlite3_bind_text(st, i++, added, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, h->started_at, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, h->target, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, h->model, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, h->tags, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, digest, -1, SQLITE_TRANSIENT);
  for (int f = 0; f < IM_FIG_COUNT; f++)
    bind_num(st, i++, h->stage[0].v[f]);
  sqlite3_bind_text(st, i++, h->verdict, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, h->publishable, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, i++, h->dir, -1, SQLITE_TRANSIENT);
  enum im_err e = IM_OK;
  if (sqlite3_step(st) == SQLITE_ROW)
    *id = sqlite3_column_int64(st, 0);
  else
    e = db_fail(db, path, msg, msg_len, "cannot insert");
  sqlite3_finalize(st);
  return e;
}

/* Replaces the run's rows in run_tags with the tags object (compact JSON);
 * a non-string tag value is stored as its JSON text. */
static enum im_err write_tags(sqlite3 *db, int64_t id, const char *tags_json, const char *path,
                              char *msg, size_t msg_len) {
  sqlite3_stmt *st = NULL;
  enum im_err e = IM_OK;
  if (sqlite3_prepare_v2(db, "DELETE FROM run_tags WHERE run_id=?", -1, &st, NULL) != SQLITE_OK)
    return db_fail(db, path, msg, msg_len, "cannot prepare");
  sqlite3_bind_int64(st, 1, id);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return db_fail(db, path, msg, msg_len, "cannot delete old tags");
  json_t *tags = json_loads(tags_json, JSON_DECODE_ANY, NULL);
  if (!json_is_object(tags) || json_object_size(tags) == 0) {
    json_decref(tags);
    return IM_OK;
  }
  if (sqlite3_prepare_v2(db, "INSERT INTO run_tags (run_id, key, value) VALUES (?,?,?)", -1, &st,
                         NULL) != SQLITE_OK) {
    json_decref(tags);
    return db_fail(db, path, msg, msg_len, "cannot prepare");
  }
  const char *key;
  json_t *val;
  json_object_foreach(tags, key, val) {
    char *text = json_is_string(val) ? NULL : json_dumps(val, JSON_ENCODE_ANY | JSON_COMPACT);
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, text ? text : json_string_value(val), -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st);
    free(text);
    if (rc != SQLITE_DONE) {
      e = db_fail(db, path, msg, msg_len, "cannot insert a tag");
      break;
    }
  }
  sqlite3_finalize(st);
  json_decref(tags);
  return e;
}

/* The headline of run_dir (absolute): its own results.json; for a repeat
 * directory whose own results.json is missing or not in the results format
 * (an aggregate), its first run's, so the row still names model, tags and
 * workload. */
static enum im_err read_dir(const char *abs_dir, struct im_headline *h, char *msg, size_t msg_len) {
  enum im_err e = im_headline_read(abs_dir, h, msg, msg_len);
  if (e == IM_NOTFOUND || e == IM_PARSE) {
    char(*paths)[IM_HEADLINE_PATH] = malloc(IM_HEADLINE_MAX_RUNS * sizeof *paths);
    size_t n = 0;
    bool repeat = false;
    char m2[256];
    if (paths &&
        im_headline_list_runs(abs_dir, paths, IM_HEADLINE_MAX_RUNS, &n, &repeat, m2, sizeof m2) ==
            IM_OK &&
        repeat)
      e = im_headline_read(paths[0], h, msg, msg_len);
    free(paths);
  }
  if (e == IM_OK)
    memcpy(h->dir, abs_dir, strlen(abs_dir) + 1);
  return e;
}

enum im_err im_history_add_run(const char *db_path, const char *run_dir, int64_t *id_out, char *msg,
                               size_t msg_len) {
  char def[PATH_MAX], abs_dir[PATH_MAX];
  if (!db_path) {
    if (im_history_default_path(def, sizeof def) != IM_OK)
      return im_errf(msg, msg_len, IM_NOTFOUND,
                     "no history path: set XDG_DATA_HOME or HOME, or pass --history PATH");
    db_path = def;
  }
  if (!realpath(run_dir, abs_dir))
    return im_errf(msg, msg_len, IM_NOTFOUND, "%s: %s", run_dir, strerror(errno));
  if (strlen(abs_dir) + 16 >= IM_HEADLINE_PATH)
    return im_errf(msg, msg_len, IM_LIMIT, "%s: path longer than %d bytes", abs_dir,
                   IM_HEADLINE_PATH - 16);
  struct im_headline *h = malloc(sizeof *h);
  if (!h)
    return im_errf(msg, msg_len, IM_NOMEM, "out of memory");
  sqlite3 *db = NULL;
  int64_t id = 0;
  enum im_err e = read_dir(abs_dir, h, msg, msg_len);
  if (e == IM_OK)
    e = open_db(db_path, true, &db, msg, msg_len);
  if (e == IM_OK && sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
    e = db_fail(db, db_path, msg, msg_len, "cannot lock");
  else if (e == IM_OK) {
    e = upsert_run(db, h, &id, db_path, msg, msg_len);
    if (e == IM_OK)
      e = write_tags(db, id, h->tags, db_path, msg, msg_len);
    if (e == IM_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
      e = db_fail(db, db_path, msg, msg_len, "cannot commit");
    if (e != IM_OK)
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  }
  if (e == IM_OK && id_out)
    *id_out = id;
  sqlite3_close(db);
  free(h);
  return e;
}

static void col_text(sqlite3_stmt *st, int i, char *dst, size_t cap) {
  const unsigned char *s = sqlite3_column_text(st, i);
  snprintf(dst, cap, "%s", s ? (const char *)s : "");
}

/* One result row of the query in im_history_query, and whether its
 * directory still holds a run. */
static void read_row(sqlite3_stmt *st, struct im_history_row *r) {
  memset(r, 0, sizeof *r);
  int c = 0;
  r->id = sqlite3_column_int64(st, c++);
  col_text(st, c++, r->added_at, sizeof r->added_at);
  col_text(st, c++, r->started_at, sizeof r->started_at);
  col_text(st, c++, r->target, sizeof r->target);
  col_text(st, c++, r->model, sizeof r->model);
  col_text(st, c++, r->tags, sizeof r->tags);
  col_text(st, c++, r->digest, sizeof r->digest);
  for (int k = 0; k < IM_FIG_COUNT; k++, c++)
    r->v[k] = sqlite3_column_type(st, c) == SQLITE_NULL ? NAN : sqlite3_column_double(st, c);
  col_text(st, c++, r->verdict, sizeof r->verdict);
  col_text(st, c++, r->publishable, sizeof r->publishable);
  col_text(st, c++, r->dir, sizeof r->dir);
  char res[IM_HEADLINE_PATH + 32];
  struct stat sb;
  snprintf(res, sizeof res, "%s/results.json", r->dir);
  r->dir_missing = stat(r->dir, &sb) != 0 || !S_ISDIR(sb.st_mode);
  if (!r->dir_missing && stat(res, &sb) != 0) {
    snprintf(res, sizeof res, "%s/run-1/results.json", r->dir);
    r->dir_missing = stat(res, &sb) != 0;
  }
}

enum im_err im_history_query(const char *db_path, const struct im_history_filter *f,
                             struct im_history_row **rows, size_t *n, char *msg, size_t msg_len) {
  *rows = NULL;
  *n = 0;
  char def[PATH_MAX];
  if (!db_path) {
    if (im_history_default_path(def, sizeof def) != IM_OK)
      return im_errf(msg, msg_len, IM_NOTFOUND,
                     "no history path: set XDG_DATA_HOME or HOME, or pass --history PATH");
    db_path = def;
  }
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  struct im_history_row *v = NULL;
  size_t cap = 0;
  enum im_err e = open_db(db_path, false, &db, msg, msg_len);
  if (e != IM_OK || !db)
    return e;
  char sql[1024];
  snprintf(sql, sizeof sql,
           "SELECT id, added_at, started_at, target, model, tags, workload_digest, " FIG_COLS
           ", verdict, publishable, dir FROM runs WHERE (?1 IS NULL OR model = ?1)"
           " AND (?2 IS NULL OR id IN (SELECT run_id FROM run_tags WHERE key = ?2 AND value = ?3))"
           " AND (?4 IS NULL OR started_at >= ?4) AND (?5 <= 0 OR id = ?5)"
           " ORDER BY started_at DESC, id DESC LIMIT %d",
           IM_HISTORY_MAX_ROWS);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    e = db_fail(db, db_path, msg, msg_len, "cannot prepare the query");
    goto out;
  }
  if (f && f->model)
    sqlite3_bind_text(st, 1, f->model, -1, SQLITE_TRANSIENT);
  if (f && f->tag_key) {
    sqlite3_bind_text(st, 2, f->tag_key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, f->tag_value ? f->tag_value : "", -1, SQLITE_TRANSIENT);
  }
  if (f && f->since)
    sqlite3_bind_text(st, 4, f->since, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 5, f ? f->id : 0);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (*n == cap) {
      size_t nc = cap ? cap * 2 : 16;
      struct im_history_row *nv = realloc(v, nc * sizeof *nv);
      if (!nv) {
        e = im_errf(msg, msg_len, IM_NOMEM, "out of memory");
        goto out;
      }
      v = nv;
      cap = nc;
    }
    read_row(st, &v[*n]);
    (*n)++;
  }
  if (rc != SQLITE_DONE) {
    e = db_fail(db, db_path, msg, msg_len, "query failed");
    goto out;
  }
  e = IM_OK;
out:
  sqlite3_finalize(st);
  sqlite3_close(db);
  if (e != IM_OK) {
    free(v);
    v = NULL;
    *n = 0;
  }
  *rows = v;
  return e;
}
