/* What the command line prints besides the figures: colours (only on a
 * terminal, never with NO_COLOR), the verdict line of `run` and `report`,
 * `--output-format csv` (DIR/requests.csv, DIR/summary.csv) and `--json`
 * (results.json's summary on stdout). docs/cli.md describes each. */
#ifndef IM_CLI_OUTPUT_H
#define IM_CLI_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "cli/report.h"

/* Whether f may get colour escapes: f is a terminal, NO_COLOR is unset or
 * empty (https://no-color.org), and TERM is not "dumb". */
bool im__color_on(FILE *f);

/* "--output-format json|csv": *csv = arg is csv. 0, or -1 after saying what
 * is accepted. */
int im__output_format_parse(const char *cmd, const char *arg, bool *csv);

/* The verdict line: "Verdict: PASS (exit 0): client self-check VALID,
 * PUBLISHABLE, SLOs met"; coloured when im__color_on(f). */
void im__verdict_line(FILE *f, const struct report_outcome *out, int exit_code);

/* The verdict line of a --repeat set: "Verdict: FAIL (exit 3): client
 * self-check INVALID (the worst of 3 runs)". */
void im__verdict_set_line(FILE *f, int exit_code, size_t runs);

/* DIR/requests.csv (from DIR/requests.jsonl) and DIR/summary.csv (from the
 * results document root), each written atomically. 0, or -1 after saying
 * why on stderr. */
int im__report_csv(const char *dir, const json_t *root);

/* The results document's summary on f as JSON: the `summary` object of a
 * one-stage run, an array of {index, label, summary} for a multi-stage one.
 * 0, or -1 after saying why. */
int im__report_json(FILE *f, const json_t *root);

#endif
