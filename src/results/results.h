/* The one composer of analyses (docs/architecture.md, "results"): a run
 * directory read back (manifest.json, stages.jsonl, requests.jsonl,
 * series.jsonl, scrapes.prom), every analysis of analyze/ run over it,
 * and its outputs written: results.json, report.html, the CSV files, the
 * terminal text. `infermeter run` ends by calling im_results_dir on the
 * directory it wrote; `infermeter report DIR` calls nothing else, so a
 * directory always reproduces its results.json (but for generated_at).
 * A --repeat set (DIR/run-1 .. run-K beside DIR/results.json) is read back
 * by im_results_set (results/set.h).
 *
 * Errors: each fallible call returns enum im_err and fills err (at most
 * err_len bytes, never NULL when err_len > 0) with one line that says what
 * and where; nothing here writes to stdout or stderr. Text goes only to
 * the streams the caller passes in the options; problems that do not stop
 * the report (a skipped line) go to the note callback.
 * Ownership: the caller keeps every pointer it passes; nothing is retained
 * after a call returns.
 * Threads: no global state; calls on different directories may run on
 * different threads at once. */
#ifndef IM_RESULTS_RESULTS_H
#define IM_RESULTS_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "core/buf.h"
#include "core/err.h"
#include "report/verdict.h"

/* What a report writes and prints. */
struct im_results_opts {
  FILE *text;                 /* the terminal summary (NULL: none) */
  bool stage_lines;           /* multi-stage: one line per stage on text */
  bool audit_only;            /* the audit alone on text; nothing is written */
  bool publish;               /* NOT_PUBLISHABLE decides the exit status (4) */
  double max_error_rate;      /* --max-error-rate: a failing server above this share
                                 (exit 6); 0: IM_VERDICT_MAX_ERROR_RATE */
  const char *html;           /* the HTML report's path (NULL: DIR/report.html) */
  bool no_html;               /* no HTML report */
  bool csv;                   /* also DIR/requests.csv and DIR/summary.csv */
  FILE *json;                 /* the summary as JSON there (NULL: none) */
  /* A problem that does not stop the report (a skipped line of a file),
   * one line without a trailing newline; NULL: dropped. */
  void (*note)(void *data, const char *line);
  void *data;                 /* passed to note */
};

/* Reads dir, computes every figure, writes dir/results.json (atomically)
 * and the outputs o asks for; the verdict into *out. IM_OK, or an error
 * with err saying why (a directory that is not a run's, a file that cannot
 * be written, out of memory). */
enum im_err im_results_dir(const char *dir, const struct im_results_opts *o,
                           struct im_verdict *out, char *err, size_t err_len) IM_WUR;

/* Renders a results document with render (report/html.h) and writes it to
 * path through path.tmp and a rename; title names the run. */
enum im_err im_results_html(const char *path, const json_t *root, const char *title,
                            enum im_err (*render)(const json_t *, const char *, struct im_buf *),
                            char *err, size_t err_len) IM_WUR;

/* DIR/requests.csv (from DIR/requests.jsonl) and DIR/summary.csv (from the
 * results document root), each written atomically (docs/cli.md). */
enum im_err im_results_csv(const char *dir, const json_t *root, char *err, size_t err_len) IM_WUR;

/* The results document's summary on f as JSON: the `summary` object of a
 * one-stage run, an array of {index, label, summary} for a multi-stage one. */
enum im_err im_results_summary_json(FILE *f, const json_t *root, char *err,
                                    size_t err_len) IM_WUR;

#endif
