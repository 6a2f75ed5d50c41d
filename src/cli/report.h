/* `infermeter report DIR` and `infermeter audit DIR`, and the command
 * line's side of results/ for the other commands that end in a report
 * (run, merge, import): the options in results/results.h's terms, errors
 * and notes printed. */
#ifndef IM_CLI_REPORT_H
#define IM_CLI_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "core/buf.h"
#include "report/verdict.h"
#include "results/results.h"

/* What the command line asks of a report: results/'s options with --json
 * as a flag (the summary on stdout). */
struct report_opts {
  FILE *text;                 /* the terminal summary (NULL: none) */
  bool stage_lines;           /* multi-stage: one line per stage (run printed them already) */
  bool audit_only;            /* `infermeter audit`: print the audit alone, write nothing */
  bool publish;               /* --publish: NOT_PUBLISHABLE decides the exit status (4) */
  double max_error_rate;      /* --max-error-rate as a share (0: the default) */
  const char *html;           /* the HTML report's path (NULL: DIR/report.html) */
  bool no_html;               /* --no-html: none */
  bool csv;                   /* --output-format csv: DIR/requests.csv, DIR/summary.csv */
  bool json;                  /* --json: the summary as JSON on stdout */
};

/* im_results_dir with o; a failure is said on stderr ("infermeter report:
 * why"), skipped lines too. 0, or -1. */
int im__report_dir(const char *dir, const struct report_opts *o, struct im_verdict *out);
/* im_results_html, a failure said on stderr. 0, or -1. */
int im__write_html(const char *path, const json_t *root, const char *title,
                   enum im_err (*render)(const json_t *, const char *, struct im_buf *));

#endif
