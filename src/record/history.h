/* The run history: an SQLite database indexing run directories
 * (docs/results-schema.md "History database").
 *
 * One row per run directory (a repeat directory is one row): id, when it was
 * added and started, target, model, tags, the workload digest
 * (record/headline.h), the headline figures of its first stage, the audit
 * verdicts and the directory. Re-adding a directory updates its row and
 * keeps its id.
 *
 * The schema is versioned with PRAGMA user_version and migrated forward on
 * open; a database from a newer infermeter is refused (IM_UNSUPPORTED). The
 * journal is WAL and every connection waits up to IM_HISTORY_BUSY_MS for a
 * lock, so concurrent runs can add to the same file. Each call opens and
 * closes its own connection: no state survives between calls, and calls are
 * safe from any thread. Errors go into the caller's msg buffer with the
 * database path. */
#ifndef IM_RECORD_HISTORY_H
#define IM_RECORD_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "record/headline.h"

#define IM_HISTORY_SCHEMA_VERSION 2
#define IM_HISTORY_BUSY_MS 5000
/* Most rows one query returns (the newest first). */
#define IM_HISTORY_MAX_ROWS 10000

/* The default database: $XDG_DATA_HOME/infermeter/history.db, or
 * $HOME/.local/share/infermeter/history.db. IM_NOTFOUND when neither
 * variable is set, IM_LIMIT when the path does not fit. */
enum im_err im_history_default_path(char *out, size_t len) IM_WUR;

/* Indexes run_dir (a run or repeat directory with results.json) in the
 * database at db_path (NULL: the default path), creating the file and its
 * parent directory when missing. *id_out (may be NULL) receives the row id.
 * The directory is stored as an absolute path. */
enum im_err im_history_add_run(const char *db_path, const char *run_dir, int64_t *id_out, char *msg,
                               size_t msg_len) IM_WUR;

struct im_history_row {
  int64_t id;
  char added_at[40];   /* UTC, ISO 8601 */
  char started_at[40]; /* the manifest's */
  char target[512];
  char model[256];
  char tags[1024]; /* compact JSON (truncated at the cap) */
  char digest[17];
  double v[IM_FIG_COUNT]; /* the first stage's figures; NaN when null */
  char verdict[64], publishable[64];
  char dir[IM_HEADLINE_PATH];
  bool dir_missing; /* the directory (or its results.json) is gone or moved */
};

struct im_history_filter {
  const char *model;   /* exact model name, or NULL */
  const char *tag_key; /* with tag_value: manifest.tags[key] == value, or NULL */
  const char *tag_value;
  const char *since; /* started_at >= this ISO date/time prefix, or NULL */
  int64_t id;        /* > 0: only this row */
};

/* The rows matching f, newest first, at most IM_HISTORY_MAX_ROWS: *rows is
 * a new array the caller frees with free() (NULL when *n == 0). A database
 * that does not exist yet is empty, not an error. */
enum im_err im_history_query(const char *db_path, const struct im_history_filter *f,
                             struct im_history_row **rows, size_t *n, char *msg,
                             size_t msg_len) IM_WUR;

#endif
