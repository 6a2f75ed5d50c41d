/* Colours and the verdict line (report/verdict.h). */
#include "report/verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


bool im_color_on(FILE *f) {
  const char *no = getenv("NO_COLOR"), *term = getenv("TERM");
  if (no && *no)
    return false;
  if (term && !strcmp(term, "dumb"))
    return false;
  return isatty(fileno(f)) == 1;
}

/* SGR sequences: bold red, bold green, reset. */
#define RED "\033[1;31m"
#define GREEN "\033[1;32m"
#define RESET "\033[0m"

static void part(FILE *f, bool color, bool bad, const char *text) {
  if (color)
    fprintf(f, "%s%s%s", bad ? RED : GREEN, text, RESET);
  else
    fputs(text, f);
}

void im_verdict_line(FILE *f, const struct im_verdict *out, int exit_code) {
  im_verdict_line_color(f, im_color_on(f), out, exit_code);
}

void im_verdict_line_color(FILE *f, bool c, const struct im_verdict *out, int exit_code) {
  fputs("Verdict: ", f);
  part(f, c, exit_code != 0, exit_code == 0 ? "PASS" : "FAIL");
  fprintf(f, " (exit %d): ", exit_code);
  if (out->interrupted) {
    part(f, c, true, "interrupted");
    fputs(", ", f);
  }
  if (out->unreachable) {
    part(f, c, true, "target unreachable");
    fputs(", ", f);
  }
  if (out->failing) {
    char what[260];
    snprintf(what, sizeof what, "failing server: %llu of %llu requests failed (%s)",
             (unsigned long long)out->failed_n, (unsigned long long)out->requests_n,
             out->failed_classes);
    part(f, c, true, what);
    if (out->first_error[0])
      fprintf(f, ", first error: %s", out->first_error);
    fputs(", ", f);
  }
  fputs("client self-check ", f);
  part(f, c, out->invalid, out->invalid ? "INVALID" : "VALID");
  fputs(", ", f);
  part(f, c, out->not_publishable, out->not_publishable ? "NOT_PUBLISHABLE" : "PUBLISHABLE");
  fputs(out->publish || !out->not_publishable ? ", " : " (exit 4 only with --publish), ", f);
  part(f, c, out->slo_failed, out->slo_failed ? "an SLO failed" : "no SLO failed");
  fputc('\n', f);
  fflush(f);
}

void im_verdict_set_line(FILE *f, int exit_code, size_t runs) {
  im_verdict_set_line_color(f, im_color_on(f), exit_code, runs);
}

void im_verdict_set_line_color(FILE *f, bool color, int exit_code, size_t runs) {
  static const struct {
    int code;
    const char *what;
  } meaning[] = {{0, "every run passed"}, {1, "a usage or configuration error"},
                 {2, "target unreachable"}, {3, "client self-check INVALID"},
                 {4, "NOT_PUBLISHABLE"}, {5, "the load engine failed"}, {6, "a failing server"},
                 {99, "an SLO failed"}, {130, "interrupted"}};
  const char *what = "see the runs' summaries";
  for (size_t i = 0; i < sizeof meaning / sizeof meaning[0]; i++)
    if (meaning[i].code == exit_code)
      what = meaning[i].what;
  fputs("Verdict: ", f);
  part(f, color, exit_code != 0, exit_code == 0 ? "PASS" : "FAIL");
  fprintf(f, " (exit %d): %s (the worst of %zu run%s)\n", exit_code, what, runs,
          runs == 1 ? "" : "s");
  fflush(f);
}

int im_verdict_exit(const struct im_verdict *o) {
  return o->interrupted ? IM_EXIT_INTERRUPTED : o->unreachable ? IM_EXIT_UNREACHABLE
         : o->failing ? IM_EXIT_FAILING : o->invalid ? IM_EXIT_INVALID : o->publish && o->not_publishable ? IM_EXIT_NOT_PUBLISHABLE
         : o->slo_failed ? IM_EXIT_SLO : IM_EXIT_OK;
}

int im_verdict_worst(int a, int b) {
  static const int order[] = {IM_EXIT_INTERRUPTED, IM_EXIT_USAGE, IM_EXIT_ENGINE,
                              IM_EXIT_UNREACHABLE, IM_EXIT_FAILING, IM_EXIT_INVALID,
                              IM_EXIT_NOT_PUBLISHABLE, IM_EXIT_SLO, IM_EXIT_OK};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
    if (a == order[i] || b == order[i])
      return order[i];
  return a ? a : b;
}
