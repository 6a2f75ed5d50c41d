/* A --repeat set (docs/statistics.md): DIR/run-1 .. DIR/run-K, each a full
 * run directory, and DIR/results.json (schema infermeter/repeat/v1) with
 * each headline figure's mean, t-interval, pooled percentiles and the
 * set's audit. `run --repeat` (run/) runs the set and calls im_results_set;
 * `report DIR` of a set calls im_results_set_dir, which reports every run
 * again and recomputes the set from them.
 *
 * Errors, ownership and threads as in results/results.h: enum im_err with
 * a message, nothing printed but on the caller's streams, no global state. */
#ifndef IM_RESULTS_SET_H
#define IM_RESULTS_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "analyze/repeat.h"
#include "core/err.h"
#include "results/results.h"

/* What a set's statistics are computed from. */
struct im_results_set_in {
  const char *dir;              /* the set's directory: DIR/results.json, DIR/report.html */
  struct im_repeat_run *runs;   /* the runs that ran, in order (dir, seed, offset, exit);
                                   their audit fields are filled here */
  size_t n;                     /* how many (at most IM_REPEAT_MAX_RUNS) */
  size_t planned;               /* K of --repeat K */
  bool publish;                 /* --publish */
  double max_width;             /* --max-ci-width as a fraction (<= 0: the default) */
  const double *ref_value;      /* --reference per figure (IM_RF_COUNT_, NaN: none); NULL: none */
  const char *ref_source;       /* where the references came from */
  bool no_html;                 /* no DIR/report.html */
  FILE *text;                   /* the table and where the files are (NULL: none) */
  void (*note)(void *data, const char *line); /* a report that could not be written */
  void *data;
};

/* Reads each run's results.json, computes the statistics, writes
 * DIR/results.json and DIR/report.html; *publishable: the set's audit. */
enum im_err im_results_set(const struct im_results_set_in *in, bool *publishable, char *err,
                           size_t err_len) IM_WUR;

/* The headline figures of a one-stage results.json, as a set reads each
 * run's (NaN where absent). */
void im_results_set_values(const json_t *res, double v[IM_RF_COUNT_]);

/* Whether dir holds a set: DIR/run-1/manifest.json without DIR/manifest.json. */
bool im_results_is_set(const char *dir);

/* `report DIR` of a set: every run reported again (im_results_dir, quiet),
 * then the set's statistics, with what only the set's results.json records
 * (K, each run's start offset and exit status, --max-ci-width, the
 * references) read from it when it is there; without it they come from
 * the runs (their manifests' repeat.of and seed, their verdicts). *exit_code:
 * the worst of the runs' (README's precedence), 4 when o->publish and the
 * set is not publishable. */
enum im_err im_results_set_dir(const char *dir, const struct im_results_opts *o, int *exit_code,
                               size_t *runs, char *err, size_t err_len) IM_WUR;

/* The exit statuses of two runs combined in README's precedence
 * of a set (130 > 1 > 5 > 2 > 3 > 4 > 99 > 0). */
int im_results_worst_exit(int a, int b);

#endif
