/* `infermeter report DIR`: results.json and the terminal summary of a run
 * directory, recomputed from what is on disk (record/rundir.h). `run` writes
 * its own results through the same function at the end of every run, so a
 * directory always reproduces its results.json (apart from generated_at). */
#ifndef IM_CLI_REPORT_H
#define IM_CLI_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "analyze/stage.h"
#include "core/buf.h"

struct report_opts {
  FILE *text;                 /* the terminal summary (NULL: none) */
  bool stage_lines;           /* multi-stage: one line per stage (run printed them already) */
  bool audit_only;            /* `infermeter audit`: print the audit alone, write nothing */
  bool publish;               /* --publish: NOT_PUBLISHABLE decides the exit status (4) */
  const char *html;           /* the HTML report's path (NULL: DIR/report.html) */
  bool no_html;               /* --no-html: none */
  bool csv;                   /* --output-format csv: DIR/requests.csv, DIR/summary.csv */
  bool json;                  /* --json: the summary as JSON on stdout (cli/output.h) */
};

/* What the figures say, for the exit status (README, "Exit status"). */
struct report_outcome {
  size_t stages;              /* stages with figures */
  bool interrupted;           /* a stage was cut short, or the run did not end */
  bool unreachable;           /* every stage failed to connect */
  bool invalid;               /* a stage failed the client self-check */
  bool slo_failed;            /* an SLO failed (a rate sweep: no saturation point) */
  bool read_problems;         /* lines of the directory's files were skipped */
  bool not_publishable;       /* a stage's publishable audit has a FAIL */
  bool publish;               /* copied from the options */
};

/* Reads dir, writes dir/results.json (atomically), prints the summary.
 * 0, or -1 after saying why on stderr. */
int im__report_dir(const char *dir, const struct report_opts *ro, struct report_outcome *out);
/* Writes the HTML report of a results document to path (atomically), title
 * naming the run. 0, or -1 after saying why. */
int im__report_html(const char *path, const json_t *root, const char *title);
/* The same with another page renderer (report/html.h). */
int im__write_html(const char *path, const json_t *root, const char *title,
                   enum im_err (*render)(const json_t *, const char *, struct im_buf *));
/* The exit status for an outcome (0, 2, 3, 4 under --publish, 99, 130). */
int im__report_exit_code(const struct report_outcome *out);

#endif
