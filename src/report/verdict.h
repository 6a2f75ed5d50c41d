/* What the figures of a run say, as the exit status and the one-line
 * verdict that `run`, `report`, `merge` and a --repeat set print
 * (README "Exit status", docs/cli.md). Renders only: the verdict itself is
 * computed by results/ (one run directory) or run/ (a set of runs).
 * Thread rules: none (no state); im_color_on reads the environment. */
#ifndef IM_REPORT_VERDICT_H
#define IM_REPORT_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit status (README "Exit status"), in the precedence of
 * im_verdict_exit: 130 > 2 > 1 > 5 > 6 > 3 > 4 (only under --publish) > 99 > 0.
 * 4 is NOT_PUBLISHABLE under --publish, 5 a load engine that failed (a
 * record write that failed, a thread that could not start), 6 a failing
 * server (failed, refused or aborted requests above --max-error-rate). */
enum im_exit {
  IM_EXIT_OK = 0,
  IM_EXIT_USAGE = 1,
  IM_EXIT_UNREACHABLE = 2,
  IM_EXIT_INVALID = 3,
  IM_EXIT_NOT_PUBLISHABLE = 4,
  IM_EXIT_ENGINE = 5,
  IM_EXIT_FAILING = 6,
  IM_EXIT_SLO = 99,
  IM_EXIT_INTERRUPTED = 130
};

/* What the figures of one run directory say. */
struct im_verdict {
  size_t stages;              /* stages with figures */
  bool interrupted;           /* a stage was cut short, or the run did not end */
  bool unreachable;           /* every stage failed to connect */
  bool invalid;               /* a stage failed the client self-check */
  bool slo_failed;            /* an SLO failed (a rate sweep: no saturation point) */
  bool read_problems;         /* lines of the directory's files were skipped */
  bool not_publishable;       /* a stage's publishable audit has a FAIL */
  bool publish;               /* --publish: NOT_PUBLISHABLE decides the exit status */
  /* A failing server (exit 6): a stage whose failed, refused or aborted
   * requests exceed the error-rate limit; the worst stage's counts. */
  bool failing;
  uint64_t failed_n, requests_n;
  double error_limit;         /* the limit it exceeded (a share) */
  char failed_classes[160];   /* "http_5xx=3 connect=22 aborted=11" */
  char first_error[256];      /* the stage's first error, in words */
};

/* The default of --max-error-rate: above 5 % of a stage's measured requests
 * failed, refused or aborted, the server is failing (the audit's errors
 * check FAILs there too: docs/audit.md). */
#define IM_VERDICT_MAX_ERROR_RATE 0.05

/* The exit status a verdict gives (0, 2, 6, 3, 4 under publish, 99, 130). */
int im_verdict_exit(const struct im_verdict *v);

/* The exit statuses of two runs combined in the precedence of a set
 * (130 > 1 > 5 > 2 > 6 > 3 > 4 > 99 > 0). */
int im_verdict_worst(int a, int b);

/* Whether f may get colour escapes: f is a terminal, NO_COLOR is unset or
 * empty (https://no-color.org), and TERM is not "dumb". */
bool im_color_on(FILE *f);

/* The verdict line: "Verdict: PASS (exit 0): client self-check VALID,
 * PUBLISHABLE, SLOs met"; coloured when im_color_on(f). */
void im_verdict_line(FILE *f, const struct im_verdict *out, int exit_code);
/* The same, coloured when color (for a stream that folds lines to the
 * terminal, which is no terminal itself: the caller asks im_color_on of the
 * stream under it). */
void im_verdict_line_color(FILE *f, bool color, const struct im_verdict *out, int exit_code);

/* The verdict line of a --repeat set: "Verdict: FAIL (exit 3): client
 * self-check INVALID (the worst of 3 runs)". */
void im_verdict_set_line(FILE *f, int exit_code, size_t runs);
/* The same, coloured when color (see im_verdict_line_color). */
void im_verdict_set_line_color(FILE *f, bool color, int exit_code, size_t runs);

#endif
